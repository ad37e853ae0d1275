"""Retrieval metrics over parallel sets: query ``i``'s correct answer is key ``i``."""

from __future__ import annotations

import numpy as np


def normalise_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1, norms)


def retrieval_hits(queries: np.ndarray, keys: np.ndarray, block: int = 4096) -> np.ndarray:
    """Per query, whether cosine nearest-neighbour retrieval finds its own key (key ``i`` for query ``i``).

    The retrieved key is the arg-max of cosine similarity (the first one on a tie, as
    ``numpy.argmax`` and the papers' evaluation code do), so a query whose key has an exact
    duplicate earlier in the key set counts as wrong. Paired tests (McNemar) between two
    embeddings of the same queries read these.

    Args:
        queries: ``(n, d)`` query vectors.
        keys: ``(n, d)`` key vectors, aligned with the queries.
        block: Queries scored at once (bounds memory at ``block × n`` floats).

    Returns:
        ``(n,)`` booleans.
    """
    queries, keys = normalise_rows(queries), normalise_rows(keys)
    if queries.shape != keys.shape:
        raise ValueError(f"queries {queries.shape} and keys {keys.shape} must be aligned pairs")
    if len(queries) == 0:
        raise ValueError("no pairs to evaluate")
    hits = np.empty(len(queries), dtype=bool)
    for start in range(0, len(queries), block):
        nearest = (queries[start : start + block] @ keys.T).argmax(axis=1)
        hits[start : start + len(nearest)] = nearest == np.arange(start, start + len(nearest))
    return hits


def retrieval_accuracy_at_1(queries: np.ndarray, keys: np.ndarray, block: int = 4096) -> float:
    """Accuracy@1 of cosine nearest-neighbour retrieval; the answer to query ``i`` is key ``i``.

    The fraction of :func:`retrieval_hits` that are true (ties and duplicates as there).

    Args:
        queries: ``(n, d)`` query vectors.
        keys: ``(n, d)`` key vectors, aligned with the queries.
        block: Queries scored at once (bounds memory at ``block × n`` floats).

    Returns:
        The fraction of queries whose nearest key is their own.
    """
    hits = retrieval_hits(queries, keys, block)
    return int(hits.sum()) / len(hits)
