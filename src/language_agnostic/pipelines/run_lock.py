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

Worker processes that a step starts (``processes: N``) run no pipeline and take no lock; the
per-text embedding store and the trained-model store have their own guarantees and are shared
safely by runs of other projects that point at them.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from kedro.framework.hooks import hook_impl

logger = logging.getLogger(__name__)

LOCK_FILE = Path("data") / ".run.lock"
REPORT_EVERY_S = 60.0


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


def acquire(path: Path, description: Mapping[str, Any] | None = None, poll_s: float = 1.0) -> IO[str]:
    """Hold the exclusive lock on ``path``, waiting (and saying for whom) while another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    waited, reported = 0.0, -REPORT_EVERY_S
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
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


class RunLockHook:
    """Takes ``data/.run.lock`` for the length of a ``kedro run`` (see the module docstring)."""

    def __init__(self) -> None:
        self._handle: IO[str] | None = None

    @hook_impl
    def before_pipeline_run(self, run_params: dict[str, Any]) -> None:
        release(self._handle)
        project = Path(run_params.get("project_path") or Path.cwd())
        pipelines = run_params.get("pipeline_names") or run_params.get("pipeline_name")
        self._handle = acquire(project / LOCK_FILE, {"pipelines": pipelines, "env": run_params.get("env")})

    @hook_impl
    def after_pipeline_run(self) -> None:
        release(self._handle)
        self._handle = None

    @hook_impl
    def on_pipeline_error(self) -> None:
        release(self._handle)
        self._handle = None
