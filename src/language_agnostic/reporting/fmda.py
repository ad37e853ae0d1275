"""FMDA's tables (Wu et al. 2022, Tables 2-6 and 9) from the long metrics table."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from language_agnostic.evaluation.claims import Paired
from language_agnostic.evaluation.fmda import AGAINST_ALL_TOGETHER, RESIDUAL_AGAINST_MEANING
from language_agnostic.methods.registry import POOLED_METHODS
from language_agnostic.reporting.claims import ClaimSpec, claim_row, claims_section, seed_runs
from language_agnostic.reporting.markdown import table

# the rows of Tables 2-3: the untrained baselines, every pooled head the registry offers
# fmda.methods (POOLED_METHODS), then the FMDA variants' three embeddings
EMBEDDING_ORDER = [
    ("raw", "cls"),
    ("raw", "mean"),
    ("centering", "mean"),
    *((method, "meaning") for method in POOLED_METHODS),
    ("fmda", "m"),
    ("fmda", "tp"),
    ("fmda", "rs"),
    ("fmda-linear", "m"),
    ("fmda-linear", "tp"),
    ("fmda-linear", "rs"),
    ("fmda-infonce", "m"),
    ("fmda-infonce", "tp"),
    ("fmda-infonce", "rs"),
]
# Table 5: all-together and two-stage training, with each contrastive reading configured
TABLE5_METHODS = [
    ("all-together", "fmda"),
    ("two-stage", "fmda-two_stage"),
    ("all-together, linear negatives", "fmda-linear"),
    ("two-stage, linear negatives", "fmda-two_stage_linear"),
    ("all-together, InfoNCE", "fmda-infonce"),
    ("two-stage, InfoNCE", "fmda-two_stage_infonce"),
]
CellKey = tuple[str, str, str, str, str, str, str]  # method, embedding, task, pair, source, target, metric


def _cells(rows: pd.DataFrame) -> dict[CellKey, float]:
    # the pair after "massive_template_single:" ("" for massive_test); no float NaN fill on strings
    pair = rows["dataset"].map(lambda d: str(d).split(":")[1] if ":" in str(d) else "")
    return {
        (r.method, r.embedding, r.task, p, r.source, r.target, r.metric): float(r.value)
        for r, p in zip(rows.itertuples(), pair)
    }


def _grid(cells: Mapping[CellKey, float], header: list[str], body: list[tuple[str, list[CellKey]]]) -> list[str]:
    """A markdown table; a row none of whose cells was measured is left out, a missing cell is ``—``."""
    lines = table(header)
    for label, keys in body:
        if any(k in cells for k in keys):
            lines.append(f"| {label} | " + " | ".join(f"{cells[k]:.3f}" if k in cells else "—" for k in keys) + " |")
    return (
        lines
        if len(lines) > 2
        else ["(not measured in this run: see `fmda.variants` in conf/base/parameters_fmda.yml)"]
    )


def short_locale(locale: str) -> str:
    """`en-US` → `EN`: the language part, upper-case, as the paper labels columns."""
    return locale.split("-")[0].upper()


def _semantic(method: str, emb: str, src: str, tgt: str, metric: str = "accuracy@1") -> CellKey:
    return (method, emb, "cross_lingual_retrieval", "", src, tgt, metric)


def _template(method: str, emb: str, pair: tuple[str, str], locale: str, metric: str = "accuracy@1") -> CellKey:
    return (method, emb, "template_retrieval", f"{pair[0]}>{pair[1]}", locale, locale, metric)


def _p_value(p: float) -> str:
    """``p=0.014``; below the metrics table's six decimals, ``p<1e-6`` (not ``p=0``)."""
    return "p<1e-6" if p < 1e-6 else f"p={p:.2g}"


def _against_centering(cells: Mapping[CellKey, float], directions: list[tuple[str, str]]) -> list[str]:
    """Δ accuracy@1 of every meaning embedding over ``centering/mean``, with its McNemar p, per direction."""
    lines = table(["embedding"] + [f"{short_locale(a)}→{short_locale(b)}" for a, b in directions])
    for method, emb in EMBEDDING_ORDER:
        if emb not in ("m", "meaning"):
            continue
        row = []
        for a, b in directions:
            mine, base = _semantic(method, emb, a, b), _semantic("centering", "mean", a, b)
            p = _semantic(method, emb, a, b, "mcnemar_p_vs_centering")
            row.append(
                f"{cells[mine] - cells[base]:+.3f} ({_p_value(cells[p])})"
                if p in cells and mine in cells and base in cells
                else "—"
            )
        if any(cell != "—" for cell in row):
            lines.append(f"| {method}/{emb} | " + " | ".join(row) + " |")
    return lines if len(lines) > 2 else ["(no trained meaning embedding in this run)"]


# FMDA's claim on cross-lingual retrieval (paper 000, Table 2: frozen XLM-R base, [CLS], the all-together
# model), checked against this project's strongest untrained baseline, mean centring, where each run has
# McNemar's p. `fmda-infonce` is beyond the paper, judged by the same rule.
FMDA_CLAIMS = [
    ClaimSpec(
        "FMDA's meaning embedding above the baselines on cross-lingual retrieval (Table 2)",
        method,
        "centering/mean",
        "XLM-R base ([CLS], frozen)",
        "EN-DE accuracy@1 0.594 vs DREAM 0.550, XLM-R [CLS] 0.182",
    )
    for method in ("fmda/m", "fmda-infonce/m")
]
# §4.6 / Table 5 (EN-DE only, XLM-R base): two-stage training against all-together training, each
# test against the all-together twin's outcomes on the same queries (`mcnemar_p_vs_all_together`)
TABLE5_BACKBONE = "XLM-R base ([CLS], frozen); EN-DE only"
TABLE5_CLAIMS = [
    # (spec, task): "cross" = cross-lingual retrieval per direction, "template" = template retrieval per language
    (
        ClaimSpec(
            "Two-stage training keeps the meaning embedding's cross-lingual retrieval level with all-together's "
            "(Table 5)",
            "fmda-two_stage/m",
            "fmda/m",
            TABLE5_BACKBONE,
            "EN→DE 0.595 vs 0.594, DE→EN 0.601 vs 0.605",
            "not <",
        ),
        "cross",
    ),
    (
        ClaimSpec(
            "Two-stage training makes the template embedding far better on template retrieval (Table 5)",
            "fmda-two_stage/tp",
            "fmda/tp",
            TABLE5_BACKBONE,
            "EN 0.811 vs 0.427, DE 0.802 vs 0.396",
        ),
        "template",
    ),
    (
        ClaimSpec(
            "The meaning embedding gains on template retrieval from the two-stage template encoder (Table 5)",
            "fmda-two_stage/m",
            "fmda/m",
            TABLE5_BACKBONE,
            "EN 0.584 vs 0.427, DE 0.566 vs 0.387",
        ),
        "template",
    ),
]


# §4.4 / Table 4 (EN-DE, XLM-R base): each loss set against the full all-together model of the same
# seed (`mcnemar_p_vs_all_together` of the ablation's rows); the first pair only, as the paper
TABLE4_BACKBONE = "XLM-R base ([CLS], frozen); EN-DE only"
TABLE4_CLAIMS = [
    ClaimSpec(
        "The contrastive loss is essential to cross-lingual retrieval (Table 4)",
        "fmda/m",
        "fmda-no_contrastive/m",
        TABLE4_BACKBONE,
        "EN→DE 0.594 vs 0.241, DE→EN 0.605 vs 0.234",
    ),
    ClaimSpec(
        "The utterance reconstruction loss brings a significant benefit (Table 4)",
        "fmda/m",
        "fmda-no_utterance_reconstruction/m",
        TABLE4_BACKBONE,
        "EN→DE 0.594 vs 0.569, DE→EN 0.605 vs 0.586",
    ),
    ClaimSpec(
        "Without all three reconstruction losses retrieval is worse than the full model (Table 4)",
        "fmda/m",
        "fmda-no_reconstruction/m",
        TABLE4_BACKBONE,
        "EN→DE 0.594 vs 0.580, DE→EN 0.605 vs 0.603",
    ),
    ClaimSpec(
        "Without the template reconstruction loss retrieval is worse than the full model (Table 4)",
        "fmda/m",
        "fmda-no_template_reconstruction/m",
        TABLE4_BACKBONE,
        "EN→DE 0.594 vs 0.583, DE→EN 0.605 vs 0.600",
    ),
    ClaimSpec(
        "The residual reconstruction loss has little function: no worse without it (Table 4)",
        "fmda-no_residual_reconstruction/m",
        "fmda/m",
        TABLE4_BACKBONE,
        "EN→DE 0.584 vs 0.594, DE→EN 0.610 vs 0.605",
        "not <",
    ),
]
# §4.2 / Table 2: the residual embedding retrieves worst of the three (`mcnemar_p_rs_vs_m`: the same
# model's residual against its meaning embedding on the same queries), on every pair
RESIDUAL_CLAIM = ClaimSpec(
    "The meaning embedding retrieves across languages better than the residual embedding (Table 2, §4.2)",
    "fmda/m",
    "fmda/rs",
    "XLM-R base ([CLS], frozen)",
    "EN→DE 0.594 vs 0.283, EN→JA 0.400 vs 0.070",
)


def _seeded(runs: Mapping[str, Mapping[str, str]], method: str, baseline: str) -> list[tuple[str, str]]:
    """``(method run, baseline run)`` per seed label both have (``fmda-two_stage_seed1`` with ``fmda-seed1``)."""
    mine, base = runs.get(method, {}), runs.get(baseline, {})
    return [(mine[seed], base[seed]) for seed in sorted(mine) if seed in base]


def _seeded_claim_row(
    cells: Mapping[CellKey, float],
    spec: ClaimSpec,
    direction: tuple[str, str],
    keys: list[tuple[CellKey, CellKey, CellKey]],
) -> list[list[str]]:
    """``spec``'s row on ``direction`` from one ``(x, y, p)`` of cell keys per seed: a paired test per seed
    whose accuracies ``x`` and ``y`` were measured (``None`` where its p-value row is missing); no row
    without any.
    """
    tests = [
        Paired(cells[x], cells[y], cells[p], 0) if p in cells else None for x, y, p in keys if x in cells and y in cells
    ]
    a, b = direction
    return [claim_row(spec, f"{short_locale(a)}→{short_locale(b)}", tests)] if tests else []


def table4_claims_rows(cells: Mapping[CellKey, float], pair: tuple[str, str]) -> list[list[str]]:
    """:data:`TABLE4_CLAIMS` on the first pair, per direction and per seed, from the ablations'
    ``mcnemar_p_vs_all_together`` rows (each ablation against the full model of its seed).
    """
    runs = seed_runs(sorted({key[0] for key in cells}))
    body = []
    for spec in TABLE4_CLAIMS:
        (method, emb), (baseline, base_emb) = spec.method.split("/"), spec.baseline.split("/")
        ablation = method if method != "fmda" else baseline
        for a, b in (pair, pair[::-1]):
            keys = [
                (
                    _semantic(mine, emb, a, b),
                    _semantic(base, base_emb, a, b),
                    _semantic(mine if ablation == method else base, "m", a, b, AGAINST_ALL_TOGETHER),
                )
                for mine, base in _seeded(runs, method, baseline)
            ]
            body += _seeded_claim_row(cells, spec, (a, b), keys)
    return body


def residual_claims_rows(cells: Mapping[CellKey, float], directions: list[tuple[str, str]]) -> list[list[str]]:
    """:data:`RESIDUAL_CLAIM` per direction and seed of the all-together model, from the residual
    embedding's ``mcnemar_p_rs_vs_m`` rows.
    """
    runs = seed_runs(sorted({key[0] for key in cells}))
    body = []
    for a, b in directions:
        keys = [
            (
                _semantic(name, "m", a, b),
                _semantic(name, "rs", a, b),
                _semantic(name, "rs", a, b, RESIDUAL_AGAINST_MEANING),
            )
            for _, name in sorted(runs.get("fmda", {}).items())
        ]
        body += _seeded_claim_row(cells, RESIDUAL_CLAIM, (a, b), keys)
    return body


def claims_rows(cells: Mapping[CellKey, float], directions: list[tuple[str, str]]) -> list[list[str]]:
    """:data:`FMDA_CLAIMS` per direction, from the accuracies and ``mcnemar_p_vs_centering`` rows.

    Every seed run of the method (``fmda-seed1`` for ``fmda``, ``fmda-infonce_seed1`` for
    ``fmda-infonce``: ``--env=fmda_seeds``) is one more test against the untrained centring; the row
    gives the mean over seeds, the sd of Δ and the largest p, and a verdict that any seed flips is a tie.
    """
    runs = seed_runs(sorted({key[0] for key in cells}))
    body = []
    for spec in FMDA_CLAIMS:
        method, emb = spec.method.split("/")
        for a, b in directions:
            base = _semantic("centering", "mean", a, b)
            names = [name for _, name in sorted(runs.get(method, {}).items()) if _semantic(name, emb, a, b) in cells]
            if not names or base not in cells:
                continue
            tests = []
            for name in names:
                p = cells.get(_semantic(name, emb, a, b, "mcnemar_p_vs_centering"))
                tests.append(Paired(cells[_semantic(name, emb, a, b)], cells[base], p, 0) if p is not None else None)
            # an older run without the p-value rows: the accuracies, untested
            untested = (cells[_semantic(names[0], emb, a, b)], cells[base])
            body.append(claim_row(spec, f"{short_locale(a)}→{short_locale(b)}", tests, untested))
    return body


def table5_claims_rows(cells: Mapping[CellKey, float], pairs: list[tuple[str, str]]) -> list[list[str]]:
    """:data:`TABLE5_CLAIMS` on every pair (the paper's EN-DE and the others), from the accuracies and
    ``mcnemar_p_vs_all_together`` rows: one test per seed both methods have (``fmda-two_stage_seed1``
    against ``fmda-seed1``: ``--env=fmda_seeds``).
    """
    runs = seed_runs(sorted({key[0] for key in cells}))
    body = []
    for spec, task in TABLE5_CLAIMS:
        (method, emb), (base_method, base_emb) = spec.method.split("/"), spec.baseline.split("/")
        for pair in pairs:
            if task == "cross":
                on = [((pair, a, b), f"{short_locale(a)}→{short_locale(b)}") for a, b in (pair, pair[::-1])]
            else:
                pair_label = f"{short_locale(pair[0])}-{short_locale(pair[1])}"
                on = [((pair, loc, loc), f"{short_locale(loc)} template ({pair_label} model)") for loc in pair]
            for (p, a, b), label in on:
                tests, shown = [], []
                for mine_run, base_run in _seeded(runs, method, base_method):
                    if task == "cross":
                        mine, base = _semantic(mine_run, emb, a, b), _semantic(base_run, base_emb, a, b)
                        key = _semantic(mine_run, emb, a, b, AGAINST_ALL_TOGETHER)
                    else:
                        mine, base = _template(mine_run, emb, p, a), _template(base_run, base_emb, p, a)
                        key = _template(mine_run, emb, p, a, AGAINST_ALL_TOGETHER)
                    if mine in cells and base in cells:
                        tests.append(Paired(cells[mine], cells[base], cells[key], 0) if key in cells else None)
                        shown.append((cells[mine], cells[base]))
                if tests:
                    # an older run without the p-value rows: the first seed's accuracies, untested
                    body.append(claim_row(spec, label, tests, shown[0]))
    return body


def _pairs(rows: pd.DataFrame) -> list[tuple[str, str]]:
    """The language pairs of the cross-lingual rows in their order, each as it was trained (source
    first: the template datasets name it, ``massive_template_single:en-US>de-DE``), whatever order
    the rows come in (a metrics table read back from disk is sorted).
    """
    semantic = rows[rows["task"] == "cross_lingual_retrieval"]
    trained = {tuple(str(d).split(":", 1)[1].split(">")) for d in rows["dataset"] if ">" in str(d)}
    pairs: list[tuple[str, str]] = []
    for src, tgt in zip(semantic["source"], semantic["target"]):
        if (src, tgt) not in pairs and (tgt, src) not in pairs:
            pairs.append((tgt, src) if (tgt, src) in trained and (src, tgt) not in trained else (src, tgt))
    return pairs


def _table2(cells: Mapping[CellKey, float], directions: list[tuple[str, str]]) -> list[str]:
    """Table 2 (every embedding, both directions of every pair) and each meaning embedding against centring."""
    out = ["## Table 2: cross-lingual semantic retrieval, accuracy@1", ""]
    out += _grid(
        cells,
        ["embedding"] + [f"{short_locale(a)}→{short_locale(b)}" for a, b in directions],
        [(f"{m}/{e}", [_semantic(m, e, a, b) for a, b in directions]) for m, e in EMBEDDING_ORDER],
    )
    out += [
        "",
        "### Meaning embeddings against mean centring: Δ accuracy@1 (McNemar p)",
        "",
        "Each meaning embedding minus `centering/mean` on the same test queries, with the exact McNemar "
        "p-value of the difference (`mcnemar_p_vs_centering`).",
        "",
    ]
    return out + _against_centering(cells, directions)


def _claims(
    cells: Mapping[CellKey, float], pairs: list[tuple[str, str]], directions: list[tuple[str, str]]
) -> list[str]:
    """The two claims sections: Tables 2 and 5; Table 4 and the residual embedding."""
    out = claims_section(
        "Claims (FMDA), as measured",
        "Accuracy@1 (%) on MASSIVE test. Table 2's claim per direction, against mean centring (`centering/mean`), "
        "the strongest untrained baseline here (the paper compares with XLM-R's [CLS] and DREAM; `dream/meaning` "
        "and `raw` are in Table 2 above, without a paired test). Table 5's claims (§4.6), on every pair, against the "
        "all-together model (`fmda`) of the same seed: the paper compares two-stage with it, not with the baselines.",
        claims_rows(cells, directions) + table5_claims_rows(cells, pairs),
    )
    return out + claims_section(
        "Claims on Table 4's ablations and the residual embedding, as measured",
        "Accuracy@1 (%) on MASSIVE test. Table 4 (the first pair): each ablation against the full all-together "
        "model of the same seed (`mcnemar_p_vs_all_together`). Table 2's ranking of the embeddings: the "
        "all-together model's meaning embedding against its own residual embedding on every pair "
        "(`mcnemar_p_rs_vs_m`).",
        (table4_claims_rows(cells, pairs[0]) if pairs else []) + residual_claims_rows(cells, directions),
    )


def _tables3_and_6(cells: Mapping[CellKey, float], pairs: list[tuple[str, str]]) -> list[str]:
    """Monolingual template retrieval: accuracy@1 (Table 3) and MAP over five targets (Table 6)."""
    template_cols = [(pair, loc) for pair in pairs for loc in pair]
    out: list[str] = []
    for metric, title in (
        ("accuracy@1", "Table 3: monolingual template retrieval, accuracy@1"),
        ("MAP", "Table 6: monolingual template retrieval, MAP over five targets"),
    ):
        out += ["", f"## {title}", ""]
        out += _grid(
            cells,
            ["embedding"]
            + [f"{short_locale(loc)} ({short_locale(p[0])}-{short_locale(p[1])} model)" for p, loc in template_cols],
            [(f"{m}/{e}", [_template(m, e, p, loc, metric) for p, loc in template_cols]) for m, e in EMBEDDING_ORDER],
        )
    return out


def _table4(cells: Mapping[CellKey, float], first: tuple[str, str], ablations: list[str]) -> list[str]:
    """Table 4: the ablations' meaning embedding on the first pair (EN-DE in the paper and by default)."""
    both = [first, first[::-1]]
    out = [
        "",
        "## Table 4: ablations, cross-lingual semantic retrieval of the meaning embedding "
        f"({short_locale(first[0])}-{short_locale(first[1])}), accuracy@1",
        "",
    ]
    body = [
        ("encoder first token (raw/cls)", [_semantic("raw", "cls", *d) for d in both]),
        ("DREAM (dream/meaning)", [_semantic("dream", "meaning", *d) for d in both]),
        ("FMDA (fmda/m)", [_semantic("fmda", "m", *d) for d in both]),
    ]
    body += [
        (f"w/o {m.removeprefix('fmda-no_').replace('_', ' ')} ({m}/m)", [_semantic(m, "m", *d) for d in both])
        for m in ablations
    ]
    return out + (
        _grid(cells, ["model"] + [f"{short_locale(a)}→{short_locale(b)}" for a, b in both], body)
        if ablations
        else ["(no ablation variant configured)"]
    )


def _table5(cells: Mapping[CellKey, float], pairs: list[tuple[str, str]], methods: set[str]) -> list[str]:
    """Table 5: all-together against two-stage training, per pair with a two-stage model."""
    out = ["", "## Table 5: all-together vs two-stage training, accuracy@1", ""]
    if "fmda-two_stage" not in methods:
        out += ["(no two_stage variant configured)"]
    for pair in pairs:
        directions = [pair, pair[::-1]]
        header = (
            ["method / embedding"]
            + [f"{short_locale(a)}→{short_locale(b)}" for a, b in directions]
            + [f"{short_locale(loc)} template" for loc in pair]
        )
        body = [
            (f"{label} / {e}", [_semantic(m, e, *d) for d in directions] + [_template(m, e, pair, loc) for loc in pair])
            for label, m in TABLE5_METHODS
            for e in ("m", "tp")
        ]
        if any(m in methods for _, m in TABLE5_METHODS[1::2]):  # a two-stage row measured on this pair
            out += [f"### {short_locale(pair[0])}-{short_locale(pair[1])}", ""] + _grid(cells, header, body) + [""]
    return out


def _table9(cells: Mapping[CellKey, float], pairs: list[tuple[str, str]], methods: set[str]) -> list[str]:
    """Table 9: the dual-lingual models against the unified multilingual one."""
    out = [
        "",
        "## Table 9: dual-lingual vs unified multilingual training, accuracy@1",
        "",
        "Semantic rows compare meaning embeddings (`dream/meaning`, `fmda/m`, `fmda-unified/m`); template rows "
        "the template embeddings (`fmda/tp`, `fmda-unified/tp`; DREAM's meaning). EN is the EN template set "
        "evaluated with the first pair's models.",
        "",
    ]
    body = [
        (
            f"{short_locale(b)}→{short_locale(a)}",
            [_semantic("dream", "meaning", b, a), _semantic("fmda", "m", b, a), _semantic("fmda-unified", "m", b, a)],
        )
        for a, b in pairs
    ]
    template_rows = [(pairs[0], pairs[0][0])] + [(p, p[1]) for p in pairs] if pairs else []
    body += [
        (
            f"{short_locale(loc)} template",
            [
                _template("dream", "meaning", p, loc),
                _template("fmda", "tp", p, loc),
                _template("fmda-unified", "tp", p, loc),
            ],
        )
        for p, loc in template_rows
    ]
    return out + (
        _grid(cells, ["task", "DREAM", "dual-lingual FMDA", "unified FMDA"], body)
        if "fmda-unified" in methods
        else ["(no unified model configured)"]
    )


def fmda_tables(rows: pd.DataFrame) -> str:
    """Markdown views of the long table with the rows and columns of the paper's Tables 2, 3, 4, 5, 6 and 9."""
    cells = _cells(rows)
    pairs = _pairs(rows)
    directions = [d for src, tgt in pairs for d in ((src, tgt), (tgt, src))]
    methods = set(rows["method"])
    ablations = [m for m in dict.fromkeys(rows["method"]) if m.startswith("fmda-no_")]
    out = ["# FMDA on MASSIVE (bundled 4-bit multilingual-e5-small; see docs/findings/fmda.md)", ""]
    out += _table2(cells, directions) + [""] + _claims(cells, pairs, directions)
    out += _tables3_and_6(cells, pairs)
    out += _table4(cells, pairs[0] if pairs else ("", ""), ablations)
    out += _table5(cells, pairs, methods) + _table9(cells, pairs, methods)
    return "\n".join(out) + "\n"
