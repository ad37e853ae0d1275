"""One MLflow run per trained variant, nested under the Kedro run's own (kedro-mlflow) run.

A single ``kedro run --pipelines=fmda`` trains several FMDA variants; giving each its own
child run lets the MLflow UI compare them side by side (parameters, per-epoch losses,
metrics). Without an active run (tests, ``mlflow.yml`` disabled) nothing is logged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd


def _active() -> bool:
    import mlflow

    return mlflow.active_run() is not None


def _flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = json.dumps(value) if isinstance(value, (list, tuple)) else str(value)
    return out


def log_child_run(name: str, params: Mapping[str, Any], history: list[dict[str, float]]) -> str | None:
    """Open a child run named ``name``, log ``params`` and per-epoch ``history``; return its id (None if no run is active)."""
    if not _active():
        return None
    import mlflow

    with mlflow.start_run(run_name=name, nested=True) as run:
        mlflow.log_params(_flatten(params))
        for record in history:
            step = int(record["epoch"])
            mlflow.log_metrics({k: float(v) for k, v in record.items() if k != "epoch"}, step=step)
    return run.info.run_id


def metric_key(row: Any) -> str:
    """An MLflow-safe metric name for a metrics-table row."""
    return (f"{row.task}.{row.method}.{row.embedding}.{row.dataset.split(':')[-1]}.{row.source}_to_{row.target}.{row.metric}"
            .replace("-", "_").replace(">", "__").replace("@", "at"))


def log_child_metrics(run_id: str | None, rows: pd.DataFrame) -> None:
    """Add a variant's evaluation rows to its child run (no-op without one)."""
    if run_id is None or not _active():
        return
    import mlflow

    with mlflow.start_run(run_id=run_id, nested=True):
        mlflow.log_metrics({metric_key(r): float(r.value) for r in rows.itertuples()})
