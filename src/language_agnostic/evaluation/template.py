"""Monolingual template retrieval (FMDA §4.3.2, Appendix A): accuracy@1 and MAP.

Every source has ``k`` targets that share its template (``k = 1`` for the single-target set,
``k = 5`` for MAP). The candidate pool is every target of the language; a source's relevant
items are its own ``k`` targets.
"""

from __future__ import annotations

import numpy as np

from language_agnostic.evaluation.retrieval import normalise_rows, retrieval_accuracy_at_1


def template_accuracy_at_1(sources: np.ndarray, targets: np.ndarray) -> float:
    """Accuracy@1 on the single-target set: source ``i``'s answer is target ``i``."""
    return retrieval_accuracy_at_1(sources, targets)


def mean_average_precision(sources: np.ndarray, targets: np.ndarray, k: int, block: int = 1024) -> float:
    """MAP when targets ``i*k … i*k+k-1`` are the relevant items of source ``i``.

    Items are ranked by cosine similarity, ties broken by position (stable sort), and the
    average precision of a source is the mean over its ``k`` relevant items of the precision
    at that item's rank.

    Args:
        sources: ``(n, d)``.
        targets: ``(n * k, d)``, grouped by source.
        k: Targets per source.
        block: Sources scored at once.

    Returns:
        The mean over sources of their average precision.
    """
    sources, targets = normalise_rows(sources), normalise_rows(targets)
    n = len(sources)
    if n == 0 or k < 1 or len(targets) != n * k:
        raise ValueError(f"{len(targets)} targets for {n} sources and k={k}: expected {n * k}")
    total = 0.0
    hits = np.arange(1, k + 1)
    index = np.arange(targets.shape[0])
    for start in range(0, n, block):
        scores = sources[start : start + block] @ targets.T
        own = (np.arange(start, start + len(scores))[:, None] * k) + np.arange(k)[None, :]
        relevant = np.take_along_axis(scores, own, axis=1)
        # the 0-based position of each relevant item in a stable descending sort, without
        # sorting every row (a full argsort was 70 % of an FMDA evaluation): the items scored
        # higher, plus the items scored equal that come earlier
        above = (scores[:, None, :] > relevant[:, :, None]).sum(axis=2)
        tied = ((scores[:, None, :] == relevant[:, :, None]) & (index[None, None, :] < own[:, :, None])).sum(axis=2)
        relevant_ranks = np.sort(above + tied, axis=1) + 1
        total += float((hits[None, :] / relevant_ranks).mean(axis=1).sum())
    return total / n
