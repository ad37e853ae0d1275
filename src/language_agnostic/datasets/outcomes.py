"""Per-query outcomes (right or wrong, per test query) that paired tests between methods read, across runs.

The long metrics table holds one accuracy per cell; a paired test (McNemar) needs which queries each
method got right. Report nodes save their methods' outcomes here and read the file back for the
methods an earlier run trained (e.g. the default ``slu`` run's ``lajoint-cs`` for the ablations run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from kedro.io import AbstractDataset

from language_agnostic.datasets.metrics import CONFIG, drop_other_configs, rows_to_save, upsert

OUTCOME_COLUMNS = ["pipeline", "method", "task", "source", "target", "query", "correct", "run_id"]
STORED_COLUMNS = [*OUTCOME_COLUMNS, CONFIG]  # and the method's configuration, as in metrics.csv
GROUP_COLUMNS = ["pipeline", "method", "task", "source", "target"]


class OutcomesDataset(AbstractDataset[pd.DataFrame, pd.DataFrame]):
    """A parquet file of :data:`OUTCOME_COLUMNS`; saving *upserts* whole groups.

    The rows saved for a ``(pipeline, method, task, source, target)`` group replace every stored row
    of that group (a re-run's queries replace the last run's), and other groups stay. ``run_id`` is
    the active MLflow run when the rows carry none. As in ``metrics.csv``, a method keeps the rows
    of one ``config`` only (``datasets/metrics.py:drop_other_configs``). A missing file loads as an
    empty table.

    Args:
        filepath: The parquet file.
        metadata: Kedro's free-form metadata.
    """

    def __init__(self, filepath: str, metadata: dict[str, Any] | None = None) -> None:
        self._filepath = Path(filepath)
        self.metadata = metadata

    def load(self) -> pd.DataFrame:
        if not self._filepath.is_file():
            return pd.DataFrame({c: pd.Series(dtype=bool if c == "correct" else str) for c in STORED_COLUMNS})
        rows = pd.read_parquet(self._filepath)
        if CONFIG not in rows.columns:  # stored before rows carried their configuration
            rows[CONFIG] = ""
        return rows

    def save(self, data: pd.DataFrame) -> None:
        dtypes = {**{c: str for c in STORED_COLUMNS if c != "correct"}, "correct": bool}
        new = rows_to_save(data, STORED_COLUMNS, "outcome", dtypes)
        rows = upsert(drop_other_configs(self.load(), new), new, GROUP_COLUMNS)
        self._filepath.parent.mkdir(parents=True, exist_ok=True)
        rows.reset_index(drop=True).to_parquet(self._filepath, index=False)

    def _exists(self) -> bool:
        return self._filepath.is_file()

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._filepath)}
