"""The one long metrics table that every pipeline adds its rows to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from kedro.io import AbstractDataset

from language_agnostic.evaluation.rows import ROW_COLUMNS
from language_agnostic.reporting.leaderboard import leaderboard_markdown, leaderboard_table

METRIC_COLUMNS = [*ROW_COLUMNS, "run_id"]  # a row as evaluation.rows.metric_row builds it, and its MLflow run
KEY_COLUMNS = [c for c in METRIC_COLUMNS if c not in ("value", "run_id")]


class MetricsTableDataset(AbstractDataset[pd.DataFrame, pd.DataFrame]):
    """``data/08_reporting/metrics.csv``: saving *upserts* rows.

    A saved row replaces the stored row with the same key (every column but ``value`` and
    ``run_id``), so each pipeline refreshes its own rows and leaves the others' in place.
    ``run_id`` is the active MLflow run, if any, so every number leads back to its run.

    Every save also rewrites the leaderboard of the whole table (``reporting/leaderboard.py``)
    beside it, ``<leaderboard>.md`` and ``<leaderboard>.csv``, and logs both to the active MLflow
    run: every pipeline's report node saves its rows here, so each one refreshes the leaderboard
    without a node of its own.

    Args:
        filepath: The CSV file.
        leaderboard: File stem of the leaderboard beside ``filepath`` (``None``: none written).
        metadata: Kedro's free-form metadata.
    """

    def __init__(
        self, filepath: str, leaderboard: str | None = "leaderboard", metadata: dict[str, Any] | None = None
    ) -> None:
        self._filepath = Path(filepath)
        self._leaderboard = self._filepath.with_name(leaderboard) if leaderboard else None
        self.metadata = metadata

    def load(self) -> pd.DataFrame:
        if not self._filepath.is_file():
            return pd.DataFrame(columns=METRIC_COLUMNS)
        return pd.read_csv(
            self._filepath, dtype={c: str for c in METRIC_COLUMNS if c != "value"}, keep_default_na=False
        )

    def save(self, data: pd.DataFrame) -> None:
        rows = rows_to_save(data, METRIC_COLUMNS, "metric", {c: str for c in METRIC_COLUMNS if c != "value"})
        rows = upsert(self.load(), rows, KEY_COLUMNS)
        rows = rows.sort_values(KEY_COLUMNS, kind="stable").reset_index(drop=True)
        self._filepath.parent.mkdir(parents=True, exist_ok=True)
        rows.to_csv(self._filepath, index=False)
        if self._leaderboard is not None:
            write_leaderboard(rows, self._leaderboard)

    def _exists(self) -> bool:
        return self._filepath.is_file()

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._filepath), "leaderboard": str(self._leaderboard)}


def rows_to_save(data: pd.DataFrame, columns: list[str], what: str, dtypes: dict[str, Any]) -> pd.DataFrame:
    """``data``'s ``columns`` cast to ``dtypes``, ``run_id`` the active MLflow run's when it has none.

    Raises:
        ValueError: a column (``run_id`` aside) missing, named with ``what`` (``metric``, ``outcome``).
    """
    missing = [c for c in columns if c not in data.columns and c != "run_id"]
    if missing:
        raise ValueError(f"{what} rows lack column(s) {missing}; expected {columns}")
    rows = data.copy()
    if "run_id" not in rows.columns:
        rows["run_id"] = _active_run_id()
    return rows[columns].astype(dtypes)


def upsert(old: pd.DataFrame, new: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``new`` after the rows of ``old`` whose ``keys`` no row of ``new`` has."""
    if not len(old):
        return new
    taken = set(map(tuple, new[keys].to_numpy()))
    return pd.concat([old[[tuple(r) not in taken for r in old[keys].to_numpy()]], new], ignore_index=True)


def write_leaderboard(metrics: pd.DataFrame, stem: Path) -> list[Path]:
    """Write ``<stem>.md`` and ``<stem>.csv`` from the whole metrics table;
    log them to the active MLflow run, if any.
    """

    board = leaderboard_table(metrics)
    paths = [stem.with_name(stem.name + ".md"), stem.with_name(stem.name + ".csv")]
    paths[0].write_text(leaderboard_markdown(board, metrics), encoding="utf-8")
    board.to_csv(paths[1], index=False)
    if _active_run_id():
        import mlflow

        for path in paths:
            mlflow.log_artifact(str(path))
    return paths


def _active_run_id() -> str:
    try:
        import mlflow

        run = mlflow.active_run()
    except Exception:  # noqa: BLE001 - tracking is optional for the table
        return ""
    return run.info.run_id if run else ""
