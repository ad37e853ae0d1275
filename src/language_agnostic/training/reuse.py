"""Trained models kept by fingerprint: a training step runs once per distinct set of inputs,
parameters, code and machine kind, and every later run that asks for it again loads it.

Every pipeline's training node returns ``(artifact, metrics)``: the trained model as a
``methods/registry.py`` artifact (``{"state_dict": ..., <JSON metadata>}``) and its per-epoch
history for MLflow. :func:`reusable` wraps such a node. Before calling it, the wrapper computes
the step's **fingerprint**, the SHA-256 of:

- the content of every argument (:func:`digest`): parameters as JSON, tables by
  ``pandas.util.hash_pandas_object``, arrays and tensors by their bytes, embedding lists by their
  store keys (encoder, extraction setting, texts), an encoder by its identity (weights hash);
- the code: every module of this package the training function's module imports, followed
  transitively (:func:`code_digest`), so any change to the training code retrains;
- the machine kind: torch's and numpy's versions, CUDA or not (and which GPU), whether the CPU
  computes bf16 natively (``mixed_precision: auto`` and ``device: auto`` resolve from these) and the
  run's default number of worker processes.

A stored entry with that fingerprint is loaded instead of training; else the node trains and its
outputs are stored. Layout under the store's root (``data/06_models/trained`` by default)::

    <root>/<fingerprint>/        published by one rename once complete
        model.safetensors        the artifact (methods/trained.py:write_artifact)
        metrics.json             the history metrics
        record.json              what trained it: function, node time, the MLflow child runs it logged

Why this is exact and safe:

- **Exact.** The stored files are the node's outputs as the catalog saves them (safetensors,
  JSON), and a downstream node reads the catalog's copy either way; a reused model gives the
  same weights and the same table cells as retraining (tested bit for bit).
- **Atomic.** An entry is written to ``.tmp-*`` and renamed into place when complete; readers
  never look at ``.tmp-*``. A training killed with SIGKILL leaves at most a temporary directory
  that no run reuses (:func:`prune` removes it).
- **Concurrent.** Two runs that train the same fingerprint at once both train; the first rename
  wins and the second run's copy (the same bits) is dropped.

Why a directory and not an MLflow lookup: the tracking store is optional (tests and users may turn
it off, or point it at a remote server) and is not transactional across a run's artifacts, while
this store works the same with or without it and uses the embedding store's atomic publish. MLflow
still shows every model: a reused model's child run is logged again under the new run, with its
parameters and history and a ``language_agnostic.trained_by`` tag naming the run that trained it.
Kedro's ``--only-missing-outputs`` checks whether an output exists, not whether it was made from
the same inputs, parameters and code, so it could not decide reuse on its own.

Forcing a retrain: ``kedro run --params=trained_models.reuse=false`` (trains every model again and
replaces the stored copy), or ``python -m language_agnostic.training.reuse prune --all``.

This module knows nothing of Kedro (the pipelines wrap their nodes; a hook logs the counts).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
import logging
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.config import ParameterError
from language_agnostic.encoders.store import publish_directory
from language_agnostic.methods.trained import read_artifact, write_artifact
from language_agnostic.tracking import log_reused_child_run, recording_child_runs, step_label

logger = logging.getLogger(__name__)

STORE_FORMAT = 1
PACKAGE = "language_agnostic"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
MODEL_FILE, METRICS_FILE, RECORD_FILE = "model.safetensors", "metrics.json", "record.json"


class NotFingerprintable(TypeError):
    """An argument whose content this module cannot hash: the step is trained, not reused."""


@dataclass
class ReuseSettings:
    """``trained_models`` in ``conf/base/parameters.yml``: whether to reuse, and where the store is."""

    reuse: bool = True
    store: Path = Path("data/06_models/trained")


@dataclass
class ReuseUsage:
    """What training steps did in this process since the last :meth:`reset` (logged to the run's MLflow run)."""

    trained: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    seconds_saved: float = 0.0

    def reset(self) -> None:
        self.trained.clear()
        self.reused.clear()
        self.seconds_saved = 0.0

    def metrics(self) -> dict[str, float]:
        return {
            "models.trained": float(len(self.trained)),
            "models.reused": float(len(self.reused)),
            "models.reused_training_seconds": float(self.seconds_saved),
        }


SETTINGS = ReuseSettings()
USAGE = ReuseUsage()


def configure(params: Mapping[str, Any] | None, project: str | Path | None = None) -> ReuseSettings:
    """Set the run's reuse settings from ``trained_models`` (a relative store path is under ``project``).

    Raises:
        ParameterError: an unknown key or a value of the wrong type, naming ``trained_models.<key>``.
    """
    params = dict(params or {})
    unknown = sorted(set(params) - {"reuse", "store"})
    if unknown:
        raise ParameterError(f"trained_models: unknown key(s) {unknown}; known: ['reuse', 'store']")
    reuse = params.get("reuse", True)
    if not isinstance(reuse, bool):
        raise ParameterError(f"trained_models.reuse must be true or false, got {reuse!r}")
    store = params.get("store") or "data/06_models/trained"
    if not isinstance(store, str):
        raise ParameterError(f"trained_models.store must be a path, got {store!r}")
    path = Path(store)
    if project is not None and not path.is_absolute():
        path = Path(project) / path
    SETTINGS.reuse, SETTINGS.store = reuse, path
    return SETTINGS


# ---------------------------------------------------------------------------- fingerprints


def _array_digest(array: np.ndarray) -> dict[str, Any]:
    array = np.ascontiguousarray(array)
    if array.dtype == object:
        return {"objects": _sha256(json.dumps([digest(v) for v in array.ravel().tolist()]).encode())}
    return {"dtype": str(array.dtype), "shape": list(array.shape), "sha256": _sha256(array.tobytes())}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> Any:
    """A JSON-able description of ``value``'s content: equal content, equal description.

    Objects that know their own content say so with ``reuse_identity()`` (an embedding list: its
    store keys; an encoder: its identity with the weights hash).

    Raises:
        NotFingerprintable: a value of a type this function does not know.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"float": repr(value)}  # 1 and 1.0 are other parameters to a typed setting
    if hasattr(value, "reuse_identity"):
        return {type(value).__name__: value.reuse_identity()}
    if isinstance(value, Mapping):
        return {"mapping": [[str(k), digest(v)] for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))]}
    if isinstance(value, (list, tuple)):
        return [digest(v) for v in value]
    if isinstance(value, pd.DataFrame):
        return _frame_digest(value)
    if isinstance(value, np.ndarray):
        return _array_digest(value)
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        return {"tensor": str(tensor.dtype), **_array_digest(tensor.view(torch.uint8).numpy())}
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return digest(value.item())
    raise NotFingerprintable(f"cannot fingerprint a {type(value).__module__}.{type(value).__qualname__}")


def _frame_digest(frame: pd.DataFrame) -> dict[str, Any]:
    """A table's content: pandas' row hashes per column; a column of lists or arrays cell by cell."""
    columns = []
    for name in frame.columns:
        column = frame[name]
        try:
            hashed = pd.util.hash_pandas_object(column, index=False).to_numpy().tobytes()
        except TypeError:  # unhashable cells (lists, arrays): each cell's own digest
            hashed = json.dumps([digest(v) for v in column.tolist()]).encode()
        columns.append([str(name), str(column.dtype), _sha256(hashed)])
    index = pd.util.hash_pandas_object(frame.index).to_numpy().tobytes()
    return {"dataframe": columns, "index": _sha256(index)}


def _module_file(name: str) -> Path | None:
    """The source file of a module of this package (``a.b`` → ``a/b.py`` or ``a/b/__init__.py``)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = PACKAGE_ROOT.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imported(path: Path, module: str) -> set[str]:
    """The package's modules ``path`` imports (top-level and inside functions)."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for item in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(item, ast.Import):
            found.update(a.name for a in item.names)
        elif isinstance(item, ast.ImportFrom):
            base = item.module or ""
            if item.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (item.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in item.names)  # `from pkg import module`
    return {name for name in found if name.split(".")[0] == PACKAGE}


def _package_state(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Every source file of the package with its modification time and size (a change to any is seen)."""
    return tuple(sorted((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*.py")))


def code_digest(module: str) -> str:
    """SHA-256 over the source of ``module`` and every module of this package it imports, transitively
    (with the packages' ``__init__`` files on the way). Recomputed when any source file changes, also
    within one process (a notebook that edits and reloads a module)."""
    return _code_digest(module, PACKAGE_ROOT, _package_state(PACKAGE_ROOT))


@functools.lru_cache(maxsize=256)
def _code_digest(module: str, root: Path, state: tuple[tuple[str, int, int], ...]) -> str:
    del root, state  # the cache's key: the package's files as they are now
    seen: dict[str, Path] = {}
    pending = [module]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            continue
        seen[name] = path
        parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
        pending += [*_imported(path, name), *parents]
    hasher = hashlib.sha256()
    for name in sorted(seen):
        hasher.update(name.encode() + b"\0" + _code_of(seen[name]).encode() + b"\0")
    return hasher.hexdigest()


def _code_of(path: Path) -> str:
    """A module's code without its comments, docstrings and layout (``ast.dump``): editing a comment
    or a docstring retrains nothing, any change to what runs does."""
    tree = ast.parse(path.read_text(), str(path))
    for item in ast.walk(tree):
        body = getattr(item, "body", None)
        if (
            isinstance(item, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            item.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def machine_kind() -> dict[str, Any]:
    """What decides how ``device: auto`` / ``mixed_precision: auto`` resolve and what the kernels compute."""
    from language_agnostic.encoders.extraction import cpu_has_native_bf16
    from language_agnostic.launch import resolve_processes

    cuda = torch.cuda.is_available()
    return {
        "torch": torch.__version__,
        "numpy": np.__version__,
        "cuda": torch.cuda.get_device_name(0) if cuda else None,
        "cpu_native_bf16": cpu_has_native_bf16(),
        "processes": resolve_processes(None),
    }


def _function_of(func: Callable[..., Any]) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The function under ``functools.partial`` layers, and the keywords they bind."""
    bound: dict[str, Any] = {}
    while isinstance(func, functools.partial):
        bound = {**func.keywords, **bound}
        func = func.func
    return func, bound


def fingerprint(func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any] | None = None) -> str:
    """The fingerprint of calling ``func(*args, **kwargs)`` (see the module docstring).

    Raises:
        NotFingerprintable: an argument of a type :func:`digest` does not know.
    """
    inner, bound = _function_of(func)
    described = {
        "format": STORE_FORMAT,
        "function": f"{inner.__module__}.{inner.__qualname__}",
        "code": code_digest(inner.__module__),
        "args": [digest(a) for a in args],
        "kwargs": digest({**bound, **dict(kwargs or {})}),
        "machine": machine_kind(),
    }
    return _sha256(json.dumps(described, sort_keys=True).encode())


# ---------------------------------------------------------------------------- the store


def _entry(fp: str) -> Path:
    return SETTINGS.store / fp


def _storable(outputs: Any) -> bool:
    return (
        isinstance(outputs, tuple)
        and len(outputs) == 2
        and isinstance(outputs[0], Mapping)
        and "state_dict" in outputs[0]
        and isinstance(outputs[1], Mapping)
    )


def _store(fp: str, function: str, outputs: tuple[Mapping[str, Any], Mapping[str, Any]], record: dict) -> None:
    SETTINGS.store.mkdir(parents=True, exist_ok=True)
    work = SETTINGS.store / f".tmp-{fp[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    try:
        write_artifact(outputs[0], work / MODEL_FILE)
        (work / METRICS_FILE).write_text(json.dumps(outputs[1]))
        (work / RECORD_FILE).write_text(json.dumps({"fingerprint": fp, "function": function, **record}, indent=2))
        for path in work.iterdir():  # on disk before the rename makes the entry visible
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if not SETTINGS.reuse and _entry(fp).exists():
        # a forced retrain replaces what is stored: the old entry out of the way, then the new one in
        old = SETTINGS.store / f".old-{fp[:16]}-{uuid.uuid4().hex[:8]}"
        with contextlib.suppress(OSError):
            os.rename(_entry(fp), old)
        shutil.rmtree(old, ignore_errors=True)
    publish_directory(work, _entry(fp))


def _load(fp: str) -> tuple[tuple[dict[str, Any], dict[str, Any]], dict[str, Any]] | None:
    entry = _entry(fp)
    if not (entry / RECORD_FILE).is_file():
        return None
    record = json.loads((entry / RECORD_FILE).read_text())
    return (read_artifact(entry / MODEL_FILE), json.loads((entry / METRICS_FILE).read_text())), record


def _replay_child_runs(outputs: tuple[dict[str, Any], dict[str, Any]], record: Mapping[str, Any], fp: str) -> None:
    """Log the stored step's MLflow child runs again under this run, marked reused and linked to the runs
    that trained them; the run that held the model holds it again (``tracking.log_reused_child_run``)."""
    for run in record.get("child_runs") or []:
        holds_model = outputs[0].get("mlflow_run_id") == run.get("run_id")
        new = log_reused_child_run(run, fp, outputs[0] if holds_model else None)
        if holds_model:
            outputs[0]["mlflow_run_id"] = new


def reusable(func: Callable[..., Any], label: str | None = None) -> Callable[..., Any]:
    """``func`` (a training step returning ``(artifact, metrics)``) reusing a stored result of the same fingerprint.

    ``label`` names the step in the log and the counts (default: the function's name).
    """
    inner, bound = _function_of(func)
    # e.g. train_fmda[infonce]: the bound names (variant, method, pipeline) say which model it is
    named = [str(v) for v in bound.values() if isinstance(v, str)]
    name = label or getattr(func, "__name__", inner.__name__) + (f"[{','.join(named)}]" if named else "")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            fp = fingerprint(func, args, kwargs)
        except NotFingerprintable as exc:
            logger.warning("%s: not reusable (%s); training", name, exc)
            USAGE.trained.append(name)
            return func(*args, **kwargs)
        if SETTINGS.reuse and (found := _load(fp)) is not None:
            outputs, record = found
            _replay_child_runs(outputs, record, fp)
            USAGE.reused.append(name)
            USAGE.seconds_saved += float(record.get("seconds", 0.0))
            logger.info(
                "%s: reused the model trained %s (fingerprint %s, %.0f s of training saved)",
                step_label(name),
                record.get("created", "?"),
                fp[:12],
                float(record.get("seconds", 0.0)),
            )
            return outputs
        started = time.time()
        with recording_child_runs() as runs:
            outputs = func(*args, **kwargs)
        seconds = time.time() - started
        USAGE.trained.append(name)
        if not _storable(outputs):
            logger.warning("%s: its outputs are not (artifact, metrics); not stored for reuse", name)
            return outputs
        record = {
            "created": time.strftime("%Y-%m-%d %H:%M:%S"),
            "seconds": seconds,
            "child_runs": runs,
            "step": name,
        }
        _store(fp, f"{inner.__module__}.{inner.__qualname__}", outputs, record)
        _tag_trained_runs(runs, fp)
        return outputs

    wrapped.reuse_label = name  # type: ignore[attr-defined]
    return wrapped


def _tag_trained_runs(runs: list[dict[str, Any]], fp: str) -> None:
    """The fingerprint as a tag of the child runs that trained the stored model (searchable in the UI)."""
    ids = [r["run_id"] for r in runs if r.get("run_id")]
    if not ids:
        return
    try:
        import mlflow

        client = mlflow.MlflowClient()
        for run_id in ids:
            client.set_tag(run_id, "language_agnostic.fingerprint", fp)
    except Exception as exc:  # noqa: BLE001 - bookkeeping must never stop a run
        logger.warning("could not tag the trained model's MLflow run: %s", exc)


# ---------------------------------------------------------------------------- report / prune


def report(root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per stored model: fingerprint, step, when, training seconds, size."""
    root = Path(root or SETTINGS.store)
    rows = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name.startswith(".") or not (entry / RECORD_FILE).is_file():
            continue
        record = json.loads((entry / RECORD_FILE).read_text())
        rows.append(
            {
                "fingerprint": entry.name[:12],
                "step": record.get("step"),
                "created": record.get("created"),
                "seconds": round(float(record.get("seconds", 0.0)), 1),
                "bytes": sum(f.stat().st_size for f in entry.iterdir()),
            }
        )
    return rows


def prune(root: str | Path | None = None, everything: bool = False) -> int:
    """Remove unfinished temporary entries (a killed run's), or with ``everything`` the whole store; how many went."""
    root = Path(root or SETTINGS.store)
    removed = 0
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name.startswith(".tmp-") or entry.name.startswith(".old-") or everything:
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m language_agnostic.training.reuse report|prune [--all] [--root DIR]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m language_agnostic.training.reuse", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=["report", "prune"])
    parser.add_argument("--all", action="store_true", help="prune: remove every stored model (forces retraining)")
    parser.add_argument("--root", default=str(SETTINGS.store), help="the store (default: %(default)s)")
    options = parser.parse_args(argv)
    if options.command == "report":
        rows = report(options.root)
        for row in rows:
            print("  ".join(f"{k}={v}" for k, v in row.items()))
        print(f"{len(rows)} stored model(s) in {options.root}")
    else:
        print(f"removed {prune(options.root, options.all)} entr(y/ies) from {options.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
