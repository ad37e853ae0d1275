"""One row of the long metrics table (``datasets.metrics.MetricsTableDataset``), built in one place.

Every pipeline's scores reach the table as these rows; saving adds ``run_id`` (the active MLflow run).
"""

from __future__ import annotations

from typing import Any

ROW_COLUMNS = ["pipeline", "method", "embedding", "task", "dataset", "source", "target", "metric", "value", "encoder"]


def metric_row(
    pipeline: str,
    method: str,
    embedding: str,
    task: str,
    dataset: str,
    source: str,
    target: str,
    metric: str,
    value: float,
    encoder: str,
) -> dict[str, Any]:
    """A metrics-table row (:data:`ROW_COLUMNS`, in that order), ``value`` a float rounded to 6 decimals."""
    return {
        "pipeline": pipeline,
        "method": method,
        "embedding": embedding,
        "task": task,
        "dataset": dataset,
        "source": source,
        "target": target,
        "metric": metric,
        "value": round(float(value), 6),
        "encoder": encoder,
    }
