"""EMU's tables (Hirota et al. 2020, Tables 2 and 5) from the long metrics table, on MASSIVE."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from language_agnostic.reporting.markdown import table

# the order of EMU's Table 2: the raw encoder, the fine-tuning baselines, EMU's ablations, EMU
METHOD_ORDER = ["raw", "softmax", "contrastive", "npair", "emu-no_ld_cl", "emu-no_ld", "emu", "emu-parallel"]


def _lang(locale: str) -> str:
    return locale.split("-")[0].upper()


def _fmt(value: float | None) -> str:
    return "—" if value is None or np.isnan(value) else f"{100 * value:.2f}"


def _accuracy(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[(rows["task"] == "intent_nn") & (rows["metric"] == "accuracy@1")]


def table2_summary(rows: pd.DataFrame, training_locale: str) -> tuple[list[str], dict[str, dict[str, float]]]:
    """EMU Table 2's columns for MASSIVE: ``en-en``, the mean of ``EN → *`` and of ``* → EN`` (accuracy, %).

    Returns:
        The markdown lines and ``{method: {column: value}}`` (for the ablation table).
    """
    acc = _accuracy(rows)
    en = _lang(training_locale).lower()
    columns = [f"{en}-{en}", f"{_lang(training_locale)} → *", f"* → {_lang(training_locale)}"]
    methods = [m for m in METHOD_ORDER if m in set(acc["method"])] + sorted(set(acc["method"]) - set(METHOD_ORDER))
    values: dict[str, dict[str, float]] = {}
    body = []
    for method in methods:
        mine = acc[acc["method"] == method]
        mono = mine[(mine["source"] == training_locale) & (mine["target"] == training_locale)]["value"]
        out_ = mine[(mine["source"] == training_locale) & (mine["target"] != training_locale)]["value"]
        in_ = mine[(mine["source"] != training_locale) & (mine["target"] == training_locale)]["value"]
        values[method] = dict(zip(columns, (float(mono.mean()) if len(mono) else np.nan,
                                            float(out_.mean()) if len(out_) else np.nan,
                                            float(in_.mean()) if len(in_) else np.nan)))
        body.append([method, *(_fmt(values[method][c]) for c in columns)])
    return table(["method", *columns], body), values


def per_direction_table(rows: pd.DataFrame, training_locale: str) -> list[str]:
    """Accuracy@1 (%) per direction, with ``*`` where McNemar's test against the raw encoder gives p < 0.05."""
    acc = _accuracy(rows)
    p = rows[(rows["task"] == "intent_nn") & (rows["metric"] == "mcnemar_p_vs_raw")]
    significant = {(r.method, r.source, r.target): r.value < 0.05 for r in p.itertuples()}
    directions = list(dict.fromkeys(zip(acc["source"], acc["target"])))
    directions.sort(key=lambda d: (d != (training_locale, training_locale), d[0] != training_locale, d))
    cells = {(r.method, r.source, r.target): r.value for r in acc.itertuples()}
    methods = [m for m in METHOD_ORDER if m in set(acc["method"])] + sorted(set(acc["method"]) - set(METHOD_ORDER))
    body = []
    for method in methods:
        row = [method]
        for d in directions:
            value = cells.get((method, *d))
            row.append(_fmt(value) + ("*" if significant.get((method, *d)) else ""))
        body.append(row)
    return table(["method", *(f"{_lang(a)}→{_lang(b)}" for a, b in directions)], body)


def table5_ablation(values: dict[str, dict[str, float]]) -> list[str]:
    """EMU Table 5: the average point drop (over the Table 2 columns) when a component is removed."""
    columns = list(next(iter(values.values()))) if values else []

    def drop(full: str, without: str) -> str:
        if full not in values or without not in values:
            return "—"
        return f"{100 * np.nanmean([values[full][c] - values[without][c] for c in columns]):.2f}"

    return table(["component", "average drop (points)"],
                 [["language discriminator (emu − emu-no_ld)", drop("emu", "emu-no_ld")],
                  ["center loss (emu-no_ld − emu-no_ld_cl)", drop("emu-no_ld", "emu-no_ld_cl")]])


def classifier_table(rows: pd.DataFrame) -> list[str]:
    """The semantic classifier's own test accuracy (%) per locale."""
    clf = rows[rows["task"] == "intent_classification"]
    locales = list(dict.fromkeys(clf["source"]))
    body = [[m, *(_fmt(clf[(clf["method"] == m) & (clf["source"] == loc)]["value"].mean()) for loc in locales)]
            for m in dict.fromkeys(clf["method"])]
    return table(["method", *(_lang(loc) for loc in locales)], body) if body else ["(no classifier trained)"]


def table3_relative(rows: pd.DataFrame) -> list[str]:
    """EMU Table 3's layout: each method's accuracy@1 relative to the raw encoder's, per direction, ``(acc / raw − 1)`` in %."""
    acc = _accuracy(rows)
    cells = {(r.method, r.source, r.target): r.value for r in acc.itertuples()}
    directions = list(dict.fromkeys(zip(acc["source"], acc["target"])))
    body = []
    for method in [m for m in dict.fromkeys(acc["method"]) if m != "raw"]:
        line = [method]
        for q, c in directions:
            mine, raw = cells.get((method, q, c)), cells.get(("raw", q, c))
            line.append("—" if mine is None or not raw else f"{100 * (mine / raw - 1):+.1f}%")
        body.append(line)
    return table(["method", *(f"{_lang(q).lower()}-{_lang(c).lower()}" for q, c in directions)], body)


def selection_table(rows: pd.DataFrame) -> list[str]:
    """Per trained method: the kept epoch, its dev accuracy and the starting encoder's; epoch 0 says "no improvement on dev"."""
    picked = rows[rows["task"] == "model_selection"]
    if picked.empty:
        return ["(no model-selection rows: a run from before the initial weights were scored)"]
    body = []
    for method in dict.fromkeys(picked["method"]):
        values = picked[picked["method"] == method].set_index("metric")["value"]
        epoch = int(values["kept_epoch"])
        start = values.get("dev_accuracy@1_initial")
        body.append([method, "0: no improvement on dev, the raw encoder is kept" if epoch == 0 else str(epoch),
                     f"{100 * values['dev_accuracy@1']:.2f}", "—" if start is None else f"{100 * start:.2f}"])
    return table(["method", "kept epoch", "dev", "raw encoder (epoch 0)"], body)


def emu_tables(rows: pd.DataFrame, training_locale: str, title_locales: Sequence[str] = ()) -> str:
    """The markdown report: Table 2 (summary and per direction), Table 5, the classifier's accuracy."""
    del title_locales
    summary, values = table2_summary(rows, training_locale)
    out = ["# EMU on MASSIVE (nearest-neighbour intent classification, test split, leave-one-out)", "",
           f"Labelled training data: {training_locale} only. Accuracy@1 in %.", "",
           "## Table 2: averages", "", *summary, "",
           "## Per direction (query → labelled candidates); * = McNemar p < 0.05 against raw", "",
           *per_direction_table(rows, training_locale), "",
           "## Table 5: ablation, average drop in points", "", *table5_ablation(values), "",
           "## The semantic classifier's own accuracy", "", *classifier_table(rows), "",
           "## Model selection (dev nearest-neighbour accuracy@1 %, the criterion of early stopping)", "",
           *selection_table(rows), ""]
    acc = _accuracy(rows)
    if ((acc["source"] != training_locale) & (acc["target"] != training_locale)).any():  # emu.evaluation.directions: all
        out += ["## Table 3: relative to the raw encoder, every direction (query-candidates)", "", *table3_relative(rows), ""]
    return "\n".join(out)
