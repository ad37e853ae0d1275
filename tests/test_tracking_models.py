"""MLflow: trained heads are models of their child runs; the experiment is tagged as one of training runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from language_agnostic.methods.registry import artifact, build
from language_agnostic.methods.trained import load_from_run
from language_agnostic.tracking import (
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    log_child_model,
    log_child_run,
    mark_training_experiment,
)


@pytest.fixture
def tracking(tmp_path: Path):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    mlflow.set_experiment("language_agnostic")
    yield mlflow
    mlflow.set_tracking_uri("")


def test_a_trained_head_is_a_model_of_its_child_run(tracking):
    torch.manual_seed(0)
    trained = {**artifact("dream", build("dream", 8, 2), 8, 2), "method": "dream", "pooling": "cls"}
    assert log_child_model(None, "dream", trained) is None  # no run: nothing logged
    with tracking.start_run():
        run_id = log_child_run("fmda/dream/en-US-de-DE", {"lr": 0.001}, [{"epoch": 1, "loss": 0.5}])
        model_id = log_child_model(run_id, "dream", trained)
    client = tracking.MlflowClient()
    run = client.get_run(run_id)
    assert [m.model_id for m in run.outputs.model_outputs] == [model_id]  # the run's "Models" column
    (model,) = client.search_logged_models(experiment_ids=[run.info.experiment_id])
    assert (model.model_id, model.name, model.source_run_id, model.model_type, str(model.status)) == (
        model_id,
        "dream",
        run_id,
        "dream",
        "READY",
    )
    assert model.params["pooling"] == "cls"
    assert [a.path for a in client.list_artifacts(run_id)] == ["dream.safetensors"]
    assert [a.path for a in client.list_logged_model_artifacts(model_id)] == ["dream.safetensors"]
    loaded = load_from_run(run_id, "dream.safetensors", "retrieve.model")
    assert loaded["pooling"] == "cls" and all(
        torch.equal(loaded["state_dict"][k], v) for k, v in trained["state_dict"].items()
    )


def test_the_experiment_is_tagged_as_training_runs(tracking):
    experiment = tracking.get_experiment_by_name("language_agnostic")
    assert EXPERIMENT_KIND_TAG not in experiment.tags
    assert mark_training_experiment(experiment.experiment_id) is True
    assert mark_training_experiment(experiment.experiment_id) is False  # already tagged
    assert (
        tracking.get_experiment_by_name("language_agnostic").tags[EXPERIMENT_KIND_TAG]
        == EXPERIMENT_KIND
        == "custom_model_development"
    )


def test_tracking_is_off_where_mlflow_is_not_installed(monkeypatch):
    # the package trains and evaluates without MLflow (e.g. on a GPU machine with torch only)
    import sys

    from language_agnostic import tracking

    monkeypatch.setitem(sys.modules, "mlflow", None)
    assert tracking._active() is False
    assert tracking.log_child_run("x", {"a": 1}, []) is None
