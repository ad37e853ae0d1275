"""One layout for every paper's claims section: the claim, the backbone the paper made it on, the
paper's figures, ours, the paired test, the seeds and the verdict (``evaluation/claims.py``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from language_agnostic.evaluation.claims import Paired, verdict
from language_agnostic.reporting.markdown import parse_tables, table

COLUMNS = [
    "claim",
    "paper's backbone",
    "paper",
    "method",
    "baseline",
    "on",
    "method %",
    "baseline %",
    "Δ (points)",
    "McNemar p",
    "seeds",
    "verdict",
]
MCNEMAR = "McNemar p ≤ 0.05 (exact, on the same test queries)"
BOOTSTRAP = "paired-bootstrap p ≤ 0.05 (the same sentence pairs resampled for both, within each language pair)"
VERDICT_RULE = (
    "Verdict ([the rule](../results.md#how-a-claim-is-judged)): a claim that the method is better *holds* "
    "when our Δ is above 0 with {test} in every seed, *fails* when it is below 0 under the same "
    "conditions, and is a *tie* otherwise (a seed or p > 0.05 could flip it); a claim that it is no better "
    "(no worse) holds unless every seed has it above (below) with p ≤ 0.05; *not comparable* without paired "
    "outcomes. A claim the paper made on another backbone than ours (multilingual-e5-small, of the XLM-R "
    "family) is judged against the paper's XLM-R or mE5 figures where it has them."
)


# a method trained with another seed than the configured one: `emu-seed2021` (EMU), `fmda-seed1`,
# `fmda-infonce_seed1` (FMDA variants `seed1`, `infonce_seed1`)
SEED_SUFFIX = re.compile(r"^(?P<method>.+)[-_]seed(?P<seed>\d+)$")


def seed_runs(methods: Sequence[str]) -> dict[str, dict[str, str]]:
    """``{method: {seed label: method name}}`` of the metrics table's method names: ``emu-seed2021`` is
    ``emu`` trained with seed label ``2021``; a name without the suffix is the configured seed (label ``""``).
    """
    out: dict[str, dict[str, str]] = {}
    for name in methods:
        match = SEED_SUFFIX.match(name)
        method, seed = (match["method"], match["seed"]) if match else (name, "")
        out.setdefault(method, {})[seed] = name
    return out


@dataclass(frozen=True)
class ClaimSpec:
    """A claim of a paper as this project checks it.

    Attributes:
        claim: The claim in a few words, with its section or table.
        method: The method the claim is about (a method name of the pipeline).
        baseline: What it is compared with.
        backbone: The encoder(s) the paper made the claim on.
        paper: The paper's figures behind it (on that backbone; the XLM-R rows where it has them).
        direction: ``>`` (the method above the baseline), ``not >`` (no better) or ``not <`` (no worse).
    """

    claim: str
    method: str
    baseline: str
    backbone: str
    paper: str
    direction: str = ">"


def p_text(p: float | None) -> str:
    """``0.014``; ``<1e-6``; ``—`` when there is no test."""
    if p is None or not np.isfinite(p):
        return "—"
    return "<1e-6" if p < 1e-6 else f"{p:.2g}"


def columns(percent: bool = True, test: str = "McNemar") -> list[str]:
    """:data:`COLUMNS` for accuracies (``%``, McNemar) or for correlations (``r`` and the named test)."""
    if percent and test == "McNemar":
        return list(COLUMNS)
    unit = "%" if percent else "r"
    return [
        *COLUMNS[:6],
        f"method {unit}",
        f"baseline {unit}",
        "Δ (points)" if percent else "Δ r",
        f"{test} p",
        *COLUMNS[10:],
    ]


def claim_row(
    spec: ClaimSpec,
    on: str,
    seeds: Sequence[Paired | None],
    untested: tuple[float, float] | None = None,
    percent: bool = True,
) -> list[str]:
    """A row of :data:`COLUMNS`: the mean over seeds of both accuracies, the largest p over seeds, the verdict.

    ``untested``: the two accuracies to show when no seed has paired outcomes (e.g. a metrics table's
    averages from a run that stored none); the verdict is then *not comparable*. ``percent``: shown
    as percentages with two decimals (accuracies), else as they are with three (correlations).
    """
    scale, digits = (100, 2) if percent else (1, 3)
    measured = [s for s in seeds if s is not None]
    # what the claim is and where it is tested: the same first columns, measured or not
    head = [spec.claim, spec.backbone, spec.paper, f"`{spec.method}`", f"`{spec.baseline}`", on]
    if not measured:
        shown = (
            [
                f"{scale * untested[0]:.{digits}f}",
                f"{scale * untested[1]:.{digits}f}",
                f"{scale * (untested[0] - untested[1]):+.{digits}f}",
            ]
            if untested is not None
            else ["—", "—", "—"]
        )
        return [*head, *shown, "—", str(len(seeds)), "not comparable"]
    mean = lambda xs: float(np.mean(xs))  # noqa: E731
    method, baseline = mean([s.method for s in measured]), mean([s.baseline for s in measured])
    spread = "" if len(measured) == 1 else f" ± {scale * float(np.std([s.delta for s in measured], ddof=1)):.{digits}f}"
    worst = max(s.pvalue for s in measured)
    return [
        *head,
        f"{scale * method:.{digits}f}",
        f"{scale * baseline:.{digits}f}",
        f"{scale * (method - baseline):+.{digits}f}{spread}",
        p_text(worst),
        str(len(measured)),
        verdict([s.delta for s in measured], [s.pvalue if s else None for s in seeds], spec.direction),
    ]


def claims_section(
    title: str, intro: str, rows: Sequence[Sequence[str]], percent: bool = True, test: str = "McNemar"
) -> list[str]:
    """``## title``, the intro, the verdict rule and the table; nothing when there is no row.

    ``percent`` and ``test`` as in :func:`columns` (``test="bootstrap"``: the paired bootstrap of correlations).
    """
    if not rows:
        return []
    rule = VERDICT_RULE.format(test=MCNEMAR if test == "McNemar" else BOOTSTRAP)
    return [f"## {title}", "", intro, "", rule, "", *table(columns(percent, test), [list(r) for r in rows], left=6), ""]


# what :func:`parse_claims` returns: the claims tables' columns under names that do not depend on the
# metric (``method %`` or ``method r``) or the test (``McNemar p`` or ``bootstrap p``)
PARSED = [
    "claim",
    "backbone",
    "paper",
    "method",
    "baseline",
    "on",
    "method_value",
    "baseline_value",
    "delta",
    "p",
    "seeds",
    "verdict",
]


def quoted_name(cell: str) -> str:
    """The first back-quoted name of a cell (`` `lajmcl` (this run)`` → ``lajmcl``), else the cell."""
    start = cell.find("`")
    end = cell.find("`", start + 1)
    return cell[start + 1 : end] if 0 <= start < end else cell


def parse_claims(markdown: str) -> pd.DataFrame:
    """Every claims table (:func:`claims_section`'s layout) of a report, as rows of :data:`PARSED`.

    The reports are the one place each paper's verdicts are computed; the README's headline reads
    them back from here, so a verdict is never restated by hand.
    """
    rows: list[list[str]] = []
    for parsed in parse_tables(markdown):
        if list(parsed.header[:2]) != COLUMNS[:2] or len(parsed.header) != len(PARSED):
            continue
        for cells in parsed.rows:
            row = list(cells)
            row[3], row[4] = quoted_name(row[3]), quoted_name(row[4])
            rows.append(row)
    return pd.DataFrame(rows, columns=PARSED)
