"""Training the meaning/language heads of the QE and STS pipelines (DREAM, MEAT, SEED and their ablations).

Every head reads pooled sentence vectors of the parallel training corpus, is built and trained
through the method registry (``methods/registry.py``) on all language pairs together, and
keeps the weights of its best validation epoch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.extraction import vectors_of
from language_agnostic.methods.centering import fit_language_means
from language_agnostic.methods.registry import TRAINED_METHODS, build, build_spec, check_ablations, get_method
from language_agnostic.tracking import log_child_model, log_child_run
from language_agnostic.training.data import InterleavedBatches, QuadrupletBatches
from language_agnostic.training.loop import TrainResult, TrainSettings, history_metrics, train

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HeadSpec:
    """``<pipeline>.methods.<name>``, parsed once (its keys and values checked by ``parameters/similarity.py``'s
    heads, or ``parameters/fmda.py:FmdaHead``, when a run starts).

    Attributes:
        loss_weights: Overrides of the method's loss weights.
        training: Overrides of ``<pipeline>.training`` for this head.
        activation: DREAM's activation between layers (the other heads take none).
        method: The registered method, when the head's name is not the method's name.
        pooling: The sentence vector this head reads; ``None``: ``<pipeline>.pooling``.
    """

    loss_weights: Mapping[str, float] = field(default_factory=dict)
    training: Mapping[str, Any] = field(default_factory=dict)
    activation: str = "none"
    method: str | None = None
    pooling: str | None = None


def head_spec(spec: Mapping[str, Any] | None) -> HeadSpec:
    """:class:`HeadSpec` from a parameter mapping (``None`` values mean the defaults)."""
    return HeadSpec(**{k: v for k, v in dict(spec or {}).items() if v is not None})


def corpus_languages(corpus: pd.DataFrame) -> list[str]:
    """The languages of the corpus, sorted: index = language id of every head."""
    return sorted(set(corpus["source_lang"]) | set(corpus["target_lang"]))


def fit_centering(manifest: Mapping[str, Any], corpus: pd.DataFrame, pooling: str) -> dict[str, Any]:
    """Per-language means of the training split (both sides), for mean centering."""
    train_rows = corpus[corpus["split"] == "train"]
    vectors = np.concatenate(
        [vectors_of(manifest, "train.source", pooling), vectors_of(manifest, "train.target", pooling)]
    )
    means = fit_language_means(vectors, [*train_rows["source_lang"], *train_rows["target_lang"]])
    return {
        "state_dict": {lang: torch.from_numpy(m.astype(np.float32)) for lang, m in means.items()},
        "method": "centering",
        "pooling": pooling,
    }


def pair_batches(
    manifest: Mapping[str, Any],
    corpus: pd.DataFrame,
    split: str,
    pooling: str,
    languages: list[str],
    batch_size: int,
    shuffle: bool,
) -> InterleavedBatches:
    """One quadruplet source per language pair, so that partners s', t' share the language of s, t."""
    rows = corpus[corpus["split"] == split].reset_index(drop=True)
    source, target = vectors_of(manifest, f"{split}.source", pooling), vectors_of(manifest, f"{split}.target", pooling)
    if len(source) != len(rows):
        raise ValueError(f"{split}: {len(source)} embeddings for {len(rows)} corpus rows; re-run the embedding node")
    sources = []
    for _, part in rows.groupby("pair", sort=True):
        index = part.index.to_numpy()
        ids = [np.full(len(index), languages.index(part[c].iloc[0])) for c in ("source_lang", "target_lang")]
        sources.append(QuadrupletBatches(source[index], target[index], ids[0], ids[1], batch_size, shuffle=shuffle))
    return InterleavedBatches(sources)


def head_options(method: str, activation: str) -> dict[str, Any]:
    """The registry options of a QE/STS head: DREAM's ``activation``; the others take none."""
    if method not in TRAINED_METHODS:
        raise ValueError(f"unknown method {method!r}; known: {list(TRAINED_METHODS)}")
    return {"activation": activation} if "activation" in get_method(method).options else {}


def fit_head(
    method: str,
    dim: int,
    n_languages: int,
    options: Mapping[str, Any],
    weights: Mapping[str, float],
    train_data: Any,
    dev_data: Any,
    settings: TrainSettings,
    dev_score: Callable[[torch.nn.Module], float] | None = None,
    where: str = "method",
) -> tuple[torch.nn.Module, TrainResult]:
    """Build a registered method over pooled sentence vectors and train it with its own losses.

    The one training path of every head over frozen vectors, in every pipeline (QE, STS, and
    FMDA's DREAM baseline and controls): seeded build, :func:`train` with the method's losses,
    early stopping on the dev/validation data (its loss, or ``dev_score`` when given).

    Returns:
        ``(model, result)``: the model holding the kept epoch's weights, and the training result.
    """
    torch.manual_seed(settings.seed)
    model = build(method, dim, n_languages, dict(options), where)
    result = train(
        model, lambda m, b: get_method(method).losses(m, b, weights, options), train_data, dev_data, settings, dev_score
    )
    return model, result


def train_head(
    manifest: Mapping[str, Any],
    corpus: pd.DataFrame,
    spec: Mapping[str, Any],
    training: Mapping[str, Any],
    pooling: str,
    method: str = "seed",
    pipeline: str = "qe",
    name: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Train one method on every pair together; keep the weights of the best validation epoch.

    Args:
        manifest: From :func:`embed_similarity_inputs`.
        corpus: The split corpus (languages and pairs of each row).
        spec: ``<pipeline>.methods.<method>`` (:class:`HeadSpec`): ``loss_weights``,
            ``activation`` (DREAM), ``training`` overrides (``lr``, ``patience``, ...),
            optionally ``method`` and ``pooling``.
        training: ``<pipeline>.training``: ``TrainSettings`` fields and ``batch_size``.
        pooling: Which sentence vector the heads read (``mean`` | ``cls``).
        method: ``dream`` | ``meat`` | ``seed``.
        pipeline: For run names and metric keys.
        name: The head's name in rows, runs and reports (default: ``method``; an ablation's
            name otherwise).

    Returns:
        ``(model, history)``: weights and metadata, and per-epoch losses for MLflow.
    """
    name = name or method
    parsed = head_spec(spec)
    method = parsed.method or method
    pooling = parsed.pooling or pooling
    settings, batch_size = head_training_settings(training, parsed)
    languages = corpus_languages(corpus)
    activation = str(parsed.activation)
    options, weights = head_options(method, activation), dict(parsed.loss_weights)
    dim = manifest["sets"]["train.source"].dim
    _, result = fit_head(
        method,
        dim,
        len(languages),
        options,
        weights,
        pair_batches(manifest, corpus, "train", pooling, languages, batch_size, True),
        pair_batches(manifest, corpus, "validation", pooling, languages, batch_size, False),
        settings,
        where=f"{pipeline}.methods.{name}",
    )
    logger.info("%s %s: best validation epoch %d of %d", pipeline, name, result.best_epoch, result.epochs_run)
    run_id = log_child_run(
        f"{pipeline}/{name}",
        {
            "method": method,
            "pooling": pooling,
            **dict(spec),
            **dict(training),
            **dict(parsed.training),
            "batch_size": batch_size,
        },
        result.history,
    )
    trained = {
        "state_dict": result.state_dict,
        "build": build_spec(method, dim, len(languages), options),
        "method": method,
        "name": name,
        "languages": languages,
        "pooling": pooling,
        "activation": activation,
        "loss_weights": weights,
        "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run,
        "mlflow_run_id": run_id,
    }
    log_child_model(run_id, f"{pipeline}_{name}", trained)
    return trained, history_metrics(result.history, f"{pipeline}.{name}")


def train_ablation(
    manifest: Mapping[str, Any],
    corpus: pd.DataFrame,
    spec: Mapping[str, Any],
    ablation: Mapping[str, Any],
    training: Mapping[str, Any],
    pooling: str,
    name: str,
    pipeline: str = "qe",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A head retrained with the ablation's loss weights over its own (``spec``) and, for a seed run,
    its training seed; otherwise as :func:`train_head`."""
    ablation = check_ablations({name: ablation}, pipeline)[name]
    weights = {**dict(spec.get("loss_weights") or {}), **dict(ablation["loss_weights"])}
    changed = {**dict(spec), "loss_weights": weights}
    if ablation["seed"] is not None:
        changed["training"] = {**dict(spec.get("training") or {}), "seed": ablation["seed"]}
    return train_head(
        manifest, corpus, changed, training, pooling, method=str(ablation["method"]), pipeline=pipeline, name=name
    )


def head_training_settings(training: Mapping[str, Any], parsed: HeadSpec) -> tuple[TrainSettings, int]:
    """``<pipeline>.training`` with a method's ``training`` over it: the loop's settings and the batch size."""
    params = {**dict(training), **dict(parsed.training)}
    batch_size = params.pop("batch_size", 512)
    return TrainSettings(**params), batch_size
