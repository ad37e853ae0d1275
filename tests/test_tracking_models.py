"""MLflow: trained heads are models of their child runs (reused ones too); the experiment is tagged as one of
training runs; a model lookup by run id fails in one line; runs of dead processes are marked KILLED."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from language_agnostic.methods.registry import artifact, build
from language_agnostic.methods.trained import TRAINED_BY_TAG, ModelLookupError, load_from_run
from language_agnostic.tracking import (
    EXPERIMENT_KIND,
    EXPERIMENT_KIND_TAG,
    HOST_TAG,
    PID_TAG,
    REUSED_TAG,
    end_runs_of_dead_processes,
    log_child_model,
    log_child_run,
    log_reused_child_run,
    mark_training_experiment,
    set_node_namespace,
    step_label,
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


def _train_head(width: int) -> tuple[dict, dict]:
    """A training step as the trainers write one: a child run, and the model logged to it."""
    torch.manual_seed(width)
    trained = {**artifact("dream", build("dream", width, 2), width, 2), "method": "dream", "pooling": "cls"}
    trained["mlflow_run_id"] = log_child_run("fmda/dream/en-US-de-DE", {"lr": 0.001}, [{"epoch": 1, "loss": 0.5}])
    log_child_model(trained["mlflow_run_id"], "dream", trained)
    return trained, {"dream.loss": [{"value": 0.5, "step": 1}]}


def _children(client, parent: str) -> list:
    experiment = client.get_run(parent).info.experiment_id
    return client.search_runs([experiment], f"tags.mlflow.parentRunId = '{parent}'")


def test_a_reused_model_s_child_run_holds_the_model_and_says_it_was_reused(tracking):
    from language_agnostic.training import reuse

    step = reuse.reusable(_train_head)
    parents, outputs = {}, {}
    for name in ("first", "second"):
        with tracking.start_run(run_name=name) as parent:
            outputs[name], _ = step(8)
            parents[name] = parent.info.run_id
    client = tracking.MlflowClient()
    (trained,), (reused,) = (_children(client, parents[name]) for name in ("first", "second"))
    # the runs table tells them apart: a name suffix and a tag column
    assert (trained.info.run_name, reused.info.run_name) == (
        "fmda/dream/en-US-de-DE",
        "fmda/dream/en-US-de-DE (reused)",
    )
    assert reused.data.tags[REUSED_TAG] == "true" and REUSED_TAG not in trained.data.tags
    assert reused.data.tags["language_agnostic.trained_by"] == trained.info.run_id
    assert reused.data.params == trained.data.params
    # it holds the model, as a file and in its "Models" column, and the model names it
    assert [a.path for a in client.list_artifacts(reused.info.run_id)] == ["dream.safetensors"]
    assert len(reused.outputs.model_outputs) == 1
    assert outputs["second"]["mlflow_run_id"] == reused.info.run_id
    # so retrieve.model.run_id=<the reused run> loads the same weights
    loaded = load_from_run(reused.info.run_id, "dream.safetensors", "retrieve.model")
    assert loaded["mlflow_run_id"] == reused.info.run_id
    assert all(torch.equal(loaded["state_dict"][k], v) for k, v in outputs["first"]["state_dict"].items())
    from language_agnostic.pipelines.retrieve.nodes import load_model

    spec = {"run_id": reused.info.run_id, "artifact": "dream.safetensors"}
    chosen = load_model(spec, "meaning", {"name": "tiny", "hidden_size": 8})
    assert chosen["source"] == f"MLflow run {reused.info.run_id} (dream.safetensors)"


def test_an_entry_that_does_not_name_its_model_takes_the_trained_run_s_file_names(tracking):
    """A store entry recorded before the model's name was: the trained run's ``.safetensors`` names it."""
    with tracking.start_run():
        trained, _ = _train_head(8)
        recorded = {"name": "fmda/dream/en-US-de-DE", "params": {"lr": "0.001"}, "history": [], "run_id": None}
        recorded["run_id"] = trained["mlflow_run_id"]
        run_id = log_reused_child_run(recorded, "f" * 64, trained)
        # a run this store does not know: the child run is logged, without a model, and says why in the log
        orphan = log_reused_child_run({**recorded, "run_id": "0" * 32}, "f" * 64, trained)
    client = tracking.MlflowClient()
    assert [a.path for a in client.list_artifacts(run_id)] == ["dream.safetensors"]
    assert client.list_artifacts(orphan) == [] and client.get_run(orphan).data.tags[REUSED_TAG] == "true"


def test_a_model_lookup_by_run_id_fails_in_one_line_and_follows_an_older_reused_run(tracking):
    from language_agnostic.pipelines.errors import user_error

    with tracking.start_run():
        trained, _ = _train_head(8)
        # a reused run logged before reused runs held their model: it names the run that trained it
        older = log_child_run("fmda/dream/en-US-de-DE", {}, [], tags={TRAINED_BY_TAG: trained["mlflow_run_id"]})
        empty = log_child_run("fmda/dream/en-US-de-DE", {}, [])
    loaded = load_from_run(older, "dream.safetensors", "retrieve.model")
    assert all(torch.equal(loaded["state_dict"][k], v) for k, v in trained["state_dict"].items())
    for run_id, message in [
        ("0123456789abcdef", r"^retrieve.model.run_id: no MLflow run '0123456789abcdef' in sqlite:///"),
        (empty, rf"^retrieve.model.artifact: MLflow run {empty} has no artifact 'dream.safetensors'; .* \[\]$"),
    ]:
        with pytest.raises(ModelLookupError, match=message) as raised:
            load_from_run(run_id, "dream.safetensors", "retrieve.model")
        assert "\n" not in str(raised.value) and user_error(raised.value) is raised.value  # printed alone
    # a file that is no model (truncated, altered): one line too
    with tracking.start_run():
        broken = log_child_run("broken", {}, [])
    bad = Path(tracking.get_tracking_uri().removeprefix("sqlite:///")).parent / "bad.safetensors"
    bad.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    tracking.MlflowClient().log_artifact(broken, str(bad))
    with pytest.raises(
        ModelLookupError, match=rf"^retrieve.model: MLflow run {broken}: 'bad.safetensors' cannot be read"
    ):
        load_from_run(broken, "bad.safetensors", "retrieve.model")


def test_a_training_step_s_label_names_its_node_s_namespace():
    assert step_label("train_fmda[infonce]") == "train_fmda[infonce]"
    set_node_namespace("en_de")
    try:
        assert step_label("train_fmda[infonce]") == "en_de.train_fmda[infonce]"
    finally:
        set_node_namespace(None)
    assert step_label("train_fmda[infonce]") == "train_fmda[infonce]"


def _dead_pid() -> int:
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_runs_left_running_by_a_dead_process_are_marked_killed(tracking, monkeypatch):
    import socket

    client = tracking.MlflowClient()
    experiment = tracking.get_experiment_by_name("language_agnostic").experiment_id

    def running(pid: int | None, host: str = socket.gethostname(), parent: str | None = None) -> str:
        tags = {"mlflow.parentRunId": parent} if parent else {}
        if pid is not None:
            tags |= {PID_TAG: str(pid), HOST_TAG: host}
        return client.create_run(experiment, tags=tags).info.run_id

    dead = running(_dead_pid())
    child = running(None, parent=dead)  # an open child run of the dead one
    grandchild = running(None, parent=child)
    alive = running(os.getpid())
    elsewhere = running(_dead_pid(), host="another-host")  # nothing here can tell
    unowned = running(None)
    ours = running(_dead_pid())
    assert sorted(end_runs_of_dead_processes(experiment, keep=ours)) == sorted([dead, child, grandchild])
    status = {run_id: client.get_run(run_id).info.status for run_id in (dead, child, grandchild, alive, elsewhere)}
    assert status == {dead: "KILLED", child: "KILLED", grandchild: "KILLED", alive: "RUNNING", elsewhere: "RUNNING"}
    assert client.get_run(unowned).info.status == client.get_run(ours).info.status == "RUNNING"
    assert "was gone" in client.get_run(dead).data.tags["language_agnostic.ended_by"]
    assert end_runs_of_dead_processes(experiment, keep=ours) == []  # once


def test_the_reuse_log_line_names_the_node_s_pair(caplog):
    import logging

    from kedro.pipeline import node

    from language_agnostic.pipelines.tracking_hook import TrainedModelsHook
    from language_agnostic.training import reuse

    step = reuse.reusable(_train_head)
    pair_node = node(step, "width", ["model", "history"], name="train_head_node", namespace="en_de")
    hook = TrainedModelsHook()
    caplog.set_level(logging.INFO, logger="language_agnostic.training.reuse")
    for _ in range(2):  # trained, then reused
        hook.before_node_run(pair_node)
        step(8)
        hook.after_node_run(pair_node)
    (line,) = [r.getMessage() for r in caplog.records if "reused the model" in r.getMessage()]
    assert line.startswith("en_de._train_head: reused the model trained ")
    assert step_label("x") == "x"  # outside the node again
