"""One ``kedro run`` at a time in a project: a second run waits until the first has ended.

Every pipeline writes its intermediates to fixed paths under ``data/`` and reads them back
(``retrieve_corpus``, the pairs' manifests, the metrics table, which each report upserts rows
into). Two runs at once would read each other's files: a second ``retrieve`` run searched its
queries in the first run's corpus. Kedro's versioned datasets would isolate files a run saves and
loads, but not a table that two runs update (``metrics.csv``), nor a model another run is writing,
so the project takes a lock instead: an exclusive ``flock`` on ``data/.run.lock``, taken before
the first node and released when the run ends or fails. The kernel releases it when a run is
killed (even by SIGKILL), so a dead run never blocks the next one. The run that waits says
which run it waits for (its pid, pipelines and start time, written into the lock file).

The lock is taken before kedro-mlflow starts the run's MLflow run (this hook runs first), so the
wait is not part of the run's duration and a run stopped while waiting leaves no MLflow run.
``LANGUAGE_AGNOSTIC_NO_WAIT=1`` makes a run that finds the lock held stop at once, with one line
naming the run that holds it. From the lock on, SIGTERM (what ``timeout`` and schedulers send)
ends the run as Ctrl-C does, with exit status 143: the MLflow run is ended KILLED
(``pipelines/tracking_hook.py:RunStatusHook``) and the lock released. A signal that comes while the
hooks set the run up (from the lock to the first node) is held back until they are done.

Worker processes that a step starts (``processes: N``) run no pipeline and take no lock; the
per-text embedding store and the trained-model store have their own guarantees and are shared
safely by runs of other projects that point at them.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import IO, Any

from kedro.framework.hooks import hook_impl

logger = logging.getLogger(__name__)

LOCK_FILE = Path("data") / ".run.lock"
REPORT_EVERY_S = 60.0
NO_WAIT_VARIABLE = "LANGUAGE_AGNOSTIC_NO_WAIT"


class RunLockBusyError(RuntimeError):
    """Another ``kedro run`` holds the project's lock and this run was told not to wait."""


def _holder(handle: IO[str]) -> str:
    handle.seek(0)
    try:
        info = json.loads(handle.read() or "{}")
    except json.JSONDecodeError:
        return "another kedro run"
    return (
        f"kedro run pid {info.get('pid', '?')} (pipelines {info.get('pipelines') or 'default'}, "
        f"started {info.get('started', '?')})"
    )


def waits() -> bool:
    """Whether a run waits for the lock (``LANGUAGE_AGNOSTIC_NO_WAIT`` unset, empty or 0) or stops at once."""
    return os.environ.get(NO_WAIT_VARIABLE, "").strip() in ("", "0")


def acquire(
    path: Path, description: Mapping[str, Any] | None = None, poll_s: float = 1.0, wait: bool = True
) -> IO[str]:
    """Hold the exclusive lock on ``path``, waiting (and saying for whom) while another process holds it.

    Raises:
        RunLockBusyError: ``wait`` is False and another process holds it (the message names it).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    waited, reported = 0.0, -REPORT_EVERY_S
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if not wait:
                holder = _holder(handle)
                handle.close()
                raise RunLockBusyError(
                    f"{holder} is using this project's data/ ({path}); not waiting ({NO_WAIT_VARIABLE} is set)"
                ) from None
            if waited - reported >= REPORT_EVERY_S:
                logger.warning(
                    "%s is using this project's data/ (%s); this run waits until it ends (Ctrl-C stops waiting)",
                    _holder(handle),
                    path,
                )
                reported = waited
            time.sleep(poll_s)
            waited += poll_s
    if waited:
        logger.info("the other kedro run ended; this run starts after waiting %.0f s", waited)
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps({"pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S"), **(description or {})}))
    handle.flush()
    return handle


def release(handle: IO[str] | None) -> None:
    """Give the lock back (closing the file releases it too)."""
    if handle is None or handle.closed:
        return
    handle.seek(0)
    handle.truncate()
    fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()


# what interrupted the run, when a signal did (said when its MLflow run is ended KILLED); while the
# hooks set the run up (from the lock to the first node) a signal waits in _pending, so it never
# lands between kedro-mlflow starting the MLflow run and the run recording its process
_interrupted_by: str | None = None
_deferred = False
_pending: int | None = None


def interrupted_by() -> str | None:
    """``"SIGTERM"`` or ``"SIGINT (Ctrl-C)"`` once one of them has stopped this process's run, else None."""
    return _interrupted_by


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """SIGTERM and SIGINT raise in the main thread: the run unwinds (temporary files removed, worker
    processes stopped) and exits, and the exit handlers end its MLflow run KILLED."""
    del frame
    global _interrupted_by, _pending
    _interrupted_by = _interrupted_by or ("SIGINT (Ctrl-C)" if signum == signal.SIGINT else signal.Signals(signum).name)
    if _deferred and _pending is None:  # a second one stops the run even then (a set-up that never ends)
        _pending = signum
        return
    _pending = None
    _stop(signum)


def _stop(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def _defer_signals(defer: bool) -> None:
    """Hold SIGTERM and SIGINT back (``defer``), or stop now for one that came while they were held."""
    global _deferred, _pending
    _deferred = defer
    if not defer and _pending is not None:
        signum, _pending = _pending, None
        signal.raise_signal(signum)  # handled in the main thread, whichever thread resumes


class RunLockHook:
    """Takes ``data/.run.lock`` for the length of a ``kedro run`` (see the module docstring).

    Its ``before_pipeline_run`` runs before every other one (``tryfirst``): before kedro-mlflow's,
    which starts the MLflow run; pluggy would otherwise call the plugin's first (last registered).
    """

    def __init__(self) -> None:
        self._handle: IO[str] | None = None
        self._previous: dict[int, Any] = {}

    @hook_impl(tryfirst=True)
    def before_pipeline_run(self, run_params: dict[str, Any]) -> None:
        release(self._handle)
        _defer_signals(False)
        self._catch_signals()
        project = Path(run_params.get("project_path") or Path.cwd())
        pipelines = run_params.get("pipeline_names") or run_params.get("pipeline_name")
        self._handle = acquire(
            project / LOCK_FILE, {"pipelines": pipelines, "env": run_params.get("env")}, wait=waits()
        )
        # held back until the first node: the other hooks start the MLflow run and record its process
        _defer_signals(True)

    @hook_impl
    def before_node_run(self) -> None:
        _defer_signals(False)

    @hook_impl
    def after_pipeline_run(self) -> None:
        self._end()

    @hook_impl
    def on_pipeline_error(self) -> None:
        self._end()

    def _end(self) -> None:
        release(self._handle)
        self._handle = None
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        _defer_signals(False)  # a signal held back by a run without nodes stops the process now

    def _catch_signals(self) -> None:
        """SIGTERM and SIGINT stop the run through :func:`_on_signal` (only the main thread can set handlers)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGINT):
            if signal.getsignal(signum) in (signal.SIG_IGN, _on_signal):
                continue  # ignored on purpose (a background job's SIGINT), or already caught
            self._previous[signum] = signal.signal(signum, _on_signal)
