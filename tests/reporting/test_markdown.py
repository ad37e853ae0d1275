"""The one markdown table writer: exact output, alignment, and the error for a ragged row."""

from __future__ import annotations

import pytest

from language_agnostic.reporting.markdown import separator, table


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
