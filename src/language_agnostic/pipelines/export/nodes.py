"""Nodes of the ``export`` pipeline: find the trained meaning models the configured pipelines leave, write
each as an MLflow model of the ``sentence_transformers`` flavour.

One directory per model serves every route out of the project: ``mlflow.pyfunc.load_model(dir)``
and ``mlflow models serve -m dir`` (its pyfunc: a list of strings in, one vector per string out,
with a signature, an input example and pinned requirements), and
``SentenceTransformer(dir / "model.sentence_transformer")``, the same weights (MLflow's flavour
keeps the sentence-transformers model there; one copy of the encoder, about 470 MB for the
bundled one, per model). MLflow is written here, in the Kedro layer, not in ``methods/``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import shutil
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import mlflow.sentence_transformers
import yaml
from mlflow.entities import LoggedModelStatus
from sentence_transformers import SentenceTransformer

from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.methods.apply import (
    ModelSpec,
    expected_models,
    load_models,
    model_sections,
    only_models,
    training_languages,
)
from language_agnostic.methods.export import encoder_sentence_transformer, export_record, exportable, ship_custom_code
from language_agnostic.pipelines.project_config import PipelineConfigurationError
from language_agnostic.tracking import log_exported_model

logger = logging.getLogger(__name__)

SOURCES = ("qe", "sts", "fmda", "emu")  # the pipelines whose trained meaning models are exported
KINDS = ("head", "encoder", "fmda")  # every trained meaning model (centring is a per-language shift, not a model)
# what a served or loaded model needs, pinned to the versions it was written with
REQUIREMENTS = ("mlflow", "sentence-transformers", "torch", "transformers")
INPUT_EXAMPLE = ["The weather is nice today.", "Das Wetter ist heute schön."]
ST_SUBDIRECTORY = "model.sentence_transformer"  # where MLflow's flavour keeps the sentence-transformers model
DIGEST_TAG = "language_agnostic.export_digest"  # a logged export's content digest (export_digest)
# the MLmodel fields each save draws anew; every other byte of an export follows from its inputs
VOLATILE_MLMODEL_FIELDS = ("model_uuid", "utc_time_created")


def pinned_requirements() -> list[str]:
    """``name==version`` of :data:`REQUIREMENTS` as installed (a local tag such as ``+cpu`` dropped)."""
    return [f"{name}=={importlib.metadata.version(name).split('+')[0]}" for name in REQUIREMENTS]


def save_model(model: SentenceTransformer, directory: str | Path, record: Mapping[str, Any]) -> Path:
    """``model`` as an MLflow model at ``directory`` (replaced if present), ``record`` as its metadata
    and as ``language_agnostic.json`` beside it.
    """
    out = Path(directory)
    if out.exists():
        shutil.rmtree(out)  # MLflow refuses to write into an existing directory; a rerun replaces the export
    out.parent.mkdir(parents=True, exist_ok=True)
    mlflow.sentence_transformers.save_model(
        model,
        str(out),
        input_example=INPUT_EXAMPLE,
        pip_requirements=pinned_requirements(),
        metadata={"language_agnostic": json.loads(json.dumps(dict(record), default=str))},
    )
    ship_custom_code(out / ST_SUBDIRECTORY)  # FMDA's module as a file in the directory, not an import of ours
    (out / "language_agnostic.json").write_text(json.dumps(dict(record), indent=2, default=str) + "\n")
    return out


def export_digest(directory: str | Path) -> str:
    """SHA-256 of an export as written: every file's relative path, size and bytes, ``MLmodel`` read
    without :data:`VOLATILE_MLMODEL_FIELDS`. Two exports have the same digest if and only if they are the
    same files (weights, configuration, custom code, metadata, pinned requirements), whatever produced them.
    """
    root = Path(directory)
    sha = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root).as_posix()
        if relative == "MLmodel":
            fields = yaml.safe_load(path.read_text()) or {}
            content = json.dumps(
                {k: v for k, v in fields.items() if k not in VOLATILE_MLMODEL_FIELDS}, sort_keys=True, default=str
            ).encode()
            sha.update(f"{relative}\0{len(content)}\0".encode() + content)
            continue
        sha.update(f"{relative}\0{path.stat().st_size}\0".encode())
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                sha.update(chunk)
    return sha.hexdigest()


def logged_export(digest: str) -> tuple[str, str] | None:
    """``(model id, run id)`` of a READY logged model of the tracking store tagged with ``digest``
    (:data:`DIGEST_TAG`), or None: an export already logged, byte for byte, is not logged again.
    """
    client = mlflow.MlflowClient()
    experiments = [e.experiment_id for e in client.search_experiments()]
    if not experiments:
        return None
    found = client.search_logged_models(
        experiment_ids=experiments, filter_string=f"tags.`{DIGEST_TAG}` = '{digest}'", max_results=50
    )
    ready = [m for m in found if m.status == LoggedModelStatus.READY]
    return (ready[0].model_id, ready[0].source_run_id) if ready else None


def plan_exports(
    export: Mapping[str, Any],
    *sections: Mapping[str, Any],
) -> dict[str, Any]:
    """The heads over pooled vectors, FMDA's models and the fine-tuned encoders (EMU's ``save_encoders``) the configured
    ``export.sources`` train, as the tatoeba plan finds them.

    ``export``'s keys, types and ``sources`` are validated by ``parameters.export.Export`` when the run starts;
    only the ``only`` names, which depend on what the sources train, are checked here.

    Raises:
        PipelineConfigurationError: an ``only`` name no source trains.
    """
    export = dict(export or {})
    sources = [str(s) for s in export.get("sources") or SOURCES]
    params = model_sections(sections)
    heads = [s for s in expected_models(params, sources) if s.kind in KINDS]
    try:
        specs = only_models(heads, export.get("only"), "export.only")
    except ValueError as exc:
        raise PipelineConfigurationError(str(exc)) from None
    return {"sources": training_languages(params, sources), "models": [asdict(s) for s in specs]}


def export_models(
    shelf: Any,
    plan: Mapping[str, Any],
    encoder: LoadedEncoder,
    identity: Mapping[str, Any],
    extraction: Mapping[str, Any],
    export: Mapping[str, Any],
) -> dict[str, Any]:
    """Write every planned head found in ``shelf`` to ``<out_dir>/<source>/<method>``; a missing one is skipped
    with a warning naming its file and the command that makes it.

    With ``export.log_to_mlflow`` (default true) each export is also an MLflow logged model of the run
    that trained it (else of the export's own run), loadable as ``models:/<id>``.

    Returns:
        ``{"exported": [{name, directory, source_file, mlflow_model_uri, ...}], "skipped": [{method, path, reason}]}``.
    """
    specs = [ModelSpec(**spec) for spec in plan["models"]]
    loaded, skipped = load_models(shelf, specs, plan["sources"], identity, where="export")
    out_dir = Path(str(export.get("out_dir") or "data/06_models/exported"))
    exported = []
    prefix, max_length = str(extraction.get("prefix") or ""), extraction.get("max_length")
    for model in loaded:
        method = model.spec.name.split("@")[0]
        directory = out_dir / model.spec.source / method
        source = shelf.path(model.spec.path)
        provenance = {"name": model.spec.name, "source_file": str(source), "training_languages": list(model.languages)}
        if model.spec.kind == "encoder":  # a fine-tuned encoder directory: its pooling, no head
            record = {
                "method": method,
                "pooling": model.pooling,
                "prefix": prefix,
                "encoder": dict(shelf.provenance(model.spec.path)),
                **provenance,
            }
            st_model = encoder_sentence_transformer(source, model.pooling, prefix, max_length)
        else:
            record = export_record(
                model.saved, prefix, identity, {**provenance, "mlflow_run_id": model.saved.get("mlflow_run_id")}
            )
            st_model = exportable(model.saved, encoder, prefix, max_length)
        save_model(st_model, directory, record)
        logger.info(
            "export: %s → %s (MLflow model; sentence-transformers in %s/)", model.spec.name, directory, ST_SUBDIRECTORY
        )
        entry = {**record, "directory": str(directory)}
        if export.get("log_to_mlflow", True):
            entry.update(log_export(model, directory))
        exported.append(entry)
    logger.info("export: %d of %d models exported, %d skipped", len(exported), len(specs), len(skipped))
    return {"exported": exported, "skipped": skipped}


def log_export(model: Any, directory: Path) -> dict[str, Any]:
    """Log ``directory`` as an MLflow logged model (``tracking.log_exported_model``) unless the store already
    holds the same export (:func:`export_digest`): a rerun with nothing changed adds no copy to the
    artifact store (about 470 MB a model). The entry's ``mlflow_model_uri``, ``mlflow_logged_in_run``,
    ``export_digest`` and ``mlflow_logged_now`` (false: the earlier copy is the one named); empty without tracking.
    """
    run_id = (model.saved or {}).get("mlflow_run_id")
    if not run_id and mlflow.active_run() is None:
        # tracking.log_exported_model's own check, made before hashing (that module is in every
        # training's code digest: changing it would retrain every model)
        return {}  # no run to log into
    digest = export_digest(directory)
    logged, now = logged_export(digest), False
    if logged is None:
        logged, now = log_exported_model(run_id, model.spec.name, directory), True
        if logged is None:
            return {}
        mlflow.MlflowClient().set_logged_model_tags(logged[0], {DIGEST_TAG: digest})
        logger.info("export: %s logged to MLflow as models:/%s (run %s)", model.spec.name, *logged)
    else:
        logger.info("export: %s unchanged since models:/%s (run %s): not logged again", model.spec.name, *logged)
    return {
        "mlflow_model_uri": f"models:/{logged[0]}",
        "mlflow_logged_in_run": logged[1],
        "export_digest": digest,
        "mlflow_logged_now": now,
    }
