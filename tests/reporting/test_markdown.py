"""The one markdown table writer: exact output, alignment, and the error for a ragged row."""

from __future__ import annotations

import pytest

from language_agnostic.reporting.markdown import section_text, separator, table


def test_table_exact_lines():
    assert table(["pair", "acc", "MAP"], [["en-de", "0.812", 0.5], ["en-ja", "—", 1]]) == [
        "| pair | acc | MAP |",
        "|---|---:|---:|",
        "| en-de | 0.812 | 0.5 |",
        "| en-ja | — | 1 |",
    ]


def test_label_columns_are_left_aligned():
    assert separator(5, left=2) == "|---|---|---:|---:|---:|"
    assert table(["a", "b"], left=2) == ["| a | b |", "|---|---|"]


def test_a_row_with_the_wrong_number_of_cells_is_named():
    with pytest.raises(ValueError, match=r"table row 1 has 1 cells for 2 columns: \['x'\]"):
        table(["a", "b"], [["1", "2"], ["x"]])


SECTIONED = """# Page

## One

text one

### One, a subsection

| a |
|---|

```bash
## not a heading: inside a fence
```

## Two

text two
"""


def test_a_section_runs_to_the_next_heading_of_its_level_or_higher_and_skips_fenced_lines():
    one = section_text(SECTIONED, "One")
    assert one.startswith("## One\n") and "### One, a subsection" in one and "## not a heading" in one
    assert "## Two" not in one and "text two" not in one
    assert section_text(SECTIONED, "One, a subsection").rstrip().endswith("## not a heading: inside a fence\n```")
    assert section_text(SECTIONED, "Two") == "## Two\n\ntext two\n"


def test_a_missing_section_is_an_error_that_names_it():
    with pytest.raises(ValueError, match="no heading 'Three'"):
        section_text(SECTIONED, "Three")
