"""Two ``kedro run``s at once in one project: the second waits for the first, and each gets its own results."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from language_agnostic.pipelines import run_lock
from tests.conftest import PROJECT_ROOT

KEDRO = Path(sys.executable).with_name("kedro")


def _project(tmp_path: Path) -> Path:
    """A copy of the project's configuration (the package is installed), with an MLflow store made up front."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(PROJECT_ROOT / "conf", project / "conf", ignore=shutil.ignore_patterns("local"))
    (project / "conf" / "local").mkdir()
    shutil.copy(PROJECT_ROOT / "pyproject.toml", project / "pyproject.toml")
    (project / "src").mkdir()  # Kedro checks that it exists; the package is the installed one
    (project / "mlruns").mkdir()
    # the tracking database created once, before two runs would create it at the same moment
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}")
    try:
        mlflow.MlflowClient().create_experiment("language_agnostic")
    finally:
        mlflow.set_tracking_uri(previous)
    return project


def _inputs(project: Path, name: str, corpus: list[str]) -> str:
    (project / f"{name}_queries.txt").write_text("\n".join(corpus[:2]) + "\n", encoding="utf-8")
    (project / f"{name}_corpus.txt").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    return (
        f"retrieve.queries.path={name}_queries.txt,retrieve.corpus.path={name}_corpus.txt,"
        "retrieve.mode=raw,retrieve.top_k=2"
    )


def _wait_for(path: Path, text: str, process: subprocess.Popen, timeout: float = 240.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and process.poll() is None:
        if path.is_file() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"{text!r} never appeared in {path}:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.mark.slow
def test_two_concurrent_retrieve_runs_each_search_their_own_corpus(tiny_hub_model: Path, tmp_path: Path):
    project = _project(tmp_path)
    corpora = {
        "a": ["play some jazz music", "wake me up at nine", "what is the weather today"],
        "b": ["weck mich um neun", "spiel etwas musik", "set an alarm for six", "wie ist das wetter"],
    }
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "HF_HUB_OFFLINE": "1"}
    # the test holds the project's lock first, so both runs are sure to meet it
    held = run_lock.acquire(project / run_lock.LOCK_FILE, {"pipelines": ["the test"]})
    logs, runs = {}, {}
    try:
        for name, corpus in corpora.items():
            logs[name] = tmp_path / f"{name}.log"
            params = f"{_inputs(project, name, corpus)},embeddings.encoder.name={tiny_hub_model}"
            runs[name] = subprocess.Popen(
                [str(KEDRO), "run", "--pipelines=retrieve", f"--params={params}"],
                cwd=project,
                env=env,
                stdout=logs[name].open("w"),
                stderr=subprocess.STDOUT,
            )
        for name in corpora:
            _wait_for(logs[name], "this run waits until it ends", runs[name])
        assert "the test" in logs["a"].read_text()  # it says what it waits for
    finally:
        run_lock.release(held)
    for name, run in runs.items():
        assert run.wait(timeout=600) == 0, logs[name].read_text()[-3000:]

    # each run's MLflow run holds the neighbours of its own queries among its own corpus
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}")
    try:
        client = mlflow.MlflowClient()
        experiment = client.get_experiment_by_name("language_agnostic").experiment_id
        found = {}
        for run in client.search_runs([experiment]):
            local = client.download_artifacts(
                run.info.run_id, "retrieve_neighbours.csv", str(tmp_path / run.info.run_id)
            )
            table = pd.read_csv(io.StringIO(Path(local).read_text()))
            found[tuple(sorted(set(table["query"])))] = set(table["text"])
    finally:
        mlflow.set_tracking_uri(previous)
    assert sorted(found) == sorted(tuple(sorted(c[:2])) for c in corpora.values())
    for corpus in corpora.values():
        assert found[tuple(sorted(corpus[:2]))] <= set(corpus)  # found among its own corpus only
    # and neither run left the lock held
    run_lock.release(run_lock.acquire(project / run_lock.LOCK_FILE, poll_s=0.1))
