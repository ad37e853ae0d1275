"""Per-locale chart data: one row per method and direction, confidence bounds where the table has them."""

from __future__ import annotations

import math

import pandas as pd

from language_agnostic.reporting.charts import PER_LOCALE_COLUMNS, per_locale_figure, per_locale_table


def _row(method: str, source: str, target: str, metric: str, value: float) -> dict:
    return {
        "method": method,
        "embedding": "mean",
        "task": "intent_nn",
        "dataset": "massive_test",
        "source": source,
        "target": target,
        "metric": metric,
        "value": value,
    }


def test_per_locale_table_with_and_without_intervals():
    metrics = pd.DataFrame(
        [
            _row("emu", "en-US", "de-DE", "accuracy@1", 0.6),
            _row("emu", "en-US", "de-DE", "accuracy@1_ci_low", 0.55),
            _row("emu", "en-US", "de-DE", "accuracy@1_ci_high", 0.65),
            _row("emu", "de-DE", "en-US", "accuracy@1", 0.7),
            _row("raw", "en-US", "de-DE", "accuracy@1", 0.4),
            _row("raw", "de-DE", "en-US", "accuracy@1", 0.5),
            _row("weak", "en-US", "de-DE", "accuracy@1", 0.1),
        ]
    )
    table = per_locale_table(metrics, "intent_nn", "accuracy@1", max_methods=2)
    assert list(table.columns) == PER_LOCALE_COLUMNS
    rows = [[m, d, v, lo, hi] for m, _, d, v, lo, hi in table.itertuples(index=False)]
    # the two best methods by mean, emu first; emu's de→en has no interval
    assert [r[:3] for r in rows] == [
        ["emu", "de-DE→en-US", 0.7],
        ["emu", "en-US→de-DE", 0.6],
        ["raw", "de-DE→en-US", 0.5],
        ["raw", "en-US→de-DE", 0.4],
    ]
    assert rows[1][3:] == [0.55, 0.65] and all(math.isnan(x) for r in (rows[0], rows[2], rows[3]) for x in r[3:])
    figure = per_locale_figure(table, "intent_nn")
    assert figure.axes[0].get_title() == "intent_nn" and len(figure.axes[0].patches) == 4
    # the axis spans the data, not 0..1, and the legend is outside the axes
    low, high = figure.axes[0].get_ylim()
    assert 0.3 < low < 0.4 and 0.7 < high < 0.75
    assert figure.axes[0].get_legend().get_bbox_to_anchor().x0 > figure.axes[0].bbox.x1 - 1
    assert per_locale_table(metrics, "slu", "accuracy@1").empty


def test_the_baselines_stay_beside_the_best_methods():
    rows = [
        _row("emu", "en-US", "de-DE", "accuracy@1", 0.7),
        _row("softmax", "en-US", "de-DE", "accuracy@1", 0.6),
        _row("raw", "en-US", "de-DE", "accuracy@1", 0.4),
        {**_row("centering", "en-US", "de-DE", "accuracy@1", 0.45)},
    ]
    table = per_locale_table(pd.DataFrame(rows), "intent_nn", "accuracy@1", max_methods=1)
    assert list(table["method"]) == ["emu", "centering", "raw"]  # softmax left out, the baselines kept
