"""The QE and STS reports (SEED / DREAM / MEAT table layouts) from the long metrics table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.evaluation.claims import paired_correlation
from language_agnostic.reporting.claims import ClaimSpec, claim_row, claims_section
from language_agnostic.reporting.markdown import table


def _fmt(value: float | None) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:.3f}"


def _pearson_by_head(rows: pd.DataFrame) -> dict[tuple[str, str], dict[str, float]]:
    """``{(method, embedding): {pair: pearson}}`` in row order."""
    scores = rows[rows["metric"] == "pearson"].assign(pair=lambda t: t["dataset"].str.split(":").str[1])
    return {
        key: part.set_index("pair")["value"].to_dict()
        for key, part in scores.groupby(["method", "embedding"], sort=False)
    }


def _average(by_pair: Mapping[str, float], pairs: Sequence[str]) -> float | None:
    return float(np.mean([by_pair[p] for p in pairs])) if all(p in by_pair for p in pairs) else None


def pearson_table(rows: pd.DataFrame, pairs: Sequence[str], exclude: Sequence[str] = ()) -> list[str]:
    """Markdown: methods as rows, each evaluation pair a column, then their average (``Avg.``).

    Args:
        rows: Pearson rows from :func:`evaluate_similarity`.
        pairs: The columns, in order.
        exclude: Heads left out (the ablations, which have their own table).
    """
    lines = table(["method / embedding", *pairs, "Avg."])
    for (method, embedding), by_pair in _pearson_by_head(rows).items():
        if method in exclude:
            continue
        lines.append(
            f"| {method}/{embedding} | "
            + " | ".join(_fmt(by_pair.get(p)) for p in pairs)
            + f" | {_fmt(_average(by_pair, pairs))} |"
        )
    return lines


def ablation_table(
    rows: pd.DataFrame, method: str, ablations: Mapping[str, Mapping[str, Any]], pairs: Sequence[str]
) -> list[str]:
    """Markdown: a method with all its losses, then each of its ablations (the loss weights they change).

    SEED Table 5 and DREAM Table 6 report the average Pearson of these rows; the pairs are kept
    as columns too.
    """
    scores = _pearson_by_head(rows)
    lines = table(["head", "loss weights changed", *pairs, "Avg."], left=2)
    heads = [(method, "none (all losses)")] + [
        (name, ", ".join(f"{k} = {v:g}" for k, v in spec["loss_weights"].items()))
        for name, spec in ablations.items()
        if spec["method"] == method and spec["loss_weights"]
    ]
    for name, changed in heads:
        by_pair = scores.get((name, "meaning"), {})
        lines.append(
            f"| {name} | {changed} | "
            + " | ".join(_fmt(by_pair.get(p)) for p in pairs)
            + f" | {_fmt(_average(by_pair, pairs))} |"
        )
    return lines


def leakage_table(rows: pd.DataFrame) -> list[str]:
    """Markdown: probe accuracy on each method's meaning and language embeddings."""
    probe = rows[rows["metric"] == "probe_accuracy"]
    lines = table(["method / embedding", "meaning", "language"])
    for method, part in probe.groupby("method", sort=False):
        by = part.set_index("embedding")["value"].to_dict()
        if "meaning" in by:
            lines.append(f"| {method} | {_fmt(by['meaning'])} | {_fmt(by.get('language'))} |")
        else:  # raw and centred vectors: one embedding, no split
            lines += [f"| {method}/{embedding} | {_fmt(value)} | — |" for embedding, value in by.items()]
    return lines


def corpus_table(sizes: pd.DataFrame, papers: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Markdown: our corpus counts per pair next to the sizes the papers report."""
    header = [
        "pair",
        "candidates",
        "duplicates",
        "test overlap",
        "kept",
        "train",
        "validation",
        *[f"{p} (paper)" for p in papers],
    ]
    lines = table(header)
    for r in sizes.to_dict("records"):
        paper = [
            f"{dict(papers[p]).get(r['pair'], '—'):,}" if isinstance(dict(papers[p]).get(r["pair"]), int) else "—"
            for p in papers
        ]
        lines.append(
            f"| {r['pair']} | {r['in']:,} | {r['duplicate']:,} | {r['test_overlap']:,} | {r['out']:,} | "
            f"{r['train']:,} | {r['validation']:,} | " + " | ".join(paper) + " |"
        )
    return lines


def claim_specs(claims: Sequence[Mapping[str, Any]], views: Mapping[str, Sequence[str]]) -> list[tuple[ClaimSpec, str]]:
    """``<pipeline>.report.claims`` checked: each a :class:`ClaimSpec` and the report table it is judged on.

    Raises:
        ValueError: a claim without one of its keys, a method not written ``method/embedding``, or
            a table that is not in ``report.tables``.
    """
    out = []
    for i, claim in enumerate(claims):
        missing = [k for k in ("claim", "method", "baseline", "backbone", "paper") if k not in claim]
        if missing:
            raise ValueError(f"report.claims[{i}]: missing {missing}")
        for key in ("method", "baseline"):
            if str(claim[key]).count("/") != 1:
                raise ValueError(
                    f"report.claims[{i}].{key}: write it as method/embedding (e.g. seed/meaning), got {claim[key]!r}"
                )
        on = str(claim.get("table", next(iter(views))))
        if on not in views:
            raise ValueError(f"report.claims[{i}].table: {on!r} is not one of report.tables {list(views)}")
        out.append(
            (
                ClaimSpec(
                    str(claim["claim"]),
                    str(claim["method"]),
                    str(claim["baseline"]),
                    str(claim["backbone"]),
                    str(claim["paper"]),
                    str(claim.get("direction", ">")),
                ),
                on,
            )
        )
    return out


def seed_runs(ablations: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """``{head: {seed label: head name}}`` of the seed runs among the ablations; the configured head
    itself is label ``default`` (added by the caller).

    A seed run (``{base, seed}``) without loss weights belongs to its base method; one with loss
    weights belongs to the unseeded ablation with the same base and weights (so a loss ablation's
    claim, e.g. DREAM Table 6, can have seeds too), and is its own head when there is none.
    """
    out: dict[str, dict[str, str]] = {}
    for name, spec in ablations.items():
        if spec.get("seed") is None:
            continue
        weights = dict(spec.get("loss_weights") or {})
        owner: str | None = str(spec["method"]) if not weights else None
        if weights:
            owner = next(
                (
                    other
                    for other, o in ablations.items()
                    if o.get("seed") is None
                    and o["method"] == spec["method"]
                    and dict(o.get("loss_weights") or {}) == weights
                ),
                None,
            )
        if owner is not None:
            out.setdefault(owner, {})[str(spec["seed"])] = name
    return out


def _heads(name: str, runs: Mapping[str, Mapping[str, str]]) -> dict[str, tuple[str, str]]:
    """``method/embedding`` -> ``{seed label: (head, embedding)}``: the default head and its seed runs."""
    method, embedding = name.split("/")
    return {
        "default": (method, embedding),
        **{label: (head, embedding) for label, head in runs.get(method, {}).items()},
    }


def _cosines(scores: pd.DataFrame, head: tuple[str, str], pairs: Sequence[str]) -> pd.DataFrame:
    """One head's per-item cosines on ``pairs``, in item order (the paired test's alignment)."""
    part = scores[(scores["method"] == head[0]) & (scores["embedding"] == head[1]) & scores["pair"].isin(pairs)]
    return part.sort_values("item")


def claims_rows(
    scores: pd.DataFrame,
    claims: Sequence[Mapping[str, Any]],
    views: Mapping[str, Sequence[str]],
    bootstrap: Mapping[str, Any],
    ablations: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[list[str]]:
    """The papers' claims on this run's per-item cosines: the average Pearson over a table's pairs,
    method against baseline, with the paired bootstrap (``evaluation/claims.paired_correlation``).

    With seed runs among the ``ablations`` (``{base, seed}``), a claim is tested once per seed: the
    method's seed-N head against the baseline's seed-N head (seeds both have), or against the same
    untrained baseline (``raw``, ``centering``). A claim
    whose method or baseline this run did not train (e.g. an ablation left out) is skipped.
    """
    runs = seed_runs(dict(ablations or {}))
    rows = []
    for spec, on in claim_specs(claims, views):
        pairs = [str(p) for p in views[on]]
        mine, theirs = _heads(spec.method, runs), _heads(spec.baseline, runs)
        if spec.baseline.split("/")[0] in ("raw", "centering"):  # untrained: the same baseline for every seed
            theirs = {label: theirs["default"] for label in mine}
        tests = []
        for label in [label for label in mine if label in theirs]:
            a, b = _cosines(scores, mine[label], pairs), _cosines(scores, theirs[label], pairs)
            if a.empty or b.empty:
                continue
            tests.append(
                paired_correlation(
                    a["cosine"].to_numpy(),
                    b["cosine"].to_numpy(),
                    a["gold"].to_numpy(),
                    a["pair"].to_numpy(),
                    int(bootstrap.get("resamples", 10_000)),
                    int(bootstrap.get("seed", 0)),
                )
            )
        if tests:
            rows.append(claim_row(spec, f"avg Pearson, {', '.join(pairs)}", tests, percent=False))
    return rows


def similarity_markdown(
    report: Mapping[str, Any],
    ablations: Mapping[str, Mapping[str, Any]],
    rows: pd.DataFrame,
    sizes: pd.DataFrame,
    ingest: Mapping[str, Mapping[str, Any]],
    scores: pd.DataFrame | None = None,
) -> str:
    """The whole QE / STS report: one Pearson table per ``report.tables`` entry, the ablation
    tables, the papers' claims, language leakage, the training corpus and the evaluation sets.

    Args:
        report: ``<pipeline>.report`` (``pipeline``, ``title``, ``tables``, ``ablation_tables``,
            ``claims``, ``bootstrap``, ``paper_corpus_sizes``).
        ablations: Checked ``<pipeline>.ablations``.
        rows: Every metric row of the run.
        sizes: The training corpus counts per pair.
        ingest: The evaluation set's ingestion counts per pair.
        scores: The per-item cosines (``evaluation/similarity.evaluate_similarity``): the claims' paired tests.
    """
    views = {str(k): [str(p) for p in v] for k, v in dict(report["tables"]).items()}
    text = [
        f"# {report['title']}",
        "",
        "Pearson correlation of the cosine between the two sentences' embeddings and "
        "the human scores (methods as rows; `raw/*` = the frozen encoder, `raw/mean` is the papers' Baseline).",
        "",
    ]
    for title, pairs in views.items():
        text += [f"## {title}", ""] + pearson_table(rows, pairs, exclude=list(ablations)) + [""]
    first_pairs = next(iter(views.values()))
    for method, title in dict(report.get("ablation_tables") or {}).items():
        if any(spec["method"] == method and spec["loss_weights"] for spec in ablations.values()):
            text += (
                [
                    f"## {title}",
                    "",
                    f"{method} retrained with loss terms switched off (`{report['pipeline']}.ablations`); "
                    "Pearson of the meaning embeddings.",
                    "",
                ]
                + ablation_table(rows, method, ablations, first_pairs)
                + [""]
            )
    if scores is not None:
        bootstrap = dict(report.get("bootstrap") or {})
        text += claims_section(
            "The papers' claims, as measured",
            "Each claim on the average Pearson over a table's pairs, method against baseline, on this run's "
            f"test items; the p-value from {int(bootstrap.get('resamples', 10_000)):,} paired bootstrap resamples "
            f"(seed {int(bootstrap.get('seed', 0))}). `seeds`: the training seeds tested (the configured head "
            "and its seed runs among the ablations); Δ is their mean ± sd, p the largest.",
            claims_rows(scores, list(report.get("claims") or []), views, bootstrap, ablations),
            percent=False,
            test="bootstrap",
        )
    text += [
        "## Language leakage",
        "",
        "Accuracy of a logistic-regression language-ID probe (trained on "
        "training-corpus sentences, scored on validation sentences). Lower is better for meaning, higher for language.",
        "",
    ]
    text += leakage_table(rows)
    text += [
        "",
        "## Training corpus",
        "",
        "Parallel pairs per language pair after deduplication and removal of every pair "
        "with a side in any evaluation set, next to the sizes the papers report.",
        "",
    ]
    text += corpus_table(sizes, dict(report.get("paper_corpus_sizes") or {}))
    text += ["", "## Evaluation sets", ""]
    text += table(["set", *next(iter(ingest.values()))], [[pair, *counts.values()] for pair, counts in ingest.items()])
    return "\n".join(text) + "\n"
