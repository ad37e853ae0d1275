"""The ONNX Runtime and OpenVINO backends: the same vectors as torch, exact reuse through the store,
their own store namespaces, and clear errors for settings they cannot run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.encoders.backends import BackendError, prepare_backend
from language_agnostic.encoders.extraction import (
    BACKENDS_DIR,
    EmbeddingStore,
    ExtractionSettings,
    extract_embeddings,
    namespace_inputs,
)
from language_agnostic.encoders.loading import load_encoder

pytest.importorskip("onnxruntime")
pytest.importorskip("openvino")

WORDS = "wake me up at nine am set an alarm for six play some jazz music weck mich um neun".split()
SETTINGS = ExtractionSettings(
    prefix="", dtype="float32", device="cpu", batch_size=4, chunk_size=8, progress=False, token_states=True
)
# the floor each backend keeps against torch fp32 on the random wide model (cosine of mean-pooled vectors)
FLOOR = {"onnx": 0.99999, "openvino": 0.99999, "onnx-int8": 0.98, "openvino-int8": 0.995}


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 9)))) for _ in range(n)]


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def wide_encoder(wide_model: Path):
    return load_encoder(str(wide_model))


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory of exported models for every store of this module (the export is the slow part)."""
    return tmp_path_factory.mktemp("exports")


def _store(root: Path, exports: Path) -> EmbeddingStore:
    root.mkdir(parents=True)
    (root / BACKENDS_DIR).symlink_to(exports, target_is_directory=True)
    return EmbeddingStore(root)


@pytest.fixture(scope="module")
def torch_vectors(wide_encoder, tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    entry = extract_embeddings(wide_encoder, _texts(30, 0), SETTINGS, EmbeddingStore(tmp_path_factory.mktemp("t")))
    return np.asarray(entry.vectors("mean"))


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8", "openvino", "openvino-int8"])
def test_backend_vectors_match_torch_and_reuse_is_exact(backend, wide_encoder, torch_vectors, exports, tmp_path: Path):
    settings = replace(SETTINGS, backend=backend)
    texts = _texts(30, 0)
    first = extract_embeddings(wide_encoder, texts, settings, _store(tmp_path / "a", exports))
    mean = np.asarray(first.vectors("mean"))
    cosines = _cosines(mean, torch_vectors)
    assert cosines.min() >= FLOOR[backend], (backend, cosines.min())
    if backend in ("onnx", "openvino"):
        assert np.abs(mean - torch_vectors).max() < 1e-4
    # other batch-mates, order and batch size, in another store: the same bits for every text
    others = _texts(20, 1) + texts[::-1]
    second = extract_embeddings(
        wide_encoder, others, replace(settings, batch_size=7, chunk_size=1000), _store(tmp_path / "b", exports)
    )
    assert np.array_equal(np.asarray(second.vectors("mean"))[20:][::-1], mean)
    assert np.array_equal(np.asarray(second.vectors("cls"))[20:][::-1], np.asarray(first.vectors("cls")))
    states, mask = first.token_states([3])
    again, again_mask = second.token_states([len(others) - 1 - 3])
    assert np.array_equal(states[0][mask[0]], again[0][again_mask[0]])


def test_each_backend_has_its_own_namespace_and_torch_keeps_its_own(wide_encoder):
    torch_inputs = namespace_inputs(wide_encoder, SETTINGS)
    # the torch namespace has no backend key; files, packages and the CPU's kernels are keyed
    assert set(torch_inputs) == {
        "encoder",
        "weights_sha256",
        "files_sha256",
        "packages",
        "prefix",
        "max_length",
        "on_too_long",
        "device_type",
        "kernels",
        "dtype",
    }
    seen = {json.dumps(torch_inputs, sort_keys=True)}
    for backend, dtype in [("onnx", "float32"), ("onnx-int8", "int8"), ("openvino", "float32")]:
        inputs = namespace_inputs(wide_encoder, replace(SETTINGS, backend=backend))
        assert (inputs["backend"], inputs["dtype"]) == (backend, dtype)
        assert {"onnxruntime", "openvino"} <= set(inputs["packages"])  # the backend's runtime is keyed too
        seen.add(json.dumps(inputs, sort_keys=True))
    assert namespace_inputs(wide_encoder, replace(SETTINGS, backend="openvino-int8", dtype="bfloat16"))["dtype"] == (
        "int8-weights/bfloat16"
    )
    assert len(seen) == 4


def test_exporting_leaves_the_callers_model_unchanged(wide_encoder, exports: Path):
    ids = torch.tensor([[2, 7, 9, 11, 3]])
    with torch.inference_mode():
        before = wide_encoder.model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state.clone()
    path = prepare_backend(wide_encoder, "onnx", exports)
    assert path.name == "model.onnx" and path.is_file()
    stamp = path.stat().st_mtime_ns
    assert prepare_backend(wide_encoder, "onnx", exports) == path  # exported once per weights
    assert path.stat().st_mtime_ns == stamp
    with torch.inference_mode():
        after = wide_encoder.model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
    assert torch.equal(before, after)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"backend": "tensorrt"}, "embeddings.extraction.backend must be one of torch, onnx, onnx-int8, openvino"),
        ({"backend": "onnx", "device": "cuda"}, "runs on the CPU only; set embeddings.extraction.device: cpu"),
        ({"backend": "onnx", "dtype": "bfloat16"}, "embeddings.extraction.dtype 'bfloat16' is not available with"),
        ({"backend": "openvino", "dtype": "float16"}, "embeddings.extraction.dtype 'float16' is not available with"),
    ],
)
def test_settings_a_backend_cannot_run_name_the_parameter(changes, message, wide_encoder, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU, as far as the namespace asks
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "a GPU")
    with pytest.raises(BackendError, match=message.replace("(", r"\(").replace(".", r"\.")):
        namespace_inputs(wide_encoder, replace(SETTINGS, **changes))
