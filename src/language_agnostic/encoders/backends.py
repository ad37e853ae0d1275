"""Where the encoder's forward pass runs: torch (the default), ONNX Runtime or OpenVINO, each fp32 or int8.

The frozen encoder is exported once per weights to an ONNX graph (``torch.onnx.export``, dynamo) that maps
``input_ids`` to ``last_hidden_state``; ONNX Runtime runs it as is (``onnx``) or after dynamic int8
quantisation of its weights and activations (``onnx-int8``, ``onnxruntime.quantization``); OpenVINO
converts the same graph (``openvino``) and can compress its weights to int8 (``openvino-int8``, NNCF).
Extraction (``encoders/extraction.py``) then pools and stores the token states exactly as with torch.

Why not optimum / sentence-transformers' ``backend="onnx"``: ``optimum-onnx`` pins
``transformers<4.58`` and would downgrade the project's transformers 5; its exporter also calls
``torch.onnx.export``, so nothing is lost by calling it directly.

The graph takes no attention mask: extraction batches texts of one token count, so nothing is ever
padded and the mask is all ones (the export fixes it to ones). Batches of one length also keep a
text's vector independent of its batch-mates, except where int8 activations are quantised with one
scale per batch tensor (``onnx-int8``): that backend runs each text alone (:data:`PER_TEXT`), so
its scale is the text's own and the store's reuse stays exact (tested in ``tests/encoders``).
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import re
import shutil
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "BACKENDS",
    "PER_TEXT",
    "BackendError",
    "backend_forward",
    "backend_precision",
    "prepare_backend",
]

logger = logging.getLogger(__name__)

BACKENDS = ("torch", "onnx", "onnx-int8", "openvino", "openvino-int8")
# Backends whose outputs depend on the whole batch tensor (per-tensor dynamic activation scales)
PER_TEXT = frozenset({"onnx-int8"})
_OPSET = 18
_FILES = {"onnx": "model.onnx", "onnx-int8": "model_int8.onnx", "openvino": "model.xml", "openvino-int8": "model.xml"}
_PACKAGES = {"onnx": "onnxruntime", "onnx-int8": "onnxruntime", "openvino": "openvino", "openvino-int8": "nncf"}


class BackendError(ValueError):
    """A backend that does not exist, cannot run here, or whose package is missing."""


def check_backend(backend: str, device_type: str, dtype: str) -> None:
    """Raise a :class:`BackendError` naming the parameter when ``backend`` cannot run as configured."""
    if backend not in BACKENDS:
        raise BackendError(f"embeddings.extraction.backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    if backend == "torch":
        return
    if device_type != "cpu":
        raise BackendError(
            f"embeddings.extraction.backend {backend!r} runs on the CPU only; set embeddings.extraction.device: cpu "
            "(or backend: torch for CUDA)"
        )
    allowed = ("auto", "float32") if backend.startswith("onnx") else ("auto", "float32", "bfloat16")
    if dtype not in allowed:
        raise BackendError(
            f"embeddings.extraction.dtype {dtype!r} is not available with backend {backend!r}; use one of {allowed}"
        )
    package = _PACKAGES[backend]
    try:
        __import__(package)
    except ImportError:
        raise BackendError(
            f"embeddings.extraction.backend {backend!r} needs the package {package!r}: pip install -e '.[backends]'"
        ) from None


def backend_precision(backend: str, dtype: str, cpu_bf16: bool) -> str:
    """The precision a backend computes in, as the store's namespace records it.

    ONNX Runtime's CPU kernels compute in fp32 (``onnx``) or int8 (``onnx-int8``); OpenVINO follows
    ``dtype`` like torch does (``auto``: bf16 where the CPU has it natively), its int8 variant
    compressing only the weights.
    """
    if backend == "onnx":
        return "float32"
    if backend == "onnx-int8":
        return "int8"
    precision = "bfloat16" if dtype == "bfloat16" or (dtype == "auto" and cpu_bf16) else "float32"
    return f"int8-weights/{precision}" if backend == "openvino-int8" else precision


def _weights_key(encoder: Any) -> str:
    """The encoder's weights hash (or, where unknown, a hash of its parameters) for the export's directory."""
    known = str(encoder.identity.get("weights_sha256", "unknown"))
    if known != "unknown":
        return known[:16]
    digest = hashlib.sha256()
    for name, tensor in sorted(encoder.model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().float().numpy().tobytes())
    return digest.hexdigest()[:16]


class _LastHidden(torch.nn.Module):
    """``input_ids`` → ``last_hidden_state`` with an all-ones mask (extraction never pads)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).last_hidden_state


def export_onnx(model: torch.nn.Module, path: Path, max_length: int) -> Path:
    """Export ``model`` (a transformers encoder) to ONNX: ``input_ids`` [batch, length] → ``last_hidden_state``.

    Uses torch's ``torch.export``-based exporter with a dynamic batch and length (up to ``max_length``).
    The model is deep-copied so the caller's module is never touched by the export.
    """
    wrapped = _LastHidden(copy.deepcopy(model).float()).eval()
    example = torch.full((2, 8), 5, dtype=torch.long)
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=max_length)
    registration = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = registration.level
    # its "torchvision is not installed. Skipping ..." lines are about operators this encoder never uses
    registration.setLevel(logging.ERROR)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # torch.export's own FutureWarning on its pytree internals (third-party, nothing to act on)
            warnings.filterwarnings("ignore", category=FutureWarning, module="copyreg")
            program = torch.onnx.export(
                wrapped,
                (example,),
                dynamo=True,
                input_names=["input_ids"],
                output_names=["last_hidden_state"],
                dynamic_shapes={"input_ids": {0: batch, 1: length}},
                opset_version=_OPSET,
                verbose=False,
            )
    finally:
        registration.setLevel(level)
    program.save(str(path))
    return path


def _build(encoder: Any, backend: str, work: Path, cache_dir: Path) -> Path:
    """Write ``backend``'s model files into ``work``; the file the backend opens.

    The other backends start from the ``onnx`` export (made first if missing), so the encoder is
    traced once per weights whichever backends are used.
    """
    if backend == "onnx":
        return export_onnx(encoder.model, work / "model.onnx", encoder.max_length)
    source = prepare_backend(encoder, "onnx", cache_dir)
    onnx_path = work / "model.onnx"
    shutil.copyfile(source, onnx_path)
    if backend == "onnx-int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # int8 weights per output channel and dynamic int8 activations (ORT's recipe for transformer encoders)
        quantize_dynamic(onnx_path, work / "model_int8.onnx", weight_type=QuantType.QInt8, per_channel=True)
        onnx_path.unlink()
        return work / "model_int8.onnx"
    import openvino as ov

    converted = ov.convert_model(str(onnx_path))
    if backend == "openvino-int8":
        import nncf

        nncf.set_log_level(logging.ERROR)  # its statistics table and progress bar would print on every export
        # weight-only int8 (NNCF's default, asymmetric per output channel): activations stay float, so
        # a text's vector does not depend on its batch-mates
        converted = nncf.compress_weights(converted)
    ov.save_model(converted, str(work / "model.xml"), compress_to_fp16=False)
    onnx_path.unlink()
    return work / "model.xml"


def prepare_backend(encoder: Any, backend: str, cache_dir: Path) -> Path | None:
    """The backend's model file for ``encoder``, exported once per weights into ``cache_dir``.

    Returns ``None`` for ``torch``. The export is written to a temporary directory and renamed into
    place, so concurrent runs (or extraction workers) never read a half-written file.
    """
    if backend == "torch":
        return None
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(encoder.identity.get("name", "encoder")))[-60:]
    final = Path(cache_dir) / f"{name}-{_weights_key(encoder)}-{backend}"
    target = final / _FILES[backend]
    if target.is_file():
        return target
    started = time.perf_counter()
    logger.info("exporting the encoder for backend %s to %s (once per weights)", backend, final)
    work = final.parent / f".{final.name}.{uuid.uuid4().hex}"
    work.mkdir(parents=True)
    try:
        _build(encoder, backend, work, Path(cache_dir))
        try:
            os.replace(work, final)
        except OSError:  # another process published it first
            if not target.is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    logger.info("backend %s ready in %.0f s", backend, time.perf_counter() - started)
    return target


def backend_forward(path: Path, backend: str, precision: str, threads: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """A function from ``input_ids`` (int64, [batch, length]) to fp32 ``last_hidden_state`` on ``backend``.

    Args:
        path: What :func:`prepare_backend` returned.
        backend: One of :data:`BACKENDS` other than ``torch``.
        precision: :func:`backend_precision`'s answer (OpenVINO's inference precision hint).
        threads: Intra-op threads (torch's own count, so backends compare at the same parallelism).
    """
    if backend.startswith("onnx"):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        def run_onnx(input_ids: torch.Tensor) -> torch.Tensor:
            (hidden,) = session.run(None, {"input_ids": input_ids.numpy()})
            return torch.from_numpy(np.asarray(hidden, dtype=np.float32))

        return run_onnx
    import openvino as ov

    hint = "bf16" if precision.endswith("bfloat16") else "f32"
    compiled = ov.Core().compile_model(
        str(path), "CPU", {"INFERENCE_PRECISION_HINT": hint, "INFERENCE_NUM_THREADS": threads}
    )
    request = compiled.create_infer_request()

    def run_openvino(input_ids: torch.Tensor) -> torch.Tensor:
        hidden = request.infer({"input_ids": input_ids.numpy()})[compiled.output(0)]
        return torch.from_numpy(np.array(hidden, dtype=np.float32))

    return run_openvino
