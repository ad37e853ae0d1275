"""One MLflow run per trained variant, nested under the Kedro run's own (kedro-mlflow) run.

A single ``kedro run --pipelines=fmda`` trains several FMDA variants; giving each its own
child run lets the MLflow UI compare them side by side (parameters, per-epoch losses,
metrics). Without an active run (tests, ``mlflow.yml`` disabled) nothing is logged.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from language_agnostic.methods.trained import write_artifact


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


def log_child_run(name: str, params: Mapping[str, Any], history: list[dict[str, float]]) -> str | None:
    """Open a child run named ``name``, log ``params`` and per-epoch ``history``;
    return its id (None if no run is active).
    """
    if not _active():
        return None
    import mlflow

    with mlflow.start_run(run_name=name, nested=True) as run:
        mlflow.log_params(_flatten(params))
        for record in history:
            step = int(record["epoch"])
            mlflow.log_metrics({k: float(v) for k, v in record.items() if k != "epoch"}, step=step)
    return run.info.run_id


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

    with mlflow.start_run(run_id=run_id, nested=True):
        mlflow.log_metrics({metric_key(r): float(r.value) for r in rows.itertuples()})


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
