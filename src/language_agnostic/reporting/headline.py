"""The README's headline: per paper, the figure it reports, its baseline here and our reproduction.

A view of the one metrics table (``data/08_reporting/metrics.csv``): each row of
``headline.rows`` selects cells of the table for its method and for its baseline (the raw
encoder, or the paper's own baseline where the method fine-tunes the encoder) and averages
them (e.g. over the six MASSIVE retrieval directions). Its ``verdict`` names the claims rows that
judge it in the pipelines' reports (the first report that has them: a seeds run's before the
default run's), and the row summarises their verdicts, seeds and largest p-value; the claims table
it links to has each one.

``python -m language_agnostic.reporting.headline README.md data/08_reporting/headline.csv``
writes the table into the README between its markers (``make readme`` runs the pipeline first).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from language_agnostic.reporting.claims import parse_claims
from language_agnostic.reporting.markdown import table

COLUMNS = [
    "paper",
    "claim",
    "measure",
    "paper_figure",
    "baseline",
    "baseline_label",
    "ours",
    "ours_label",
    "cells",
    "verdict",
    "claims",
]
SELECTOR_KEYS = ("pipeline", "method", "embedding", "task", "dataset", "source", "target", "metric")
ROW_KEYS = {"paper", "claim", "measure", "paper_figure", "ours", "baseline", "claims"}
OPTIONAL_KEYS = {"verdict"}
VERDICT_KEYS = {"reports", "method", "baseline", "where"}
ORDER = ("holds", "tie", "fails", "not comparable")
START, END = "<!-- headline:start -->", "<!-- headline:end -->"


def select(metrics: pd.DataFrame, selector: Mapping[str, Any], where: str) -> pd.Series:
    """The ``value`` of every row of ``metrics`` that matches ``selector`` (a list matches any of its items).

    Raises:
        ValueError: An unknown selector key (naming ``where``).
    """
    unknown = sorted(set(selector) - set(SELECTOR_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; known: {list(SELECTOR_KEYS)}")
    mask = pd.Series(True, index=metrics.index)
    for key, wanted in selector.items():
        values = [str(v) for v in wanted] if isinstance(wanted, (list, tuple)) else [str(wanted)]
        mask &= metrics[key].astype(str).isin(values)
    return metrics.loc[mask, "value"].astype(float)


def check_verdict(spec: Mapping[str, Any], where: str) -> None:
    """A row's ``verdict``: ``reports``, ``method`` and ``baseline`` required, ``where`` optional.

    Raises:
        ValueError: A missing or unknown key (naming ``where``).
    """
    missing, unknown = sorted({"reports", "method", "baseline"} - set(spec)), sorted(set(spec) - VERDICT_KEYS)
    if missing or unknown:
        raise ValueError(f"{where}: missing {missing}, unknown {unknown}; expected {sorted(VERDICT_KEYS)}")


def verdict_summary(claims: pd.DataFrame, spec: Mapping[str, Any]) -> str | None:
    """``holds 5/6, tie 1/6 vs `centering/mean` (3 seeds, p ≤ 0.6)`` from the claims rows ``spec`` selects
    (``None`` when it selects none).

    ``spec``: ``method`` and ``baseline`` as the claims tables name them, and optionally ``where``
    (a substring of the rows' *on* column; not ``on``, which YAML reads as ``true``).
    """
    if claims.empty:
        return None
    rows = claims[(claims["method"] == spec["method"]) & (claims["baseline"] == spec["baseline"])]
    if spec.get("where"):
        rows = rows[rows["on"].str.contains(str(spec["where"]), regex=False)]
    if rows.empty:
        return None
    counts = rows["verdict"].value_counts()
    verdicts = ", ".join(f"{v} {counts[v]}/{len(rows)}" for v in ORDER if v in counts)
    seeds = sorted(set(rows["seeds"].astype(int)))
    seed_text = f"{seeds[0]} seed{'s' if seeds[0] != 1 else ''}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]} seeds"
    # the largest p as the report printed it: "<1e-6" stays a bound
    shown = [(float(p.lstrip("<")), p) for p in rows["p"] if p not in ("—", "")]
    largest = max(shown)[1] if shown else ""
    p_text = "" if not largest else f", p < {largest[1:]}" if largest.startswith("<") else f", p ≤ {largest}"
    return f"{verdicts} vs `{spec['baseline']}` ({seed_text}{p_text})"


def headline_table(
    metrics: pd.DataFrame, rows: Sequence[Mapping[str, Any]], reports: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """One line per ``headline.rows`` entry: the averages of its ``ours`` and ``baseline`` cells, and the
    verdicts of the claims rows its ``verdict`` names in ``reports`` (``{report name: markdown}``).

    A row whose cells the table does not hold (its pipeline has not run) keeps empty values, so the
    README says what is missing instead of dropping the paper. ``ours`` and ``baseline`` must select
    the same number of cells: a row compares like with like.

    Raises:
        ValueError: A missing or unknown key, or ``ours`` and ``baseline`` selecting different counts.
    """
    claims = {name: parse_claims(markdown) for name, markdown in (reports or {}).items()}  # each report once
    out = []
    for i, row in enumerate(rows):
        where = f"headline.rows[{i}]"
        missing, unknown = sorted(ROW_KEYS - set(row)), sorted(set(row) - ROW_KEYS - OPTIONAL_KEYS)
        if missing or unknown:
            raise ValueError(
                f"{where}: missing {missing}, unknown {unknown}; expected {sorted(ROW_KEYS)} and optionally "
                f"{sorted(OPTIONAL_KEYS)}"
            )
        ours = select(metrics, row["ours"], f"{where}.ours")
        base = select(metrics, row["baseline"], f"{where}.baseline")
        if len(ours) and len(base) and len(ours) != len(base):
            raise ValueError(f"{where}: ours selects {len(ours)} cells, baseline {len(base)}; select the same cells")
        out.append(
            {
                "paper": row["paper"],
                "claim": row["claim"],
                "measure": row["measure"],
                "paper_figure": row["paper_figure"],
                "baseline": round(float(base.mean()), 3) if len(base) else None,
                "baseline_label": _label(row["baseline"]),
                "ours": round(float(ours.mean()), 3) if len(ours) else None,
                "ours_label": _label(row["ours"]),
                "cells": len(ours),
                "verdict": _verdict(row.get("verdict"), claims, f"{where}.verdict"),
                "claims": row["claims"],
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)


def _verdict(spec: Mapping[str, Any] | None, reports: Mapping[str, pd.DataFrame], where: str) -> str:
    """The summary from the first named report (its parsed claims) that has the rows; ``not run`` when
    none of the reports exists, ``not tested`` when they exist without such a claims row (a report
    older than the claim)."""
    if not spec:
        return ""
    check_verdict(spec, where)
    found = [name for name in spec["reports"] or [] if name in reports]
    for name in found:
        if summary := verdict_summary(reports[name], spec):
            return summary
    return "not tested" if found else "not run"


def _label(selector: Mapping[str, Any]) -> str:
    return f"{selector.get('method', '')}/{selector.get('embedding', '')}"


def _number(value: Any) -> str:
    return "not run" if value is None or pd.isna(value) else f"{float(value):.3f}"


def headline_markdown(headline: pd.DataFrame) -> str:
    """The README's table: paper, claim, measure, the paper's figure, baseline, ours, Δ, claims."""
    rows = []
    for r in headline.itertuples(index=False):
        both = not (pd.isna(r.baseline) or pd.isna(r.ours))
        delta = f"{float(r.ours) - float(r.baseline):+.3f}" if both else ""
        rows.append(
            [
                r.paper,
                r.claim,
                r.measure,
                r.paper_figure,
                f"{_number(r.baseline)} (`{r.baseline_label}`)",
                f"{_number(r.ours)} (`{r.ours_label}`)",
                delta,
                f"{v}; {r.claims}" if isinstance(v := getattr(r, "verdict", ""), str) and v else r.claims,
            ]
        )
    header = [
        "paper",
        "claim",
        "measure",
        "paper's figure",
        "baseline here",
        "ours",
        "Δ",
        "verdicts",
    ]
    return "\n".join(table(header, rows, left=4)) + "\n"


def headline_figure(headline: pd.DataFrame) -> Any:
    """Baseline → ours per row (a dumbbell), on an axis that spans the values, so a 0.01 gap shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = headline.dropna(subset=["baseline", "ours"]).reset_index(drop=True)
    figure, ax = plt.subplots(figsize=(9.0, 0.6 * max(len(shown), 1) + 1.2))
    labels = [f"{r.paper}: {r.ours_label} vs {r.baseline_label}\n{r.measure}" for r in shown.itertuples()]
    for y, r in enumerate(shown.itertuples()):
        colour = "tab:green" if r.ours > r.baseline else "tab:red"
        ax.plot([r.baseline, r.ours], [y, y], color=colour, linewidth=2, zorder=1)
        ax.scatter([r.baseline], [y], color="grey", zorder=2, label="baseline" if y == 0 else None)
        ax.scatter([r.ours], [y], color=colour, zorder=3, label="ours" if y == 0 else None)
    ax.set_yticks(range(len(shown)), labels, fontsize=8)
    ax.invert_yaxis()
    values = [*shown["baseline"], *shown["ours"]]
    if values:
        span = max(values) - min(values)
        ax.set_xlim(min(values) - 0.05 * span - 0.01, max(values) + 0.05 * span + 0.01)
    ax.set_xlabel("score (each row's own measure; higher is better)")
    ax.legend(loc="lower right", fontsize=8, frameon=True)
    ax.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    return figure


def _block(readme: str) -> tuple[int, int]:
    """Where the headline block starts (after its marker's line) and ends (at the end marker).

    Raises:
        ValueError: The markers are missing or out of order.
    """
    start, end = readme.find(START), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README: no {START} ... {END} block to write the headline into")
    return start + len(START) + 1, end


def update_readme(readme: str, markdown: str) -> str:
    """``readme`` with the text between its headline markers replaced by ``markdown``."""
    start, end = _block(readme)
    return readme[:start] + markdown + readme[end:]


def readme_block(readme: str) -> str:
    """The text between the README's headline markers (what :func:`update_readme` wrote)."""
    start, end = _block(readme)
    return readme[start:end]


def main(argv: Sequence[str]) -> int:
    """``README.md headline.csv``: write the headline table into the README."""
    if len(argv) != 2:
        print("usage: python -m language_agnostic.reporting.headline README.md data/08_reporting/headline.csv")
        return 2
    readme, csv = Path(argv[0]), Path(argv[1])
    readme.write_text(update_readme(readme.read_text(), headline_markdown(pd.read_csv(csv))))
    print(f"{readme}: headline from {csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
