"""A findings page's tables checked cell by cell against a run's reports, and rewritten from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from language_agnostic.reporting.markdown import cell_spans, parse_tables, table
from language_agnostic.reporting.page_tables import main, normalise

REPORT = "\n".join(
    [
        "# FMDA on MASSIVE",
        "",
        "## Table 2: retrieval, accuracy@1",
        "",
        *table(["embedding", "EN→DE", "DE→EN"], [["raw/cls", "0.560", "0.586"], ["fmda/m", "0.781", "0.799"]]),
        "",
        "## Table 3: template retrieval, accuracy@1",
        "",
        *table(
            ["embedding", "EN template", "DE template"], [["raw/cls", "0.191", "0.254"], ["fmda/m", "0.339", "0.337"]]
        ),
        "",
    ]
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: Path | str) -> tuple[int, list[str]]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out.splitlines()


def test_a_page_equal_to_the_report_has_no_difference(tmp_path, capsys):
    page, report = _write(tmp_path, "page.md", REPORT), _write(tmp_path, "report.md", REPORT)
    code, out = _run(capsys, "check", page, report)
    assert code == 0
    assert out == [
        '"Table 2: retrieval, accuracy@1" [embedding]: 4 cells checked, 0 differ, 0 not in the reports',
        '"Table 3: template retrieval, accuracy@1" [embedding]: 4 cells checked, 0 differ, 0 not in the reports',
        f"{page}: 2 tables, 8 cells checked, 0 differ",
    ]


def test_one_changed_cell_is_named_by_row_key_and_column(tmp_path, capsys):
    page = _write(tmp_path, "page.md", REPORT.replace("| fmda/m | 0.781 |", "| fmda/m | 0.780 |"))
    code, out = _run(capsys, "check", page, _write(tmp_path, "report.md", REPORT))
    assert code == 1
    assert out == [
        '"Table 2: retrieval, accuracy@1" [embedding]: 4 cells checked, 1 differ, 0 not in the reports',
        "  fmda/m / EN→DE: page '0.780' ≠ run '0.781'",
        '"Table 3: template retrieval, accuracy@1" [embedding]: 4 cells checked, 0 differ, 0 not in the reports',
        f"{page}: 2 tables, 8 cells checked, 1 differ",
    ]


def test_gaps_give_each_rows_largest_difference_and_its_column(tmp_path, capsys):
    # another device's run: fmda/m off by 0.004 and 0.011 (the larger is DE→EN), raw/cls by 0.001,
    # a Δ cell with a ± and a Unicode minus read by its leading number
    gpu = (
        REPORT.replace("| fmda/m | 0.781 | 0.799 |", "| fmda/m | 0.777 | 0.810 |")
        .replace("| raw/cls | 0.560 |", "| raw/cls | 0.561 |")
        .replace("| fmda/m | 0.339 |", "| fmda/m | \u22120.339 ± 0.002 |")
    )
    page = _write(tmp_path, "gpu.md", gpu)
    code, out = _run(capsys, "check", "--gaps", page, _write(tmp_path, "cpu.md", REPORT))
    assert code == 1
    assert out == [
        '"Table 2: retrieval, accuracy@1" [embedding]: 4 cells checked, 3 differ, 0 not in the reports',
        '"Table 3: template retrieval, accuracy@1" [embedding]: 4 cells checked, 1 differ, 0 not in the reports',
        '"Table 2: retrieval, accuracy@1" [embedding]: largest |page − run| per row',
        "  raw/cls: 0.001 (EN→DE)",
        "  fmda/m: 0.011 (DE→EN)",
        '"Table 3: template retrieval, accuracy@1" [embedding]: largest |page − run| per row',
        "  raw/cls: 0.000 (EN template)",
        "  fmda/m: 0.678 (EN template)",
        f"{page}: 2 tables, 8 cells checked, 4 differ",
    ]


def test_a_page_table_merged_from_two_report_tables(tmp_path, capsys):
    # the page puts Table 2's and Table 3's columns side by side, one row left out, in another order
    page = "\n".join(
        [
            "### Tables 2 and 3",
            "",
            *table(
                ["embedding", "DE template", "EN→DE"], [["fmda/m", "0.337", "0.781"], ["raw/cls", "0.254", "0.561"]]
            ),
        ]
    )
    code, out = _run(capsys, "check", _write(tmp_path, "page.md", page), _write(tmp_path, "report.md", REPORT))
    assert code == 1
    assert out[:2] == [
        '"Tables 2 and 3" [embedding]: 4 cells checked, 1 differ, 0 not in the reports',
        "  raw/cls / EN→DE: page '0.561' ≠ run '0.560'",
    ]


def _pairs_report() -> str:
    """Two report tables with the same rows and columns, told apart only by their headings."""
    header = ["method / embedding", "EN template"]
    return "\n".join(
        [
            "## Table 5: two-stage training",
            "### EN-DE",
            *table(header, [["two-stage / m", "0.460"]]),
            "",
            "### EN-ES",
            *table(header, [["two-stage / m", "0.542"]]),
        ]
    )


def test_an_ambiguous_cell_is_resolved_by_the_headings_words(tmp_path, capsys):
    page = "\n".join(
        [
            "### Table 5",
            "#### EN-DE",
            *table(["method / embedding", "EN template"], [["two-stage / m", "0.460"]]),
            "#### EN-ES",
            *table(["method / embedding", "EN template"], [["two-stage / m", "0.541"]]),
        ]
    )
    path = _write(tmp_path, "page.md", page)
    code, out = _run(capsys, "check", path, _write(tmp_path, "report.md", _pairs_report()))
    assert code == 1
    assert out == [
        '"EN-DE" [method / embedding]: 1 cells checked, 0 differ, 0 not in the reports',
        '"EN-ES" [method / embedding]: 1 cells checked, 1 differ, 0 not in the reports',
        "  two-stage / m / EN template: page '0.541' ≠ run '0.542'",
        f"{path}: 2 tables, 2 cells checked, 1 differ",
    ]


def test_a_cell_the_headings_cannot_decide_is_ambiguous_not_a_difference(tmp_path, capsys):
    page = "\n".join(["### Other", *table(["method / embedding", "EN template"], [["two-stage / m", "0.9"]])])
    report = _write(tmp_path, "report.md", _pairs_report())
    path = _write(tmp_path, "page.md", page)
    code, out = _run(capsys, "check", path, report)
    assert code == 0
    assert out == [
        '"Other" [method / embedding]: 0 cells checked, 0 differ, 1 ambiguous, 0 not in the reports',
        f"  two-stage / m / EN template: ambiguous, the run has '0.460' ({report}: EN-DE), '0.542' ({report}: EN-ES)",
        f"{path}: 0 tables, 0 cells checked, 0 differ, 1 ambiguous",
    ]


def test_a_page_table_absent_from_the_reports_is_listed(tmp_path, capsys):
    page = REPORT + "\n### Dev figures\n\n" + "\n".join(table(["pair", "rs"], [["EN-DE", "0.8"], ["EN-JA", "0.7"]]))
    path = _write(tmp_path, "page.md", page)
    code, out = _run(capsys, "check", path, _write(tmp_path, "report.md", REPORT))
    assert code == 0
    assert out[-2:] == [
        '"Dev figures" [pair]: 0 cells checked, 0 differ, 2 not in the reports',
        f'{path}: 2 tables, 8 cells checked, 0 differ; 1 table not in these reports: "Dev figures"',
    ]


def test_bold_backticks_and_the_unicode_minus_are_not_differences(tmp_path, capsys):
    report = "## Δ\n" + "\n".join(table(["method", "Δ"], [["`fmda/m`", "-0.34"], ["dream", "+1.2"]]))
    page = "## Δ\n" + "\n".join(table(["method", "Δ"], [["fmda/m", "**−0.34**"], ["**dream**", "+1.2"]]))
    code, out = _run(capsys, "check", _write(tmp_path, "page.md", page), _write(tmp_path, "report.md", report))
    assert code == 0
    assert out[0] == '"Δ" [method]: 2 cells checked, 0 differ, 0 not in the reports'
    assert normalise("  **−0.34**  (p `<1e-6`) ") == "-0.34 (p <1e-6)"


def test_a_page_that_dropped_a_label_column_or_leaves_repeats_empty(tmp_path, capsys):
    report = "## Leaderboard\n" + "\n".join(
        table(["method", "embedding", "acc"], [["fmda", "m", "0.78"], ["fmda", "tp", "0.77"]], left=2)
    )
    # the page keeps only the embedding column; a second table leaves a repeated label cell empty
    page = "\n".join(
        [
            "## Leaderboard",
            *table(["embedding", "acc"], [["tp", "0.77"]]),
            "",
            *table(["method", "embedding", "acc"], [["fmda", "m", "0.78"], ["", "tp", "0.76"]], left=2),
        ]
    )
    code, out = _run(capsys, "check", _write(tmp_path, "page.md", page), _write(tmp_path, "report.md", report))
    assert code == 1
    assert out[:3] == [
        '"Leaderboard" [embedding]: 1 cells checked, 0 differ, 0 not in the reports',
        '"Leaderboard" [method]: 2 cells checked, 1 differ, 0 not in the reports',
        "  fmda | tp / acc: page '0.76' ≠ run '0.77'",
    ]


def test_update_rewrites_only_the_differing_cells_keeping_bold(tmp_path, capsys):
    report = "## T\n" + "\n".join(table(["embedding", "a", "b"], [["x", "0.10", "0.20"], ["y", "0.30", "0.40"]]))
    page_text = (
        "# Page\r\n\r\nSome prose | with a pipe.\r\n\r\n## T\r\n\r\n"
        "| embedding | a | b |\r\n|---|---:|---:|\r\n"
        "| x |   **0.11**  | 0.20 |\r\n"
        "| **y** | 0.30 | 0.41 |\r\n\r\ntrailing text\r\n"
    )
    page = tmp_path / "page.md"
    page.write_bytes(page_text.encode("utf-8"))
    code, out = _run(capsys, "update", page, _write(tmp_path, "report.md", report))
    assert code == 0
    assert out == [
        "\"T\" [embedding] x / a: '**0.11**' → '**0.10**'",
        "\"T\" [embedding] y / b: '0.41' → '0.40'",
        f"{page}: 2 cells updated",
    ]
    expected = page_text.replace("**0.11**", "**0.10**").replace("0.41", "0.40")
    assert page.read_bytes() == expected.encode("utf-8")
    code, out = _run(capsys, "check", page, tmp_path / "report.md")
    assert code == 0


def test_a_missing_file_is_named(tmp_path, capsys):
    page = _write(tmp_path, "page.md", REPORT)
    missing = tmp_path / "data" / "fmda_tables.md"
    assert main(["check", str(page), str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: no such file: {missing}\n"
    assert main(["update", str(tmp_path / "nope.md"), str(page)]) == 2
    assert str(tmp_path / "nope.md") in capsys.readouterr().err


def test_parse_tables_reads_headings_alignment_and_skips_code_blocks():
    text = "\n".join(
        [
            "# Top",
            "```bash",
            "# a shell comment, not a heading",
            "| not | a table |",
            "|---|---|",
            "```",
            "## Sub",
            *table(["pair", "n", "acc"], [["en-de", "1", r"a \| b"]], left=2),
        ]
    )
    (parsed,) = parse_tables(text)
    assert parsed.headings == ("Top", "Sub")
    assert parsed.header == ("pair", "n", "acc")
    assert parsed.left == (True, True, False)
    assert parsed.rows == (("en-de", "1", r"a \| b"),)
    assert parsed.lines == (9,)
    assert cell_spans("| a | b |") == [(1, 4), (5, 8)]


SEEDS = REPORT.replace("0.781", "0.777").replace("0.339", "0.331")  # the same code's report, another run


def test_a_report_named_for_a_section_serves_that_section_alone(tmp_path, capsys):
    # the page: Table 2 from the default run, Table 3 (under "Seeds") from a seeds run of the same code,
    # whose headings equal the default report's: only the section names tell them apart
    page_text = REPORT.replace("## Table 3", "## Seeds\n\n### Table 3").replace("0.339", "0.331")
    page = _write(tmp_path, "page.md", page_text)
    default, seeds = _write(tmp_path, "default.md", REPORT), _write(tmp_path, "seeds.md", SEEDS)
    code, out = _run(capsys, "check", page, default, f"{seeds}#Seeds")
    assert code == 0
    assert out[-1] == f"{page}: 2 tables, 8 cells checked, 0 differ"
    code, out = _run(capsys, "check", page, default, seeds)  # unscoped: the two runs disagree on cells
    assert code == 0 and "ambiguous" in out[-1]


def test_a_section_the_page_does_not_have_is_an_error(tmp_path, capsys):
    page, report = _write(tmp_path, "page.md", REPORT), _write(tmp_path, "report.md", REPORT)
    assert main(["check", str(page), f"{report}#Table 7"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"error: {page} has no table under a heading 'Table 7' (from {report}#Table 7)"
    )


def test_a_subsection_named_for_its_own_report_takes_it_over_its_section(tmp_path, capsys):
    # "Seeds" is the seeds run's, but its subsection "One seed" shows the default run's Table 3
    page_text = REPORT.replace("## Table 3", "## Seeds\n\n### One seed\n\n#### Table 3")
    page = _write(tmp_path, "page.md", page_text)
    default, seeds = _write(tmp_path, "default.md", REPORT), _write(tmp_path, "seeds.md", SEEDS)
    code, out = _run(capsys, "check", page, default, f"{seeds}#Seeds", f"{default}#One seed")
    assert code == 0
    assert out[-1] == f"{page}: 2 tables, 8 cells checked, 0 differ"
