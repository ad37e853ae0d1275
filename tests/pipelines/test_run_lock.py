"""Two ``kedro run``s at once in one project: the second waits for the first, and each gets its own results."""

from __future__ import annotations

import io
import os
import shutil
import signal
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
            # each ended as usual, and says which process ran it (runs left RUNNING by a dead one are found by it)
            assert run.info.status == "FINISHED" and run.data.tags["language_agnostic.pid"].isdigit()
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


# A stand-in for `kedro run` that runs the project's hooks around an MLflow run as kedro-mlflow
# starts it, with an open child run, then waits to be stopped (fast: no Kedro session, no pipeline)
HOOKED_RUN = """
import os, signal, sys, time
import mlflow
from language_agnostic.pipelines.run_lock import RunLockHook
from language_agnostic.pipelines.tracking_hook import RunStatusHook

project, uri = sys.argv[1], sys.argv[2]
mlflow.set_tracking_uri(uri)
mlflow.set_experiment("language_agnostic")
lock, status = RunLockHook(), RunStatusHook()
status.after_context_created()
lock.before_pipeline_run({"project_path": project, "pipeline_names": ["hooked"]})  # tryfirst
run = mlflow.start_run(run_name="hooked")  # kedro-mlflow's before_pipeline_run
if sys.argv[3:] == ["signal-in-setup"]:  # a signal before the run records its process: held back
    print(run.info.run_id, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
status.before_pipeline_run({})  # trylast
lock.before_node_run()  # the first node
child = mlflow.start_run(run_name="training", nested=True)  # a node's open child run
print(run.info.run_id, child.info.run_id, flush=True)
if sys.argv[3:] == ["finish"]:
    mlflow.end_run()
    status.after_pipeline_run()
    mlflow.end_run()
    lock.after_pipeline_run()
else:
    time.sleep(600)
"""


def _hooked_run(project: Path, uri: str, *args: str) -> tuple[subprocess.Popen, list[str]]:
    """The stand-in started; its MLflow run and child run ids once it is inside its run."""
    script = project / "hooked_run.py"
    script.write_text(HOOKED_RUN)
    process = subprocess.Popen(
        [sys.executable, str(script), str(project), uri, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true"},
    )
    assert process.stdout is not None
    ids = process.stdout.readline().split()
    assert len(ids) == 2, process.communicate(timeout=60)[1][-3000:]
    return process, ids


def _statuses(uri: str, *run_ids: str) -> list[str]:
    client = mlflow.MlflowClient(tracking_uri=uri)
    return [client.get_run(run_id).info.status for run_id in run_ids]


def _lock_is_free(project: Path) -> bool:
    try:
        run_lock.release(run_lock.acquire(project / run_lock.LOCK_FILE, wait=False))
    except run_lock.RunLockBusyError:
        return False
    return True


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, None)])
def test_sigterm_or_ctrl_c_during_a_run_ends_its_mlflow_run_killed_and_frees_the_lock(
    tmp_path: Path, signum: int, code: int | None
):
    project = tmp_path / "project"
    project.mkdir()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    process, (run_id, child_id) = _hooked_run(project, uri)
    assert not _lock_is_free(project)
    assert _statuses(uri, run_id, child_id) == ["RUNNING", "RUNNING"]
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code if code is not None else process.returncode != 0
    assert _statuses(uri, run_id, child_id) == ["KILLED", "KILLED"], err[-3000:]
    tags = mlflow.MlflowClient(tracking_uri=uri).get_run(run_id).data.tags
    assert tags["language_agnostic.ended_by"] == ("SIGTERM" if signum == signal.SIGTERM else "SIGINT (Ctrl-C)")
    assert tags["language_agnostic.pid"] == str(process.pid)
    assert f"MLflow run {run_id} ended KILLED with 1 open child run(s)" in err
    assert _lock_is_free(project)


def test_a_signal_while_the_run_is_set_up_is_held_until_it_records_its_process(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    script = project / "hooked_run.py"
    script.write_text(HOOKED_RUN)
    done = subprocess.run(
        [sys.executable, str(script), str(project), uri, "signal-in-setup"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 143, done.stderr[-3000:]
    (run_id,) = done.stdout.split()  # it never reached the child run
    assert _statuses(uri, run_id) == ["KILLED"]
    assert mlflow.MlflowClient(tracking_uri=uri).get_run(run_id).data.tags["language_agnostic.ended_by"] == "SIGTERM"
    assert _lock_is_free(project)


def test_a_run_left_running_by_sigkill_is_marked_killed_by_the_next_run(tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    process, (run_id, child_id) = _hooked_run(project, uri)
    process.kill()  # no handler runs: the MLflow runs stay RUNNING
    process.communicate(timeout=60)
    assert _statuses(uri, run_id, child_id) == ["RUNNING", "RUNNING"]
    assert _lock_is_free(project)  # the kernel released the lock
    # the next run finds the process gone, marks its runs KILLED, and itself finishes as usual
    second, (next_id, next_child) = _hooked_run(project, uri, "finish")
    _, err = second.communicate(timeout=60)
    assert second.returncode == 0, err[-3000:]
    assert _statuses(uri, run_id, child_id, next_id, next_child) == ["KILLED", "KILLED", "FINISHED", "FINISHED"]
    assert "marked 2 MLflow run(s) KILLED: left RUNNING by a process that is gone" in err


def test_a_run_that_may_not_wait_stops_at_once_naming_the_holder(tmp_path: Path):
    held = run_lock.acquire(tmp_path / run_lock.LOCK_FILE, {"pipelines": ["fmda"]})
    try:
        started = time.time()
        with pytest.raises(run_lock.RunLockBusyError) as raised:
            run_lock.acquire(tmp_path / run_lock.LOCK_FILE, wait=False)
        assert time.time() - started < 1
        message = str(raised.value)
        assert "\n" not in message and f"kedro run pid {os.getpid()} (pipelines ['fmda']" in message
        assert message.endswith("not waiting (LANGUAGE_AGNOSTIC_NO_WAIT is set)")
    finally:
        run_lock.release(held)
    assert run_lock.waits()
    os.environ[run_lock.NO_WAIT_VARIABLE] = "1"
    try:
        assert not run_lock.waits()
    finally:
        del os.environ[run_lock.NO_WAIT_VARIABLE]


@pytest.mark.slow
def test_a_waiting_kedro_run_starts_no_mlflow_run_and_stops_cleanly_or_does_not_wait(
    tiny_hub_model: Path, tmp_path: Path
):
    project = _project(tmp_path)
    params = f"{_inputs(project, 'a', ['play some jazz', 'wake me up'])},embeddings.encoder.name={tiny_hub_model}"
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", "HF_HUB_OFFLINE": "1"}
    env.pop(run_lock.NO_WAIT_VARIABLE, None)
    held = run_lock.acquire(project / run_lock.LOCK_FILE, {"pipelines": ["the test"]})
    runs, logs = {}, {}
    try:
        for name, extra in [("sigterm", {}), ("ctrl_c", {}), ("no_wait", {run_lock.NO_WAIT_VARIABLE: "1"})]:
            logs[name] = tmp_path / f"{name}.log"
            runs[name] = subprocess.Popen(
                [str(KEDRO), "run", "--pipelines=retrieve", f"--params={params}"],
                cwd=project,
                env={**env, **extra},
                stdout=logs[name].open("w"),
                stderr=subprocess.STDOUT,
            )
        # the run told not to wait stops with one line naming the holder
        assert runs["no_wait"].wait(timeout=300) == 1
        lines = logs["no_wait"].read_text().splitlines()
        (error,) = [line for line in lines if "RunLockBusyError" in line]
        assert "(pipelines ['the test']" in error and "not waiting (LANGUAGE_AGNOSTIC_NO_WAIT is set)" in error
        assert not any("Traceback" in line for line in lines)
        for name in ("sigterm", "ctrl_c"):
            _wait_for(logs[name], "this run waits until it ends", runs[name])
        # waiting is not part of an MLflow run: none has started
        assert _runs(project) == []
        runs["sigterm"].send_signal(signal.SIGTERM)
        runs["ctrl_c"].send_signal(signal.SIGINT)
        assert runs["sigterm"].wait(timeout=60) == 143
        assert runs["ctrl_c"].wait(timeout=60) != 0
    finally:
        for run in runs.values():
            if run.poll() is None:
                run.kill()
        run_lock.release(held)
    assert _runs(project) == []  # in particular, no FINISHED one


def _runs(project: Path) -> list:
    """The MLflow runs of the project's store."""
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{project / 'mlruns' / 'mlflow.db'}")
    return client.search_runs([client.get_experiment_by_name("language_agnostic").experiment_id])


def test_a_held_back_signal_stops_the_run_once_set_up_and_a_second_one_at_once(monkeypatch):
    raised = []
    monkeypatch.setattr(signal, "raise_signal", raised.append)
    monkeypatch.setattr(run_lock, "_interrupted_by", None)  # restored after the test
    run_lock._defer_signals(True)
    try:
        run_lock._on_signal(signal.SIGTERM, None)  # held back
        run_lock._defer_signals(False)  # the first node: it is sent again, now to be handled
        assert raised == [signal.SIGTERM] and run_lock.interrupted_by() == "SIGTERM"
        run_lock._defer_signals(True)
        run_lock._on_signal(signal.SIGINT, None)
        with pytest.raises(KeyboardInterrupt):  # pressed twice: the set-up is not waited for
            run_lock._on_signal(signal.SIGINT, None)
    finally:
        run_lock._defer_signals(False)
    assert raised == [signal.SIGTERM]  # nothing left pending
