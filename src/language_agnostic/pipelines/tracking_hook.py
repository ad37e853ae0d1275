"""Kedro wiring for MLflow: the experiment is one of training runs, so the MLflow UI opens on them."""

from __future__ import annotations

import logging
from typing import Any

from kedro.framework.hooks import hook_impl

from language_agnostic.reporting.tracking import mark_training_experiment

logger = logging.getLogger(__name__)


class TrainingExperimentHook:
    """Tags the run's MLflow experiment ``mlflow.experimentKind = custom_model_development`` once per run.

    kedro-mlflow creates the experiment and starts the run before the first node, so the
    first ``before_node_run`` sees it; experiments created before this hook existed are tagged
    on their next run.
    """

    def __init__(self) -> None:
        self._done = False

    @hook_impl
    def before_pipeline_run(self, run_params: dict[str, Any]) -> None:
        del run_params
        self._done = False

    @hook_impl
    def before_node_run(self) -> None:
        if self._done:
            return
        self._done = True
        import mlflow

        run = mlflow.active_run()
        if run is None:  # tracking disabled for this pipeline
            return
        try:
            if mark_training_experiment(run.info.experiment_id):
                logger.info("MLflow experiment %s tagged as training runs (the UI opens on its runs)", run.info.experiment_id)
        except Exception as exc:  # noqa: BLE001 - a view preference must never stop a run
            logger.warning("could not tag the MLflow experiment's kind: %s", exc)
