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
# the stored table adds each row's configuration: a short hash of the parameters its method's rows were
# computed from (set by pipelines/run_reports_hook.py; "" where unknown, e.g. a table written by a script)
CONFIG = "config"
STORED_COLUMNS = [*METRIC_COLUMNS, CONFIG]
METHOD_COLUMNS = ["pipeline", "method"]

# {(pipeline, method): config} of the rows the running Kedro run saves; filled by the run's hook
# before each save of a metrics or outcomes table, read by the save (a dataset sees only its data)
_method_configs: dict[tuple[str, str], str] = {}


def set_method_configs(configs: dict[tuple[str, str], str]) -> None:
    """Record the configuration of each ``(pipeline, method)`` this run saves rows of (``{}``: forget them)."""
    if not configs:
        _method_configs.clear()
    _method_configs.update(configs)


class MetricsTableDataset(AbstractDataset[pd.DataFrame, pd.DataFrame]):
    """``data/08_reporting/metrics.csv``: saving *upserts* rows, one configuration per method.

    A saved row replaces the stored row with the same key (every column but ``value``, ``run_id``
    and ``config``), so each pipeline refreshes its own rows and leaves the others' in place.
    ``run_id`` is the active MLflow run, if any, so every number leads back to its run; ``config``
    is a short hash of the parameters the method's rows were computed from. Saving rows of a
    ``(pipeline, method)`` under a configuration removes every stored row of that method under
    another one, even of pairs this run did not evaluate, so one method name never holds the
    rows of two settings (a temperature edit on one pair leaves that method with that pair's rows).

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
            return pd.DataFrame(columns=STORED_COLUMNS)
        rows = pd.read_csv(
            self._filepath, dtype={c: str for c in STORED_COLUMNS if c != "value"}, keep_default_na=False
        )
        if CONFIG not in rows.columns:  # a table written before rows carried their configuration
            rows[CONFIG] = ""
        return rows

    def save(self, data: pd.DataFrame) -> None:
        rows = rows_to_save(data, STORED_COLUMNS, "metric", {c: str for c in STORED_COLUMNS if c != "value"})
        rows = upsert(drop_other_configs(self.load(), rows), rows, KEY_COLUMNS)
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
    """``data``'s ``columns`` cast to ``dtypes``; ``run_id`` the active MLflow run's and ``config`` the
    method's recorded configuration (:func:`set_method_configs`) when it has none.

    Raises:
        ValueError: a column (``run_id`` and ``config`` aside) missing, named with ``what`` (``metric``, ``outcome``).
    """
    missing = [c for c in columns if c not in data.columns and c not in ("run_id", CONFIG)]
    if missing:
        raise ValueError(f"{what} rows lack column(s) {missing}; expected {[c for c in columns if c != CONFIG]}")
    rows = data.copy()
    if "run_id" not in rows.columns:
        rows["run_id"] = _active_run_id()
    if CONFIG in columns and CONFIG not in rows.columns:
        rows[CONFIG] = [
            _method_configs.get((str(p), str(m)), "") for p, m in zip(rows["pipeline"], rows["method"], strict=True)
        ]
    return rows[columns].astype(dtypes)


def drop_other_configs(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """``old`` without the rows of every ``(pipeline, method)`` of ``new`` whose ``config`` no row of ``new``
    of that method has: a method keeps the rows of one configuration, whichever pairs they cover."""
    if not len(old) or not len(new):
        return old
    kept = {(p, m, c) for p, m, c in new[[*METHOD_COLUMNS, CONFIG]].itertuples(index=False, name=None)}
    saved = {(p, m) for p, m, _ in kept}
    keep = [
        (p, m) not in saved or (p, m, c) in kept
        for p, m, c in old[[*METHOD_COLUMNS, CONFIG]].astype(str).itertuples(index=False, name=None)
    ]
    return old[keep]


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
