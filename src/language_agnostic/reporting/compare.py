"""Two MLflow runs side by side: a pipeline's main table, the cells that differ, the models each retrained.

Usage::

    .venv/bin/python -m language_agnostic.reporting.compare RUN_A RUN_B [--pipeline fmda]
        [--tracking-uri sqlite:///mlruns/mlflow.db] [--all]

A run's rows are its ``reports/metrics.csv`` artifact (``pipelines/run_reports_hook.py``), so
only the rows that run computed are compared, never a table mixed from other runs. The main table
is the pipeline's headline metric (:data:`MAIN`, e.g. ``fmda``: cross-lingual retrieval
accuracy@1) with one column per direction: a cell is ``A`` where both runs agree, ``A → B`` where
they differ. Then every other row of the pipeline that differs (``--all``: every row), and per run
the child runs it trained and those it reused.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

# a parent run's tag naming its --env / --params, and the artifact folder holding its reports
# (pipelines/run_reports_hook.py writes both)
OVERRIDES_TAG = "language_agnostic.overrides"
REPORTS_ARTIFACT_DIR = "reports"
DEFAULT_TRACKING_URI = "sqlite:///mlruns/mlflow.db"  # conf/base/mlflow.yml
KEY = ["pipeline", "method", "embedding", "task", "dataset", "source", "target", "metric", "encoder"]
DECIMALS = 3  # as the pipelines' reports print them
# the pipeline's headline (task, metric): its main table
MAIN = {
    "fmda": ("cross_lingual_retrieval", "accuracy@1"),
    "embeddings": ("cross_lingual_retrieval", "accuracy@1"),
    "tatoeba": ("bitext_retrieval", "accuracy@1"),
    "emu": ("intent_nn", "accuracy@1"),
    "slu": ("slu", "exact_match"),
    "qe": ("quality_estimation", "pearson"),
    "sts": ("semantic_textual_similarity", "pearson"),
}
# a child run logged again for a reused model is tagged language_agnostic.reused=true (or, before, carried these)
REUSED_TAGS = ("language_agnostic.trained_by",)


@dataclass
class Run:
    """What the comparison needs of one parent run."""

    run_id: str
    name: str
    overrides: str
    rows: pd.DataFrame
    trained: list[str]
    reused: list[str]


def load_run(client: Any, run_id: str) -> Run:
    """The run's name, overrides tag, ``reports/metrics.csv`` rows and child runs (trained / reused).

    Raises:
        ValueError: the run has no ``reports/metrics.csv`` (run before reports were kept per run).
    """
    run = client.get_run(run_id)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = client.download_artifacts(run_id, f"{REPORTS_ARTIFACT_DIR}/metrics.csv", tmp)
        except Exception as exc:  # noqa: BLE001 - MLflow raises several kinds for a missing artifact
            raise ValueError(
                f"run {run_id} has no {REPORTS_ARTIFACT_DIR}/metrics.csv artifact (it ran before each run kept "
                f"its own rows); compare two runs made since"
            ) from exc
        rows = pd.read_csv(path, keep_default_na=False, dtype={c: str for c in KEY})
    children = client.search_runs(
        [run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run_id}'", max_results=5000
    )
    trained, reused = [], []
    for child in sorted(children, key=lambda c: c.info.run_name or ""):
        tags = child.data.tags
        reuse = tags.get("language_agnostic.reused") == "true" or any(t in tags for t in REUSED_TAGS)
        (reused if reuse else trained).append(child.info.run_name or child.info.run_id)
    return Run(run_id, run.info.run_name or "", run.data.tags.get(OVERRIDES_TAG, ""), rows, trained, reused)


def _value(v: float) -> str:
    return "—" if pd.isna(v) else f"{v:.{DECIMALS}f}"


def _cell(a: float, b: float) -> str:
    return _value(a) if a == b else f"{_value(a)} → {_value(b)}"


def _direction(row: Any) -> str:
    part = str(row.dataset).split(":", 1)
    return f"{row.source}→{row.target}" + (f" ({part[1]})" if len(part) > 1 else "")


def merged(a: pd.DataFrame, b: pd.DataFrame, pipeline: str) -> pd.DataFrame:
    """One row per key of either run's rows of ``pipeline``: ``value_a``, ``value_b`` (NaN where missing)."""
    a, b = (t[t["pipeline"] == pipeline][[*KEY, "value"]] for t in (a, b))
    both = a.merge(b, on=KEY, how="outer", suffixes=("_a", "_b"))
    return both.sort_values(KEY, kind="stable").reset_index(drop=True)


def main_table(both: pd.DataFrame, task: str, metric: str) -> list[str]:
    """The main table as markdown: rows ``method/embedding``, a column per direction, cells ``A`` or ``A → B``."""
    main = both[(both["task"] == task) & (both["metric"] == metric)].copy()
    if main.empty:
        return [f"(no {task} {metric} rows in either run)"]
    main["row"] = main["method"] + "/" + main["embedding"]
    main["direction"] = [_direction(r) for r in main.itertuples()]
    directions = list(dict.fromkeys(main["direction"]))
    lines = ["| method/embedding | " + " | ".join(directions) + " |", "|---|" + "---:|" * len(directions)]
    for name, group in main.groupby("row", sort=False):
        cells = {r.direction: _cell(r.value_a, r.value_b) for r in group.itertuples()}
        lines.append(f"| {name} | " + " | ".join(cells.get(d, "—") for d in directions) + " |")
    return lines


def differences(both: pd.DataFrame, everything: bool = False) -> list[str]:
    """The rows that differ (``everything``: all rows) as markdown, largest change first."""
    changed = both if everything else both[~(both["value_a"] == both["value_b"])]
    if changed.empty:
        return []
    # rounded as the table stores values, so float noise does not order equal changes
    changed = changed.assign(change=(changed["value_b"] - changed["value_a"]).abs().round(6)).sort_values(
        ["change", *KEY], ascending=[False, *[True] * len(KEY)], kind="stable", na_position="first"
    )
    lines = ["| method/embedding | task | metric | direction | A | B | B − A |", "|---|---|---|---|---:|---:|---:|"]
    for r in changed.itertuples():
        delta = r.value_b - r.value_a
        lines.append(
            f"| {r.method}/{r.embedding} | {r.task} | {r.metric} | {_direction(r)} | {_value(r.value_a)} | "
            f"{_value(r.value_b)} | {'—' if pd.isna(delta) else f'{delta:+.{DECIMALS}f}'} |"
        )
    return lines


def _models(run: Run) -> str:
    if not run.trained and not run.reused:
        return "no model trained or reused"
    listed = f": {', '.join(run.trained)}" if run.trained and run.reused else ""
    return f"{len(run.trained)} trained, {len(run.reused)} reused{listed}"


def compare(a: Run, b: Run, pipeline: str, everything: bool = False) -> list[str]:
    """The report's lines (markdown)."""
    both = merged(a.rows, b.rows, pipeline)
    task, metric = MAIN.get(pipeline, (None, None))
    if task is None:  # a pipeline without a declared headline: its first task and metric
        task, metric = both[["task", "metric"]].iloc[0] if len(both) else ("", "")
    n_changed = int((~(both["value_a"] == both["value_b"])).sum())
    lines = [
        f"A: {a.run_id[:8]}  {a.name}  ({a.overrides or 'no overrides tag'}; {_models(a)})",
        f"B: {b.run_id[:8]}  {b.name}  ({b.overrides or 'no overrides tag'}; {_models(b)})",
        "",
        f"## {pipeline}: {task} {metric}, A → B where they differ",
        "",
        *main_table(both, task, metric),
        "",
        f"{n_changed} of {len(both)} rows of {pipeline} differ (a row in one run only counts as differing)"
        + (":" if n_changed and not everything else "."),
    ]
    table = differences(both, everything)
    return lines + (["", *table] if table else [])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_a", help="the MLflow id of the first parent run")
    parser.add_argument("run_b", help="the MLflow id of the second parent run")
    parser.add_argument("--pipeline", default="fmda", help="whose rows (default: fmda)")
    parser.add_argument(
        "--tracking-uri",
        default=os.environ.get("MLFLOW_TRACKING_URI", DEFAULT_TRACKING_URI),
        help=f"default: $MLFLOW_TRACKING_URI, else {DEFAULT_TRACKING_URI}",
    )
    parser.add_argument("--all", action="store_true", help="list every row of the pipeline, not only those that differ")
    args = parser.parse_args(argv)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # the report alone on stdout/stderr
    import mlflow
    from mlflow.exceptions import MlflowException

    if args.tracking_uri.startswith("sqlite:///") and not Path(args.tracking_uri[len("sqlite:///") :]).is_file():
        print(f"no MLflow store at {args.tracking_uri}: run from the project root, or pass --tracking-uri")
        return 1
    client = mlflow.MlflowClient(args.tracking_uri)
    try:
        runs = [load_run(client, run_id) for run_id in (args.run_a, args.run_b)]
    except (MlflowException, ValueError) as exc:
        print(str(exc).splitlines()[0])
        return 1
    print("\n".join(compare(*runs, pipeline=args.pipeline, everything=args.all)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
