"""The metrics-table row every pipeline builds: its columns in the table's order, its value rounded."""

from __future__ import annotations

from language_agnostic.datasets.metrics import METRIC_COLUMNS
from language_agnostic.evaluation.rows import metric_row


def test_a_row_has_the_table_columns_in_order_and_a_rounded_float_value():
    row = metric_row("slu", "zsjoint", "first_token", "slu", "massive_test", "en-US", "de-DE", "em", 1 / 3, "x")
    assert list(row) == METRIC_COLUMNS[:-1]  # run_id: added when the table is saved
    assert row == {
        "pipeline": "slu",
        "method": "zsjoint",
        "embedding": "first_token",
        "task": "slu",
        "dataset": "massive_test",
        "source": "en-US",
        "target": "de-DE",
        "metric": "em",
        "value": 0.333333,
        "encoder": "x",
    }
    assert type(metric_row("p", "m", "e", "t", "d", "s", "t", "x", 2, "enc")["value"]) is float
