"""Nodes of the ``fmda`` pipeline: thin adapters over ``methods``, ``training``, ``evaluation`` and ``reporting``.

Per language pair: embed the pair's utterances (token states) and masked texts (first-token
states) and the template-retrieval sets; train FMDA and the DREAM baseline on train with early
stopping on dev; evaluate raw, mean-centred, DREAM (and the other ``fmda.methods``) and FMDA embeddings on cross-lingual
semantic retrieval (test pairs) and monolingual template retrieval (accuracy@1 and MAP).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.encoders.extraction import (
    EmbeddingSet,
    EmbeddingStore,
    extract_embedding_sets,
    extraction_settings,
)
from language_agnostic.encoders.loading import LoadedEncoder

# the training, scoring and figure nodes are the core functions themselves (the scoring ones
# also log their rows to the model's MLflow child run: evaluation returns numbers only)
from language_agnostic.evaluation import fmda as fmda_evaluation
from language_agnostic.evaluation.fmda import evaluate_baselines
from language_agnostic.methods.fmda import ALL_TOGETHER, method_name
from language_agnostic.methods.registry import POOLED_METHODS
from language_agnostic.reporting.figures import plot_embeddings
from language_agnostic.reporting.fmda import fmda_tables
from language_agnostic.tracking import log_child_metrics, metric_key
from language_agnostic.training.fmda import (
    SELECTION,
    pool_rows,
    train_fmda,
    train_fmda_two_stage,
    train_fmda_unified,
    train_pooled_head,
)

__all__ = [
    "ALL_TOGETHER",
    "POOLED_METHODS",
    "SELECTION",
    "embed_fmda_inputs",
    "embed_template_pairs",
    "evaluate_baselines",
    "evaluate_fmda",
    "evaluate_head",
    "method_name",
    "plot_embeddings",
    "pool_rows",
    "report_fmda",
    "train_fmda",
    "train_fmda_two_stage",
    "train_fmda_unified",
    "train_pooled_head",
]


def _logged(score: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
    """``score`` (an :mod:`evaluation.fmda` function of a manifest, a trained model, ...) as a node whose
    rows are also logged to that model's MLflow child run."""

    @functools.wraps(score)
    def node_function(manifest: Mapping[str, Any], model: Mapping[str, Any], *rest: Any) -> pd.DataFrame:
        rows = score(manifest, model, *rest)
        log_child_metrics(model.get("mlflow_run_id"), rows)
        return rows

    return node_function


evaluate_fmda = _logged(fmda_evaluation.evaluate_fmda)
evaluate_head = _logged(fmda_evaluation.evaluate_head)


logger = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")


def _split_rows(masked: pd.DataFrame, locale: str, split: str) -> pd.DataFrame:
    rows = masked[(masked["locale"] == locale) & (masked["partition"] == split)]
    return rows.sort_values("id", key=lambda ids: ids.astype(int)).reset_index(drop=True)


def _embed_lists(
    encoder: LoadedEncoder,
    store: EmbeddingStore,
    extraction: Mapping[str, Any],
    with_tokens: Mapping[str, list[str]],
    sentences: Mapping[str, list[str]],
) -> dict[str, EmbeddingSet]:
    """Each named text list embedded: ``with_tokens`` with token states, ``sentences`` without.

    Every list goes through the per-text store at once: a text in several lists is encoded once,
    token-state lists first so a sentence list finds their texts already stored.
    """
    return {
        **extract_embedding_sets(encoder, with_tokens, extraction_settings(extraction, token_states=True), store),
        **extract_embedding_sets(encoder, sentences, extraction_settings(extraction), store),
    }


def embed_fmda_inputs(
    masked: pd.DataFrame,
    single: pd.DataFrame,
    multi: pd.DataFrame,
    pair: Mapping[str, str],
    encoder: LoadedEncoder,
    store: EmbeddingStore,
    extraction: Mapping[str, Any],
) -> dict[str, Any]:
    """Everything FMDA and its baselines read, via the embedding cache.

    Returns:
        A manifest: ``sets`` (``<split>.<side>.utt`` with token states, ``<split>.<side>.tp`` /
        ``.rs`` first-token states of the masked texts for train/dev, ``template.<set>.<side>.
        source/target`` with token states), ``ids`` per split, the locales, and the template
        sets' sizes.
    """
    locales = {"source": pair["source"], "target": pair["target"]}
    with_tokens: dict[str, list[str]] = {}
    sentences: dict[str, list[str]] = {}
    ids: dict[str, list[str]] = {}
    for split in SPLITS:
        rows = {side: _split_rows(masked, locale, split) for side, locale in locales.items()}
        if rows["source"]["id"].tolist() != rows["target"]["id"].tolist():
            raise ValueError(f"{split}: ids of {locales['source']} and {locales['target']} do not align")
        ids[split] = rows["source"]["id"].tolist()
        for side, table in rows.items():
            with_tokens[f"{split}.{side}.utt"] = table["utt"].tolist()
            if split != "test":
                sentences[f"{split}.{side}.tp"] = table["template_text"].tolist()
                sentences[f"{split}.{side}.rs"] = table["residual_text"].tolist()
    sizes = {}
    for name, table in (("single", single), ("multi", multi)):
        for side, locale in locales.items():
            rows = table[table["locale"] == locale].sort_values(
                ["source_id", "target_index"], key=lambda c: c.astype(int)
            )
            if rows.empty:
                logger.warning("no %s template-retrieval set for %s: not evaluated", name, locale)
                continue
            sources = rows.drop_duplicates("source_id")["source_utt"].tolist()
            with_tokens[f"template.{name}.{side}.source"] = sources
            with_tokens[f"template.{name}.{side}.target"] = rows["target_utt"].tolist()
            sizes[f"{name}.{side}"] = len(sources)
    sets = _embed_lists(encoder, store, extraction, with_tokens, sentences)
    logger.info(
        "fmda inputs for %s-%s: %s pairs (train/dev/test), template sets %s",
        locales["source"],
        locales["target"],
        [len(ids[s]) for s in SPLITS],
        sizes,
    )
    return {
        "sets": sets,
        "ids": ids,
        "source_locale": locales["source"],
        "target_locale": locales["target"],
        "template_sizes": sizes,
    }


def embed_template_pairs(
    pairs: pd.DataFrame,
    masked: pd.DataFrame,
    pair: Mapping[str, str],
    encoder: LoadedEncoder,
    store: EmbeddingStore,
    extraction: Mapping[str, Any],
    holdout: Mapping[str, Any],
) -> dict[str, Any]:
    """Monolingual template pairs of both languages of ``pair``, for stage 1 of two-stage FMDA (§4.6).

    Each pair is a train utterance and a copy with other slot values (``massive_template_train_pairs``).
    Both share one template, so both reconstruction targets are the first-token state of the
    source's template-masked text. A seeded ``holdout.dev_fraction`` of source utterances is kept
    out for early stopping (MASSIVE's dev split is not used to build template pairs).

    Returns:
        A manifest: ``sets`` (``<split>.<side>.a`` / ``.b`` token states of the two utterances,
        ``<split>.<side>.tp`` the target), ``ids`` (source ids per ``<split>.<side>``), locales.
    """
    fraction, seed = float(holdout.get("dev_fraction", 0.1)), int(holdout.get("seed", 0))
    with_tokens: dict[str, list[str]] = {}
    sentences: dict[str, list[str]] = {}
    ids: dict[str, list[str]] = {}
    for side in ("source", "target"):
        locale = pair[side]
        rows = (
            pairs[pairs["locale"] == locale]
            .sort_values("source_id", key=lambda c: c.astype(int))
            .reset_index(drop=True)
        )
        if rows.empty:
            raise ValueError(f"no template train pairs for {locale}: check massive.template_pairs")
        texts = _split_rows(masked, locale, "train").set_index("id")["template_text"]
        missing = sorted(set(rows["source_id"]) - set(texts.index))
        if missing:
            raise ValueError(
                f"template pairs of {locale} name {len(missing)} utterance(s) not in train, e.g. {missing[:3]}"
            )
        dev = np.random.default_rng(seed).random(len(rows)) < fraction
        for split, chosen in (("train", rows[~dev]), ("dev", rows[dev])):
            ids[f"{split}.{side}"] = chosen["source_id"].tolist()
            with_tokens[f"{split}.{side}.a"] = chosen["source_utt"].tolist()
            with_tokens[f"{split}.{side}.b"] = chosen["target_utt"].tolist()
            sentences[f"{split}.{side}.tp"] = texts.loc[chosen["source_id"]].tolist()
        logger.info(
            "template pairs %s: %d train / %d held out for early stopping", locale, int((~dev).sum()), int(dev.sum())
        )
    sets = _embed_lists(encoder, store, extraction, with_tokens, sentences)
    return {"sets": sets, "ids": ids, "source_locale": pair["source"], "target_locale": pair["target"]}


def report_fmda(*tables: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any], str]:
    """All rows: the metrics table, MLflow metrics and the markdown tables (:func:`fmda_tables`)."""
    rows = pd.concat(tables, ignore_index=True)
    metrics = {metric_key(r): {"value": float(r.value), "step": 0} for r in rows.itertuples()}
    return rows, metrics, fmda_tables(rows)
