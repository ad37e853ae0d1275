"""Run one step of a pipeline in several worker processes, through ``torchrun``.

The Kedro process stays the only one that reads datasets, writes outputs and talks to MLflow.
When a step is asked to use ``processes > 1`` (training, embedding extraction), it hands a
function and its arguments to :func:`run_in_processes`: they are pickled (``cloudpickle``, so
closures travel too) into a temporary job directory, ``python -m torch.distributed.run
--standalone --nproc_per_node=N -m language_agnostic.launch JOB`` starts N workers, each
worker calls the function inside the process group torchrun set up (🤗 Accelerate finds it:
gloo on CPUs, NCCL on GPUs, one GPU per worker), and process 0's return value comes back.

Why workers per step rather than ``accelerate launch kedro run``: under the latter every process
runs every node (ingestion, reports, the MLflow run), and keeping N copies of a Kedro run in
step while only one of them may write is harder to get right than starting workers for the
steps that compute. The cost is a start-up of a few seconds per step (measured in
docs/benchmarks.md), paid only when ``processes > 1``.

This module sits below every other layer: it knows nothing of methods, encoders or Kedro.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle

logger = logging.getLogger(__name__)

# set in every worker this module starts (a worker must not start workers of its own)
WORKER_VARIABLE = "LANGUAGE_AGNOSTIC_WORKER"

_default_processes = 1


class WorkerError(RuntimeError):
    """A worker process failed; its traceback is printed above the message."""


def set_default_processes(processes: int) -> None:
    """The number of processes a step uses when its own settings say ``processes: null``.

    Set from the run's top-level ``processes`` parameter (``kedro run --params=processes=2``)
    by the project's hook, so one parameter reaches every training and extraction step.

    Raises:
        ValueError: ``processes`` is not a positive integer.
    """
    global _default_processes
    _default_processes = checked_processes(processes, "processes")


def checked_processes(processes: Any, name: str) -> int:
    """``processes`` as a positive int, or a ValueError naming the parameter ``name``."""
    if processes < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {processes!r}")
    return processes


def resolve_processes(processes: int | None) -> int:
    """A step's ``processes`` setting, ``None`` meaning the run's default (1 unless set)."""
    return _default_processes if processes is None else checked_processes(processes, "processes")


def in_worker() -> bool:
    """Whether this process is one of the workers :func:`run_in_processes` started."""
    return os.environ.get(WORKER_VARIABLE) == "1"


def should_launch(processes: int | None) -> bool:
    """Whether a step asked for ``processes`` must start workers (more than one, and not inside a worker)."""
    return resolve_processes(processes) > 1 and not in_worker()


def _threads_per_worker(processes: int) -> int:
    # the cores are shared out (torchrun's own default is one thread per worker)
    return max(1, (os.cpu_count() or 1) // processes)


def run_in_processes(function: Callable[..., Any], args: tuple[Any, ...], processes: int, description: str) -> Any:
    """Call ``function(*args)`` in ``processes`` worker processes and return process 0's result.

    Every worker gets the same (pickled) arguments; the function shares the work out with
    Accelerate (a prepared data loader, ``split_between_processes``) and synchronises through
    the process group. Workers inherit this process's environment, standard output and error.

    Args:
        function: What each worker runs (a module-level function or a closure).
        args: Its arguments.
        processes: How many workers (>= 2).
        description: Names the step in messages (``"training emu"``).

    Returns:
        What ``function`` returned in process 0.

    Raises:
        WorkerError: A worker failed (its traceback is above), or process 0 returned nothing.
    """
    processes = checked_processes(processes, "processes")
    with tempfile.TemporaryDirectory(prefix="language-agnostic-job-") as job:
        job_dir = Path(job)
        with (job_dir / "job.pkl").open("wb") as handle:
            cloudpickle.dump((function, args), handle)
        env = {**os.environ, WORKER_VARIABLE: "1", "OMP_NUM_THREADS": str(_threads_per_worker(processes))}
        # one machine: gloo talks over the loopback device (its hostname-based choice can fail in containers)
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={processes}",
            "-m",
            "language_agnostic.launch",
            str(job_dir),
        ]
        logger.info("%s: starting %d worker processes (torchrun)", description, processes)
        returncode = subprocess.run(command, env=env, check=False).returncode
        result_path = job_dir / "result.pkl"
        if returncode != 0:
            raise WorkerError(
                f"{description}: the {processes} worker processes failed (exit code {returncode}); "
                "the failing worker's traceback is printed above"
            )
        if not result_path.is_file():
            raise WorkerError(f"{description}: the workers ended without a result from process 0")
        with result_path.open("rb") as handle:
            return cloudpickle.load(handle)


def _worker(job_dir: Path) -> None:
    """One worker: run the job's function; process 0 writes its result."""
    import torch

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s [worker %(process)d] %(message)s")
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        # one GPU per worker: "cuda" (device: auto) then means this worker's own
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    with (job_dir / "job.pkl").open("rb") as handle:
        function, args = cloudpickle.load(handle)
    result = function(*args)
    if int(os.environ.get("RANK", "0")) == 0:
        partial = job_dir / "result.pkl.partial"
        with partial.open("wb") as handle:
            cloudpickle.dump(result, handle)
        partial.replace(job_dir / "result.pkl")
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    _worker(Path(sys.argv[1]))
