"""Batched, cached extraction of sentence vectors and token states from a frozen encoder.

The hot loop does no per-sentence Python work: every text is tokenised once up front (the
fast tokenizer's batch call), texts are sorted by length so batches carry little padding,
padding is built with numpy indexing, and pooling and token-state selection are tensor ops.

Results go to an :class:`EmbeddingStore` under a key of everything that decides them (encoder
identity and weights hash, prefix, max length, too-long policy, device type, compute dtype,
whether token states are kept, and the texts). Work is written in chunks, each renamed into
place when complete, so a killed run resumes at the first missing chunk and a finished entry
is reused without encoding anything. Both poolings come from the same forward pass, so every
entry stores both (pooling is chosen when reading, not part of the key).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from tqdm.auto import tqdm

from language_agnostic.config import settings_from_params
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.encoders.pooling import POOLINGS, cls_pool, mean_pool

logger = logging.getLogger(__name__)

STORE_FORMAT = 1


class ExtractionError(ValueError):
    """Bad input to extraction (empty text, text too long under ``on_too_long: error``, ...)."""


@dataclass(frozen=True)
class ExtractionSettings:
    """How texts are turned into vectors.

    Attributes:
        prefix: Prepended to every text (e5 models: ``"query: "``; others: ``""``).
        max_length: Longest input in tokens, special tokens included (``None``: the model's).
        on_too_long: ``"truncate"`` (count and keep the first tokens and the end token) or
            ``"error"``.
        batch_size: Texts per forward pass.
        dtype: ``"auto"``, ``"float32"``, ``"bfloat16"`` or ``"float16"`` (compute dtype).
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        token_states: Also keep every token's state (fp16 on disk) for FMDA.
        chunk_size: Texts per resumable chunk.
        progress: Show a progress bar.
    """

    prefix: str = "query: "
    max_length: int | None = None
    on_too_long: Literal["truncate", "error"] = "truncate"
    batch_size: int = 64
    dtype: str = "auto"
    device: str = "auto"
    token_states: bool = False
    chunk_size: int = 4096
    progress: bool = True



def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX); elsewhere bf16 is emulated and slower than fp32."""
    return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())  # noqa: SLF001

def resolve_device_and_dtype(device: str = "auto", dtype: str = "auto") -> tuple[torch.device, torch.dtype]:
    """Pick where and in what precision to run.

    ``auto`` chooses CUDA when present (bf16 where the GPU supports it, else fp16); on the CPU,
    bf16 when the CPU has native bf16 (AVX512-BF16 or AMX), else fp32.
    """
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ExtractionError(f"device {device!r} requested but CUDA is not available here")
    if dtype == "auto":
        if dev.type == "cuda":
            return dev, torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return dev, torch.bfloat16 if cpu_has_native_bf16() else torch.float32
    try:
        resolved = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    except KeyError:
        raise ExtractionError(f"dtype must be auto, float32, bfloat16 or float16, got {dtype!r}") from None
    return dev, resolved


def texts_sha256(texts: Sequence[str]) -> str:
    """Hash of the texts in order (NUL-separated UTF-8)."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass
class Tokenised:
    """All texts tokenised once: flat ids with offsets, lengths, and what was truncated."""

    flat_ids: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    truncated: np.ndarray


def tokenise_all(encoder: LoadedEncoder, texts: Sequence[str], settings: ExtractionSettings) -> Tokenised:
    """Tokenise every text (prefix added), enforcing the length policy.

    Raises:
        ExtractionError: on an empty text, or a too-long text under ``on_too_long: error``.
    """
    empty = [i for i, t in enumerate(texts) if not str(t).strip()]
    if empty:
        raise ExtractionError(f"{len(empty)} empty text(s) to embed, first at positions {empty[:5]}")
    if settings.on_too_long not in ("truncate", "error"):
        raise ExtractionError(f"on_too_long must be 'truncate' or 'error', got {settings.on_too_long!r}")
    limit = settings.max_length or encoder.max_length
    if limit > encoder.max_length:
        raise ExtractionError(f"max_length {limit} exceeds the encoder's maximum {encoder.max_length}")
    ids = encoder.tokenizer([settings.prefix + str(t) for t in texts], add_special_tokens=True, truncation=False,
                            return_attention_mask=False, verbose=False)["input_ids"]
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    truncated = lengths > limit
    if truncated.any():
        first = int(np.flatnonzero(truncated)[0])
        if settings.on_too_long == "error":
            raise ExtractionError(
                f"{int(truncated.sum())} text(s) longer than max_length {limit} tokens; first at position "
                f"{first} ({int(lengths[first])} tokens): {str(texts[first])[:80]!r}. "
                "Set on_too_long: truncate to cut them."
            )
        end = ids[first][-1]
        for i in np.flatnonzero(truncated):
            ids[i] = ids[i][: limit - 1] + [end]  # keep the end-of-sequence token
        lengths = np.minimum(lengths, limit)
        logger.warning("%d of %d texts truncated to %d tokens", int(truncated.sum()), len(texts), limit)
    starts = np.zeros(len(ids), dtype=np.int64)
    if len(ids):
        starts[1:] = np.cumsum(lengths)[:-1]
    flat = np.fromiter((tok for x in ids for tok in x), dtype=np.int64, count=int(lengths.sum()))
    return Tokenised(flat, starts, lengths, truncated)


def padded_batch(tok: Tokenised, index: np.ndarray, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Input ids and attention mask for the texts at ``index``, padded to the longest."""
    lengths = tok.lengths[index]
    width = int(lengths.max())
    positions = np.arange(width)
    mask = positions[None, :] < lengths[:, None]
    gather = np.minimum(tok.starts[index][:, None] + positions[None, :], len(tok.flat_ids) - 1)
    ids = np.where(mask, tok.flat_ids[gather], pad_id)
    return torch.from_numpy(ids), torch.from_numpy(mask.astype(np.int64))


def _inference_copy(model: torch.nn.Module, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    """The model on ``device`` in ``dtype``, in eval mode, leaving the caller's model untouched.

    Casting once matches autocast's speed on this CPU and keeps the vectors within cosine
    0.99996 of fp32 (``benchmarks/embedding_variants.py``, figures in docs/benchmarks.md).
    """
    parameter = next(model.parameters())
    if parameter.device == device and parameter.dtype == dtype and not model.training:
        return model
    return copy.deepcopy(model).to(device=device, dtype=dtype).eval()


def _atomic_save_npz(path: Path, **arrays: np.ndarray) -> None:
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


class EmbeddingSet:
    """A finished store entry: vectors for both poolings and, if kept, token states.

    Attributes:
        directory: The entry's directory.
        meta: Its ``meta.json`` (key inputs, counts, encoder identity).
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        meta_path = self.directory / "meta.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"{self.directory} is not a finished embedding entry (no meta.json)")
        self.meta: dict[str, Any] = json.loads(meta_path.read_text())
        self._tokens: np.ndarray | None = None

    def load_token_states(self, dtype: str = "float32") -> None:
        """Read all token states into memory once, as ``dtype``; :meth:`token_states` then returns that dtype.

        Worth it for a training set gathered every epoch (MASSIVE en-US train: ~230 MB in
        fp32): converting fp16 once is much cheaper than per batch, where it took half an epoch.
        """
        tokens = np.load(self.directory / "tokens.npy")
        self._tokens = torch.from_numpy(tokens).to(getattr(torch, dtype)).numpy()

    def __len__(self) -> int:
        return int(self.meta["n_texts"])

    @property
    def dim(self) -> int:
        return int(self.meta["dim"])

    def vectors(self, pooling: str) -> np.ndarray:
        """Sentence vectors ``(n, dim)`` float32 in the order of the input texts."""
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        return np.load(self.directory / f"{pooling}.npy", mmap_mode="r")

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per text (special tokens included, after truncation)."""
        return np.load(self.directory / "lengths.npy")

    def token_states(self, index: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Padded token states and attention mask for the texts at ``index``.

        Returns:
            ``(states, mask)``: ``(len(index), L, dim)`` float16 (float32 after
            :meth:`load_token_states`) and ``(len(index), L)`` bool, ``L`` the longest of them.
        """
        if not self.meta.get("token_states"):
            raise ValueError(f"{self.directory} was extracted without token states (token_states: false)")
        flat = self._tokens if self._tokens is not None else np.load(self.directory / "tokens.npy", mmap_mode="r")
        starts = np.load(self.directory / "token_starts.npy", mmap_mode="r")
        index = np.asarray(index, dtype=np.int64)
        lengths = self.lengths[index]
        width = int(lengths.max()) if len(index) else 0
        mask = np.arange(width)[None, :] < lengths[:, None]
        # one fancy-indexing gather instead of a Python loop over rows (the FMDA loader's hot path)
        positions = np.asarray(starts)[index][:, None] + np.arange(width)[None, :]
        states = np.asarray(flat[np.where(mask, positions, 0)])
        states[~mask] = 0
        return states, mask


class EmbeddingStore:
    """A directory of embedding entries, one per cache key (``<root>/<key>/``)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"EmbeddingStore({str(self.root)!r})"

    def entry(self, key: str) -> Path:
        return self.root / key

    def finished(self, key: str) -> EmbeddingSet | None:
        path = self.entry(key)
        return EmbeddingSet(path) if (path / "meta.json").is_file() else None


def cache_key_inputs(encoder: LoadedEncoder, texts: Sequence[str], settings: ExtractionSettings) -> dict[str, Any]:
    """Everything that decides the vectors (and nothing that does not, like batch size)."""
    device, dtype = resolve_device_and_dtype(settings.device, settings.dtype)
    return {
        "format": STORE_FORMAT,
        "encoder": encoder.identity.get("name"),
        "weights_sha256": encoder.identity.get("weights_sha256"),
        "prefix": settings.prefix,
        "max_length": settings.max_length or encoder.max_length,
        "on_too_long": settings.on_too_long,
        "device_type": device.type,
        "dtype": str(dtype).removeprefix("torch."),
        "token_states": settings.token_states,
        "texts_sha256": texts_sha256(texts),
        "n_texts": len(texts),
    }


def cache_key(inputs: dict[str, Any]) -> str:
    """Short stable key of :func:`cache_key_inputs`."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:24]


def extract_embeddings(
    encoder: LoadedEncoder, texts: Sequence[str], settings: ExtractionSettings, store: EmbeddingStore
) -> EmbeddingSet:
    """Sentence vectors (both poolings) and optionally token states, cached in ``store``.

    Args:
        encoder: The loaded encoder.
        texts: Texts to embed, in the order the vectors come back.
        settings: Extraction settings.
        store: Where entries live.

    Returns:
        The finished entry. A finished entry with the same key is returned without encoding;
        an unfinished one resumes at its first missing chunk.
    """
    inputs = cache_key_inputs(encoder, texts, settings)
    key = cache_key(inputs)
    found = store.finished(key)
    if found is None and not settings.token_states:
        # an entry with token states also holds the sentence vectors
        found = store.finished(cache_key({**inputs, "token_states": True}))
    if found is not None:
        if found.dim != encoder.hidden_size:
            raise ExtractionError(
                f"cached embeddings {found.directory} have dimension {found.dim} but encoder "
                f"{encoder.identity.get('name')} has {encoder.hidden_size}; delete the entry"
            )
        logger.info("embedding cache hit %s: %d texts, nothing to encode", found.directory, len(found))
        return found

    device, dtype = resolve_device_and_dtype(settings.device, settings.dtype)
    tok = tokenise_all(encoder, texts, settings)
    directory = store.entry(key)
    chunk_dir = directory / "chunks"
    chunk_dir.mkdir(parents=True, exist_ok=True)
    order = np.lexsort((np.arange(len(texts)), tok.lengths))  # by length, ties by position
    chunks = [order[i : i + settings.chunk_size] for i in range(0, len(order), settings.chunk_size)]
    done = {i for i in range(len(chunks)) if (chunk_dir / f"{i:06d}.npz").is_file()}
    if done:
        logger.info("resuming %s: %d of %d chunks already done", directory, len(done), len(chunks))
    n_todo = sum(len(c) for i, c in enumerate(chunks) if i not in done)
    logger.info("encoding %d of %d texts with %s on %s (%s), batch %d",
                n_todo, len(texts), encoder.identity.get("name"), device, str(dtype).removeprefix("torch."),
                settings.batch_size)

    model = _inference_copy(encoder.model, device, dtype)
    pad_id = encoder.tokenizer.pad_token_id if encoder.tokenizer.pad_token_id is not None else 0
    bar = tqdm(total=n_todo, desc="embedding", unit="text", disable=not settings.progress)
    with torch.inference_mode():
        for number, chunk in enumerate(chunks):
            if number in done:
                continue
            parts: dict[str, list[np.ndarray]] = {"cls": [], "mean": [], "tokens": []}
            for start in range(0, len(chunk), settings.batch_size):
                index = chunk[start : start + settings.batch_size]
                ids, mask = padded_batch(tok, index, pad_id)
                ids, mask = ids.to(device, non_blocking=True), mask.to(device, non_blocking=True)
                hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
                hidden = hidden.float()
                parts["cls"].append(cls_pool(hidden, mask).cpu().numpy())
                parts["mean"].append(mean_pool(hidden, mask).cpu().numpy())
                if settings.token_states:
                    parts["tokens"].append(hidden[mask.bool()].half().cpu().numpy())
                bar.update(len(index))
            arrays = {
                "index": chunk,
                "cls": np.concatenate(parts["cls"]),
                "mean": np.concatenate(parts["mean"]),
            }
            if settings.token_states:
                arrays["tokens"] = np.concatenate(parts["tokens"])
            _atomic_save_npz(chunk_dir / f"{number:06d}.npz", **arrays)
    bar.close()
    return _finalise(directory, chunks, tok, inputs, encoder, settings)


def _finalise(
    directory: Path, chunks: list[np.ndarray], tok: Tokenised, inputs: dict[str, Any],
    encoder: LoadedEncoder, settings: ExtractionSettings,
) -> EmbeddingSet:
    """Assemble the chunks into the entry's arrays; ``meta.json`` last marks it finished."""
    n, dim = len(tok.lengths), encoder.hidden_size
    work = Path(tempfile.mkdtemp(prefix="assemble.", dir=directory))
    vectors = {p: np.zeros((n, dim), dtype=np.float32) for p in POOLINGS}
    tokens = None
    token_starts = np.zeros(n, dtype=np.int64)
    if settings.token_states:
        tokens = np.lib.format.open_memmap(work / "tokens.npy", mode="w+", dtype=np.float16,
                                           shape=(int(tok.lengths.sum()), dim))
    cursor = 0
    for number in range(len(chunks)):
        with np.load(directory / "chunks" / f"{number:06d}.npz") as part:
            index = part["index"]
            for pooling in POOLINGS:
                vectors[pooling][index] = part[pooling]
            if tokens is not None:
                block = part["tokens"]
                # token states stay in length-sorted order on disk; starts map each text to them
                tokens[cursor : cursor + len(block)] = block
                token_starts[index] = cursor + np.concatenate([[0], np.cumsum(tok.lengths[index])[:-1]])
                cursor += len(block)
    for pooling in POOLINGS:
        np.save(work / f"{pooling}.npy", vectors[pooling])
    np.save(work / "lengths.npy", tok.lengths)
    if tokens is not None:
        tokens.flush()
        del tokens
        np.save(work / "token_starts.npy", token_starts)
    for path in work.iterdir():
        os.replace(path, directory / path.name)
    work.rmdir()
    meta = {
        **inputs, "dim": dim, "n_truncated": int(tok.truncated.sum()), "n_tokens": int(tok.lengths.sum()),
        "identity": encoder.identity, "settings": asdict(settings),
    }
    tmp = directory / "meta.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2))
    os.replace(tmp, directory / "meta.json")
    shutil.rmtree(directory / "chunks")
    logger.info("embeddings written to %s: %d texts, dim %d, %d truncated", directory, n, dim, meta["n_truncated"])
    return EmbeddingSet(directory)


def extraction_settings(params: Mapping[str, Any], token_states: bool = False) -> ExtractionSettings:
    """``ExtractionSettings`` from ``embeddings.extraction`` (unknown keys are an error)."""
    return settings_from_params(ExtractionSettings, params, "embeddings.extraction", token_states=token_states)
