"""Per-locale charts of the long metrics table, with confidence intervals where a metric has them (the notebook's)."""

from __future__ import annotations

from typing import Any

import pandas as pd

PER_LOCALE_COLUMNS = ["method", "embedding", "direction", "value", "ci_low", "ci_high"]


# the untrained baselines every chart keeps beside the trained methods, whatever their rank
BASELINES = (("raw", "mean"), ("centering", "mean"))


def per_locale_table(
    metrics: pd.DataFrame, task: str, metric: str, max_methods: int = 6, baselines: tuple = BASELINES
) -> pd.DataFrame:
    """One row per ``method/embedding`` and direction (``source→target``) of one task's metric.

    A metric ``m`` has a confidence interval when the table also holds ``m_ci_low`` and
    ``m_ci_high`` rows of the same key (EMU's accuracy@1 does); the bounds are NaN otherwise.
    Rows of several datasets of the task (e.g. template sets of several training pairs) are
    averaged per direction.

    Args:
        metrics: The long metrics table.
        task: The task (``intent_nn``, ``cross_lingual_retrieval``, ...).
        metric: The metric (``accuracy@1``, ...).
        max_methods: How many ``method/embedding`` to keep: those of highest mean over their
            directions (ties by name), so a chart stays readable.
        baselines: ``(method, embedding)`` kept besides those, when the table has them (the raw
            and mean-centred encoder: what a trained method must beat).

    Returns:
        Columns :data:`PER_LOCALE_COLUMNS`, ordered by method rank then direction (the baselines
        where their mean ranks them).
    """
    rows = metrics[metrics["task"] == task].copy()
    rows["direction"] = rows["source"].astype(str) + "→" + rows["target"].astype(str)
    rows["value"] = pd.to_numeric(rows["value"])
    key = ["method", "embedding", "direction"]
    parts = {
        name: rows[rows["metric"] == m].groupby(key)["value"].mean().rename(name)
        for name, m in (("value", metric), ("ci_low", f"{metric}_ci_low"), ("ci_high", f"{metric}_ci_high"))
    }
    table = pd.concat(parts.values(), axis=1).dropna(subset=["value"]).reset_index()
    if table.empty:
        return pd.DataFrame(columns=PER_LOCALE_COLUMNS)
    means = table.groupby(["method", "embedding"])["value"].mean().reset_index()
    means = means.sort_values(["value", "method", "embedding"], ascending=[False, True, True])
    keys = list(zip(means["method"], means["embedding"], strict=True))
    kept = set(keys[:max_methods]) | {tuple(b) for b in baselines}
    means = means[[k in kept for k in keys]]
    rank = {(m, e): i for i, (m, e) in enumerate(zip(means["method"], means["embedding"], strict=True))}
    table["_rank"] = [rank.get((m, e)) for m, e in zip(table["method"], table["embedding"], strict=True)]
    table = table.dropna(subset=["_rank"]).sort_values(["_rank", "direction"])
    return table[PER_LOCALE_COLUMNS].reset_index(drop=True)


def per_locale_figure(table: pd.DataFrame, title: str) -> Any:
    """Grouped bars: one group per direction, one bar per ``method/embedding``, CI whiskers where known.

    The baselines (:data:`BASELINES`) are grey, the value axis spans the data (not 0 to 1), so
    differences of 0.01 show, and the legend sits outside the axes, clear of the bars.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    directions = sorted(table["direction"].unique())
    labels = list(dict.fromkeys(zip(table["method"], table["embedding"], strict=True)))
    figure, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(directions) * max(1, len(labels)) / 3) + 2.5, 4))
    width = 0.8 / max(1, len(labels))
    greys = iter(["0.35", "0.65", "0.5", "0.8"])
    for i, (method, embedding) in enumerate(labels):
        mine = table[(table["method"] == method) & (table["embedding"] == embedding)].set_index("direction")
        mine = mine.reindex(directions)
        x = np.arange(len(directions)) + i * width
        errors = None
        if mine["ci_low"].notna().any():
            errors = np.vstack(
                [(mine["value"] - mine["ci_low"]).fillna(0), (mine["ci_high"] - mine["value"]).fillna(0)]
            )
        colour = next(greys, "0.5") if (method, embedding) in BASELINES else None
        ax.bar(x, mine["value"], width, yerr=errors, capsize=2, label=f"{method}/{embedding}", color=colour)
    low = pd.concat([table["value"], table["ci_low"]]).min()
    high = pd.concat([table["value"], table["ci_high"]]).max()
    span = max(float(high - low), 0.01)
    ax.set_ylim(max(0.0, float(low) - 0.15 * span), float(high) + 0.1 * span)
    ax.set_xticks(np.arange(len(directions)) + width * (len(labels) - 1) / 2, directions, rotation=30, ha="right")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    figure.tight_layout()
    return figure
