"""Kedro wiring for MLflow: the experiment is one of training runs, so the MLflow UI opens on them; a run's
MLflow status tells the truth when it is interrupted or its process dies."""

from __future__ import annotations

import atexit
import logging
from typing import Any

from kedro.framework.hooks import hook_impl

from language_agnostic.encoders.store import USAGE
from language_agnostic.pipelines.run_lock import interrupted_by
from language_agnostic.tracking import (
    end_run_killed,
    end_runs_of_dead_processes,
    mark_run_owner,
    mark_training_experiment,
    set_node_namespace,
)
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


class RunStatusHook:
    """Keeps the Kedro run's MLflow run status true: KILLED when the run was interrupted, or its process died.

    - After kedro-mlflow has started the run (``trylast``), tags it with this process's pid and host
      (``language_agnostic.pid`` / ``language_agnostic.host``) and marks KILLED every RUNNING run of
      the experiment whose process on this host is gone (a SIGKILL, a crash), with its child runs.
    - A run that ends neither by ``after_pipeline_run`` nor by ``on_pipeline_error`` was interrupted
      (Ctrl-C, SIGTERM: ``pipelines/run_lock.py`` turns it into an exit): at the process's exit,
      before MLflow's own exit handler would end it FINISHED, the run and its open child runs are
      ended KILLED.

    A run already active before the Kedro session (started by an orchestrator) is not ours: left alone.
    """

    def __init__(self) -> None:
        self._foreign = False
        self._run_id: str | None = None
        self._armed = False

    @hook_impl
    def after_context_created(self) -> None:
        import mlflow

        self._foreign = mlflow.active_run() is not None

    @hook_impl(trylast=True)
    def before_pipeline_run(self, run_params: dict[str, Any]) -> None:
        del run_params
        import mlflow

        run = mlflow.active_run()
        if run is None or self._foreign:  # tracking disabled for this pipeline, or not our run
            return
        self._run_id = run.info.run_id
        if not self._armed:  # registered after MLflow's own handler, so it runs before it
            atexit.register(self._end_if_interrupted)
            self._armed = True
        try:
            mark_run_owner(self._run_id)
            ended = end_runs_of_dead_processes(run.info.experiment_id, keep=self._run_id)
        except Exception as exc:  # noqa: BLE001 - bookkeeping must never stop a run
            logger.warning("could not check the experiment for runs of dead processes: %s", exc)
            return
        if ended:
            logger.warning(
                "marked %d MLflow run(s) KILLED: left RUNNING by a process that is gone (%s)",
                len(ended),
                ", ".join(ended),
            )

    @hook_impl(tryfirst=True)
    def after_pipeline_run(self) -> None:
        self._run_id = None

    @hook_impl(tryfirst=True)
    def on_pipeline_error(self) -> None:
        self._run_id = None  # kedro-mlflow ends it FAILED

    def _end_if_interrupted(self) -> None:
        """At exit: the run is still ours, so it neither finished nor failed: it was interrupted."""
        if self._run_id is None:
            return
        run_id, self._run_id = self._run_id, None
        reason = interrupted_by() or "the process exited during the run"
        try:
            ended = end_run_killed(run_id, reason)
        except Exception as exc:  # noqa: BLE001 - an exit handler must not raise
            logger.warning("could not end MLflow run %s as KILLED: %s", run_id, exc)
            return
        logger.warning(
            "run stopped (%s): MLflow run %s ended KILLED%s",
            reason,
            run_id,
            f" with {len(ended) - 1} open child run(s)" if len(ended) > 1 else "",
        )


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
    def before_node_run(self, node: Any) -> None:
        # a training step's log lines name its language pair (the node's namespace)
        set_node_namespace(node.namespace)

    @hook_impl
    def on_node_error(self) -> None:
        set_node_namespace(None)

    @hook_impl
    def after_node_run(self, node: Any) -> None:
        set_node_namespace(None)
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
