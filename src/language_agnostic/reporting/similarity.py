"""The QE and STS reports (SEED / DREAM / MEAT table layouts) from the long metrics table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.reporting.markdown import table


def _fmt(value: float | None) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:.3f}"


def _pearson_by_head(rows: pd.DataFrame) -> dict[tuple[str, str], dict[str, float]]:
    """``{(method, embedding): {pair: pearson}}`` in row order."""
    scores = rows[rows["metric"] == "pearson"].assign(pair=lambda t: t["dataset"].str.split(":").str[1])
    return {key: part.set_index("pair")["value"].to_dict() for key, part in scores.groupby(["method", "embedding"], sort=False)}


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
        lines.append(f"| {method}/{embedding} | " + " | ".join(_fmt(by_pair.get(p)) for p in pairs)
                     + f" | {_fmt(_average(by_pair, pairs))} |")
    return lines


def ablation_table(rows: pd.DataFrame, method: str, ablations: Mapping[str, Mapping[str, Any]], pairs: Sequence[str]
                   ) -> list[str]:
    """Markdown: a method with all its losses, then each of its ablations (the loss weights they change).

    SEED Table 5 and DREAM Table 6 report the average Pearson of these rows; the pairs are kept
    as columns too.
    """
    scores = _pearson_by_head(rows)
    lines = table(["head", "loss weights changed", *pairs, "Avg."], left=2)
    heads = [(method, "none (all losses)")] + [
        (name, ", ".join(f"{k} = {v:g}" for k, v in spec["loss_weights"].items()))
        for name, spec in ablations.items() if spec["method"] == method]
    for name, changed in heads:
        by_pair = scores.get((name, "meaning"), {})
        lines.append(f"| {name} | {changed} | " + " | ".join(_fmt(by_pair.get(p)) for p in pairs)
                     + f" | {_fmt(_average(by_pair, pairs))} |")
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
    header = ["pair", "candidates", "duplicates", "test overlap", "kept", "train", "validation", *[f"{p} (paper)" for p in papers]]
    lines = table(header)
    for r in sizes.to_dict("records"):
        paper = [f"{dict(papers[p]).get(r['pair'], '—'):,}" if isinstance(dict(papers[p]).get(r["pair"]), int)
                 else "—" for p in papers]
        lines.append(f"| {r['pair']} | {r['in']:,} | {r['duplicate']:,} | {r['test_overlap']:,} | {r['out']:,} | "
                     f"{r['train']:,} | {r['validation']:,} | " + " | ".join(paper) + " |")
    return lines


def similarity_markdown(report: Mapping[str, Any], ablations: Mapping[str, Mapping[str, Any]], rows: pd.DataFrame,
                        sizes: pd.DataFrame, ingest: Mapping[str, Mapping[str, Any]]) -> str:
    """The whole QE / STS report: one Pearson table per ``report.tables`` entry, the ablation
    tables, language leakage, the training corpus and the evaluation sets.

    Args:
        report: ``<pipeline>.report`` (``pipeline``, ``title``, ``tables``, ``ablation_tables``,
            ``paper_corpus_sizes``).
        ablations: Checked ``<pipeline>.ablations``.
        rows: Every metric row of the run.
        sizes: The training corpus counts per pair.
        ingest: The evaluation set's ingestion counts per pair.
    """
    views = {str(k): [str(p) for p in v] for k, v in dict(report["tables"]).items()}
    text = [f"# {report['title']}", "", "Pearson correlation of the cosine between the two sentences' embeddings and "
            "the human scores (methods as rows; `raw/*` = the frozen encoder, `raw/mean` is the papers' Baseline).", ""]
    for title, pairs in views.items():
        text += [f"## {title}", ""] + pearson_table(rows, pairs, exclude=list(ablations)) + [""]
    first_pairs = next(iter(views.values()))
    for method, title in dict(report.get("ablation_tables") or {}).items():
        if any(spec["method"] == method for spec in ablations.values()):
            text += [f"## {title}", "", f"{method} retrained with loss terms switched off (`{report['pipeline']}.ablations`); "
                     "Pearson of the meaning embeddings.", ""] + ablation_table(rows, method, ablations, first_pairs) + [""]
    text += ["## Language leakage", "", "Accuracy of a logistic-regression language-ID probe (trained on "
             "training-corpus sentences, scored on validation sentences). Lower is better for meaning, higher for language.", ""]
    text += leakage_table(rows)
    text += ["", "## Training corpus", "", "Parallel pairs per language pair after deduplication and removal of every pair "
             "with a side in any evaluation set, next to the sizes the papers report.", ""]
    text += corpus_table(sizes, dict(report.get("paper_corpus_sizes") or {}))
    text += ["", "## Evaluation sets", ""]
    text += table(["set", *next(iter(ingest.values()))], [[pair, *counts.values()] for pair, counts in ingest.items()])
    return "\n".join(text) + "\n"
