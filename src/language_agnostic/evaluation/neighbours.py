"""Nearest neighbours of a user's queries in a user's corpus, in a trained model's embedding space.

Modes (FMDA's Table 1 applications): ``meaning`` (FMDA's ``m``, a head's meaning embedding:
cross-lingual and paraphrase retrieval), ``template`` (FMDA's ``tp``: template retrieval) and
``raw`` (the encoder's pooled vector alone). Search is exact by default: a dense product of
unit vectors in blocks, ties broken towards the lower corpus index, as the evaluation's
``numpy.argmax`` does (``evaluation/retrieval.py``), so top-1 here is exactly what accuracy@1
scores. ``faiss`` (an HNSW index, approximate) is for corpora too large for the dense product.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.encoders.extraction import EmbeddingSet
from language_agnostic.evaluation.retrieval import normalise_rows
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.fmda import encode_with_fmda
from language_agnostic.methods.registry import load_trained

MODES = ("meaning", "template", "raw")
SEARCHES = ("exact", "faiss")
NEIGHBOUR_COLUMNS = ["query_id", "query", "rank", "corpus_id", "text", "score"]


def check_mode(mode: str, saved: Mapping[str, Any] | None, where: str) -> None:
    """Whether ``saved`` (``None``: no model) gives the ``mode`` embedding.

    Raises:
        ValueError: An unknown mode, a trained mode without a model, or ``template`` for a head
            that has only a meaning embedding; naming ``where``.
    """
    if mode not in MODES:
        raise ValueError(f"{where}.mode must be one of {list(MODES)}, got {mode!r}")
    if mode == "raw":
        return
    if saved is None:
        raise ValueError(f"{where}.model: mode {mode!r} needs a trained model (a path or an MLflow run id)")
    method = str((saved.get("build") or {}).get("method"))
    if mode == "template" and method != "fmda":
        raise ValueError(f"{where}.mode: 'template' needs an FMDA model; this one is {method!r} (meaning only)")


def needs_token_states(mode: str, saved: Mapping[str, Any] | None) -> bool:
    """FMDA reads token states; raw mode and heads over pooled vectors read sentence vectors."""
    return mode != "raw" and str(((saved or {}).get("build") or {}).get("method")) == "fmda"


def embed(entry: EmbeddingSet, mode: str, saved: Mapping[str, Any] | None, raw_pooling: str = "mean") -> np.ndarray:
    """The ``mode`` embedding of every text of a store entry, ``(n, d)`` float32.

    Args:
        entry: Sentence vectors (and token states for FMDA) of the texts.
        mode: One of :data:`MODES` (checked by :func:`check_mode`).
        saved: The trained model (``methods/registry.py:artifact``), ``None`` in raw mode.
        raw_pooling: Pooling of the encoder's vector in raw mode (``cls`` | ``mean``).
    """
    if mode == "raw":
        return np.asarray(entry.vectors(raw_pooling), dtype=np.float32)

    assert saved is not None
    method, model = load_trained(saved)
    if method.name == "fmda":
        return encode_with_fmda(model, entry)["m" if mode == "meaning" else "tp"]
    return control_meaning(model, np.asarray(entry.vectors(str(saved.get("pooling", "mean")))), method.name)


def exact_top_k(queries: np.ndarray, corpus: np.ndarray, k: int, block: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` corpus rows of highest cosine similarity to each query, best first.

    Ties go to the lower corpus index (the first of equal scores, as ``numpy.argmax``).

    Returns:
        ``(indices, scores)``, each ``(n_queries, min(k, n_corpus))``.
    """
    q, c = normalise_rows(queries), normalise_rows(corpus)
    k = min(int(k), len(c))
    indices = np.empty((len(q), k), dtype=np.int64)
    scores = np.empty((len(q), k), dtype=np.float32)
    for start in range(0, len(q), block):
        sims = q[start : start + block] @ c.T
        if k < sims.shape[1]:
            # the k-th best score per row; every row at or above it is a candidate (ties included)
            kth = -np.partition(-sims, k - 1, axis=1)[:, k - 1 : k]
        else:
            kth = sims.min(axis=1, keepdims=True)
        for i, row in enumerate(sims):
            candidates = np.flatnonzero(row >= kth[i, 0])
            order = candidates[np.lexsort((candidates, -row[candidates]))][:k]
            indices[start + i], scores[start + i] = order, row[order]
    return indices, scores


def faiss_top_k(
    queries: np.ndarray, corpus: np.ndarray, k: int, hnsw_m: int = 32, ef_search: int = 128
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate top-``k`` by inner product of unit vectors in a faiss HNSW index (``pip install faiss-cpu``).

    Raises:
        ImportError: faiss is not installed (says how to install it, or to use exact search).
    """
    try:
        import faiss
    except ImportError:
        raise ImportError(
            "search: faiss needs the faiss-cpu package (pip install faiss-cpu), or use search: exact"
        ) from None
    q, c = normalise_rows(queries), normalise_rows(corpus)
    k = min(int(k), len(c))
    index = faiss.IndexHNSWFlat(c.shape[1], int(hnsw_m), faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efSearch = int(ef_search)
    index.add(np.ascontiguousarray(c))
    scores, indices = index.search(np.ascontiguousarray(q), k)
    return indices.astype(np.int64), scores.astype(np.float32)


def recall_at_k(approximate: np.ndarray, exact: np.ndarray) -> float:
    """Mean over queries of the share of the exact top-k found in the approximate top-k."""
    if approximate.shape != exact.shape:
        raise ValueError(f"approximate {approximate.shape} and exact {exact.shape} neighbours differ in shape")
    hits = [len(set(a) & set(e)) for a, e in zip(approximate.tolist(), exact.tolist(), strict=True)]
    return float(np.sum(hits) / exact.size) if exact.size else 1.0


def neighbours_table(
    queries: pd.DataFrame, corpus: pd.DataFrame, indices: np.ndarray, scores: np.ndarray, decimals: int = 6
) -> pd.DataFrame:
    """One row per query and rank (1 = best): columns :data:`NEIGHBOUR_COLUMNS`, scores rounded to ``decimals``."""
    n, k = indices.shape
    picked = corpus.iloc[indices.reshape(-1)]
    return pd.DataFrame(
        {
            "query_id": np.repeat(queries["id"].to_numpy(), k),
            "query": np.repeat(queries["text"].to_numpy(), k),
            "rank": np.tile(np.arange(1, k + 1), n),
            "corpus_id": picked["id"].to_numpy(),
            "text": picked["text"].to_numpy(),
            "score": np.round(scores.reshape(-1).astype(np.float64), decimals),
        }
    )[NEIGHBOUR_COLUMNS]


def search(
    queries: np.ndarray,
    corpus: np.ndarray,
    k: int,
    how: str = "exact",
    options: Mapping[str, Any] | None = None,
    where: str = "search",
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_top_k` or :func:`faiss_top_k` by name (``options``: the latter's keyword arguments)."""
    if how not in SEARCHES:
        raise ValueError(f"{where} must be one of {list(SEARCHES)}, got {how!r}")
    if int(k) < 1:
        raise ValueError(f"{where}: top_k must be at least 1, got {k}")
    if how == "exact":
        return exact_top_k(queries, corpus, k)
    return faiss_top_k(queries, corpus, k, **dict(options or {}))
