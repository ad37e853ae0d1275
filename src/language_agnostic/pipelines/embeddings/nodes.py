"""Nodes of the ``embeddings`` pipeline: thin adapters over ``encoders`` and ``evaluation``.

Extraction nodes receive the ``EmbeddingStore`` from the catalog and only encode what the
store does not already hold, text by text (see ``encoders.store``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pandas as pd

from language_agnostic.encoders.extraction import EmbeddingStore, extract_embedding_sets, extraction_settings
from language_agnostic.encoders.loading import LoadedEncoder, load_encoder
from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1
from language_agnostic.reporting.retrieval import raw_retrieval_markdown

logger = logging.getLogger(__name__)


def load_encoder_node(encoder: Mapping[str, Any]) -> tuple[LoadedEncoder, dict[str, Any]]:
    """Load the configured encoder.

    Args:
        encoder: ``embeddings.encoder``: ``name`` (``bundled``, a hub name or a directory) and
            ``bundled_dir`` (where the bundled encoder is converted to, once).

    Returns:
        ``(encoder, identity)``; the identity is saved to MLflow with the run.
    """
    loaded = load_encoder(
        str(encoder["name"]), encoder.get("bundled_dir", "data/06_models/encoders/multilingual-e5-small-q4")
    )
    return loaded, dict(loaded.identity)


def embed_pair_texts(
    pairs: pd.DataFrame,
    encoder: LoadedEncoder,
    store: EmbeddingStore,
    extraction: Mapping[str, Any],
    partitions: list[str],
) -> dict[str, Any]:
    """Sentence vectors of both sides of a pair table (chosen partitions), via the cache.

    Args:
        pairs: A ``massive_pairs`` table.
        encoder: The loaded encoder.
        store: The embedding store.
        extraction: ``embeddings.extraction``.
        partitions: Which partitions to embed, e.g. ``["test"]``.

    Returns:
        A manifest: ``{"sets": {"source": EmbeddingSet, "target": EmbeddingSet}, "ids": [...],
        "source_locale", "target_locale", "partitions"}``.
    """
    unknown = sorted(set(partitions) - set(pairs["partition"].unique()))
    if unknown:
        raise ValueError(
            f"embeddings.partitions: {unknown} not in the pair table (has {sorted(pairs['partition'].unique())})"
        )
    rows = pairs[pairs["partition"].isin(partitions)]
    settings = extraction_settings(extraction)
    sets = extract_embedding_sets(
        encoder, {side: rows[f"{side}_utt"].tolist() for side in ("source", "target")}, settings, store
    )
    logger.info(
        "embedded %d %s pairs (%s → %s)",
        len(rows),
        "+".join(partitions),
        rows["source_locale"].iloc[0],
        rows["target_locale"].iloc[0],
    )
    return {
        "sets": sets,
        "ids": rows["id"].tolist(),
        "source_locale": str(rows["source_locale"].iloc[0]),
        "target_locale": str(rows["target_locale"].iloc[0]),
        "partitions": list(partitions),
    }


def evaluate_raw_retrieval(
    manifest: Mapping[str, Any], poolings: list[str], identity: Mapping[str, Any]
) -> pd.DataFrame:
    """Cross-lingual retrieval accuracy@1 of the raw encoder, both directions, per pooling.

    Returns:
        Rows of the long metrics table.
    """
    source, target = manifest["sets"]["source"], manifest["sets"]["target"]
    src, tgt = manifest["source_locale"], manifest["target_locale"]
    rows = []
    for pooling in poolings:
        a, b = source.vectors(pooling), target.vectors(pooling)
        for q_locale, k_locale, queries, keys in ((src, tgt, a, b), (tgt, src, b, a)):
            value = retrieval_accuracy_at_1(queries, keys)
            rows.append(
                {
                    "pipeline": "embeddings",
                    "method": "raw",
                    "embedding": pooling,
                    "task": "cross_lingual_retrieval",
                    "dataset": "massive_" + "+".join(manifest["partitions"]),
                    "source": q_locale,
                    "target": k_locale,
                    "metric": "accuracy@1",
                    "value": round(value, 6),
                    "encoder": str(identity.get("name")),
                }
            )
            logger.info(
                "raw %s retrieval %s → %s: accuracy@1 %.4f (%d pairs)", pooling, q_locale, k_locale, value, len(a)
            )
    return pd.DataFrame(rows)


def report_raw_retrieval(
    identity: Mapping[str, Any], *tables: pd.DataFrame
) -> tuple[pd.DataFrame, dict[str, Any], str]:
    """Merge the per-pair rows: the metrics table, MLflow metrics and a markdown table.

    The markdown has the rows and columns of the design note's reference table (pooling ×
    direction), for comparison.
    """
    rows = pd.concat(tables, ignore_index=True)
    metrics = {
        f"raw.{r.embedding}.{r.source}_to_{r.target}.acc1".replace("-", "_"): {"value": float(r.value), "step": 0}
        for r in rows.itertuples()
    }
    return rows, metrics, raw_retrieval_markdown(rows, identity)
