"""Extraction of sentence vectors and token states from a frozen encoder, through the per-text store.

Every text is tokenised once up front (the fast tokenizer's batch call); texts are grouped by
token count so a batch holds texts of one length and nothing is padded, which makes a text's
output independent of the texts it was batched with (``encoders/store.py`` says why that makes
reuse exact). Pooling and token-state selection are tensor ops.

Outputs go to the :class:`EmbeddingStore`, one entry per text under a namespace of everything
that decides them (encoder identity and weights hash, prefix, max length, too-long policy, device
type, compute dtype): a text is encoded at most once per namespace, whichever list, pipeline or
run asks for it. Both poolings come from the same forward pass, and token states from the same
pass when the asking list needs them.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import numpy as np
import torch
from tqdm.auto import tqdm

from language_agnostic.encoders.backends import (
    PER_TEXT,
    backend_forward,
    backend_precision,
    check_backend,
    prepare_backend,
)
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.encoders.pooling import cls_pool, mean_pool
from language_agnostic.encoders.store import (
    KEY_BYTES,
    STORE_FORMAT,
    USAGE,
    EmbeddingSet,
    EmbeddingStore,
    Namespace,
    StoreBusyError,
    text_keys,
)
from language_agnostic.encoders.versions import BACKEND_DISTRIBUTIONS, ENCODER_DISTRIBUTIONS, versions
from language_agnostic.launch import checked_processes, resolve_processes, run_in_processes, should_launch

__all__ = [
    "EmbeddingSet",
    "EmbeddingStore",
    "ExtractionError",
    "ExtractionSettings",
    "StoreBusyError",
    "TOKENISATION_KEYS",
    "cpu_kernels",
    "device_kernels",
    "extract_embedding_sets",
    "extract_embeddings",
    "extraction_settings",
    "namespace_inputs",
    "resolve_device_and_dtype",
    "texts_sha256",
    "tokenisation_settings",
]

logger = logging.getLogger(__name__)


DRY_RUN_VARIABLE = "LANGUAGE_AGNOSTIC_STORE_DRY_RUN"
# Under the store's root: the encoder exported for each non-torch backend (encoders/backends.py)
BACKENDS_DIR = "backends"


class StoreDryRunStop(RuntimeError):
    """Raised instead of encoding when ``LANGUAGE_AGNOSTIC_STORE_DRY_RUN`` is set: says how much a run would encode."""


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
        batch_size: Texts per forward pass (where batches are filled to it, part of the store's
            namespace: :func:`filled_batches`).
        dtype: ``"auto"``, ``"float32"``, ``"bfloat16"`` or ``"float16"`` (compute dtype).
        device: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        token_states: Also keep every token's state (fp16 on disk) for FMDA.
        chunk_size: Texts per resumable chunk.
        progress: Show a progress bar.
        processes: Worker processes sharing the texts to encode (each writes its own shards
            into the store); ``None``: the run's ``processes`` parameter (1 unless set). The
            vectors do not depend on it (tested), so it is not part of the store's namespace.
        backend: Where the forward pass runs: ``torch`` (default), ``onnx``, ``onnx-int8``,
            ``openvino`` or ``openvino-int8`` (CPU only; ``encoders/backends.py``). Part of the
            store's namespace, except ``torch``, whose namespaces keep their names.
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
    processes: int | None = None
    backend: str = "torch"

    def __post_init__(self) -> None:
        if self.processes is not None:
            checked_processes(self.processes, "embeddings.extraction.processes")


# the settings that decide how a text is tokenised, the only ones a fine-tuning reads (it tokenises
# its training texts as extraction would); the rest say how extraction runs (batch, device, progress)
TOKENISATION_KEYS: tuple[str, ...] = ("prefix", "max_length", "on_too_long")


def tokenisation_settings(extraction: Mapping[str, Any] | None) -> ExtractionSettings:
    """The :data:`TOKENISATION_KEYS` of ``embeddings.extraction`` as settings (the rest at their defaults)."""
    return ExtractionSettings(**{k: v for k, v in dict(extraction or {}).items() if k in TOKENISATION_KEYS})


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX); elsewhere bf16 is emulated and slower than fp32."""
    return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())  # noqa: SLF001


def cpu_vendor() -> str:
    """The CPU's vendor (``GenuineIntel``, ``AuthenticAMD``; ``""`` where ``/proc/cpuinfo`` is absent)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def cpu_kernels() -> dict[str, Any]:
    """What picks the CPU's kernels, and so an output's last bits: the vendor (MKL chooses its paths by
    it), ATen's capability, AVX512-BF16 and AMX. Both an AMX Xeon and an AVX512-BF16 AMD EPYC compute
    bf16 natively, yet give other bits (docs/findings/lajmcl.md: the same training, other weights)."""
    return {
        "vendor": cpu_vendor(),
        "capability": torch.backends.cpu.get_cpu_capability(),
        "avx512_bf16": bool(torch.cpu._is_avx512_bf16_supported()),  # noqa: SLF001
        "amx": bool(torch.cpu._is_amx_tile_supported()),  # noqa: SLF001
    }


def device_kernels(device: torch.device) -> dict[str, Any]:
    """The hardware a forward pass on ``device`` runs on: the GPU's name, or the CPU's :func:`cpu_kernels`."""
    if device.type == "cuda":
        return {"cuda": torch.cuda.get_device_name(device)}
    return {"cpu": cpu_kernels()}


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


def _check_texts(
    encoder: LoadedEncoder, texts: Sequence[str], settings: ExtractionSettings, name: str | None = None
) -> None:
    """The checks that need no tokenising, made before anything is looked up or encoded."""
    empty = [i for i, t in enumerate(texts) if not str(t).strip()]
    if empty:
        raise ExtractionError(
            f"{len(empty)} empty text(s) to embed, first at positions {empty[:5]}"
            + (f" (list {name!r})" if name else "")
        )
    if settings.on_too_long not in ("truncate", "error"):
        raise ExtractionError(f"on_too_long must be 'truncate' or 'error', got {settings.on_too_long!r}")
    limit = settings.max_length or encoder.max_length
    if limit > encoder.max_length:
        raise ExtractionError(f"max_length {limit} exceeds the encoder's maximum {encoder.max_length}")


def tokenise_all(encoder: LoadedEncoder, texts: Sequence[str], settings: ExtractionSettings) -> Tokenised:
    """Tokenise every text (prefix added), enforcing the length policy.

    Raises:
        ExtractionError: on an empty text, or a too-long text under ``on_too_long: error``.
    """
    _check_texts(encoder, texts, settings)
    limit = settings.max_length or encoder.max_length
    ids = encoder.tokenizer(
        [settings.prefix + str(t) for t in texts],
        add_special_tokens=True,
        truncation=False,
        return_attention_mask=False,
        verbose=False,
    )["input_ids"]
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


class PerTextLinear(torch.nn.Module):
    """A linear layer that multiplies each text's token rows in a matrix product of its own.

    MKL's float32 matrix product on its AVX2 code path (the one it takes on AMD CPUs, and on Intel
    CPUs under ``MKL_ENABLE_INSTRUCTIONS=AVX2``) computes a row's last bits differently by where the
    row sits in the product: a text's vector then depended on its position in its batch, hence on
    which other texts a list held (measured on the test encoders: 2-4 of 80 rows moved by an ulp or
    two; ``tests/encoders/test_store.py``). A batched product (``bmm``) gives every text the same
    product of shape ``length x hidden``, whatever its batch-mates. bf16 goes through oneDNN, whose
    rows measured position-independent, and keeps ``torch.nn.Linear``.
    """

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        self.weight, self.bias = linear.weight, linear.bias

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if hidden.dim() != 3:
            return torch.nn.functional.linear(hidden, self.weight, self.bias)
        out = torch.bmm(hidden, self.weight.t().unsqueeze(0).expand(hidden.shape[0], -1, -1))
        return out if self.bias is None else out + self.bias


def per_text_products(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` with every ``torch.nn.Linear`` replaced, in place, by a :class:`PerTextLinear` sharing its weights."""
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(module, name, PerTextLinear(child))
    return model


def _inference_copy(model: torch.nn.Module, device: torch.device, dtype: torch.dtype) -> torch.nn.Module:
    """The model on ``device`` in ``dtype``, in eval mode, leaving the caller's model untouched; on the
    CPU in float32 with per-text matrix products (:class:`PerTextLinear`).

    Casting once matches autocast's speed on this CPU and keeps the vectors within cosine
    0.99996 of fp32 (``benchmarks/embedding_variants.py``, figures in docs/benchmarks.md).
    """
    per_text = device.type == "cpu" and dtype == torch.float32
    parameter = next(model.parameters())
    if parameter.device == device and parameter.dtype == dtype and not model.training and not per_text:
        return model
    copied = copy.deepcopy(model).to(device=device, dtype=dtype).eval()
    return per_text_products(copied) if per_text else copied


def filled_batches(settings: ExtractionSettings, device: torch.device, dtype: torch.dtype) -> bool:
    """Whether every batch of a length is filled to ``batch_size`` rows, so that every forward pass of
    that length has one shape: wherever the torch backend multiplies a batch at once (CUDA, and
    bfloat16/float16 on the CPU). Those libraries pick their kernel, and so a row's last bits, from the
    shape: on the CPU a length's last, partial batch in bf16 gave rows other bits than a full batch did
    (oneDNN on an AMX Xeon; ``benchmarks/store_context.py``), so a text's vector depended on its list.
    float32 on the CPU multiplies each text on its own (:class:`PerTextLinear`) and needs no filling."""
    return settings.backend == "torch" and not (device.type == "cpu" and dtype == torch.float32)


def namespace_inputs(encoder: LoadedEncoder, settings: ExtractionSettings) -> dict[str, Any]:
    """Everything that decides a text's output besides the text, and nothing else: the batch size only
    where batches are filled to it (:func:`filled_batches`), as it is then their shape."""
    device, dtype = resolve_device_and_dtype(settings.device, settings.dtype)
    inputs = {
        "encoder": encoder.identity.get("name"),
        "weights_sha256": encoder.identity.get("weights_sha256"),
        # config.json and the tokenizer shape the outputs as much as the weights do
        "files_sha256": encoder.identity.get("files_sha256"),
        "packages": versions(ENCODER_DISTRIBUTIONS),
        "prefix": settings.prefix,
        "max_length": settings.max_length or encoder.max_length,
        "on_too_long": settings.on_too_long,
        "device_type": device.type,
        # another CPU or GPU computes other last bits: a store copied between machines is not reused
        "kernels": device_kernels(device),
        "dtype": str(dtype).removeprefix("torch."),
    }
    if filled_batches(settings, device, dtype):
        inputs["batch_size"] = settings.batch_size  # the shape of every forward pass (bits differ by it)
    if settings.backend != "torch":
        check_backend(settings.backend, device.type, settings.dtype)
        inputs["dtype"] = backend_precision(settings.backend, settings.dtype, cpu_has_native_bf16())
        inputs["backend"] = settings.backend
        inputs["packages"] = versions((*ENCODER_DISTRIBUTIONS, *BACKEND_DISTRIBUTIONS))
    return inputs


# On the CPU, a forward pass of fewer than about a dozen token rows takes another matmul kernel
# than a larger one, and its last bits differ (measured on this project's encoder and a wider test
# model: batch x length <= 10 differs, >= 12 never did). Small batches are therefore filled with
# repeats of their own rows up to this many tokens, which keeps every text's output exact.
MIN_FORWARD_TOKENS = 32


def _forward_groups(lengths: np.ndarray, batch_size: int, fill: bool) -> list[np.ndarray]:
    """Batches of positions with one token count each (no padding), ``batch_size`` rows at most.

    A batch of fewer than :data:`MIN_FORWARD_TOKENS` tokens is filled with repeats of its own rows.
    With ``fill`` (:func:`filled_batches`) the last batch of a length is filled to ``batch_size`` the
    same way, so every forward pass of that length has one shape (a library may pick another kernel
    for another batch size). The store's tests check the result bit for bit.
    """
    order = np.lexsort((np.arange(len(lengths)), lengths))
    groups = np.split(order, np.flatnonzero(np.diff(lengths[order])) + 1) if len(order) else []
    batches = []
    for group in groups:
        length = max(int(lengths[group[0]]), 1)
        for start in range(0, len(group), batch_size):
            batch = group[start : start + batch_size]
            rows = max(-(-MIN_FORWARD_TOKENS // length), batch_size if fill else 0)
            if len(batch) < rows:
                batch = np.resize(batch, rows)
            batches.append(batch)
    return batches


def _chunks(batches: list[np.ndarray], chunk_size: int) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """``batches`` (of positions, in length order) grouped into chunks of about ``chunk_size`` texts:
    each chunk's positions and its batches as indices into them. Batches are formed over all the texts
    first, so a length has one partial (filled) batch however many chunks it spans; each chunk is one
    shard, written when done."""
    group: list[np.ndarray] = []
    count = 0
    for batch in [*batches, None]:
        if group and (batch is None or count >= chunk_size):
            # a filled batch repeats its rows: its distinct positions, in their order
            distinct = [b[np.sort(np.unique(b, return_index=True)[1])] for b in group]
            chunk = np.concatenate(distinct)
            local = {int(p): i for i, p in enumerate(chunk)}
            yield chunk, [np.fromiter((local[int(p)] for p in b), dtype=np.int64, count=len(b)) for b in group]
            group, count = [], 0
        if batch is not None:
            group.append(batch)
            count += len(np.unique(batch))


def _forward_function(
    encoder: LoadedEncoder,
    settings: ExtractionSettings,
    space: Namespace,
    device: torch.device,
    dtype: torch.dtype,
    precision: str,
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The backend's forward pass: ``(ids, mask)`` → last hidden states in float32."""
    if settings.backend == "torch":
        model = _inference_copy(encoder.model, device, dtype)

        def forward_pass(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return model(input_ids=ids, attention_mask=mask).last_hidden_state.float()

        return forward_pass
    run = backend_forward(
        prepare_backend(encoder, settings.backend, space.directory.parent / BACKENDS_DIR),
        settings.backend,
        precision,
        torch.get_num_threads(),
    )

    def backend_pass(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return run(ids)  # one length per batch: the mask is all ones

    return backend_pass


def _encode_chunk(
    dim: int,
    tok: Tokenised,
    chunk: np.ndarray,
    batches: list[np.ndarray],
    forward_pass: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    device: torch.device | None,
    token_states: bool,
    bar: Any,
) -> tuple[dict[str, np.ndarray], float]:
    """One shard's arrays (all but ``keys``) for the texts at ``chunk``, and the seconds spent in forward passes.

    ``device``: where the torch backend's inputs go (``None``: the other backends, which stay on the CPU).
    """
    forward = 0.0
    cls = np.zeros((len(chunk), dim), dtype=np.float32)
    mean = np.zeros((len(chunk), dim), dtype=np.float32)
    lengths = tok.lengths[chunk]
    starts = np.zeros(len(chunk), dtype=np.int64)
    starts[1:] = np.cumsum(lengths)[:-1]
    tokens = np.zeros((int(lengths.sum()), dim), dtype=np.float16) if token_states else None
    for batch in batches:
        ids, mask = padded_batch(tok, chunk[batch], 0)  # one length per batch: nothing is padded
        tick = time.perf_counter()
        if device is not None:  # once, for the forward and the pooling
            ids, mask = ids.to(device), mask.to(device)
        hidden = forward_pass(ids, mask)
        forward += time.perf_counter() - tick
        real = np.unique(batch, return_index=True)[1]  # filled batches repeat rows: keep each once
        cls[batch[real]] = cls_pool(hidden, mask).cpu().numpy()[real]
        mean[batch[real]] = mean_pool(hidden, mask).cpu().numpy()[real]
        if tokens is not None:
            width = hidden.shape[1]
            rows = starts[batch[real]][:, None] + np.arange(width)[None, :]
            tokens[rows.ravel()] = hidden[torch.from_numpy(real)].half().cpu().numpy().reshape(-1, dim)
        bar.update(len(real))
    arrays = {"lengths": lengths, "truncated": tok.truncated[chunk], "cls": cls, "mean": mean}
    if tokens is not None:
        arrays.update(tokens=tokens, token_starts=starts)
    return arrays, forward


def _encode_missing(
    encoder: LoadedEncoder,
    texts: list[str],
    keys: np.ndarray,
    settings: ExtractionSettings,
    space: Namespace,
    token_states: bool,
    progress_desc: str,
) -> None:
    """Encode ``texts`` (distinct, none stored yet) into shards of ``settings.chunk_size`` texts."""
    device, dtype = resolve_device_and_dtype(settings.device, settings.dtype)
    precision = namespace_inputs(encoder, settings)["dtype"]  # what the backend computes in
    started = time.perf_counter()
    tok = tokenise_all(encoder, texts, settings)
    logger.info(
        "encoding %d texts with %s on %s (%s, %s), batch %d%s",
        len(texts),
        encoder.identity.get("name"),
        device,
        settings.backend,
        precision,
        1 if settings.backend in PER_TEXT else settings.batch_size,
        ", with token states" if token_states else "",
    )
    forward_pass = _forward_function(encoder, settings, space, device, dtype, precision)
    # int8 activations scaled per batch tensor: each text alone keeps its vector its own
    batch_size = 1 if settings.backend in PER_TEXT else settings.batch_size
    fill = filled_batches(settings, device, dtype)
    # the torch backend's inputs go to its device; the other backends run on the CPU
    inputs_device = device if settings.backend == "torch" else None
    bar = tqdm(total=len(texts), desc=progress_desc, unit="text", disable=not settings.progress)
    forward = 0.0
    with torch.inference_mode():
        for chunk, batches in _chunks(_forward_groups(tok.lengths, batch_size, fill), settings.chunk_size):
            arrays, seconds = _encode_chunk(
                encoder.hidden_size, tok, chunk, batches, forward_pass, inputs_device, token_states, bar
            )
            forward += seconds
            space.write_shard({"keys": keys[chunk], **arrays}, token_states)
    bar.close()
    USAGE.encoded += len(texts)
    USAGE.forward_seconds += forward
    USAGE.seconds += time.perf_counter() - started


def _encode_share(
    encoder: LoadedEncoder, texts: list[str], keys: np.ndarray, settings: ExtractionSettings, space: Namespace
) -> list[dict[str, float]]:
    """In a worker: encode this process's share of ``texts`` into shards of its own; every process's counts."""
    from accelerate import PartialState
    from accelerate.utils import gather_object

    # cpu=True on the CPU: Accelerate joins the workers' gloo group (else each worker is alone)
    state = PartialState(cpu=resolve_device_and_dtype(settings.device, settings.dtype)[0].type == "cpu")
    n = state.num_processes
    # Accelerate hands out contiguous slices; dealing the texts in length order first gives every
    # process as many long texts as short ones. A text's output does not depend on its batch.
    by_length = np.argsort(np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts)), kind="stable")
    dealt = np.concatenate([by_length[p::n] for p in range(n)]).tolist()
    with state.split_between_processes(dealt) as share:
        mine = np.asarray(share, dtype=np.int64)
    before = (USAGE.seconds, USAGE.forward_seconds)
    if len(mine):
        own = replace(settings, progress=settings.progress and state.is_local_main_process)
        _encode_missing(
            encoder,
            [texts[i] for i in mine],
            keys[mine],
            own,
            space,
            settings.token_states,
            f"embedding (process 1 of {n}, its share)",
        )
    counts = {
        "encoded": float(len(mine)),
        "seconds": USAGE.seconds - before[0],
        "forward_seconds": USAGE.forward_seconds - before[1],
    }
    return gather_object([counts])


def _encode_in_processes(
    encoder: LoadedEncoder, texts: list[str], keys: np.ndarray, settings: ExtractionSettings, space: Namespace
) -> None:
    """Encode ``texts`` with ``settings.processes`` workers writing into the store; index their shards here."""
    processes = resolve_processes(settings.processes)
    started = time.perf_counter()
    counts = run_in_processes(
        _encode_share, (encoder, texts, keys, settings, space), processes, f"embedding {len(texts)} texts"
    )
    space.refresh()
    missing = space.missing(keys, settings.token_states)
    if len(missing):
        raise ExtractionError(f"the {processes} extraction workers left {len(missing)} of {len(texts)} texts unencoded")
    USAGE.encoded += int(sum(c["encoded"] for c in counts))
    # forward time: the slowest worker's (they run side by side); wall time: the whole launch
    USAGE.forward_seconds += max(c["forward_seconds"] for c in counts)
    USAGE.seconds += time.perf_counter() - started


def _recorded_lists(
    encoder: LoadedEncoder, space: Namespace, keys: Mapping[str, np.ndarray], token_states: bool
) -> dict[str, EmbeddingSet]:
    """The lists the store has recorded already (same texts in the same order), read back and checked."""
    done: dict[str, EmbeddingSet] = {}
    for name in keys:
        list_key = _list_key(space.name, keys[name], token_states)
        if (space.list_dir / list_key / "meta.json").is_file():
            done[name] = _checked(EmbeddingSet(space.list_dir / list_key), encoder)
    return done


def _unstored_texts(
    space: Namespace,
    wanted: Mapping[str, list[str]],
    keys: Mapping[str, np.ndarray],
    done: Mapping[str, EmbeddingSet],
    token_states: bool,
) -> dict[bytes, str]:
    """``{key: text}`` of every distinct text of the unrecorded lists that the store does not hold, in list order."""
    todo: dict[bytes, str] = {}
    for name, texts in wanted.items():
        if name in done:
            continue
        for position in space.missing(keys[name], token_states):
            todo.setdefault(bytes(keys[name][position]), texts[position])
    return todo


def _stop_dry_run(
    todo: Mapping[bytes, str],
    wanted: Mapping[str, list[str]],
    keys: Mapping[str, np.ndarray],
    done: Mapping[str, EmbeddingSet],
) -> None:
    """Under the dry-run variable: stop, saying how many texts the extraction would encode."""
    distinct = len({bytes(k) for name in wanted if name not in done for k in keys[name]})
    raise StoreDryRunStop(
        f"{DRY_RUN_VARIABLE} is set: this extraction would encode {len(todo)} of the {distinct} distinct texts "
        f"its {len(wanted) - len(done)} list(s) ask for ({distinct - len(todo)} are stored already, "
        f"{sum(len(t) for t in wanted.values())} requested with repeats); stopping before encoding"
    )


def _encode_texts(
    encoder: LoadedEncoder,
    todo: Mapping[bytes, str],
    settings: ExtractionSettings,
    space: Namespace,
    store: EmbeddingStore,
) -> None:
    """Encode the texts of ``todo`` into the store, in worker processes if ``settings.processes`` asks for them."""
    if not todo:
        return
    # exported once here, before any worker starts, so workers only read it
    prepare_backend(encoder, settings.backend, store.root / BACKENDS_DIR)
    texts, keys = list(todo.values()), np.array(list(todo), dtype=f"S{KEY_BYTES}")
    if should_launch(settings.processes):
        _encode_in_processes(encoder, texts, keys, settings, space)
    else:
        _encode_missing(encoder, texts, keys, settings, space, settings.token_states, "embedding")


def _list_meta(
    encoder: LoadedEncoder, inputs: Mapping[str, Any], texts: list[str], settings: ExtractionSettings
) -> dict[str, Any]:
    """What a recorded list's ``meta.json`` holds: the namespace's inputs, the texts' hash, the encoder and settings."""
    return {
        **inputs,
        "format": STORE_FORMAT,
        "token_states": settings.token_states,
        "texts_sha256": texts_sha256(texts),
        "n_texts": len(texts),
        "dim": encoder.hidden_size,
        "identity": encoder.identity,
        "settings": asdict(settings),
    }


def extract_embedding_sets(
    encoder: LoadedEncoder, lists: Mapping[str, Sequence[str]], settings: ExtractionSettings, store: EmbeddingStore
) -> dict[str, EmbeddingSet]:
    """Vectors (both poolings) and optionally token states of several lists of texts, through the store.

    Every text of every list that the store does not hold yet (in this encoder's namespace, with
    token states if ``settings.token_states``) is encoded once, all lists' texts together; the
    rest is read back. Each list is then recorded in order, so a rerun finds it without
    looking at its texts' outputs again.

    Args:
        encoder: The loaded encoder.
        lists: ``{name: texts}``; the vectors of each come back in the order of its texts.
        settings: Extraction settings.
        store: The per-text store.

    Returns:
        ``{name: EmbeddingSet}``.
    """
    inputs = namespace_inputs(encoder, settings)
    wanted = {name: [str(t) for t in texts] for name, texts in lists.items()}
    with store.lock():
        space = store.namespace(inputs)
        keys = {name: text_keys(texts) for name, texts in wanted.items()}
        for name, texts in wanted.items():
            _check_texts(encoder, texts, settings, name)
            USAGE.note_request(space.name, keys[name])
        done = _recorded_lists(encoder, space, keys, settings.token_states)
        todo = _unstored_texts(space, wanted, keys, done, settings.token_states)
        if todo and os.environ.get(DRY_RUN_VARIABLE):
            _stop_dry_run(todo, wanted, keys, done)
        space.ensure()
        _encode_texts(encoder, todo, settings, space, store)
        if not todo:
            logger.info(
                "embedding store: all %d texts of %d list(s) already stored, nothing to encode",
                sum(len(t) for t in wanted.values()),
                len(wanted),
            )
        for name, texts in wanted.items():
            if name in done:
                continue
            list_key = _list_key(space.name, keys[name], settings.token_states)
            meta = _list_meta(encoder, inputs, texts, settings)
            done[name] = EmbeddingSet(space.write_list(list_key, keys[name], settings.token_states, meta))
    return {name: done[name] for name in wanted}


def extract_embeddings(
    encoder: LoadedEncoder, texts: Sequence[str], settings: ExtractionSettings, store: EmbeddingStore
) -> EmbeddingSet:
    """Sentence vectors (both poolings) and optionally token states of one list of texts.

    See :func:`extract_embedding_sets`; a text already in the store is not encoded again.
    """
    return extract_embedding_sets(encoder, {"texts": texts}, settings, store)["texts"]


def _list_key(namespace: str, keys: np.ndarray, token_states: bool) -> str:
    digest = hashlib.sha256(f"{namespace}|{int(token_states)}|".encode())
    digest.update(np.ascontiguousarray(keys).tobytes())
    return digest.hexdigest()[:24]


def _checked(found: EmbeddingSet, encoder: LoadedEncoder) -> EmbeddingSet:
    if found.dim != encoder.hidden_size:
        raise ExtractionError(
            f"stored embeddings {found.directory} have dimension {found.dim} but encoder "
            f"{encoder.identity.get('name')} has {encoder.hidden_size}; prune the store (docs/benchmarks.md)"
        )
    return found


def extraction_settings(params: Mapping[str, Any], token_states: bool = False) -> ExtractionSettings:
    """``ExtractionSettings`` from ``embeddings.extraction``, whose keys and values are validated by
    ``parameters.embeddings.Extraction`` when the run starts; ``token_states`` is the caller's, not a parameter."""
    return ExtractionSettings(**params, token_states=token_states)


def vectors_of(manifest: Mapping[str, Any], name: str, pooling: str) -> np.ndarray:
    return np.asarray(manifest["sets"][name].vectors(pooling), dtype=np.float32)
