"""The README's headline: rows rebuilt from claims tables written here, the markdown, and the README itself."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from language_agnostic.reporting.claims import claims_section, parse_claims
from language_agnostic.reporting.headline import (
    _claims,
    claim_rows,
    configured_rows,
    findings_reports,
    headline_figure,
    headline_markdown,
    headline_table,
    main,
    readme_block,
    update_readme,
)
from tests.conftest import PROJECT_ROOT

VERDICT = {"reports": ["seeds_report", "report"], "method": "fmda/m", "baseline": "centering/mean", "percent": True}
ROW = {
    "paper": "FMDA",
    "claim": "meaning beats centring",
    "measure": "accuracy@1",
    "paper_figure": "0.594 vs 0.182",
    "claims": "[claims](docs/findings/fmda.md)",
    "verdict": VERDICT,
}


def _report(rows: list[tuple[str, str, str, str, str, str, str, str]]) -> str:
    """A report with one claims table in claims_section's layout: (method, baseline, on, method %,
    baseline %, p, seeds, verdict)."""
    quoted = lambda name: name if "`" in name else f"`{name}`"  # noqa: E731
    # Δ as a report prints it: the difference, to the values' own decimals
    delta = lambda mv, bv: f"{float(mv) - float(bv):+.{len(mv.split('.')[1])}f}"  # noqa: E731
    body = [
        ["a claim", "XLM-R", "1 vs 0", quoted(m), quoted(b), on, mv, bv, delta(mv, bv), p, s, v]
        for m, b, on, mv, bv, p, s, v in rows
    ]
    return "# Report\n\n" + "\n".join(claims_section("Claims", "intro", body)) + "\nafter the table\n"


REPORTS = {
    # the same method against another baseline, in the preferred report: not these rows
    "seeds_report": _report([("fmda/m", "raw/mean", "EN→DE", "80.00", "50.00", "0.01", "3", "holds")]),
    "report": _report(
        [
            ("fmda/m", "centering/mean", "EN→DE", "78.00", "72.00", "<1e-6", "3", "holds"),
            ("fmda/m", "centering/mean", "DE→EN", "80.00", "77.00", "0.003", "3", "holds"),
            ("fmda/m", "centering/mean", "JA→EN", "62.00", "63.00", "0.6", "3", "tie"),
        ]
    ),
}


def test_a_row_is_the_mean_of_its_claims_rows_with_their_verdicts_and_seeds():
    table = headline_table([ROW], REPORTS)
    # (78 + 80 + 62) / 3 = 73.33 %, (72 + 77 + 63) / 3 = 70.67 %: both against centering, both over 3 seeds;
    # Δ the mean of the rows' Δ (+6, +3, -1) = +2.667 points, rounded last: +0.027 (not 0.733 - 0.707 = 0.026)
    assert table.loc[0, ["ours", "baseline", "delta"]].tolist() == pytest.approx([0.73333, 0.70667, 0.02667], abs=1e-5)
    assert table.loc[0, ["rows", "seeds"]].tolist() == [3, "3"]
    # each verdict with the largest p of its own rows: the tie's 0.6 is not the holding rows'
    assert table.loc[0, "verdict"] == "holds 2/3 (p ≤ 0.003), tie 1/3 (p = 0.6) vs `centering/mean` (3 seeds)"
    assert headline_markdown(table).splitlines()[2] == (
        "| FMDA | meaning beats centring | accuracy@1 | 0.594 vs 0.182 | 0.707 (`centering/mean`) "
        "| 0.733 (`fmda/m`) | +0.027 | holds 2/3 (p ≤ 0.003), tie 1/3 (p = 0.6) vs `centering/mean` (3 seeds); "
        "[claims](docs/findings/fmda.md) |"
    )


def test_where_picks_rows_by_their_on_column_and_correlations_stay_as_they_are():
    report = _report(
        [
            ("seed/meaning", "raw/mean", "avg Pearson, en-de, en-zh", "0.401", "0.270", "0.0001", "3", "holds"),
            ("seed/meaning", "raw/mean", "avg Pearson, ar-en, tr-en", "0.679", "0.630", "0.0008", "1", "holds"),
        ]
    )
    verdict = {"reports": ["qe"], "method": "seed/meaning", "baseline": "raw/mean", "where": "ar-en"}
    line = headline_markdown(headline_table([{**ROW, "verdict": verdict}], {"qe": report})).splitlines()[2]
    assert (
        "| 0.630 (`raw/mean`) | 0.679 (`seed/meaning`) | +0.049 | holds 1/1 (p = 0.0008) vs `raw/mean` (1 seed);"
        in line
    )
    both = headline_table([{**ROW, "verdict": {**verdict, "where": None}}], {"qe": report})
    assert both.loc[0, ["ours", "baseline", "delta"]].tolist() == pytest.approx([0.54, 0.45, 0.09])
    assert both.loc[0, "seeds"] == "1/3"
    assert both.loc[0, "verdict"] == "holds 2/2 (p ≤ 0.0008) vs `raw/mean` (1–3 seeds)"


def test_an_empty_cell_of_a_findings_page_repeats_the_one_above():
    report = REPORTS["report"].replace(
        "| a claim | XLM-R | 1 vs 0 | `fmda/m` | `centering/mean` | DE→EN", "| | | | | | DE→EN"
    )
    assert "| | | | | | DE→EN" in report
    table = headline_table([ROW], {"report": report})
    assert table.loc[0, ["ours", "baseline"]].tolist() == pytest.approx([0.73333, 0.70667], abs=1e-5)
    assert table.loc[0, ["rows", "verdict"]].tolist() == [
        3,
        "holds 2/3 (p ≤ 0.003), tie 1/3 (p = 0.6) vs `centering/mean` (3 seeds)",
    ]


def test_a_row_without_claims_rows_says_why_and_shows_no_number():
    assert headline_table([ROW], {}).loc[0, "verdict"] == "not run"
    other = {**ROW, "verdict": {**VERDICT, "method": "fmda-infonce/m"}}
    table = headline_table([other], REPORTS)
    assert table.loc[0, "verdict"] == "no claims row"
    assert "| — (`centering/mean`) | — (`fmda-infonce/m`) |  | no claims row; [claims]" in headline_markdown(table)


def test_claims_tables_are_read_back_as_the_report_wrote_them():
    report = _report([("`lajmcl` (this run)", "cosda", "EM, non-en", "14.83", "35.21", "<1e-6", "1", "fails")])
    assert parse_claims(report).values.tolist() == [
        [
            "a claim",
            "XLM-R",
            "1 vs 0",
            "lajmcl",
            "cosda",
            "EM, non-en",
            "14.83",
            "35.21",
            "-20.38",
            "<1e-6",
            "1",
            "fails",
        ]
    ]


def test_a_findings_page_compact_claims_table_is_read_once_per_test():
    page = (
        "| claim | paper's backbone | ours (EM %, non-English) | Δ | McNemar p | seeds | verdict |\n"
        "|---|---|---|---:|---:|---:|---|\n"
        "| LAJ-MCL > CoSDA-ML | XLM-R | `lajmcl` 14.83 vs `cosda` 35.21 | −20.38 | <1e-6 | 1 | fails, unequal |\n"
        "| LAJoint > − Compressor | mBERT | 13.05 vs `lajoint-no_compressor` 12.15 | +0.90 | 3.2e-5 | 1 | holds |\n"
        "\n| claim | backbone | vs the same budget | Δ | McNemar p | seeds | verdict |\n|---|---|---|---|---|---|---|\n"
        "| LAJ-MCL > CoSDA-ML (§4.3) | XLM-R | `lajmcl` 14.83 vs `cosda` 35.21 | −20.38 | <1e-6 | 1 | fails |\n"
    )
    verdict = {"reports": ["slu"], "method": "lajmcl", "baseline": "cosda", "percent": True}
    table = headline_table([{**ROW, "verdict": verdict}], {"slu": page})
    # the row without a method name is left out; the repeated test counts once
    assert table.loc[0, ["baseline", "ours", "delta"]].tolist() == pytest.approx([0.3521, 0.1483, -0.2038])
    assert table.loc[0, ["rows", "seeds", "verdict"]].tolist() == [1, "1", "fails 1/1 (p < 1e-6) vs `cosda` (1 seed)"]
    assert "| 0.352 (`cosda`) | 0.148 (`lajmcl`) | -0.204 | fails 1/1" in headline_markdown(table)


def test_a_findings_section_is_read_alone_so_the_page_s_one_seed_rows_are_not_averaged_with_its_seeds_rows(tmp_path):
    header = (
        "| claim | paper's backbone | paper | method | baseline | on | method % | baseline % | Δ (points) "
        "| McNemar p | seeds | verdict |\n|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|\n"
    )
    claim = "| LAJ-MCL > CoSDA-ML | XLM-R | 47.58 vs 43.72 | `lajmcl` (this run) | `cosda` (this run) | EM, non-en "
    short = (  # a page's shorter layout: no backbone, paper or *on* column
        "| claim | method | baseline | method % | baseline % | Δ (points) | McNemar p | seeds | verdict |\n"
        "|---|---|---|---:|---:|---:|---:|---:|---:|\n"
        "| LAJ-MCL > CoSDA-ML | `lajmcl` (this run) | `cosda` (this run) "
        "| 36.00 | 40.30 | -4.30 ± 2.00 | 0.003 | 3 | fails |\n"
    )
    page = (
        f"# LAJ-MCL\n\n## One seed\n\n{header}{claim}| 38.10 | 40.25 | -2.15 | <1e-6 | 1 | fails |\n"
        f"\n## Three seeds\n\n{short}\n## After\n\ntext\n"
    )
    (tmp_path / "page.md").write_text(page)
    reports = findings_reports(tmp_path, {"seeds": "page.md#Three seeds", "one": "page.md", "gone": "absent.md"})
    assert set(reports) == {"seeds", "one"} and "38.10" in reports["one"]
    assert "38.10" not in reports["seeds"] and "## After" not in reports["seeds"]
    verdict = {"reports": ["seeds", "one"], "method": "lajmcl", "baseline": "cosda", "percent": True}
    table = headline_table([{**ROW, "verdict": verdict}], reports)
    assert table.loc[0, ["baseline", "ours", "delta"]].tolist() == pytest.approx([0.4030, 0.3600, -0.0430])
    assert table.loc[0, "verdict"] == "fails 1/1 (p = 0.003) vs `cosda` (3 seeds)"
    whole = headline_table([{**ROW, "verdict": {**verdict, "reports": ["one"]}}], reports)
    assert whole.loc[0, ["ours", "rows"]].tolist() == [pytest.approx(0.3705), 2]  # the page: both rows averaged


def test_the_readme_block_is_replaced_between_its_markers():
    readme = "intro\n<!-- headline:start -->\nold\n<!-- headline:end -->\nrest\n"
    new = update_readme(readme, "| a |\n")
    assert new == "intro\n<!-- headline:start -->\n| a |\n<!-- headline:end -->\nrest\n"
    assert readme_block(new) == "| a |\n"
    with pytest.raises(ValueError, match="no <!-- headline:start -->"):
        update_readme("no markers", "x")


def test_the_figure_spans_the_values():
    figure = headline_figure(headline_table([ROW], REPORTS))
    left, right = figure.axes[0].get_xlim()
    assert 0.69 < left < 0.707 and 0.733 < right < 0.75  # not 0..1: a 0.01 gap stays visible
    import matplotlib.pyplot as plt

    plt.close(figure)


def test_the_command_writes_the_csv_the_readme_shows(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- headline:start -->\n<!-- headline:end -->\n")
    csv = tmp_path / "headline.csv"
    headline_table([ROW], REPORTS).to_csv(csv, index=False)
    assert main([str(readme), str(csv)]) == 0
    assert "| 0.707 (`centering/mean`) | 0.733 (`fmda/m`) | +0.027 |" in readme.read_text()


COMMITTED = pd.read_csv(PROJECT_ROOT / "docs" / "headline.csv", dtype={"seeds": str})


def test_the_readme_table_is_what_the_builder_writes_from_the_committed_headline():
    assert readme_block((PROJECT_ROOT / "README.md").read_text()) == headline_markdown(COMMITTED)
    assert (PROJECT_ROOT / "docs" / "headline.png").stat().st_size > 10_000


def test_the_committed_headline_is_rebuilt_from_the_committed_claims_tables():
    """docs/headline.csv is what the builder makes of the findings pages' claims tables today (make readme)."""
    rebuilt = headline_table(configured_rows(PROJECT_ROOT), findings_reports(PROJECT_ROOT))
    assert headline_markdown(COMMITTED) == headline_markdown(rebuilt)


@pytest.mark.parametrize("i", range(len(COMMITTED)))
def test_each_committed_row_has_one_baseline_and_one_set_of_seeds(i):
    row = COMMITTED.iloc[i]
    if pd.isna(row["seeds"]):
        assert pd.isna(row["ours"]) and pd.isna(row["baseline"])  # no claims rows: no numbers either
        return
    seeds = str(row["seeds"])
    shown = f"{seeds} seed{'s' if seeds != '1' else ''}" if "/" not in seeds else seeds.replace("/", "–") + " seeds"
    assert row["verdict"].endswith(f" vs `{row['baseline_label']}` ({shown})")


@pytest.mark.parametrize("i", range(len(COMMITTED)))
def test_the_readme_delta_is_the_findings_page_mean_delta_to_the_last_printed_digit(i):
    """Each README row's Δ against its findings page: the mean of the Δ column of the rows it summarises,
    read off the page here (the first number of each cell), rounded once."""
    row = COMMITTED.iloc[i]
    if pd.isna(row["seeds"]):
        return
    spec = configured_rows(PROJECT_ROOT)[i]["verdict"]
    pages = findings_reports(PROJECT_ROOT)
    name = next(n for n in spec["reports"] if n in pages and len(claim_rows(_claims(pages[n]), spec)))
    cells = claim_rows(_claims(pages[name]), spec)["delta"]
    deltas = [float(re.match(r"[+\-−]?[\d.]+", c).group().replace("−", "-")) for c in cells]
    page_mean = sum(deltas) / len(deltas) / (100.0 if spec.get("percent") else 1.0)
    shown = readme_block((PROJECT_ROOT / "README.md").read_text()).splitlines()[2 + i].split("|")[7].strip()
    assert shown == f"{page_mean:+.3f}"
