"""The ``slu`` tables (LAJ-MCL Tables 12-13 layout) from the long metrics table: a locale per column, their average."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.reporting.markdown import table

METRICS = {"exact_match": "Semantic exact match", "intent_accuracy": "Intent accuracy", "slot_f1": "Slot F1"}
METHOD_ORDER = ["zsjoint", "cosda"]


def slu_rows(scores: Mapping[str, Mapping[str, float]], method: str, encoder: str, source: str) -> pd.DataFrame:
    """Metric rows: ``task=slu``, one per (test locale, metric), ``source`` the training locale."""
    return pd.DataFrame([{"pipeline": "slu", "method": method, "embedding": "first_token", "task": "slu",
                          "dataset": "massive_test", "source": source, "target": locale, "metric": metric,
                          "value": round(float(value), 6), "encoder": encoder}
                         for locale, values in scores.items() for metric, value in values.items()])


def _lang(locale: str) -> str:
    return locale.split("-")[0]


def slu_tables(rows: pd.DataFrame, training_locale: str, notes: Sequence[str] = ()) -> str:
    """Markdown: one table per metric (%, methods × test locales) with the average over the non-training locales."""
    rows = rows[rows["task"] == "slu"]
    locales = list(dict.fromkeys(rows["target"]))
    locales.sort(key=lambda loc: (loc != training_locale, loc))
    targets = [loc for loc in locales if loc != training_locale]
    methods = [m for m in METHOD_ORDER if m in set(rows["method"])] + sorted(set(rows["method"]) - set(METHOD_ORDER))
    cells: dict[tuple[str, str, str], float] = {(r.method, r.target, r.metric): float(r.value) for r in rows.itertuples()}
    out = ["# Zero-shot cross-lingual SLU on MASSIVE (test split)", "",
           f"Trained on {training_locale} train only; checkpoint selected on {training_locale} dev exact match. "
           f"In %; avg = mean over the {len(targets)} non-{_lang(training_locale)} locales.", "", *notes]
    for metric, title in METRICS.items():
        body = []
        for method in methods:
            values = [cells.get((method, loc, metric), np.nan) for loc in locales]
            avg = np.nanmean([cells.get((method, loc, metric), np.nan) for loc in targets]) if targets else np.nan
            body.append([method, *(f"{100 * v:.2f}" if not np.isnan(v) else "—" for v in [*values, avg])])
        out += [f"## {title}", "", *table(["method", *(_lang(loc) for loc in locales), "avg"], body), ""]
    return "\n".join(out)


def average_over_targets(rows: pd.DataFrame, method: str, metric: str, training_locale: str) -> float:
    """A method's mean ``metric`` over the test locales other than the training one."""
    mine = rows[(rows["task"] == "slu") & (rows["method"] == method) & (rows["metric"] == metric)
                & (rows["target"] != training_locale)]
    return float(mine["value"].astype(float).mean()) if len(mine) else float("nan")


def summary(rows: pd.DataFrame, training_locale: str) -> dict[str, Any]:
    """Per method, the non-training-locale averages of the three metrics (for logs and MLflow)."""
    return {m: {k: average_over_targets(rows, m, k, training_locale) for k in METRICS} for m in dict.fromkeys(rows["method"])}
