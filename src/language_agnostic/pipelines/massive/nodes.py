"""Nodes of the ``massive`` pipeline: thin adapters from the catalog to ``corpora`` and ``text``.

Parsing, validating and joining the archive are ``corpora/massive_table.py``'s (``parse_massive``,
``build_pair_table`` are used as nodes directly).

Every node is a pure function of its inputs and parameters; every node logs the rows it
took in, the rows it gave out and the rows it rejected, and returns those counts.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.corpora.errors import CorpusFormatError
from language_agnostic.corpora.massive_table import (
    locale_tag,
)
from language_agnostic.encoders.loading import load_tokenizer
from language_agnostic.reporting.massive import summary_markdown
from language_agnostic.text.masking import template_and_residual
from language_agnostic.text.negative_pool import BleuSettings, negative_pool_mask
from language_agnostic.text.templates import build_template_set

logger = logging.getLogger(__name__)


def resolve_mask_token(masking: Mapping[str, Any], encoder: Mapping[str, Any]) -> str:
    """The mask token to use: ``massive.masking.mask_token``, or the encoder's own for ``auto``.

    Args:
        masking: ``massive.masking``.
        encoder: ``embeddings.encoder`` (``name``, ``bundled_dir``), read only for ``auto``.

    Raises:
        CorpusFormatError: when ``auto`` meets a tokenizer without a mask token.
    """
    token = str(masking.get("mask_token", "auto"))
    if token != "auto":
        return token

    tokenizer = load_tokenizer(
        str(encoder["name"]), encoder.get("bundled_dir", "data/06_models/encoders/multilingual-e5-small-q4")
    )
    if not tokenizer.mask_token:
        raise CorpusFormatError(
            f"massive.masking.mask_token is 'auto' but encoder {encoder['name']!r} has no mask token; "
            "set one explicitly"
        )
    logger.info("mask token from encoder %s: %r", encoder["name"], tokenizer.mask_token)
    return str(tokenizer.mask_token)


def build_masked_texts(
    utterances: pd.DataFrame, masking: Mapping[str, Any], mask_token: str
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """FMDA's template (slots masked) and residual (carrier masked) texts for every utterance.

    Args:
        utterances: Output of :func:`parse_massive`.
        masking: ``massive.masking``: ``unit`` (``token``/``span``).
        mask_token: From :func:`resolve_mask_token`.

    Returns:
        ``(texts, counts)`` with ``locale, id, partition, utt, template_text, residual_text,
        n_slot_tokens``.
    """
    unit = masking.get("unit", "token")
    records = []
    for row in utterances.itertuples(index=False):
        template, residual = template_and_residual(row.utt, row.token_starts, row.token_ends, row.bio, mask_token, unit)
        records.append(
            {
                "locale": row.locale,
                "id": row.id,
                "partition": row.partition,
                "utt": row.utt,
                "template_text": template,
                "residual_text": residual,
                "n_slot_tokens": int(sum(label != "O" for label in row.bio)),
            }
        )
    texts = pd.DataFrame(records)
    counts = {
        "masked_texts": {
            "rows_in": len(utterances),
            "rows_out": len(texts),
            "without_slots": int((texts["n_slot_tokens"] == 0).sum()) if len(texts) else 0,
        }
    }
    logger.info(
        "masked texts: %d utterances in, %d out (%d have no slot: template text = utterance)",
        len(utterances),
        len(texts),
        counts["masked_texts"]["without_slots"],
    )
    return texts, counts


def _template_sets(
    utterances: pd.DataFrame,
    partition: str,
    value_partitions: list[str],
    n_targets: int,
    seed: int,
    name: str,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Template sets of ``n_targets`` per source for every locale (see ``text.templates``)."""
    frames = []
    counts: dict[str, Any] = {}
    for locale, group in utterances.groupby("locale", sort=False):
        records = group.to_dict("records")
        sources = [r for r in records if r["partition"] == partition]
        values = [r for r in records if r["partition"] in value_partitions]
        out, c = build_template_set(sources, values, n_targets, seed, name)
        frames.append(pd.DataFrame(out))
        counts[locale_tag(str(locale))] = c
        logger.info(
            "template set %r %s: %d %s utterances in, %d sets of %d out; skipped %d without "
            "slots, %d without enough other values",
            name,
            locale,
            c["sources_in"],
            partition,
            c["sets_out"],
            n_targets,
            c.get("skipped_no_slot", 0),
            c.get("skipped_no_alternative", 0),
        )
    return pd.concat(frames, ignore_index=True), counts


def build_template_retrieval_sets(
    utterances: pd.DataFrame, params: Mapping[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Single-target (accuracy@1) and multi-target (MAP) template-retrieval evaluation sets.

    Args:
        utterances: Output of :func:`parse_massive`.
        params: ``massive.template_retrieval``: ``partition``, ``value_partitions``,
            ``n_targets`` (``{single: 1, multi: 5}``) and ``seed``.

    Returns:
        ``(single, multi, counts)``.
    """
    n_targets = params["n_targets"]
    args = (params["partition"], list(params["value_partitions"]))
    single, c1 = _template_sets(utterances, *args, int(n_targets["single"]), int(params["seed"]), "single")
    multi, c5 = _template_sets(utterances, *args, int(n_targets["multi"]), int(params["seed"]), "multi")
    return single, multi, {"template_single": c1, "template_multi": c5}


def build_template_train_pairs(
    utterances: pd.DataFrame, params: Mapping[str, Any]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Monolingual template pairs from the train split, for FMDA's two-stage training (§4.6).

    Args:
        utterances: Output of :func:`parse_massive`.
        params: ``massive.template_pairs``: ``partition``, ``value_partitions``, ``seed``.

    Returns:
        ``(pairs, counts)``.
    """
    pairs, counts = _template_sets(
        utterances,
        params["partition"],
        list(params["value_partitions"]),
        1,
        int(params["seed"]),
        "train_pairs",
    )
    return pairs, {"template_train_pairs": counts}


def build_negative_pools(utterances: pd.DataFrame, params: Mapping[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per-locale, per-partition negative pools: utterances with no similar other utterance of the same partition.

    FMDA draws training negatives from the train pool (§4.2); the dev pool, built by the same
    rule among dev utterances, gives the dev loss negatives of the same kind, so early stopping
    measures what training optimises.

    Args:
        utterances: Output of :func:`parse_massive`.
        params: ``massive.negative_pool``: ``partitions`` (default ``[train, dev]``),
            ``threshold`` (BLEU 0–1 scale), ``direction``, ``smooth_method``, ``smooth_value``,
            ``effective_order``, ``lowercase``, ``tokenize`` (``{default: 13a, ja-JP: ja-mecab,
            ...}``), ``block_size``; validated by ``parameters.massive.NegativePool`` when the run starts.

    Returns:
        ``(pool, counts)``: ``locale, partition, id, utt`` of every pooled utterance, and pool
        sizes per locale and partition (``{locale: {partition: {in, pool_out, pool_fraction}}}``).
    """
    tokenize = params.get("tokenize", {})
    partitions = params.get("partitions", ["train", "dev"])
    frames = []
    counts: dict[str, Any] = {}
    for locale, group in utterances.groupby("locale", sort=False):
        settings = BleuSettings(
            tokenize=str(tokenize.get(locale, tokenize.get("default", "13a"))),
            smooth_method=str(params.get("smooth_method", "none")),
            smooth_value=params.get("smooth_value"),
            effective_order=bool(params.get("effective_order", True)),
            lowercase=bool(params.get("lowercase", False)),
        )
        for partition in partitions:
            rows = group[group["partition"] == partition]
            if rows.empty:
                raise ValueError(f"massive.negative_pool.partitions: no {partition!r} utterances of {locale}")
            mask = negative_pool_mask(
                rows["utt"].tolist(),
                threshold=float(params["threshold"]),
                direction=params.get("direction", "both"),
                settings=settings,
                block_size=int(params.get("block_size", 1024)),
            )
            pooled = rows.loc[np.asarray(mask), ["locale", "partition", "id", "utt"]]
            frames.append(pooled)
            counts.setdefault(locale_tag(str(locale)), {})[str(partition)] = {
                "in": len(rows),
                "pool_out": len(pooled),
                "pool_fraction": round(len(pooled) / max(len(rows), 1), 4),
            }
            logger.info(
                "negative pool %s %s (tokenize=%s, smooth=%s, threshold=%s, direction=%s): %d "
                "utterances in, %d in the pool (%.1f %%)",
                locale,
                partition,
                settings.tokenize,
                settings.smooth_method,
                params["threshold"],
                params.get("direction", "both"),
                len(rows),
                len(pooled),
                100 * len(pooled) / max(len(rows), 1),
            )
    return pd.concat(frames, ignore_index=True), {"negative_pool": counts}


def _flatten(prefix: str, value: Any, out: dict[str, float]) -> None:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), sub, out)
    else:
        out[prefix] = float(value)


def summarise_massive(*counts: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Merge every node's counts: MLflow metrics, a JSON summary and a markdown table.

    Args:
        *counts: The count dicts returned by the other nodes.

    Returns:
        ``(metrics, summary, markdown)``; metrics are ``{"ingest.en_US.train": {"value", "step"}, ...}``.
    """
    ingest, *rest = counts
    summary: dict[str, Any] = {"ingest": dict(ingest), "pairs": {}}
    for c in rest:
        for key, value in c.items():
            if "__" in key:
                summary["pairs"][key] = value
            else:
                summary[key] = value
    flat: dict[str, float] = {}
    _flatten("", summary, flat)  # MLflow prefixes the dataset name: massive_metrics.ingest...
    metrics = {k: {"value": v, "step": 0} for k, v in flat.items()}
    return metrics, summary, summary_markdown(summary)
