"""EMU's tables (Hirota et al. 2020, Tables 2 and 5) from the long metrics table, on MASSIVE."""

from __future__ import annotations

import numpy as np
import pandas as pd

from language_agnostic.evaluation.claims import outcomes_of, paired
from language_agnostic.reporting.claims import ClaimSpec, claim_row, claims_section, seed_runs
from language_agnostic.reporting.markdown import table

# the order of EMU's Table 2: the raw encoder, the fine-tuning baselines, EMU's ablations, EMU
METHOD_ORDER = [
    "raw",
    "softmax",
    "contrastive",
    "contrastive-m2",
    "npair",
    "npair-unscaled",
    "emu-no_ld_cl",
    "emu-no_ld",
    "emu",
    "emu-parallel",
]


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
        values[method] = dict(
            zip(
                columns,
                (
                    float(mono.mean()) if len(mono) else np.nan,
                    float(out_.mean()) if len(out_) else np.nan,
                    float(in_.mean()) if len(in_) else np.nan,
                ),
            )
        )
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

    return table(
        ["component", "average drop (points)"],
        [
            ["language discriminator (emu − emu-no_ld)", drop("emu", "emu-no_ld")],
            ["center loss (emu-no_ld − emu-no_ld_cl)", drop("emu-no_ld", "emu-no_ld_cl")],
        ],
    )


def classifier_table(rows: pd.DataFrame) -> list[str]:
    """The semantic classifier's own test accuracy (%) per locale."""
    clf = rows[rows["task"] == "intent_classification"]
    locales = list(dict.fromkeys(clf["source"]))
    body = [
        [m, *(_fmt(clf[(clf["method"] == m) & (clf["source"] == loc)]["value"].mean()) for loc in locales)]
        for m in dict.fromkeys(clf["method"])
    ]
    return table(["method", *(_lang(loc) for loc in locales)], body) if body else ["(no classifier trained)"]


def table3_relative(rows: pd.DataFrame) -> list[str]:
    """EMU Table 3's layout: each method's accuracy@1 relative to the raw encoder's, per direction,
    ``(acc / raw − 1)`` in %.
    """
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
    """Per trained method: the kept epoch, its dev accuracy and the starting encoder's;
    epoch 0 says "no improvement on dev".
    """
    picked = rows[rows["task"] == "model_selection"]
    if picked.empty:
        return ["(no model-selection rows: a run from before the initial weights were scored)"]
    body = []
    for method in dict.fromkeys(picked["method"]):
        values = picked[picked["method"] == method].set_index("metric")["value"]
        epoch = int(values["kept_epoch"])
        start = values.get("dev_accuracy@1_initial")
        body.append(
            [
                method,
                "0: no improvement on dev, the raw encoder is kept" if epoch == 0 else str(epoch),
                f"{100 * values['dev_accuracy@1']:.2f}",
                "—" if start is None else f"{100 * start:.2f}",
            ]
        )
    return table(["method", "kept epoch", "dev", "raw encoder (epoch 0)"], body)


# EMU's claims (paper 002: LASER, a BiLSTM, fine-tuned; its Tables 2 and 5 on HotelQA, ATIS, Quora)
LASER = "LASER (BiLSTM)"
CLAIMS = [
    ClaimSpec(
        "EMU above the raw encoder (Table 2)",
        "emu",
        "raw",
        LASER,
        "en-en: HotelQA 78.5 vs 55.6, ATIS 98.8 vs 88.5, Quora 89.7 vs 88.8",
    ),
    ClaimSpec("EMU above softmax fine-tuning (Table 2)", "emu", "softmax", LASER, "HotelQA en-en 78.5 vs 30.6"),
    ClaimSpec(
        "EMU above the contrastive baseline (Table 2)", "emu", "contrastive", LASER, "HotelQA en-en 78.5 vs 34.0"
    ),
    ClaimSpec("EMU above the N-pair baseline (Table 2)", "emu", "npair", LASER, "HotelQA en-en 78.5 vs 27.8"),
    ClaimSpec(
        "softmax fine-tuning no better than the raw encoder (§Results)",
        "softmax",
        "raw",
        LASER,
        "HotelQA en-en 30.6 vs 55.6",
        "not >",
    ),
    ClaimSpec(
        "contrastive no better than the raw encoder (§Results)",
        "contrastive",
        "raw",
        LASER,
        "HotelQA en-en 34.0 vs 55.6",
        "not >",
    ),
    ClaimSpec(
        "N-pair no better than the raw encoder (§Results)", "npair", "raw", LASER, "HotelQA en-en 27.8 vs 55.6", "not >"
    ),
    ClaimSpec(
        "the language discriminator helps (Table 5)",
        "emu",
        "emu-no_ld",
        LASER,
        "drop without it: HotelQA 1.45, ATIS 2.81 (p < 0.01), Quora 1.05 (n.s.)",
    ),
    ClaimSpec(
        "the center loss helps (Table 5)",
        "emu-no_ld",
        "emu-no_ld_cl",
        LASER,
        "drop without it: HotelQA −0.44, ATIS 0.04, Quora 6.00 (p < 0.001)",
    ),
    ClaimSpec(
        "EMU-PARALLEL no better than EMU (Table 2)",
        "emu-parallel",
        "emu",
        LASER,
        "−0.5, −1.2, −5.9 points (n.s. but Quora)",
        "not >",
    ),
]


def claims_rows(outcomes: pd.DataFrame, training_locale: str) -> list[list[str]]:
    """:data:`CLAIMS` on the pooled en-en queries and the pooled cross-lingual ones (EN → * and * → EN).

    Each seed of the method is paired with the same seed of the baseline (the raw encoder, untrained,
    with every seed); the row gives the mean over seeds, the sd of Δ and the largest p.
    """
    if outcomes is None or not len(outcomes):
        return []
    nn = outcomes[(outcomes["pipeline"] == "emu") & (outcomes["task"] == "intent_nn")]
    mono = (nn["source"] == training_locale) & (nn["target"] == training_locale)
    cross = (nn["source"] == training_locale) != (nn["target"] == training_locale)
    en = _lang(training_locale).lower()
    runs = seed_runs(list(dict.fromkeys(nn["method"])))
    body = []
    for spec in CLAIMS:
        if spec.method not in runs or spec.baseline not in runs:
            continue
        mine, theirs = runs[spec.method], runs[spec.baseline]
        seeds = sorted(mine) if spec.baseline == "raw" else sorted(set(mine) & set(theirs))
        if not seeds:
            continue
        for on, keep in ((f"{en}-{en}", mono), (f"{_lang(training_locale)} ↔ *", cross)):
            part = nn[keep]
            tests = [
                paired(outcomes_of(part, mine[seed]), outcomes_of(part, theirs.get(seed, theirs.get("", ""))))
                for seed in seeds
            ]
            body.append(claim_row(spec, on, tests))
    return body


def emu_tables(rows: pd.DataFrame, training_locale: str, outcomes: pd.DataFrame | None = None) -> str:
    """The markdown report: Table 2 (summary and per direction), Table 5, the classifier's accuracy, model
    selection and, with per-query ``outcomes``, the claims."""
    summary, values = table2_summary(rows, training_locale)
    out = [
        "# EMU on MASSIVE (nearest-neighbour intent classification, test split, leave-one-out)",
        "",
        f"Labelled training data: {training_locale} only. Accuracy@1 in %.",
        "",
        "## Table 2: averages",
        "",
        *summary,
        "",
        "## Per direction (query → labelled candidates); * = McNemar p < 0.05 against raw",
        "",
        *per_direction_table(rows, training_locale),
        "",
        "## Table 5: ablation, average drop in points",
        "",
        *table5_ablation(values),
        "",
        "## The semantic classifier's own accuracy",
        "",
        *classifier_table(rows),
        "",
        "## Model selection (dev nearest-neighbour accuracy@1 %, the criterion of early stopping)",
        "",
        *selection_table(rows),
        "",
    ]
    out += claims_section(
        "Claims (EMU), as measured",
        "Accuracy@1 on the pooled test queries of the column (en-en; or every EN → * and * → EN query), "
        "this run's methods and, for a method it did not train, the stored per-query outcomes of the run that did.",
        claims_rows(outcomes, training_locale) if outcomes is not None else [],
    )
    acc = _accuracy(rows)
    if (
        (acc["source"] != training_locale) & (acc["target"] != training_locale)
    ).any():  # emu.evaluation.directions: all
        out += [
            "## Table 3: relative to the raw encoder, every direction (query-candidates)",
            "",
            *table3_relative(rows),
            "",
        ]
    return "\n".join(out)
