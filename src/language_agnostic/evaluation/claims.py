"""A paper's claim checked as measured: two methods' per-query outcomes, their paired test, and the verdict.

The rule every claims table uses (``reporting/claims.py``): a claim *holds* when our difference has
the claimed sign and the exact McNemar test on the same test queries gives p ≤ 0.05 in every seed
run; it *fails* when the difference has the other sign under the same conditions; anything a seed
or p > 0.05 can flip is a *tie*; *not comparable* when there are no paired outcomes to test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from language_agnostic.evaluation.intent_nn import mcnemar

ALPHA = 0.05
VERDICTS = ("holds", "fails", "tie", "not comparable")
DIRECTIONS = (">", "not >")  # the method above the baseline; the method no better than the baseline
KEY = ["task", "source", "target", "query"]


@dataclass(frozen=True)
class Paired:
    """Two methods on the same queries.

    Attributes:
        method: The method's accuracy on the shared queries.
        baseline: The baseline's accuracy on them.
        pvalue: Exact McNemar p-value of the difference.
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


def verdict(deltas: Sequence[float], pvalues: Sequence[float | None], direction: str = ">", alpha: float = ALPHA) -> str:
    """The verdict on a claim from each seed's difference (method − baseline) and its paired p-value.

    ``>``: holds when every seed's difference is positive with p ≤ ``alpha``, fails when every one is
    negative with p ≤ ``alpha``, else a tie. ``not >`` (the method is no better): fails when every
    seed has the method above with p ≤ ``alpha``, else holds.

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
    if significant and above:
        return "holds"
    if significant and below:
        return "fails"
    return "tie"
