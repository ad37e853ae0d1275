"""Kedro wiring for MLflow: the experiment is one of training runs, so the MLflow UI opens on them."""

from __future__ import annotations

import logging
from typing import Any

from kedro.framework.hooks import hook_impl

from language_agnostic.encoders.store import USAGE
from language_agnostic.tracking import mark_training_experiment
from language_agnostic.training.reuse import USAGE as MODELS

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
                logger.info(
                    "MLflow experiment %s tagged as training runs (the UI opens on its runs)", run.info.experiment_id
                )
        except Exception as exc:  # noqa: BLE001 - a view preference must never stop a run
            logger.warning("could not tag the MLflow experiment's kind: %s", exc)


class EmbeddingStoreHook:
    """Logs what the per-text embedding store did in this run: texts requested, distinct, encoded, reused.

    The figures are logged to the run's MLflow run after every node that asked the store for
    texts (step = how many such nodes ran), so the last step is the run's total, and the totals
    are written to the log at the end. ``embedding_store.forward_texts_per_s`` is the encoder's
    forward-pass throughput, to hold against ``benchmarks/encoder_floor.py``.
    """

    def __init__(self) -> None:
        self._step = 0
        self._last = 0

    @hook_impl
    def before_pipeline_run(self, run_params: dict[str, Any]) -> None:
        del run_params
        USAGE.reset()
        self._step, self._last = 0, 0

    @hook_impl
    def after_node_run(self) -> None:
        if USAGE.requested == self._last:
            return
        self._last = USAGE.requested
        self._step += 1
        import mlflow

        if mlflow.active_run() is None:
            return
        try:
            mlflow.log_metrics(USAGE.metrics(), step=self._step)
        except Exception as exc:  # noqa: BLE001 - bookkeeping must never stop a run
            logger.warning("could not log the embedding store's figures to MLflow: %s", exc)

    @hook_impl
    def after_pipeline_run(self) -> None:
        if USAGE.requested:
            figures = USAGE.metrics()
            logger.info(
                "embedding store: %d texts requested (%d distinct), %d encoded, %d reused; %s",
                USAGE.requested,
                USAGE.distinct,
                USAGE.encoded,
                USAGE.reused,
                f"{figures['embedding_store.forward_texts_per_s']:.0f} texts/s in forward passes"
                if "embedding_store.forward_texts_per_s" in figures
                else "nothing encoded",
            )


class TrainedModelsHook:
    """Counts the models this run trained and reused (``training/reuse.py``): logged to the run's MLflow
    run as ``models.trained`` / ``models.reused`` after every training node, and written to the log at the end."""

    @hook_impl
    def before_pipeline_run(self, run_params: dict[str, Any]) -> None:
        del run_params
        MODELS.reset()

    @hook_impl
    def after_node_run(self, node: Any) -> None:
        if not getattr(node.func, "reuse_label", None):
            return
        import mlflow

        if mlflow.active_run() is None:
            return
        try:
            mlflow.log_metrics(MODELS.metrics(), step=len(MODELS.trained) + len(MODELS.reused))
        except Exception as exc:  # noqa: BLE001 - bookkeeping must never stop a run
            logger.warning("could not log the trained/reused model counts to MLflow: %s", exc)

    @hook_impl
    def after_pipeline_run(self) -> None:
        if MODELS.trained or MODELS.reused:
            logger.info(
                "trained models: %d trained, %d reused (%.0f s of training saved)%s",
                len(MODELS.trained),
                len(MODELS.reused),
                MODELS.seconds_saved,
                f"; trained: {', '.join(MODELS.trained)}" if MODELS.trained and MODELS.reused else "",
            )
