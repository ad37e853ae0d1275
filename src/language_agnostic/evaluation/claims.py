"""A paper's claim checked as measured: two methods' per-query outcomes, their paired test, and the verdict.

The rule every claims table uses (``reporting/claims.py``): a claim *holds* when our difference has
the claimed sign and the paired test on the same test queries gives p ≤ 0.05 in every seed run; it
*fails* when the difference has the other sign under the same conditions; anything a seed or
p > 0.05 can flip is a *tie*; *not comparable* when there are no paired outcomes to test.

The paired test: exact McNemar for accuracies (right or wrong per query, :func:`paired`); a paired
bootstrap over the sentence pairs for correlations with human scores (:func:`paired_correlation`),
the usual test for comparing two metrics' correlations on one test set (Koehn 2004's resampling,
as sacrebleu's ``--paired-bs`` does for BLEU).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from language_agnostic.evaluation.intent_nn import mcnemar

ALPHA = 0.05
VERDICTS = ("holds", "fails", "tie", "not comparable")
# the method above the baseline; no better than it; no worse than it (a paper's "similar", "keeps")
DIRECTIONS = (">", "not >", "not <")
KEY = ["task", "source", "target", "query"]


@dataclass(frozen=True)
class Paired:
    """Two methods on the same queries.

    Attributes:
        method: The method's accuracy (or correlation) on the shared queries.
        baseline: The baseline's on them.
        pvalue: The paired test's p-value of the difference (McNemar, or the paired bootstrap).
        n: Shared queries.
    """

    method: float
    baseline: float
    pvalue: float
    n: int

    @property
    def delta(self) -> float:
        return self.method - self.baseline


def outcomes_of(outcomes: pd.DataFrame, method: str, **equal: object) -> pd.Series:
    """One method's ``correct`` per query, indexed by ``(task, source, target, query)``; ``equal`` filters columns."""
    keep = outcomes["method"] == method
    for column, value in equal.items():
        keep &= outcomes[column] == value
    rows = outcomes[keep]
    return pd.Series(rows["correct"].astype(bool).to_numpy(), index=pd.MultiIndex.from_frame(rows[KEY].astype(str)))


def paired(method: pd.Series, baseline: pd.Series) -> Paired | None:
    """The McNemar comparison of two outcome series on the queries both have; None when they share none."""
    shared = method.index.intersection(baseline.index)
    if not len(shared):
        return None
    a, b = method.loc[shared].to_numpy(bool), baseline.loc[shared].to_numpy(bool)
    return Paired(float(a.mean()), float(b.mean()), mcnemar(a, b).pvalue, len(shared))


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row of ``x`` with the same row of ``y`` (2-d, one resample per row)."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    return (x * y).sum(axis=1) / np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))


def paired_correlation(
    method: np.ndarray,
    baseline: np.ndarray,
    gold: np.ndarray,
    groups: np.ndarray,
    resamples: int = 10_000,
    seed: int = 0,
    chunk: int = 500,
) -> Paired:
    """Two scorers' average Pearson with the gold scores over ``groups`` (e.g. language pairs), and
    the paired bootstrap p-value of their difference.

    Each resample draws every group's items with replacement (the same items for both scorers, so
    the test is paired; per group, so every group keeps its size), recomputes both averages and
    their difference. The two-sided p-value is twice the share of resampled differences on the
    other side of zero from the observed one (at least ``1 / resamples``).

    Args:
        method: The method's score per item (e.g. the cosine of its two embeddings).
        baseline: The baseline's score per item, same order.
        gold: The human score per item.
        groups: Each item's group; the statistic is the mean of the per-group correlations.
        resamples: Bootstrap resamples.
        seed: The resampling seed.
        chunk: Resamples drawn at once (bounds memory).

    Raises:
        ValueError: arrays of different lengths, or a group of fewer than 3 items.
    """
    method, baseline, gold = (np.asarray(a, dtype=np.float64) for a in (method, baseline, gold))
    groups = np.asarray(groups)
    if not (len(method) == len(baseline) == len(gold) == len(groups)):
        raise ValueError(
            f"paired_correlation needs aligned arrays, got lengths {len(method)}, {len(baseline)}, "
            f"{len(gold)} and {len(groups)}"
        )
    members = [np.flatnonzero(groups == g) for g in dict.fromkeys(groups.tolist())]
    if not members or min(len(m) for m in members) < 3:
        raise ValueError("paired_correlation needs at least 3 items in every group")
    observed = [
        float(np.mean([_pearson_rows(s[m][None], gold[m][None])[0] for m in members])) for s in (method, baseline)
    ]
    delta = observed[0] - observed[1]
    rng = np.random.default_rng(seed)
    other_side, done = 0, 0
    while done < resamples:
        size = min(chunk, resamples - done)
        mean_delta = np.zeros(size)
        for m in members:
            drawn = m[rng.integers(0, len(m), size=(size, len(m)))]
            g = gold[drawn]
            mean_delta += _pearson_rows(method[drawn], g) - _pearson_rows(baseline[drawn], g)
        mean_delta /= len(members)
        other_side += int(np.sum(mean_delta <= 0) if delta > 0 else np.sum(mean_delta >= 0))
        done += size
    pvalue = min(1.0, max(2 * other_side / resamples, 1 / resamples))
    return Paired(observed[0], observed[1], pvalue, len(method))


def verdict(
    deltas: Sequence[float], pvalues: Sequence[float | None], direction: str = ">", alpha: float = ALPHA
) -> str:
    """The verdict on a claim from each seed's difference (method − baseline) and its paired p-value.

    ``>``: holds when every seed's difference is positive with p ≤ ``alpha``, fails when every one is
    negative with p ≤ ``alpha``, else a tie. ``not >`` (the method is no better): fails when every
    seed has the method above with p ≤ ``alpha``, else holds. ``not <`` (no worse, a paper's
    "similar"): fails when every seed has the method below with p ≤ ``alpha``, else holds.

    Raises:
        ValueError: an unknown direction, or deltas and p-values of different lengths.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"claim direction must be one of {list(DIRECTIONS)}, got {direction!r}")
    if len(deltas) != len(pvalues):
        raise ValueError(f"{len(deltas)} differences but {len(pvalues)} p-values: one of each per seed")
    if not len(deltas) or any(p is None or not np.isfinite(p) for p in pvalues):
        return "not comparable"
    significant = all(p <= alpha for p in pvalues)
    above, below = all(d > 0 for d in deltas), all(d < 0 for d in deltas)
    if direction == "not >":
        return "fails" if significant and above else "holds"
    if direction == "not <":
        return "fails" if significant and below else "holds"
    if significant and above:
        return "holds"
    if significant and below:
        return "fails"
    return "tie"
