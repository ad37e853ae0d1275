"""The README's headline: selection and averaging on hand-made rows, the markdown, and the README itself."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from language_agnostic.reporting.headline import (
    headline_figure,
    headline_markdown,
    headline_table,
    readme_block,
    update_readme,
)
from tests.conftest import PROJECT_ROOT

COLS = ["pipeline", "method", "embedding", "task", "dataset", "source", "target", "metric", "value"]
METRICS = pd.DataFrame(
    [
        ["qe", "seed", "meaning", "qe", "wmt:en-de", "en", "de", "pearson", 0.40],
        ["qe", "seed", "meaning", "qe", "wmt:ro-en", "ro", "en", "pearson", 0.50],
        ["qe", "raw", "mean", "qe", "wmt:en-de", "en", "de", "pearson", 0.20],
        ["qe", "raw", "mean", "qe", "wmt:ro-en", "ro", "en", "pearson", 0.30],
        ["qe", "seed", "meaning", "leak", "probe", "", "", "probe_accuracy", 0.99],
        ["slu", "cosda", "first_token", "slu", "massive", "en-US", "de-DE", "exact_match", 0.37],
        ["slu", "cosda", "first_token", "slu", "massive", "en-US", "en-US", "exact_match", 0.47],
    ],
    columns=COLS,
)
ROW = {
    "paper": "SEED",
    "claim": "SEED beats the encoder",
    "measure": "Pearson",
    "paper_figure": "0.438 vs 0.357",
    "ours": {"pipeline": "qe", "method": "seed", "task": "qe", "metric": "pearson"},
    "baseline": {"pipeline": "qe", "method": "raw", "embedding": "mean", "task": "qe", "metric": "pearson"},
    "claims": "[claims](docs/results.md)",
}


def test_a_row_averages_the_cells_it_selects():
    table = headline_table(METRICS, [ROW])
    assert table.loc[0, "ours"] == pytest.approx(0.45) and table.loc[0, "baseline"] == pytest.approx(0.25)
    assert (table.loc[0, "cells"], table.loc[0, "ours_label"], table.loc[0, "baseline_label"]) == (
        2,
        "seed/",
        "raw/mean",
    )
    # a list matches any of its items: the one non-training locale
    one = {**ROW, "ours": {"method": "cosda", "target": ["de-DE"]}, "baseline": {"method": "cosda", "target": "de-DE"}}
    assert headline_table(METRICS, [one]).loc[0, "ours"] == pytest.approx(0.37)


def test_markdown_shows_delta_and_what_did_not_run():
    emu = {"pipeline": "emu", "method": "emu", "embedding": "mean"}
    missing = {**ROW, "ours": emu, "baseline": {**emu, "method": "raw"}}
    text = headline_markdown(headline_table(METRICS, [ROW, missing]))
    lines = text.splitlines()
    assert lines[0] == "| paper | claim | measure | paper's figure | baseline here | ours | Δ | verdicts |"
    assert lines[2] == (
        "| SEED | SEED beats the encoder | Pearson | 0.438 vs 0.357 | 0.250 (`raw/mean`) | 0.450 (`seed/`) "
        "| +0.200 | [claims](docs/results.md) |"
    )
    assert "| not run (`raw/mean`) | not run (`emu/mean`) |  |" in lines[3]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({**ROW, "ours": {"metod": "seed"}}, r"headline.rows\[0\].ours: unknown key\(s\) \['metod'\]"),
        ({k: v for k, v in ROW.items() if k != "claims"}, r"headline.rows\[0\]: missing \['claims'\]"),
        ({**ROW, "baseline": {"pipeline": "qe"}}, r"ours selects 2 cells, baseline 5; select the same cells"),
    ],
)
def test_a_bad_row_is_named(row, message):
    with pytest.raises(ValueError, match=message):
        headline_table(METRICS, [row])


def test_the_readme_block_is_replaced_between_its_markers():
    readme = "intro\n<!-- headline:start -->\nold\n<!-- headline:end -->\nrest\n"
    new = update_readme(readme, "| a |\n")
    assert new == "intro\n<!-- headline:start -->\n| a |\n<!-- headline:end -->\nrest\n"
    assert readme_block(new) == "| a |\n"
    with pytest.raises(ValueError, match="no <!-- headline:start -->"):
        update_readme("no markers", "x")


def test_the_figure_spans_the_values():
    figure = headline_figure(headline_table(METRICS, [ROW]))
    left, right = figure.axes[0].get_xlim()
    assert 0.2 < left < 0.25 and 0.45 < right < 0.5  # not 0..1: a 0.01 gap stays visible
    import matplotlib.pyplot as plt

    plt.close(figure)


def test_the_readme_table_is_what_the_report_code_writes_from_the_committed_headline():
    committed = pd.read_csv(PROJECT_ROOT / "docs" / "headline.csv")
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert readme_block(readme) == headline_markdown(committed)
    # the committed rows are the configured ones, in order (make readme after editing the rows)
    rows = yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "parameters_headline.yml").read_text())["headline"]["rows"]
    assert [(r["paper"], r["claim"]) for r in rows] == list(zip(committed["paper"], committed["claim"]))
    assert (PROJECT_ROOT / "docs" / "headline.png").stat().st_size > 10_000


def _report(rows: list[tuple[str, str, str, str, str, str]]) -> str:
    """A report with one claims table in claims_section's layout: (method, baseline, on, p, seeds, verdict)."""
    from language_agnostic.reporting.claims import claims_section

    quoted = lambda name: name if "`" in name else f"`{name}`"  # noqa: E731
    body = [
        ["a claim", "XLM-R", "1 vs 0", quoted(m), quoted(b), on, "70.00", "60.00", "+10.00", p, s, v]
        for m, b, on, p, s, v in rows
    ]
    return "# Report\n\n" + "\n".join(claims_section("Claims", "intro", body)) + "\nafter the table\n"


def test_claims_tables_are_read_back_as_the_report_wrote_them():
    from language_agnostic.reporting.claims import parse_claims

    report = _report([("fmda/m", "centering/mean", "EN→DE", "<1e-6", "3", "holds")])
    report += "\n" + _report([("`lajmcl` (this run)", "cosda", "EM, non-en", "0.2", "1", "tie")])
    parsed = parse_claims(report)
    assert parsed.values.tolist() == [
        [
            "a claim",
            "XLM-R",
            "1 vs 0",
            "fmda/m",
            "centering/mean",
            "EN→DE",
            "70.00",
            "60.00",
            "+10.00",
            "<1e-6",
            "3",
            "holds",
        ],
        ["a claim", "XLM-R", "1 vs 0", "lajmcl", "cosda", "EM, non-en", "70.00", "60.00", "+10.00", "0.2", "1", "tie"],
    ]


def test_the_verdict_column_summarises_the_first_report_with_the_rows():
    verdict = {"reports": ["seeds_report", "report"], "method": "fmda/m", "baseline": "centering/mean"}
    reports = {
        "seeds_report": _report([("fmda/m", "raw/mean", "EN→DE", "0.01", "3", "holds")]),  # other baseline: skipped
        "report": _report(
            [
                ("fmda/m", "centering/mean", "EN→DE", "<1e-6", "3", "holds"),
                ("fmda/m", "centering/mean", "DE→EN", "0.003", "3", "holds"),
                ("fmda/m", "centering/mean", "JA→EN", "0.6", "3", "tie"),
            ]
        ),
    }
    table = headline_table(METRICS, [{**ROW, "verdict": verdict}], reports)
    assert table.loc[0, "verdict"] == "holds 2/3, tie 1/3 vs `centering/mean` (3 seeds, p ≤ 0.6)"
    line = headline_markdown(table).splitlines()[2]
    assert line.endswith("| holds 2/3, tie 1/3 vs `centering/mean` (3 seeds, p ≤ 0.6); [claims](docs/results.md) |")
    # `where` keeps the rows whose "on" contains it; reports that do not exist, or lack the rows
    on = headline_table(METRICS, [{**ROW, "verdict": {**verdict, "where": "JA"}}], reports)
    assert on.loc[0, "verdict"] == "tie 1/1 vs `centering/mean` (3 seeds, p ≤ 0.6)"
    assert headline_table(METRICS, [{**ROW, "verdict": verdict}], {}).loc[0, "verdict"] == "not run"
    tiny = {"report": _report([("fmda/m", "centering/mean", "EN→DE", "<1e-6", "1", "holds")])}
    assert headline_table(METRICS, [{**ROW, "verdict": verdict}], tiny).loc[0, "verdict"] == (
        "holds 1/1 vs `centering/mean` (1 seed, p < 1e-6)"  # a bound stays a bound
    )
    other = {**verdict, "method": "fmda-infonce/m"}
    assert headline_table(METRICS, [{**ROW, "verdict": other}], reports).loc[0, "verdict"] == "not tested"
    with pytest.raises(ValueError, match=r"headline.rows\[0\].verdict: missing \['baseline'\], unknown \['metod'\]"):
        headline_table(METRICS, [{**ROW, "verdict": {"reports": ["report"], "method": "x", "metod": "y"}}], reports)
