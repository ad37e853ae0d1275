"""Nodes of the ``export`` pipeline: find the trained heads the configured pipelines leave, write each
as a sentence-transformers directory."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.methods.apply import ModelSpec, expected_models, load_models, training_languages
from language_agnostic.methods.export import export_sentence_transformer
from language_agnostic.pipelines.project_config import PipelineConfigurationError

logger = logging.getLogger(__name__)

EXPORT_KEYS = {"sources", "only", "out_dir"}
SOURCES = ("qe", "sts", "fmda")  # the pipelines whose heads over pooled vectors are exported


def plan_exports(
    export: Mapping[str, Any],
    qe: Mapping[str, Any],
    sts: Mapping[str, Any],
    massive: Mapping[str, Any],
    fmda: Mapping[str, Any],
    fmda_paper: Mapping[str, Any],
    emu: Mapping[str, Any],
) -> dict[str, Any]:
    """The heads over pooled vectors the configured ``export.sources`` train, as the tatoeba plan finds them.

    Raises:
        PipelineConfigurationError: an unknown key or source, or an ``only`` name no source trains.
    """
    export = dict(export or {})
    unknown = sorted(set(export) - EXPORT_KEYS)
    if unknown:
        raise PipelineConfigurationError(f"export: unknown key(s) {unknown}; known: {sorted(EXPORT_KEYS)}")
    sources = [str(s) for s in export.get("sources") or SOURCES]
    other = sorted(set(sources) - set(SOURCES))
    if other:
        raise PipelineConfigurationError(
            f"export.sources: {other} have no pooled heads to export; known: {list(SOURCES)}"
        )
    params = {"qe": qe, "sts": sts, "massive": massive, "fmda": fmda, "fmda_paper": fmda_paper, "emu": emu}
    specs = [s for s in expected_models(params, sources) if s.kind == "head"]
    only = export.get("only")
    if only:
        only = [only] if isinstance(only, str) else [str(n) for n in only]
        missing = sorted(set(only) - {s.name for s in specs})
        if missing:
            known = sorted(s.name for s in specs)
            raise PipelineConfigurationError(
                f"export.only: {missing} are not heads of export.sources {sources}; known: {known}"
            )
        specs = [s for s in specs if s.name in only]
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

    Returns:
        ``{"exported": [{name, directory, source_file, ...}], "skipped": [{method, path, reason}]}``.
    """
    specs = [ModelSpec(**spec) for spec in plan["models"]]
    loaded, skipped = load_models(shelf, specs, plan["sources"], identity)
    out_dir = Path(str(export.get("out_dir") or "data/06_models/sentence_transformers"))
    exported = []
    for model in loaded:
        method = model.spec.name.split("@")[0]
        directory = out_dir / model.spec.source / method
        provenance = {
            "name": model.spec.name,
            "source_file": str(shelf.path(model.spec.path)),
            "training_languages": list(model.languages),
            "mlflow_run_id": model.saved.get("mlflow_run_id"),
        }
        export_sentence_transformer(
            model.saved,
            encoder,
            directory,
            str(extraction.get("prefix") or ""),
            extraction.get("max_length"),
            provenance,
        )
        logger.info("export: %s → %s (sentence-transformers)", model.spec.name, directory)
        exported.append({**provenance, "directory": str(directory)})
    logger.info("export: %d of %d heads exported, %d skipped", len(exported), len(specs), len(skipped))
    return {"exported": exported, "skipped": skipped}
