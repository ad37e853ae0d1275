"""Every trained model the other pipelines leave in ``data/06_models``, found from their parameters
and applied to new text.

Which models exist, where their files are and which languages each was trained on follow
from the configuration of the pipelines that train them, never from a hand-kept list:

- ``qe`` / ``sts``: DREAM, MEAT, SEED (``methods/registry.py:TRAINED_METHODS``), their ablations
  (``<p>.ablations``) and mean centering, in ``<p>/<name>.safetensors``; trained on the
  languages of ``qe.corpus.pairs`` / ``sts.corpus.languages`` and English;
- ``fmda``: per pair namespace of ``massive.pairs``, every FMDA variant of ``fmda.variants`` (and
  ``fmda_paper.variants``) in ``<ns>/fmda_<variant>.safetensors`` and every head of
  ``fmda.methods`` in ``<ns>/<name>.safetensors``; the unified model of
  ``fmda_paper.unified.pairs`` in ``fmda_unified.safetensors``; trained on the pair's locales;
- ``emu``: the fine-tuned encoders of ``emu.save_encoders`` in ``emu/encoders/<name>``; trained
  on ``emu.data.training_locale`` (labelled) and the adversarial locales (``emu.data.adversarial_locales``,
  else ``massive.locales``, unlabelled).

A model is named in rows as ``<method>@<training source>`` (``dream@qe``, ``fmda-two_stage@en_de``,
``emu@massive``): the same method trained on other data is another row.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from language_agnostic.corpora.languages import to_iso639_3
from language_agnostic.methods.fmda import method_name
from language_agnostic.methods.registry import TRAINED_METHODS, check_ablations, get_method, load_trained
from language_agnostic.methods.trained import check_encoder

logger = logging.getLogger(__name__)

SOURCES = ("qe", "sts", "fmda", "emu")
# bump when what fmda_meaning_table stores changes, so older cached tables are not reused
MEANING_CACHE_FORMAT = 1
KINDS = ("head", "fmda", "centering", "encoder")
# the parameter sections that say which trained models exist, in the order the plan nodes of
# tatoeba and export take them (pipelines/project_config.py:TRAINED_MODEL_PARAMS)
MODEL_SECTIONS = ("qe", "sts", "massive", "fmda", "fmda_paper", "emu")


@dataclass(frozen=True)
class ModelSpec:
    """One expected trained model.

    Attributes:
        name: Its ``method`` in rows: ``<method>@<training source>``.
        kind: ``head`` (a head over pooled vectors), ``fmda`` (over token states), ``centering``
            (per-language training means) or ``encoder`` (a fine-tuned encoder directory).
        source: The training source whose languages it saw (``qe``, ``sts``, a pair namespace,
            ``unified``, ``massive`` for EMU).
        path: Relative to the models directory.
        command: The command that makes it.
        embedding: The ``embedding`` of its rows (``meaning``, FMDA's ``m``, the pooling).
    """

    name: str
    kind: str
    source: str
    path: str
    command: str
    embedding: str = "meaning"


@dataclass
class LoadedModel:
    """An expected model that was found and loaded: its spec, languages and weights
    (``None`` for an encoder, loaded when embedding).
    """

    spec: ModelSpec
    languages: list[str]
    saved: dict[str, Any] | None = None
    pooling: str = "mean"
    module: Any = field(default=None, repr=False)


def _codes(codes: Sequence[str]) -> list[str]:
    """ISO 639-3 codes of configured language codes (those no Tatoeba language has are dropped)."""
    return sorted({c for c in (to_iso639_3(str(code)) for code in codes) if c})


def _pair_languages(pairs: Sequence[str]) -> list[str]:
    return [lang for pair in pairs for lang in str(pair).split("-")]


def _fmda_pairs(spec: Mapping[str, Any] | None, namespaces: Sequence[str]) -> list[str]:
    chosen = dict(spec or {}).get("pairs", "all")
    return list(namespaces) if chosen == "all" else [str(p) for p in chosen if str(p) in namespaces]


def _emu_languages(params: Mapping[str, Any], name: str) -> list[str]:
    emu = dict(params.get("emu") or {})
    spec = dict((emu.get("methods") or {}).get(name) or {})
    data = {**dict(emu.get("data") or {}), **dict(spec.get("data") or {})}
    adversarial = list(data.get("adversarial_locales") or []) or list(
        (params.get("massive") or {}).get("locales") or []
    )
    return [
        str(data.get("training_locale", "en-US")),
        *map(str, data.get("labelled_locales") or []),
        *map(str, adversarial),
    ]


def model_sections(sections: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """``{name: section}`` of the parameter sections given in :data:`MODEL_SECTIONS` order.

    Raises:
        ValueError: not one section for each name of :data:`MODEL_SECTIONS`.
    """
    if len(sections) != len(MODEL_SECTIONS):
        raise ValueError(f"expected the parameter sections {list(MODEL_SECTIONS)}, got {len(sections)} sections")
    return dict(zip(MODEL_SECTIONS, sections, strict=True))


def training_languages(params: Mapping[str, Any], sources: Sequence[str] = SOURCES) -> dict[str, list[str]]:
    """``{training source: [ISO 639-3 codes]}``: the languages each configured training set holds.

    Args:
        params: The project's parameters (at least the sections of ``sources`` and ``massive``).
        sources: Which pipelines' models count (``tatoeba.models.sources``).

    Returns:
        Keys ``qe``, ``sts``, every ``massive.pairs`` namespace (FMDA and its heads), ``unified``
        (when ``fmda_paper.unified.pairs`` lists pairs) and ``massive`` (EMU's locales).
    """
    out: dict[str, list[str]] = {}
    if "qe" in sources:
        out["qe"] = _codes(_pair_languages(((params.get("qe") or {}).get("corpus") or {}).get("pairs") or []))
    if "sts" in sources:
        languages = ((params.get("sts") or {}).get("corpus") or {}).get("languages") or {}
        out["sts"] = _codes([*languages, "en"])  # keys are ISO 639-3; every pair is <xx>-en
    if "fmda" in sources:
        pairs = dict((params.get("massive") or {}).get("pairs") or {})
        for namespace, pair in pairs.items():
            out[str(namespace)] = _codes([pair["source"], pair["target"]])
        unified = [
            str(p)
            for p in ((params.get("fmda_paper") or {}).get("unified") or {}).get("pairs") or []
            if str(p) in pairs
        ]
        if unified:
            out["unified"] = sorted({lang for ns in unified for lang in out[ns]})
    if "emu" in sources:
        names = [str(n) for n in (params.get("emu") or {}).get("save_encoders") or []]
        out["massive"] = sorted({lang for name in names for lang in _codes(_emu_languages(params, name))})
    return out


def expected_models(params: Mapping[str, Any], sources: Sequence[str] = SOURCES) -> list[ModelSpec]:
    """Every model the configured pipelines of ``sources`` train, with its file and the command that makes it."""

    specs: list[ModelSpec] = []
    for pipeline in ("qe", "sts"):
        if pipeline not in sources:
            continue
        command = f"kedro run --pipelines={pipeline}"
        specs.append(
            ModelSpec(
                f"centering@{pipeline}", "centering", pipeline, f"{pipeline}/centering.safetensors", command, "mean"
            )
        )
        ablations = check_ablations((params.get(pipeline) or {}).get("ablations"), pipeline)
        for name in (*TRAINED_METHODS, *ablations):
            specs.append(ModelSpec(f"{name}@{pipeline}", "head", pipeline, f"{pipeline}/{name}.safetensors", command))
    if "fmda" in sources:
        namespaces = [str(ns) for ns in dict((params.get("massive") or {}).get("pairs") or {})]
        fmda, paper = dict(params.get("fmda") or {}), dict(params.get("fmda_paper") or {})
        variants = [
            (name, spec, "kedro run --pipelines=fmda") for name, spec in dict(fmda.get("variants") or {}).items()
        ]
        variants += [
            (name, spec, "kedro run --pipelines=fmda --env=paper")
            for name, spec in dict(paper.get("variants") or {}).items()
        ]
        for namespace in namespaces:
            for name, spec, command in variants:
                if namespace in _fmda_pairs(spec, namespaces):
                    specs.append(
                        ModelSpec(
                            f"{method_name(str(name))}@{namespace}",
                            "fmda",
                            namespace,
                            f"{namespace}/fmda_{name}.safetensors",
                            command,
                            "m",
                        )
                    )
            for name, spec in dict(fmda.get("methods") or {}).items():
                if namespace in _fmda_pairs(spec, namespaces):
                    method = str(dict(spec or {}).get("method") or name)
                    specs.append(
                        ModelSpec(
                            f"{method}@{namespace}",
                            "head",
                            namespace,
                            f"{namespace}/{name}.safetensors",
                            "kedro run --pipelines=fmda",
                        )
                    )
        if [p for p in (paper.get("unified") or {}).get("pairs") or [] if str(p) in namespaces]:
            specs.append(
                ModelSpec(
                    "fmda-unified@unified",
                    "fmda",
                    "unified",
                    "fmda_unified.safetensors",
                    "kedro run --pipelines=fmda --env=paper",
                    "m",
                )
            )
    if "emu" in sources:
        emu = dict(params.get("emu") or {})
        for name in [str(n) for n in emu.get("save_encoders") or []]:
            options = dict((dict((emu.get("methods") or {}).get(name) or {})).get("options") or {})
            specs.append(
                ModelSpec(
                    f"{name}@massive",
                    "encoder",
                    "massive",
                    f"emu/encoders/{name.replace('-', '_')}",
                    f"kedro run --pipelines=emu (with {name!r} in emu.save_encoders)",
                    str(options.get("pooling", "mean")),
                )
            )
    return specs


def only_models(specs: Sequence[ModelSpec], only: str | Sequence[str] | None, where: str) -> list[ModelSpec]:
    """``specs`` limited to the ``<method>@<source>`` names of ``only`` (``None``: all of them).

    Raises:
        ValueError: a name that is not one of ``specs``, naming the parameter ``where`` and the known names.
    """
    if not only:
        return list(specs)
    names = [only] if isinstance(only, str) else [str(n) for n in only]
    unknown = sorted(set(names) - {s.name for s in specs})
    if unknown:
        raise ValueError(
            f"{where}: {unknown} are not models of the configured sources; known: {sorted(s.name for s in specs)}"
        )
    return [s for s in specs if s.name in names]


def load_models(
    shelf: Any,
    specs: Sequence[ModelSpec],
    languages: Mapping[str, Sequence[str]],
    identity: Mapping[str, Any],
    check: Any = None,
    where: str = "tatoeba",
) -> tuple[list[LoadedModel], list[dict[str, str]]]:
    """The expected models that are present and usable; the others with the reason, each logged as a warning.

    A model is skipped, never fatal, when its file is missing (the warning names the file and
    the command that makes it), was saved before the method registry (no ``build`` entry), or was
    trained on another encoder than the configured one (``methods/trained.py:check_encoder``).

    Args:
        shelf: The models directory (``datasets/directory.py:ModelShelf``).
        specs: From :func:`expected_models`.
        languages: From :func:`training_languages`.
        identity: The configured encoder's identity.
        check: ``check_encoder``'s replacement (tests); default the real one.
        where: The pipeline asking (``tatoeba``, ``export``), named in warnings and messages.

    Returns:
        ``(loaded, skipped)``; ``skipped`` rows have ``method``, ``path`` and ``reason``.
    """

    check = check or check_encoder
    loaded, skipped = [], []

    def skip(spec: ModelSpec, reason: str) -> None:
        logger.warning("%s: %s skipped: %s", where, spec.name, reason)
        skipped.append({"method": spec.name, "path": str(shelf.path(spec.path)), "reason": reason})

    for spec in specs:
        spec_languages = list(languages.get(spec.source, []))
        if spec.kind == "encoder":
            problem = _encoder_problem(shelf, spec, identity)
            model = None if problem else LoadedModel(spec, spec_languages, pooling=spec.embedding)
        else:
            model, problem = _saved_model(shelf, spec, spec_languages, identity, check, where)
        if model is None:
            skip(spec, problem)
        else:
            loaded.append(model)
    logger.info("%s: %d of %d expected models loaded, %d skipped", where, len(loaded), len(specs), len(skipped))
    return loaded, skipped


def _encoder_problem(shelf: Any, spec: ModelSpec, identity: Mapping[str, Any]) -> str:
    """Why the fine-tuned encoder of ``spec`` cannot be used (missing, or from another encoder), or ``""``."""
    path = shelf.path(spec.path)
    if not shelf.has_encoder(spec.path):
        return f"{path} not found (no config.json); `{spec.command}` makes it"
    base = _base_encoder(shelf.provenance(spec.path))
    if (
        base.get("weights_sha256")
        and identity.get("weights_sha256")
        and base["weights_sha256"] != identity["weights_sha256"]
    ):
        return (
            f"{path} was fine-tuned from encoder {base.get('name')!r} "
            f"(weights {str(base['weights_sha256'])[:12]}), "
            f"but embeddings.encoder.name configures {identity.get('name')!r} "
            f"(weights {str(identity['weights_sha256'])[:12]}); "
            "its rows would be compared with another encoder's"
        )
    return ""


def _saved_model(
    shelf: Any, spec: ModelSpec, languages: list[str], identity: Mapping[str, Any], check: Any, where: str
) -> tuple[LoadedModel | None, str]:
    """The saved artifact of ``spec`` (centring vectors or a trained head) loaded, or ``None`` and why not."""
    path = shelf.path(spec.path)
    if not shelf.has_artifact(spec.path):
        return None, f"{path} not found; `{spec.command}` makes it"
    saved = shelf.artifact(spec.path)
    if spec.kind == "centering":
        model = LoadedModel(spec, languages, saved, str(saved.get("pooling", "mean")))
        model.module = {str(k): v.float().numpy() for k, v in saved["state_dict"].items()}
        return model, ""
    if "build" not in saved:
        return None, f"{path} was saved before the method registry (no 'build' entry); rerun `{spec.command}`"
    try:
        check(saved, identity, str(path), f"{where}.models")
    except ValueError as exc:
        return None, str(exc)
    method, module = load_trained(saved)
    if (method.name == "fmda") != (spec.kind == "fmda"):
        return None, f"{path} holds a {method.name!r} model, not the expected {spec.kind}"
    return LoadedModel(spec, languages, saved, str(saved.get("pooling", "mean")), module), ""


def _base_encoder(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The identity of the encoder a fine-tuned one started from, from its ``finetuned.json``.

    ``save_encoder`` records the saved encoder's identity under ``base``; EMU's own identity
    names its starting encoder under ``base`` again, so the innermost one with weights is it.
    """
    found: dict[str, Any] = {}
    node = dict(provenance or {})
    while isinstance(node.get("base"), Mapping):
        node = dict(node["base"])
        if node.get("weights_sha256"):
            found = node
    return found


def spec_rows(models: Sequence[LoadedModel]) -> list[dict[str, Any]]:
    """The loaded models as JSON-able rows (for the report)."""
    return [{**asdict(m.spec), "languages": list(m.languages), "pooling": m.pooling} for m in models]


def head_meaning(model: LoadedModel, vectors: np.ndarray) -> np.ndarray:
    """A pooled-vector head's meaning embedding of ``vectors`` (the head's own pooling, chosen by the caller)."""

    method = get_method(str(model.saved["build"]["method"]))
    with torch.no_grad():
        return method.encode(model.module, torch.from_numpy(np.asarray(vectors, dtype=np.float32)))["meaning"].numpy()


def fmda_meanings(
    models: Sequence[LoadedModel], entry: Any, index: np.ndarray, batch_size: int = 512
) -> list[np.ndarray]:
    """FMDA's meaning embedding ``m`` of the texts at ``index`` of a store entry, for several models at once.

    The token states of a batch are gathered (and converted from fp16) once and given to every
    model: the gather, not the models' affine layers, is what costs. Batches hold texts of
    similar length (Tatoeba's run from 3 to over 100 tokens: padding every batch to its longest
    text made this 5x slower); the results come back in ``index`` order.
    """
    index = np.asarray(index, dtype=np.int64)
    order = np.argsort(np.asarray(entry.lengths)[index], kind="stable")
    out: list[list[np.ndarray]] = [[] for _ in models]
    with torch.no_grad():
        for start in range(0, len(index), batch_size):
            states, mask = entry.token_states(index[order[start : start + batch_size]])
            states_t, mask_t = torch.from_numpy(np.asarray(states, dtype=np.float32)), torch.from_numpy(mask)
            for i, model in enumerate(models):
                out[i].append(model.module(states_t, mask_t)["m"].numpy())
    results = []
    for parts in out:
        sorted_ = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
        unsorted = np.empty_like(sorted_)
        unsorted[order] = sorted_
        results.append(unsorted)
    return results


def weights_sha256(saved: Mapping[str, Any]) -> str:
    """Hash of a trained model's build spec and weights (what decides its outputs)."""
    digest = hashlib.sha256(json.dumps(saved.get("build") or {}, sort_keys=True).encode())
    for name in sorted(saved["state_dict"]):
        digest.update(name.encode())
        digest.update(saved["state_dict"][name].detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def fmda_meaning_table(model: LoadedModel, entry: Any, batch_size: int = 512) -> np.ndarray:
    """FMDA's ``m`` of every text of a store entry, computed once and cached beside the entry.

    Tatoeba applies some fifteen FMDA models to 158k sentences; recomputing them on every run
    took most of a warm rerun. The table is keyed by the entry (its texts and encoder) and the
    model's weights, stored as float16 (as the token states it is computed from) under
    ``<store>/derived/<key>/``, and always read back from there, so a cold and a warm run score
    the same numbers.

    Returns:
        ``(len(entry), dim)`` float16, memory-mapped.
    """
    key_inputs = {
        "format": MEANING_CACHE_FORMAT,
        "entry": Path(entry.directory).name,
        "texts_sha256": entry.meta.get("texts_sha256"),
        "model": weights_sha256(model.saved),
        "embedding": "m",
    }
    key = hashlib.sha256(json.dumps(key_inputs, sort_keys=True).encode()).hexdigest()[:24]
    directory = Path(entry.namespace_dir) / "derived" / key
    if not (directory / "meta.json").is_file():
        work = directory.with_name(key + ".tmp")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        (table,) = fmda_meanings([model], entry, np.arange(len(entry)), batch_size)
        np.save(work / "m.npy", table.astype(np.float16))
        (work / "meta.json").write_text(
            json.dumps({**key_inputs, "method": model.spec.name, "n_texts": len(table)}, indent=2)
        )
        shutil.rmtree(directory, ignore_errors=True)
        os.replace(work, directory)
        logger.info("%s: meaning embeddings of %d texts cached in %s", model.spec.name, len(table), directory)
    else:
        logger.info("%s: meaning embeddings cache hit %s", model.spec.name, directory)
    return np.load(directory / "m.npy", mmap_mode="r")


def control_meaning(model: torch.nn.Module, vectors: np.ndarray, method: str) -> np.ndarray:
    """The control's meaning embedding of pooled vectors (``LinearHead`` output, DREAM's ``MLP_M``)."""
    model.eval()
    device = next(model.parameters()).device  # also mid-training on an accelerator (dev-score selection)
    with torch.no_grad():
        inputs = torch.from_numpy(np.array(vectors, dtype=np.float32)).to(device)
        return get_method(method).encode(model, inputs)["meaning"].cpu().numpy()
