"""The README's headline: per paper's main claim, the paper's figure, the baseline here, ours, Δ and the verdict.

Every number of a row comes from the same rows of a claims table (``reporting/claims.py``, the
reports' one layout): ``ours`` and ``baseline`` are the means of their *method* and *baseline*
columns, Δ the mean of their Δ column (each row's Δ as the page prints it, so the headline's Δ is the
page's mean Δ), every mean rounded only when printed; the verdict gives each verdict's count with the
largest p of its own rows, and the seeds.
So a row's Δ and its verdict are always against the same baseline, over the same seeds (a
claims row's figures are its means over the seeds it was tested on).

Each entry of ``headline.rows`` (``conf/base/parameters_headline.yml``) names its claims rows with
``verdict``: ``reports`` (in order of preference: a seeds run's first; the first that has the rows
is used), ``method`` and ``baseline`` as the claims table names them, optionally ``where`` (a part of
the rows' *on* column) and ``percent`` (the table is in %: divided by 100).

``python -m language_agnostic.reporting.headline --findings docs/headline.csv docs/headline.png``
builds the table from the claims tables of the committed findings pages (:data:`FINDINGS`);
``python -m language_agnostic.reporting.headline README.md docs/headline.csv`` writes it into the
README between its markers. ``kedro run --pipelines=headline`` builds it from the reports in
``data/08_reporting/`` instead.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from language_agnostic.reporting.claims import PARSED, parse_claims, quoted_name
from language_agnostic.reporting.markdown import parse_tables, section_text, table
from language_agnostic.reporting.page_tables import split_report

COLUMNS = [
    "paper",
    "claim",
    "measure",
    "paper_figure",
    "baseline",
    "baseline_label",
    "ours",
    "ours_label",
    "delta",
    "rows",
    "seeds",
    "verdict",
    "claims",
]
# the keys read of a headline row and of its verdict (parameters/headline.py's models have exactly these: tested)
ROW_KEYS = {"paper", "claim", "measure", "paper_figure", "claims", "verdict"}
VERDICT_KEYS = {"reports", "method", "baseline", "where", "percent"}
ORDER = ("holds", "tie", "fails", "not comparable")
START, END = "<!-- headline:start -->", "<!-- headline:end -->"
# the committed pages that hold copies of the reports' claims tables, by the report they copy
# (``data/`` is not in git: the README's table is rebuilt from these); ``PAGE.md#Heading``: only the
# part of the page under that heading (a seeds run's section, so one-seed rows elsewhere on the page
# are not averaged in)
FINDINGS = {
    "fmda_seeds_tables": "docs/findings/fmda.md",
    "qe_seeds_report": "docs/findings/dream_meat_seed.md",
    "sts_seeds_report": "docs/findings/dream_meat_seed.md",
    "emu_seeds_tables": "docs/findings/emu.md",
    "slu_seeds_tables": "docs/findings/lajmcl.md#The claims on three seeds, on all the data",
    "slu_tables": "docs/findings/lajmcl.md",
}
PARAMETERS = "conf/base/parameters_headline.yml"


# a findings page's claims table in the reports' layout less its backbone, paper and *on* columns
SHORT = ["claim", "method", "baseline", "method %", "baseline %", "Δ (points)", "McNemar p", "seeds", "verdict"]
# a findings page's compact claims table's third cell: `method` 14.83 vs `baseline` 35.21
COMPACT = re.compile(
    r"^`(?P<method>[^`]+)` (?P<method_value>-?[\d.]+) vs `(?P<baseline>[^`]+)` (?P<baseline_value>-?[\d.]+)$"
)


def parse_compact_claims(markdown: str) -> pd.DataFrame:
    """The rows of a findings page's compact claims tables as rows of :func:`parse_claims`: (claim,
    backbone, :data:`COMPACT`, Δ, McNemar p, seeds, verdict), a row without both names left out, and
    the reports' layout without its backbone, paper and *on* columns (:data:`SHORT`).

    The verdict is its first word (``fails, at unequal budgets`` → ``fails``).
    """
    rows: list[list[str]] = []
    for parsed in parse_tables(markdown):
        header = list(parsed.header)
        if header == SHORT:
            for row in parsed.rows:
                verdict = row[8].split(",")[0].strip()
                rows.append([row[0], "", "", quoted_name(row[1]), quoted_name(row[2]), "", *row[3:8], verdict])
            continue
        if len(header) != 7 or header[0] != "claim" or header[4:] != ["McNemar p", "seeds", "verdict"]:
            continue
        for row in parsed.rows:
            if match := COMPACT.match(row[2]):
                verdict = row[6].split(",")[0].strip()
                rows.append(
                    [row[0], row[1], "", match["method"], match["baseline"], "", match["method_value"]]
                    + [match["baseline_value"], row[3], row[4], row[5], verdict]
                )
    # a findings page repeats a test in a second table (the same figures under a longer claim): once
    same = ["method", "baseline", "method_value", "baseline_value", "delta", "p", "seeds", "verdict"]
    return pd.DataFrame(rows, columns=PARSED).drop_duplicates(subset=same, ignore_index=True)


def claim_rows(claims: pd.DataFrame, spec: Mapping[str, Any]) -> pd.DataFrame:
    """The claims rows ``spec`` selects: its ``method`` and ``baseline``, and ``where`` in their *on* column.

    ``where`` is not ``on``, which YAML reads as ``true``.
    """
    if claims.empty:
        return claims
    rows = claims[(claims["method"] == spec["method"]) & (claims["baseline"] == spec["baseline"])]
    if spec.get("where"):
        rows = rows[rows["on"].str.contains(str(spec["where"]), regex=False)]
    return rows


def _p_text(ps: pd.Series) -> str:
    """`` (p = 0.96)`` for one row, `` (p ≤ 0.018)`` for the largest of several, `` (p < 1e-6)`` for a bound,
    as the page printed them; empty without a p."""
    shown = [(float(p.lstrip("<")), p) for p in ps if p not in ("—", "")]
    if not shown:
        return ""
    largest = max(shown)[1]
    if largest.startswith("<"):
        return f" (p < {largest[1:]})"
    return f" (p = {largest})" if len(shown) == 1 else f" (p ≤ {largest})"


def verdict_summary(rows: pd.DataFrame, baseline: str) -> str:
    """``holds 5/6 (p ≤ 0.018), tie 1/6 (p = 0.96) vs `centering/mean` (3 seeds)`` from claims rows (at least
    one): each verdict with the largest p of its own rows, so a tie's p is not read as the holding rows'."""
    verdicts = ", ".join(
        f"{v} {len(mine)}/{len(rows)}{_p_text(mine['p'])}" for v in ORDER if len(mine := rows[rows["verdict"] == v])
    )
    seeds = sorted(set(rows["seeds"].astype(int)))
    seed_text = f"{seeds[0]} seed{'s' if seeds[0] != 1 else ''}" if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]} seeds"
    return f"{verdicts} vs `{baseline}` ({seed_text})"


def _mean(values: pd.Series, scale: float) -> float | None:
    """The mean of the cells' first number (``+6.29 ± 0.24`` is 6.29; ``—``: not measured), divided by
    ``scale``, unrounded (the table rounds when it prints)."""
    first = values.astype(str).str.replace("−", "-", regex=False).str.extract(r"^\s*([+-]?\d+(?:\.\d+)?)")[0]
    numbers = pd.to_numeric(first, errors="coerce").dropna()
    return float(numbers.mean()) / scale if len(numbers) else None


def headline_table(rows: Sequence[Mapping[str, Any]], reports: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One line per ``headline.rows`` entry from the claims rows its ``verdict`` names in ``reports``
    (``{report name: markdown}``): ours, baseline, the number of rows, their seeds and their verdicts.

    A row whose claims rows no report holds keeps empty values and says why (``not run``: none of
    its reports exists; ``no claims row``: they exist without such a row), so the README does not drop
    the paper.

    ``rows`` are validated by ``parameters.headline.Row`` (their keys, :data:`ROW_KEYS` and :data:`VERDICT_KEYS`,
    and types): when a run starts, by ``python -m language_agnostic.parameters check`` and, for conf/base's
    rows that ``make readme`` reads (:func:`configured_rows`), by the tests of every env's parameters.
    """
    claims = {name: _claims(markdown) for name, markdown in (reports or {}).items()}  # each report once
    out = []
    for row in rows:
        spec = row["verdict"]
        found = [name for name in spec["reports"] or [] if name in claims]
        picked = next((r for name in found if len(r := claim_rows(claims[name], spec))), None)
        scale = 100.0 if spec.get("percent") else 1.0
        values = {"baseline": None, "ours": None, "delta": None, "rows": 0, "seeds": None}
        if picked is not None:
            baseline, ours = _mean(picked["baseline_value"], scale), _mean(picked["method_value"], scale)
            delta = _mean(picked["delta"], scale)
            if delta is None and baseline is not None and ours is not None:
                delta = ours - baseline  # rows without a printed Δ
            values = {
                "baseline": baseline,
                "ours": ours,
                "delta": delta,
                "rows": len(picked),
                "seeds": "/".join(str(s) for s in sorted(set(picked["seeds"].astype(int)))),
            }
        out.append(
            {
                "paper": row["paper"],
                "claim": row["claim"],
                "measure": row["measure"],
                "paper_figure": row["paper_figure"],
                "baseline_label": spec["baseline"],
                "ours_label": spec["method"],
                **values,
                "verdict": verdict_summary(picked, spec["baseline"])
                if picked is not None
                else ("no claims row" if found else "not run"),
                "claims": row["claims"],
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)


def _claims(markdown: str) -> pd.DataFrame:
    """Every claims row of a report or findings page: the reports' layout, then the compact one.

    A findings page leaves a cell empty where it repeats the row above (a report never does: it
    writes ``—``), so an empty cell is read as the one above it.
    """
    full, compact = parse_claims(markdown), parse_compact_claims(markdown)
    full = full.mask(full == "").ffill()
    return compact if full.empty else full if compact.empty else pd.concat([full, compact], ignore_index=True)


def _number(value: Any) -> str:
    return "—" if value is None or pd.isna(value) else f"{float(value):.3f}"


def headline_markdown(headline: pd.DataFrame) -> str:
    """The README's table: paper, claim, measure, the paper's figure, baseline, ours, Δ, verdicts."""
    rows = []
    for r in headline.itertuples(index=False):
        delta = "" if pd.isna(r.delta) else f"{float(r.delta):+.3f}"
        rows.append(
            [
                r.paper,
                r.claim,
                r.measure,
                r.paper_figure,
                f"{_number(r.baseline)} (`{r.baseline_label}`)",
                f"{_number(r.ours)} (`{r.ours_label}`)",
                delta,
                f"{r.verdict}; {r.claims}" if isinstance(r.verdict, str) and r.verdict else r.claims,
            ]
        )
    header = ["paper", "claim", "measure", "paper's figure", "baseline here", "ours", "Δ", "verdicts"]
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


def findings_reports(root: Path, findings: Mapping[str, str] = FINDINGS) -> dict[str, str]:
    """``{report name: markdown}`` of the committed findings pages that copy the reports' claims tables
    (for ``PAGE.md#Heading``, the part of the page under that heading); a page that is missing is left out."""
    reports = {}
    for name, where in findings.items():
        path, heading = split_report(where)  # the page_tables commands' PAGE.md#Heading, read alike
        if (root / path).exists():
            text = (root / path).read_text()
            reports[name] = section_text(text, heading) if heading else text
    return reports


def configured_rows(root: Path) -> list[dict[str, Any]]:
    """``headline.rows`` of ``conf/base/parameters_headline.yml`` under ``root``."""
    return yaml.safe_load((root / PARAMETERS).read_text())["headline"]["rows"]


def main(argv: Sequence[str]) -> int:
    """``README.md headline.csv``: write the table into the README; ``--findings headline.csv
    headline.png``: build the table and its figure from the committed findings pages."""
    if len(argv) == 3 and argv[0] == "--findings":
        csv, png = Path(argv[1]), Path(argv[2])
        headline = headline_table(configured_rows(Path.cwd()), findings_reports(Path.cwd()))
        headline.to_csv(csv, index=False)
        headline_figure(headline).savefig(png, dpi=120)
        print(f"{csv}, {png}: headline from {sorted({str(split_report(where)[0]) for where in FINDINGS.values()})}")
        return 0
    if len(argv) != 2:
        print(
            "usage: python -m language_agnostic.reporting.headline README.md docs/headline.csv\n"
            "       python -m language_agnostic.reporting.headline --findings docs/headline.csv docs/headline.png"
        )
        return 2
    readme, csv = Path(argv[0]), Path(argv[1])
    readme.write_text(update_readme(readme.read_text(), headline_markdown(pd.read_csv(csv))))
    print(f"{readme}: headline from {csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
