"""The MASSIVE data stage's counts as markdown (data/08_reporting/massive_summary.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from language_agnostic.reporting.markdown import table


def summary_markdown(summary: Mapping[str, Any]) -> str:
    """Markdown tables of the counts (written to data/08_reporting, copied into docs/)."""
    lines = ["# MASSIVE data stage: counts", ""]
    lines += ["## Ingestion", "", *table(["locale", "rows in", "out", "rejected", "train", "dev", "test"])]
    for locale, c in summary["ingest"].items():
        lines.append(
            f"| {locale.replace('_', '-')} | {c['rows_in']} | {c['rows_out']} | {c['rejected']} "
            f"| {c['train']} | {c['dev']} | {c['test']} |"
        )
    lines += ["", "## Parallel pairs", "", *table(["pair", "pairs", "train", "dev", "test", "rejected"])]
    for pair, c in summary["pairs"].items():
        rejected = c["rejected_only_source"] + c["rejected_only_target"] + c["rejected_disagreeing"]
        name = pair.replace("__", " → ").replace("_", "-")
        lines.append(f"| {name} | {c['pairs_out']} | {c['train']} | {c['dev']} | {c['test']} | {rejected} |")
    for key, title in (
        ("template_single", "Template retrieval, single target (accuracy@1)"),
        ("template_multi", "Template retrieval, five targets (MAP)"),
        ("template_train_pairs", "Monolingual template pairs from train (two-stage training)"),
    ):
        if key not in summary:
            continue
        lines += [
            "",
            f"## {title}",
            "",
            *table(["locale", "source utterances", "sets", "skipped: no slot", "skipped: too few other values"]),
        ]
        for locale, c in summary[key].items():
            lines.append(
                f"| {locale.replace('_', '-')} | {c['sources_in']} | {c['sets_out']} | "
                f"{c.get('skipped_no_slot', 0)} | {c.get('skipped_no_alternative', 0)} |"
            )
    if "negative_pool" in summary:
        lines += [
            "",
            "## Negative pools",
            "",
            *table(["locale", "partition", "utterances", "in pool", "fraction"], left=2),
        ]
        for locale, by_partition in summary["negative_pool"].items():
            for partition, c in by_partition.items():
                lines.append(
                    f"| {locale.replace('_', '-')} | {partition} | {c['in']} | {c['pool_out']} | "
                    f"{c['pool_fraction']:.1%} |"
                )
    return "\n".join(lines) + "\n"
