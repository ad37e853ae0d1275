"""Nearest-neighbour intent classification (EMU's evaluation), its confidence interval and a paired test.

A query takes the intent of its cosine nearest neighbour among labelled candidates in another
(or the same) locale, leave-one-out on one split: the query itself, and in a cross-lingual
direction its own translation (the candidate with the same MASSIVE ``id``), are never
candidates — otherwise ``en-US→de-DE`` would be translation retrieval, not intent transfer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from language_agnostic.evaluation.retrieval import normalise_rows


def nearest_neighbour_correct(
    queries: np.ndarray,
    query_ids: Sequence[str],
    query_labels: Sequence[str],
    candidates: np.ndarray,
    candidate_ids: Sequence[str],
    candidate_labels: Sequence[str],
    block: int = 2048,
) -> np.ndarray:
    """Per query, whether its nearest candidate (cosine, leave-one-out by ``id``) has its intent.

    Args:
        queries: ``(n, d)`` query vectors.
        query_ids: The utterance id of each query (MASSIVE's ``id``: the same across locales).
        query_labels: The query's intent.
        candidates: ``(m, d)`` labelled candidate vectors.
        candidate_ids: Their ids; a candidate with the query's id is excluded for that query.
        candidate_labels: Their intents.
        block: Queries scored at once (bounds memory at ``block × m`` floats).

    Returns:
        A boolean array of length ``n`` (a tie goes to the first candidate, as ``numpy.argmax``).

    Raises:
        ValueError: Misaligned inputs, or a query with no candidate left after exclusion.
    """
    queries, candidates = normalise_rows(queries), normalise_rows(candidates)
    if len(queries) != len(query_ids) or len(queries) != len(query_labels):
        raise ValueError(f"{len(queries)} queries, {len(query_ids)} ids and {len(query_labels)} labels must align")
    if len(candidates) != len(candidate_ids) or len(candidates) != len(candidate_labels):
        raise ValueError(
            f"{len(candidates)} candidates, {len(candidate_ids)} ids and {len(candidate_labels)} labels must align"
        )
    q_ids, c_ids = np.asarray(query_ids, dtype=object), np.asarray(candidate_ids, dtype=object)
    q_labels, c_labels = np.asarray(query_labels, dtype=object), np.asarray(candidate_labels, dtype=object)
    correct = np.zeros(len(queries), dtype=bool)
    for start in range(0, len(queries), block):
        stop = min(start + block, len(queries))
        scores = queries[start:stop] @ candidates.T
        own = q_ids[start:stop, None] == c_ids[None, :]
        if own.all(axis=1).any():
            raise ValueError("a query has no candidate other than itself / its translation")
        scores[own] = -np.inf
        correct[start:stop] = c_labels[scores.argmax(axis=1)] == q_labels[start:stop]
    return correct


@dataclass(frozen=True)
class Proportion:
    """An accuracy with its binomial confidence interval (Wilson score)."""

    value: float
    low: float
    high: float
    n: int


def accuracy_with_interval(correct: np.ndarray, confidence: float = 0.95) -> Proportion:
    """Accuracy of a boolean array and its Wilson interval (``scipy.stats.binomtest``)."""
    correct = np.asarray(correct, dtype=bool)
    if correct.size == 0:
        raise ValueError("no queries to score")
    k, n = int(correct.sum()), int(correct.size)
    interval = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return Proportion(k / n, float(interval.low), float(interval.high), n)


@dataclass(frozen=True)
class McNemar:
    """The exact McNemar test of two classifiers on the same queries.

    Attributes:
        only_a: Queries ``a`` gets right and ``b`` wrong.
        only_b: Queries ``b`` gets right and ``a`` wrong.
        pvalue: Two-sided exact binomial p-value of ``only_a`` among the discordant queries.
    """

    only_a: int
    only_b: int
    pvalue: float


def mcnemar(correct_a: np.ndarray, correct_b: np.ndarray) -> McNemar:
    """Exact McNemar test (a binomial test on the discordant pairs, p = ½); no discordance gives p = 1."""
    a, b = np.asarray(correct_a, dtype=bool), np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"paired results must align: {a.shape} vs {b.shape}")
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    pvalue = 1.0 if only_a + only_b == 0 else float(binomtest(only_a, only_a + only_b, 0.5).pvalue)
    return McNemar(only_a, only_b, pvalue)
