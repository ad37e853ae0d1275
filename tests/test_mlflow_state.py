"""conftest's ``mlflow_tracking_state``: what one test sets in MLflow, the next test does not inherit.

The two tests run in file order; the second fails if the first's URI, experiment or open run leaks into it.
"""

from __future__ import annotations

from pathlib import Path

BEFORE: dict[str, object] = {}


def _state() -> tuple[object, object]:
    from mlflow.tracking import fluent
    from mlflow.tracking._tracking_service import utils

    return utils._tracking_uri, fluent._active_experiment_id


def test_a_test_points_mlflow_at_its_own_store(tmp_path: Path):
    import mlflow

    BEFORE["state"] = _state()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    mlflow.set_experiment("leaks_if_not_restored")
    mlflow.start_run()  # left open on purpose: the fixture ends it
    assert _state() != BEFORE["state"]


def test_the_next_test_finds_mlflow_as_before():
    import mlflow

    assert mlflow.active_run() is None
    assert _state() == BEFORE["state"]
