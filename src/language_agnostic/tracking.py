"""One MLflow run per trained variant, nested under the Kedro run's own (kedro-mlflow) run.

A single ``kedro run --pipelines=fmda`` trains several FMDA variants; giving each its own
child run lets the MLflow UI compare them side by side (parameters, per-epoch losses,
metrics). Without an active run (tests, ``mlflow.yml`` disabled) nothing is logged.

A model reused from the trained-model store (``training/reuse.py``) gets a child run of its own
under the run that reused it (:func:`log_reused_child_run`): the trained run's parameters and
history, the model file as its artifact (so ``retrieve.model.run_id`` accepts it), and
``language_agnostic.reused = true`` with a `` (reused)`` name suffix, which the runs table shows.

A Kedro run's MLflow run records the process that owns it (:func:`mark_run_owner`): a run whose
process is gone (SIGKILL, a machine reboot) is marked KILLED by the next run on the host
(:func:`end_runs_of_dead_processes`), and an interrupted run ends KILLED (:func:`end_run_killed`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import re
import socket
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from language_agnostic.methods.trained import write_artifact

logger = logging.getLogger(__name__)

REUSED_TAG = "language_agnostic.reused"
REUSED_SUFFIX = " (reused)"
PID_TAG, HOST_TAG = "language_agnostic.pid", "language_agnostic.host"
KILLED = "KILLED"


def _active() -> bool:
    """Whether an MLflow run is open; False where MLflow is not installed (the package's functions
    then train and evaluate without logging, e.g. on a GPU machine that has only torch)."""
    try:
        import mlflow
    except ImportError:
        return False
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


# While a training step runs under training/reuse.py, the child runs it logs are recorded here (so a
# later run that reuses its model can log them again) and its start time is known (a child run's
# duration is its own training, not the Kedro run's)
_recorded: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar("recorded", default=None)
_started: contextvars.ContextVar[float | None] = contextvars.ContextVar("started", default=None)


# The namespace of the Kedro node running now (a language pair, e.g. ``en_de``), set by a hook
# (pipelines/tracking_hook.py): a training step's log lines name their pair with it
_namespace: contextvars.ContextVar[str | None] = contextvars.ContextVar("namespace", default=None)


def set_node_namespace(namespace: str | None) -> None:
    """Say which Kedro node namespace runs now (``None``: none) for :func:`step_label`."""
    _namespace.set(namespace or None)


def step_label(name: str) -> str:
    """``name`` prefixed by the running node's namespace: ``en_de.train_fmda[infonce]``."""
    namespace = _namespace.get()
    return f"{namespace}.{name}" if namespace else name


@contextlib.contextmanager
def recording_child_runs() -> Iterator[list[dict[str, Any]]]:
    """Record the child runs logged inside the block (name, flattened params, history, run id);
    the block's start is their start time."""
    runs: list[dict[str, Any]] = []
    tokens = (_recorded.set(runs), _started.set(time.time()))
    try:
        yield runs
    finally:
        _recorded.reset(tokens[0])
        _started.reset(tokens[1])


def log_child_run(
    name: str,
    params: Mapping[str, Any],
    history: list[dict[str, float]],
    tags: Mapping[str, str] | None = None,
    note: str | None = None,
) -> str | None:
    """Log a finished child run named ``name`` under the active run: ``params``, per-epoch ``history``,
    ``tags`` and a ``note`` (the run's description); return its id (None if no run is active).

    The run starts when the training step started (:func:`recording_child_runs`; else now) and ends
    now, so its duration in the MLflow UI is its own training; evaluation adds its metrics later
    without reopening it (:func:`log_child_metrics`).
    """
    flat = _flatten(params)
    recorder = _recorded.get()
    if not _active():
        if recorder is not None:
            recorder.append({"name": name, "params": flat, "history": list(history), "run_id": None})
        return None
    import mlflow
    from mlflow.entities import Metric, Param

    client = mlflow.MlflowClient()
    parent = mlflow.active_run()
    now = time.time()
    all_tags = {"mlflow.parentRunId": parent.info.run_id, **dict(tags or {})}
    if note:
        all_tags["mlflow.note.content"] = note
    run = client.create_run(
        parent.info.experiment_id, start_time=int(1000 * (_started.get() or now)), tags=all_tags, run_name=name
    )
    run_id = run.info.run_id
    stamp = int(1000 * now)
    metrics = [
        Metric(k, float(v), stamp, int(record["epoch"]))
        for record in history
        for k, v in record.items()
        if k != "epoch"
    ]
    params_ = [Param(k, v) for k, v in flat.items()]
    for i in range(0, len(params_), 100):  # log_batch takes at most 100 params and 1000 metrics a call
        client.log_batch(run_id, params=params_[i : i + 100])
    for i in range(0, len(metrics), 1000):
        client.log_batch(run_id, metrics=metrics[i : i + 1000])
    client.set_terminated(run_id, "FINISHED", end_time=int(1000 * time.time()))
    if recorder is not None:
        recorder.append({"name": name, "params": flat, "history": list(history), "run_id": run_id})
    return run_id


# MLflow >= 3 opens an experiment on the view its kind names; untagged, an experiment with no
# training runs yet is guessed to be GenAI (traces, token usage). Ours holds training runs.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"


def mark_training_experiment(experiment_id: str) -> bool:
    """Tag the experiment as one of model training runs, so the MLflow UI opens it on its runs; True if it changed."""
    import mlflow

    client = mlflow.MlflowClient()
    if client.get_experiment(experiment_id).tags.get(EXPERIMENT_KIND_TAG) == EXPERIMENT_KIND:
        return False
    client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)
    return True


def log_child_model(run_id: str | None, name: str, trained: Mapping[str, Any]) -> str | None:
    """Log a trained model (``methods/registry.py:artifact``) as a model of its child run; return the model id.

    The file (``<name>.safetensors``, the format of ``data/06_models``) becomes an artifact of the
    child run, so ``retrieve.model.run_id`` can name the run, and an MLflow *logged model* whose
    source and output is the run, so the UI lists it in the run's "Models" column. No-op
    without a run.
    """
    _record_model(run_id, name)
    if run_id is None or not _active():
        return None
    import mlflow

    client = mlflow.MlflowClient()
    build = dict(trained.get("build") or {})
    params = {k: str(v) for k, v in trained.items() if isinstance(v, (str, int, float, bool)) and k != "mlflow_run_id"}
    with tempfile.TemporaryDirectory() as tmp:
        path = write_artifact(trained, Path(tmp) / f"{name}.safetensors")
        client.log_artifact(run_id, str(path))
        return _logged_model(client, run_id, name, tmp, params=params, model_type=str(build.get("method", "")))


def _record_model(run_id: str | None, name: str) -> None:
    """Note the model's name in the recorded child run that holds it, so a run that reuses the model
    can log it again under the same name (:func:`log_reused_child_run`)."""
    recorder = _recorded.get()
    for run in reversed(recorder or []):
        if run["run_id"] == run_id and "model" not in run:
            run["model"] = name
            return


def log_reused_child_run(
    recorded: Mapping[str, Any], fingerprint: str, model: Mapping[str, Any] | None = None
) -> str | None:
    """Log a stored training's child run again under the active run, marked as reused; return its id.

    Args:
        recorded: The child run as :func:`recording_child_runs` recorded it (name, params, history,
            run id, and the name of the model it logged, if any).
        fingerprint: The stored entry's fingerprint (``training/reuse.py``).
        model: The stored model (``methods/registry.py:artifact``) when this child run held it: it
            becomes this run's artifact too, naming this run as its ``mlflow_run_id``, so
            ``retrieve.model.run_id=<this run>`` loads it like the trained run's.

    The run is named ``<name> (reused)`` and tagged ``language_agnostic.reused = true`` (a column of
    the runs table), ``language_agnostic.trained_by`` (the run that trained it) and the fingerprint.
    """
    trained_by = recorded.get("run_id")
    run_id = log_child_run(
        f"{recorded['name']}{REUSED_SUFFIX}",
        recorded["params"],
        recorded["history"],
        tags={
            "language_agnostic.fingerprint": fingerprint,
            "language_agnostic.trained_by": str(trained_by),
            REUSED_TAG: "true",
        },
        note=f"Reused: trained by run {trained_by} (fingerprint {fingerprint[:12]}); nothing was retrained.",
    )
    if run_id is None or model is None:
        return run_id
    # an entry stored before the model's name was recorded: the names of the trained run's model files
    names = [recorded["model"]] if recorded.get("model") else _model_names(trained_by)
    for name in names:
        log_child_model(run_id, name, {**model, "mlflow_run_id": run_id})
    return run_id


def _model_names(run_id: str | None) -> list[str]:
    """The names of the ``.safetensors`` files run ``run_id`` holds ([] when the store does not know it)."""
    if not run_id:
        return []
    import mlflow
    from mlflow.exceptions import MlflowException

    try:
        items = mlflow.MlflowClient().list_artifacts(run_id)
    except MlflowException:
        logger.warning("the reused model's run %s is not in this tracking store; its child run holds no model", run_id)
        return []
    return [Path(item.path).stem for item in items if item.path.endswith(".safetensors")]


def _logged_model(client: Any, run_id: str, name: str, directory: str | Path, **create: Any) -> str:
    """``directory`` as a READY logged model whose source and output is run ``run_id``; its id.

    ``create``: more arguments of ``create_logged_model`` (``params``, ``tags``, ``model_type``).
    """
    from mlflow.entities import LoggedModelOutput, LoggedModelStatus

    model = client.create_logged_model(
        experiment_id=client.get_run(run_id).info.experiment_id,
        name=re.sub(r"[^\w.-]", "_", name),
        source_run_id=run_id,
        **create,
    )
    client.log_model_artifacts(model.model_id, str(directory))
    client.finalize_logged_model(model.model_id, LoggedModelStatus.READY)
    client.log_outputs(run_id, [LoggedModelOutput(model_id=model.model_id, step=0)])
    return model.model_id


def metric_key(row: Any) -> str:
    """An MLflow-safe metric name for a metrics-table row."""
    return (
        f"{row.task}.{row.method}.{row.embedding}.{row.dataset.split(':')[-1]}.{row.source}_to_{row.target}.{row.metric}".replace(
            "-", "_"
        )
        .replace(">", "__")
        .replace("@", "at")
        .replace("+", "_plus_")
    )


def log_child_metrics(run_id: str | None, rows: pd.DataFrame) -> None:
    """Add a variant's evaluation rows to its child run (no-op without one)."""
    if run_id is None or not _active():
        return
    import mlflow
    from mlflow.entities import Metric

    stamp = int(1000 * time.time())
    metrics = [Metric(metric_key(r), float(r.value), stamp, 0) for r in rows.itertuples()]
    client = mlflow.MlflowClient()
    for i in range(0, len(metrics), 1000):  # added to the finished run: its start and end stay its training's
        client.log_batch(run_id, metrics=metrics[i : i + 1000])


def log_exported_model(run_id: str | None, name: str, directory: str | Path) -> tuple[str, str] | None:
    """Log an exported MLflow model directory (``pipelines/export``) as a logged model of the run that
    trained it, or else of the active run, so ``mlflow.pyfunc.load_model("models:/<id>")`` and
    ``mlflow models serve -m models:/<id>`` work from the tracking store.

    Args:
        run_id: The training run the model's artifact records (``mlflow_run_id``); used if the
            store has it.
        name: The model's ``<method>@<source>`` name.
        directory: The saved MLflow model (its ``MLmodel`` at the top).

    Returns:
        ``(model id, run id)``, or None when neither run exists (no tracking).
    """
    import mlflow
    from mlflow.exceptions import MlflowException

    if not run_id and mlflow.active_run() is None:
        return None  # no run to log into (and no tracking store to open)
    client = mlflow.MlflowClient()
    run = None
    if run_id:
        try:
            run = client.get_run(run_id)
        except MlflowException:
            run = None  # trained with tracking elsewhere or since deleted: the export's own run holds it
    if run is None and mlflow.active_run() is not None:
        run = client.get_run(mlflow.active_run().info.run_id)
    if run is None:
        return None
    model_id = _logged_model(
        client,
        run.info.run_id,
        f"{name}-exported",
        directory,
        tags={"language_agnostic.exported": "sentence_transformers"},
        model_type="sentence_transformers",
    )
    return model_id, run.info.run_id


# ---------------------------------------------------------------------------- who owns a run


def mark_run_owner(run_id: str) -> None:
    """Tag run ``run_id`` with this process's pid and host, so a later run can tell whether it still lives."""
    import mlflow

    client = mlflow.MlflowClient()
    client.set_tag(run_id, PID_TAG, str(os.getpid()))
    client.set_tag(run_id, HOST_TAG, socket.gethostname())


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _running_runs(client: Any, experiment_id: str) -> list[Any]:
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], "attributes.status = 'RUNNING'", max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def _with_descendants(roots: set[str], runs: list[Any]) -> set[str]:
    """``roots`` and every run of ``runs`` below one of them (child runs, theirs...)."""
    found, grew = set(roots), True
    while grew:
        more = {r.info.run_id for r in runs if r.data.tags.get("mlflow.parentRunId") in found} - found
        found |= more
        grew = bool(more)
    return found


def end_runs_of_dead_processes(experiment_id: str, keep: str | None = None) -> list[str]:
    """Mark KILLED every RUNNING run of the experiment whose process (tagged by :func:`mark_run_owner`,
    on this host) is gone, with its RUNNING child runs; their ids.

    A run of another host, or one that records no process, is left alone: nothing here can tell
    whether it still runs. ``keep``: a run never touched (the caller's own).
    """
    import mlflow

    client = mlflow.MlflowClient()
    host = socket.gethostname()
    running = _running_runs(client, experiment_id)
    dead = {
        r.info.run_id
        for r in running
        if r.info.run_id != keep
        and r.data.tags.get(HOST_TAG) == host
        and r.data.tags.get(PID_TAG, "").isdigit()
        and not process_alive(int(r.data.tags[PID_TAG]))
    }
    if not dead:
        return []
    ended = sorted(_with_descendants(dead, running) - {keep})
    for run_id in ended:
        client.set_terminated(run_id, KILLED)
    for run_id in dead:
        pid = next(r.data.tags[PID_TAG] for r in running if r.info.run_id == run_id)
        client.set_tag(
            run_id, "language_agnostic.ended_by", f"process {pid} on {host} was gone when run {keep} started"
        )
    return ended


def end_run_killed(run_id: str, reason: str) -> list[str]:
    """End run ``run_id`` (a Kedro run interrupted by a signal) and its open child runs as KILLED; their ids.

    Closes this thread's active runs first, so MLflow's own exit handler does not end them FINISHED.
    """
    import mlflow

    active = set()
    while (run := mlflow.active_run()) is not None:
        active.add(run.info.run_id)
        mlflow.end_run(KILLED)
    client = mlflow.MlflowClient()
    experiment_id = client.get_run(run_id).info.experiment_id
    ended = sorted(_with_descendants({run_id}, _running_runs(client, experiment_id)) | active | {run_id})
    for each in ended:
        client.set_terminated(each, KILLED)
    client.set_tag(run_id, "language_agnostic.ended_by", reason)
    return ended
