"""The ``slu`` tables from the long metrics table and each method's evaluation details, in LAJ-MCL's layouts.

- per metric, a locale per column (Tables 12–13), averaged over the non-training locales (the
  project's claim average);
- Table 2: the three metrics per method, averaged over every test locale (the paper's "Avg.",
  English included);
- Tables 4 / 15: the ablations (LAJoint's compressor and projector, the MCL levels);
- Table 5: slot error statistics (``evaluation.slu.slot_error_statistics``);
- Table 6: the slot-level CL grid over ``p_s`` and ``p_v``;
- Table 10: training and inference seconds.

A table is written only when one of its methods was run; a row only when its method was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.evaluation.claims import outcomes_of, paired
from language_agnostic.evaluation.rows import metric_row
from language_agnostic.evaluation.slu import SLOT_ERRORS
from language_agnostic.reporting.claims import ClaimSpec, claim_row, claims_section, seed_runs
from language_agnostic.reporting.markdown import table

METRICS = {"exact_match": "Semantic exact match", "intent_accuracy": "Intent accuracy", "slot_f1": "Slot F1"}
# A method trained at ``slu.budgets.laj`` (the 2,000-utterance sample of the quick and ablation runs) carries the
# budget in its name, so its rows and outcomes never mix with the default run's (every method on all the data)
LAJ_BUDGET = "-laj_budget"
BUDGETS = ("", LAJ_BUDGET)
# Table 2's rows (data EN, then EN+CS), the paper's names; each at both budgets
_MAIN = {
    "zsjoint": ("EN", "ZSJoint"),
    "lajoint": ("EN", "LAJoint"),
    "cosda": ("EN+CS", "CoSDA-ML"),
    "lajmcl": ("EN+CS", "LAJ-MCL"),
    "lajoint-cs": ("EN+CS", "w/o MCL (LAJoint+CS)"),
}
MAIN_METHODS = {m + budget: row for budget in BUDGETS for m, row in _MAIN.items()}
# Tables 4 and 15: (row label, method), the paper's order. The ablations are trained at the laj budget, so their
# references (LAJoint, LAJoint+CS, LAJ-MCL) are too
ABLATIONS = [
    ("LAJoint", "lajoint" + LAJ_BUDGET),
    ("− Compressor", "lajoint-no_compressor"),
    ("− Projector", "lajoint-no_projector"),
    ("− Comp&Proj", "lajoint-no_comp_proj"),
    ("LAJoint+CS", "lajoint-cs" + LAJ_BUDGET),
    ("+ UCL", "lajoint-cs+ucl"),
    ("+ SCL", "lajoint-cs+scl"),
    ("+ WCL", "lajoint-cs+wcl"),
    ("+ UCL&SCL", "lajoint-cs+ucl+scl"),
    ("+ UCL&WCL", "lajoint-cs+ucl+wcl"),
    ("+ SCL&WCL", "lajoint-cs+scl+wcl"),
    ("+ MCL", "lajmcl" + LAJ_BUDGET),
]
REFERENCES = {m + LAJ_BUDGET for m in ("lajoint", "lajoint-cs", "lajmcl")}
METHOD_ORDER = [
    *(m + budget for budget in BUDGETS for m in ("zsjoint", "cosda", "lajoint", "lajoint-cs", "lajmcl")),
    *(m for _, m in ABLATIONS if m not in REFERENCES),
]
# LAJ-MCL's claims checked on every run (the ``## Claims`` section): (claim, method, its baseline), each main
# comparison at both budgets (the two methods always at the same one). Paper 003 reports mBERT and XLM-R base:
# the main comparisons on both (Table 2: MultiATIS++; Table 3: MTOP, XLM-R only), the ablations (Tables 4/15)
# on mBERT and MultiATIS++ only. Our encoder is of the XLM-R family, so a claim is stated as the paper's
# XLM-R rows show it where they exist: "LAJoint > ZSJoint" is the text's mBERT claim, and its XLM-R rows
# show the opposite, so that is the claim checked here.
MBERT, XLMR, BOTH = "mBERT only", "XLM-R base (Tables 2, 3)", "mBERT and XLM-R base"
PAIRS = ("lajoint-cs+ucl+scl", "lajoint-cs+ucl+wcl", "lajoint-cs+scl+wcl")
_TABLE4 = "MultiATIS++ avg. EM (mBERT, Table 4): "
_CS_REF = "lajoint-cs" + LAJ_BUDGET  # the MCL ablations' reference


def _each(claim: str, method: str, baselines: Sequence[str], backbone: str, paper: str) -> list[ClaimSpec]:
    """One claim per baseline present."""
    return [ClaimSpec(claim, method, baseline, backbone, paper) for baseline in baselines]


def _budgets(claim: str, method: str, baseline: str, backbone: str, paper: str) -> list[ClaimSpec]:
    """A main comparison at each budget: the method against its baseline trained the same way."""
    return [ClaimSpec(claim, method + b, baseline + b, backbone, paper) for b in BUDGETS]


CLAIMS: list[ClaimSpec] = [
    # the XLM-R rows of Tables 2 and 3: ZSJoint above LAJoint
    *_budgets(
        "ZSJoint above LAJoint on XLM-R (Tables 2, 3; the text's mBERT claim is the reverse, §4.3)",
        "zsjoint",
        "lajoint",
        XLMR,
        "XLM-R: MultiATIS++ 38.85 vs 37.35, MTOP 50.35 vs 46.55; mBERT: 38.02 vs 40.85",
    ),
    *_budgets(
        "CoSDA-ML > ZSJoint (Tables 2, 3)",
        "cosda",
        "zsjoint",
        BOTH,
        "XLM-R: MultiATIS++ 43.72 vs 38.85, MTOP 58.77 vs 50.35; mBERT: 43.15 vs 38.02",
    ),
    *_budgets(
        "LAJ-MCL > CoSDA-ML (§4.3, Tables 2, 3)",
        "lajmcl",
        "cosda",
        BOTH,
        "XLM-R: MultiATIS++ 47.58 vs 43.72, MTOP 60.11 vs 58.77; mBERT: 52.50 vs 43.15",
    ),
    *_budgets(
        "LAJoint+CS > CoSDA-ML (§4.3, Tables 2, 3)",
        "lajoint-cs",
        "cosda",
        BOTH,
        "XLM-R: MultiATIS++ 46.41 vs 43.72, MTOP 58.92 vs 58.77; mBERT: 50.37 vs 43.15",
    ),
    *_budgets(
        "MCL > w/o MCL (§4.3, Tables 2, 3)",
        "lajmcl",
        "lajoint-cs",
        BOTH,
        "XLM-R: MultiATIS++ 47.58 vs 46.41, MTOP 60.11 vs 58.92; mBERT: 52.50 vs 50.37",
    ),
    *_each(
        "LAJoint > − Compressor (§4.5, Table 4)",
        "lajoint" + LAJ_BUDGET,
        ("lajoint-no_compressor",),
        MBERT,
        _TABLE4 + "40.85 vs 40.01",
    ),
    *_each(
        "LAJoint > − Projector (§4.5, Table 4)",
        "lajoint" + LAJ_BUDGET,
        ("lajoint-no_projector",),
        MBERT,
        _TABLE4 + "40.85 vs 40.35",
    ),
    *_each(
        "LAJoint > − Comp&Proj (§4.5, Table 4)",
        "lajoint" + LAJ_BUDGET,
        ("lajoint-no_comp_proj",),
        MBERT,
        _TABLE4 + "40.85 vs 39.90",
    ),
    *_each("UCL > LAJoint+CS (§4.5, Table 4)", "lajoint-cs+ucl", (_CS_REF,), MBERT, _TABLE4 + "51.36 vs 50.37"),
    *_each("SCL > LAJoint+CS (§4.5, Table 4)", "lajoint-cs+scl", (_CS_REF,), MBERT, _TABLE4 + "51.21 vs 50.37"),
    *_each("WCL > LAJoint+CS (§4.5, Table 4)", "lajoint-cs+wcl", (_CS_REF,), MBERT, _TABLE4 + "50.89 vs 50.37"),
    *(
        spec
        for label, pair, value in zip(("UCL&SCL", "UCL&WCL", "SCL&WCL"), PAIRS, ("51.83", "51.69", "51.84"))
        for spec in _each(
            f"{label} > LAJoint+CS (§4.5, Table 4)", pair, (_CS_REF,), MBERT, _TABLE4 + f"{value} vs 50.37"
        )
    ),
    *_each(
        "MCL > any two levels (§4.5, Table 4)",
        "lajmcl" + LAJ_BUDGET,
        PAIRS,
        MBERT,
        _TABLE4 + "52.50 vs 51.83, 51.69, 51.84",
    ),
    # the slot level under other readings of eq. 10 (--env=slu_scl; docs/slu.md, "The slot level"): this project's
    *_each(
        "SCL, τ_s = 1/16 > LAJoint+CS (this project's reading)",
        "lajoint-cs+scl-t16",
        (_CS_REF,),
        MBERT,
        _TABLE4 + "SCL 51.21 vs 50.37",
    ),
    *_each(
        "SCL, cosine affinity > LAJoint+CS (this project's reading)",
        "lajoint-cs+scl-cos",
        (_CS_REF,),
        MBERT,
        _TABLE4 + "SCL 51.21 vs 50.37",
    ),
    *_each(
        "MCL, cosine SCL > w/o MCL (this project's reading)",
        "lajmcl-cos",
        (_CS_REF,),
        BOTH,
        "XLM-R: MultiATIS++ 47.58 vs 46.41; mBERT: 52.50 vs 50.37",
    ),
    *_each(
        "LAJ-MCL, cosine SCL > CoSDA-ML (this project's reading)",
        "lajmcl-cos",
        ("cosda" + LAJ_BUDGET,),
        BOTH,
        "XLM-R: MultiATIS++ 47.58 vs 43.72; mBERT: 52.50 vs 43.15",
    ),
]
# Table 5's rows: the paper's names
ERROR_NAMES = {
    "utterance": "#utterance",
    "slot_num": "#slot_num",
    "slot_type": "†slot_type",
    "slot_bound": "†slot_bound",
    "slot_both": "†slot_both",
}


def slu_rows(scores: Mapping[str, Mapping[str, float]], method: str, encoder: str, source: str) -> pd.DataFrame:
    """Metric rows: ``task=slu``, one per (test locale, metric), ``source`` the training locale."""
    return pd.DataFrame(
        [
            metric_row("slu", method, "first_token", "slu", "massive_test", source, locale, metric, value, encoder)
            for locale, values in scores.items()
            for metric, value in values.items()
        ]
    )


def _lang(locale: str) -> str:
    return locale.split("-")[0]


def _pct(value: float) -> str:
    return f"{100 * value:.2f}" if not np.isnan(value) else "—"


def ordered_methods(methods: Sequence[str]) -> list[str]:
    """``methods`` in the tables' order: the paper's methods and ablations first, any other after, by name."""
    present = set(methods)
    return [m for m in METHOD_ORDER if m in present] + sorted(present - set(METHOD_ORDER))


def _locales(rows: pd.DataFrame, training_locale: str) -> list[str]:
    locales = list(dict.fromkeys(rows["target"]))
    locales.sort(key=lambda loc: (loc != training_locale, loc))
    return locales


def _mean(cells: Mapping[tuple[str, str, str], float], method: str, locales: Sequence[str], metric: str) -> float:
    values = [cells.get((method, loc, metric), np.nan) for loc in locales]
    return float(np.nanmean(values)) if locales and not all(np.isnan(values)) else float("nan")


def slu_tables(
    rows: pd.DataFrame,
    training_locale: str,
    notes: Sequence[str] = (),
    details: Sequence[Mapping[str, Any]] = (),
    grid: Mapping[str, tuple[int, int]] | None = None,
    earlier: pd.DataFrame | None = None,
    outcomes: pd.DataFrame | None = None,
) -> str:
    """Markdown: one table per metric (%, methods × test locales, the average over the non-training
    locales), then LAJ-MCL's Tables 2, 4, 15, 5, 6 and 10 where their methods were run.

    Args:
        rows: The metric rows (``task=slu``).
        training_locale: The training locale (en-US).
        notes: Lines put under the title.
        details: Each method's evaluation details (``pipelines.slu.nodes.evaluate_slu_variant``):
            ``method``, ``slot_errors`` per locale, ``train_seconds_per_epoch``, ``epochs_run``,
            ``inference_seconds`` and ``n_test`` per locale.
        grid: ``{method: (p_s, p_v)}`` of the Table 6 grid's methods (``None``: no Table 6).
        earlier: The long metrics table as it was before this run (:func:`claims_table`).
        outcomes: Per-utterance exact-match outcomes (this run's and stored ones): the claims' paired tests.
    """
    rows = rows[rows["task"] == "slu"]
    locales = _locales(rows, training_locale)
    targets = [loc for loc in locales if loc != training_locale]
    methods = ordered_methods(list(rows["method"]))
    cells: dict[tuple[str, str, str], float] = {
        (r.method, r.target, r.metric): float(r.value) for r in rows.itertuples()
    }
    out = [
        "# Zero-shot cross-lingual SLU on MASSIVE (test split)",
        "",
        f"Trained on {training_locale} train only; checkpoint selected on {training_locale} dev exact match. "
        f"In %; avg = mean over the {len(targets)} non-{_lang(training_locale)} locales.",
        "",
        *notes,
    ]
    for metric, title in METRICS.items():
        body = [
            [
                method,
                *(_pct(cells.get((method, loc, metric), np.nan)) for loc in locales),
                _pct(_mean(cells, method, targets, metric)),
            ]
            for method in methods
        ]
        out += [f"## {title}", "", *table(["method", *(_lang(loc) for loc in locales), "avg"], body), ""]
    out += main_table(cells, methods, locales)
    out += ablation_tables(cells, methods, locales)
    out += error_table(details, locales, training_locale)
    out += grid_table(cells, grid or {}, locales)
    out += cost_table(details)
    out += claims_table(rows, training_locale, earlier, outcomes)
    return "\n".join(out)


def main_table(
    cells: Mapping[tuple[str, str, str], float], methods: Sequence[str], locales: Sequence[str]
) -> list[str]:
    """LAJ-MCL Table 2's layout: per method, the three metrics averaged over every test locale (the paper's Avg.)."""
    present = [m for m in MAIN_METHODS if m in methods]
    if not present:
        return []
    # the default run's methods, then those at the laj budget; within each, EN then EN+CS as the paper has them
    present.sort(key=lambda m: (m.endswith(LAJ_BUDGET), MAIN_METHODS[m][0], list(MAIN_METHODS).index(m)))
    body = [
        [
            MAIN_METHODS[m][0],
            f"{MAIN_METHODS[m][1]} (`{m}`)",
            *(_pct(_mean(cells, m, locales, k)) for k in ("intent_accuracy", "slot_f1", "exact_match")),
        ]
        for m in present
    ]
    return [
        "## Table 2 layout: averages over all test locales",
        "",
        f"Mean over all {len(locales)} test locales, {', '.join(_lang(loc) for loc in locales)}, the training locale "
        "included (the paper's Avg.; the tables above average the other locales only).",
        "",
        *table(["data", "method", "intent accuracy", "slot F1", "semantic EM"], body, left=2),
        "",
    ]


def ablation_tables(
    cells: Mapping[tuple[str, str, str], float], methods: Sequence[str], locales: Sequence[str]
) -> list[str]:
    """LAJ-MCL Table 4 (averages over every test locale) and Table 15 (per locale), when an ablation was run.

    The references (``lajoint``, ``lajoint-cs``, ``lajmcl`` at the ablations' budget, ``*-laj_budget``) are
    rows when they were run in the same run (``--env=slu_ablations`` trains them).
    """
    present = set(methods)
    rows = [(label, m) for label, m in ABLATIONS if m in present]
    if not any(m not in REFERENCES for _, m in rows):
        return []
    body = [
        [label, f"`{m}`", *(_pct(_mean(cells, m, locales, k)) for k in ("intent_accuracy", "slot_f1", "exact_match"))]
        for label, m in rows
    ]
    out = [
        "## Table 4 layout: ablations, averages over all test locales",
        "",
        *table(["method", "run as", "intent accuracy", "slot F1", "semantic EM"], body, left=2),
        "",
        "## Table 15 layout: ablations per locale",
        "",
    ]
    for metric, title in METRICS.items():
        body = [
            [
                label,
                *(_pct(cells.get((m, loc, metric), np.nan)) for loc in locales),
                _pct(_mean(cells, m, locales, metric)),
            ]
            for label, m in rows
        ]
        out += [f"### {title}", "", *table(["method", *(_lang(loc) for loc in locales), "avg (all)"], body), ""]
    return out


def error_table(details: Sequence[Mapping[str, Any]], locales: Sequence[str], training_locale: str) -> list[str]:
    """LAJ-MCL Table 5: slot error statistics per method and locale (counts), averaged over the non-training
    locales as the paper averages its target languages (``evaluation.slu.slot_error_statistics``)."""
    with_errors = {str(d["method"]): d["slot_errors"] for d in details if d.get("slot_errors")}
    if not with_errors:
        return []
    targets = [loc for loc in locales if loc != training_locale]
    out = [
        "## Table 5 layout: slot error statistics (test utterances)",
        "",
        "#utterance: utterances whose predicted slot spans are not the gold ones; #slot_num: those with another "
        "number of spans; †: span pairs (the j-th predicted against the j-th gold span) in the other erroneous "
        "utterances with another type (†slot_type), other boundaries (†slot_bound) or both (†slot_both). "
        f"avg = mean over the {len(targets)} non-{_lang(training_locale)} locales.",
        "",
    ]
    for method in ordered_methods(list(with_errors)):
        errors = with_errors[method]
        body = []
        for key in SLOT_ERRORS:
            values = [errors.get(loc, {}).get(key, np.nan) for loc in locales]
            target_values = [errors[loc][key] for loc in targets if loc in errors]
            avg = f"{np.mean(target_values):.1f}" if target_values else "—"
            body.append([ERROR_NAMES[key], *(str(int(v)) if not np.isnan(v) else "—" for v in values), avg])
        out += [f"### `{method}`", "", *table(["errors", *(_lang(loc) for loc in locales), "avg"], body), ""]
    return out


def grid_table(
    cells: Mapping[tuple[str, str, str], float], grid: Mapping[str, tuple[int, int]], locales: Sequence[str]
) -> list[str]:
    """LAJ-MCL Table 6: semantic EM averaged over every test locale, a row per ``p_s``, a column per ``p_v``."""
    run = {m: ps_pv for m, ps_pv in grid.items() if any((m, loc, "exact_match") in cells for loc in locales)}
    if not run:
        return []
    p_s = sorted({a for a, _ in run.values()})
    p_v = sorted({b for _, b in run.values()})
    by_cell = {ps_pv: m for m, ps_pv in run.items()}
    body = [
        [
            f"p_s = {a}",
            *(_pct(_mean(cells, by_cell[(a, b)], locales, "exact_match")) if (a, b) in by_cell else "—" for b in p_v),
        ]
        for a in p_s
    ]
    return [
        "## Table 6 layout: slot-level CL's p_s and p_v (semantic EM, mean over all test locales)",
        "",
        *table(["", *(f"p_v = {b}" for b in p_v)], body),
        "",
        "Methods: " + ", ".join(f"`{m}` ({a}, {b})" for m, (a, b) in run.items()),
        "",
    ]


def cost_table(details: Sequence[Mapping[str, Any]]) -> list[str]:
    """LAJ-MCL Table 10: training seconds per epoch (wall clock of the training loop, the per-epoch dev
    evaluation included, over the epochs run) and inference seconds per test split (one locale's
    predictions, mean over the locales)."""
    timed = {
        str(d["method"]): d
        for d in details
        if d.get("train_seconds_per_epoch") is not None or d.get("inference_seconds")
    }
    if not timed:
        return []
    body = []
    for method in ordered_methods(list(timed)):
        d = timed[method]
        train_s = d.get("train_seconds_per_epoch")
        inference = dict(d.get("inference_seconds") or {})
        n_test = dict(d.get("n_test") or {})
        body.append(
            [
                f"`{method}`",
                f"{train_s:.1f}" if train_s is not None else "—",
                str(d.get("epochs_run") or "—"),
                f"{np.mean(list(inference.values())):.1f}" if inference else "—",
                f"{np.mean(list(n_test.values())):.0f}" if n_test else "—",
            ]
        )
    return [
        "## Table 10 layout: runtime (seconds)",
        "",
        "Training: wall clock of the training loop per epoch (the dev loss and dev exact match of every epoch "
        "included). Inference: predicting one locale's test split, mean over the locales. Machine-dependent; "
        "not comparable across runs on other hardware.",
        "",
        *table(["method", "training, s/epoch", "epochs run", "inference, s/test split", "test utterances"], body),
        "",
    ]


def earlier_rows(rows: pd.DataFrame, earlier: pd.DataFrame | None, training_locale: str) -> pd.DataFrame:
    """The rows of ``earlier`` (the long metrics table before this run) that can stand beside this run's:
    ``task=slu``, the same encoder(s), training locale and test locales, methods this run did not train."""
    if earlier is None or not len(earlier) or not len(rows):
        return pd.DataFrame(columns=list(rows.columns) + ["run_id"])
    keep = (
        (earlier["task"] == "slu")
        & earlier["encoder"].isin(set(rows["encoder"]))
        & (earlier["source"] == training_locale)
        & earlier["target"].isin(set(rows["target"]))
        & ~earlier["method"].isin(set(rows["method"]))
    )
    return earlier[keep]


def claims_table(
    rows: pd.DataFrame, training_locale: str, earlier: pd.DataFrame | None = None, outcomes: pd.DataFrame | None = None
) -> list[str]:
    """LAJ-MCL's claims (:data:`CLAIMS`) on semantic EM over the non-training locales' test utterances, as measured.

    A claim is checked for each of its baselines present. Rows of this run come first; a method it
    did not train is taken from ``earlier`` (the metrics table before this run, e.g. the default run's
    ``lajoint-cs`` for the ablations run), named by its MLflow run, on the same test locales only.
    The paired test is McNemar's on the utterances both methods' ``outcomes`` (this run's and the stored
    ones) hold; without them the averages are shown and the verdict is *not comparable*. A method trained
    with more seeds (``<method>-seed<N>``, e.g. ``--env=slu_ablation_seeds``) is tested once per seed its
    baseline also has, against that seed; the row shows the means over seeds, the largest p and the count.
    """
    if not len(rows):
        return []
    locales = set(rows["target"]) - {training_locale}
    mine = rows.assign(run_id="this run")
    older = earlier_rows(rows, earlier, training_locale)
    pool = pd.concat([mine, older], ignore_index=True) if len(older) else mine
    em = (
        outcomes[
            (outcomes["pipeline"] == "slu") & (outcomes["task"] == "slu_exact_match") & outcomes["target"].isin(locales)
        ]
        if outcomes is not None and len(outcomes)
        else None
    )

    def covered(method: str) -> bool:
        found = pool[(pool["method"] == method) & (pool["metric"] == "exact_match")]
        return locales <= set(found["target"])

    def origin(methods: Sequence[str]) -> str:
        runs = sorted(set(pool.loc[pool["method"].isin(methods), "run_id"].astype(str)))
        return ", ".join(r if r == "this run" else f"run `{r[:8]}`" for r in runs)

    # ``lajoint-seed2023`` is ``lajoint`` trained with another seed (--env=slu_ablation_seeds): a claim is
    # tested once per seed both of its methods hold, each seed against the same seed of its baseline
    runs = seed_runs([m for m in dict.fromkeys(pool["method"]) if covered(m)])
    body = []
    for spec in CLAIMS:
        ours, theirs = runs.get(spec.method, {}), runs.get(spec.baseline, {})
        seeds = sorted(set(ours) & set(theirs))
        if not seeds:
            continue
        tests = (
            [paired(outcomes_of(em, ours[s]), outcomes_of(em, theirs[s])) for s in seeds]
            if em is not None
            else [None] * len(seeds)
        )
        # without per-utterance outcomes: the metrics table's averages (over seeds), untested
        averages = tuple(
            float(np.mean([average_over_targets(pool, names[s], "exact_match", training_locale) for s in seeds]))
            for names in (ours, theirs)
        )
        row = claim_row(spec, f"EM, non-{_lang(training_locale)}", tests, averages)
        row[3] = f"{row[3]} ({origin([ours[s] for s in seeds])})"
        row[4] = f"{row[4]} ({origin([theirs[s] for s in seeds])})"
        body.append(row)
    return claims_section(
        "Claims (LAJ-MCL), as measured",
        f"Semantic EM (%) over the test utterances of the {len(locales)} non-{_lang(training_locale)} locales. "
        "Every method is trained the same way; the default run's on all the en-US training utterances, "
        "`*-laj_budget` methods and the ablations on a sample of 2,000 (`--env=slu_quick`, `--env=slu_ablations`; "
        "docs/slu.md); a claim compares two methods at one budget. Rows of another run are the metrics table's, "
        "before this run; its per-utterance outcomes pair them.",
        body,
    )


def average_over_targets(rows: pd.DataFrame, method: str, metric: str, training_locale: str) -> float:
    """A method's mean ``metric`` over the test locales other than the training one."""
    mine = rows[
        (rows["task"] == "slu")
        & (rows["method"] == method)
        & (rows["metric"] == metric)
        & (rows["target"] != training_locale)
    ]
    return float(mine["value"].astype(float).mean()) if len(mine) else float("nan")


def summary(rows: pd.DataFrame, training_locale: str) -> dict[str, Any]:
    """Per method, the non-training-locale averages of the three metrics (for logs and MLflow)."""
    return {
        m: {k: average_over_targets(rows, m, k, training_locale) for k in METRICS}
        for m in dict.fromkeys(rows["method"])
    }


def budget_rows(rows: pd.DataFrame, seen: Mapping[str, int], training_locale: str) -> pd.DataFrame:
    """The main methods' exact match at each budget present: LAJ-MCL's comparisons as the training data grows.

    Args:
        rows: Metric rows (``task=slu``; the long metrics table).
        seen: Budget suffix (``""`` the default run's, :data:`LAJ_BUDGET`) → English training utterances
            seen (utterances × epochs).
        training_locale: Left out of the average.

    Returns:
        ``method, budget, utterances_seen, exact_match`` (%, mean over the other test locales), one row
        per main method and budget with rows, in the tables' method order and by utterances seen.
    """
    out = []
    for base in _MAIN:
        for suffix, n in seen.items():
            value = average_over_targets(rows, base + suffix, "exact_match", training_locale)
            if not np.isnan(value):
                out.append(
                    {"method": base, "budget": base + suffix, "utterances_seen": int(n), "exact_match": 100 * value}
                )
    frame = pd.DataFrame(out, columns=["method", "budget", "utterances_seen", "exact_match"])
    order = {m: i for i, m in enumerate(METHOD_ORDER)}
    return frame.sort_values(["method", "utterances_seen"], key=lambda c: c.map(order) if c.name == "method" else c)
