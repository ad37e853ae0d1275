"""Compare two runs' metrics tables cell by cell: which values moved, and by how much.

Usage::

    .venv/bin/python experiments/compare_metrics.py BEFORE/data/08_reporting/metrics.csv \\
        data/08_reporting/metrics.csv --pipeline fmda --threshold 0.002

Rows are matched on every column but ``value`` and ``run_id``. Prints the number of cells
compared, the largest move, every cell that moved by more than the threshold, and rows that are
in one table only.
"""

from __future__ import annotations

import argparse

import pandas as pd

KEY = ["pipeline", "method", "embedding", "task", "dataset", "source", "target", "metric", "encoder"]


def compare(before: pd.DataFrame, after: pd.DataFrame, threshold: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(moved, unmatched)``: cells whose value moved by more than ``threshold``, and rows in one table only."""
    merged = before.merge(after, on=KEY, how="outer", suffixes=("_before", "_after"), indicator=True)
    both = merged[merged["_merge"] == "both"].copy()
    both["change"] = both["value_after"] - both["value_before"]
    moved = both[both["change"].abs() > threshold].sort_values("change", key=abs, ascending=False)
    return moved[KEY + ["value_before", "value_after", "change"]], merged[merged["_merge"] != "both"][KEY + ["_merge"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--pipeline", default=None)
    parser.add_argument("--threshold", type=float, default=0.002)
    args = parser.parse_args()
    before, after = pd.read_csv(args.before, keep_default_na=False), pd.read_csv(args.after, keep_default_na=False)
    if args.pipeline:
        before, after = before[before["pipeline"] == args.pipeline], after[after["pipeline"] == args.pipeline]
    moved, unmatched = compare(before, after, args.threshold)
    both = before.merge(after, on=KEY, suffixes=("_before", "_after"))
    largest = (both["value_after"] - both["value_before"]).abs()
    print(
        f"{len(both)} cells compared; identical: {int((largest == 0).sum())}; largest move {largest.max():.6f}; "
        f"moved by more than {args.threshold}: {len(moved)}; rows in one table only: {len(unmatched)}"
    )
    with pd.option_context("display.width", 250, "display.max_rows", 500, "display.max_columns", 20):
        if len(moved):
            print(moved.to_string(index=False))
        if len(unmatched):
            print(unmatched.to_string(index=False))


if __name__ == "__main__":
    main()
