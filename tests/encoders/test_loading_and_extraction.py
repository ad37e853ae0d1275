"""Hub/local loading with a tiny saved BertModel; extraction, poolings, cache, resume, errors."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.encoders.extraction import (
    EmbeddingStore,
    ExtractionError,
    ExtractionSettings,
    extract_embeddings,
    resolve_device_and_dtype,
)
from language_agnostic.encoders.loading import EncoderLoadError, load_encoder, save_encoder
from language_agnostic.encoders.pooling import pool

TEXTS = [
    "wake me up at nine am",
    "play jazz",
    "what is the weather today",
    "set an alarm for six",
    "weck mich um neun",
    "music",
]
FP32 = ExtractionSettings(prefix="", dtype="float32", device="cpu", batch_size=2, chunk_size=4, progress=False)


def _manual(encoder, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """cls, mean and token states of one text, encoded alone (no padding)."""
    batch = encoder.tokenizer([text], return_tensors="pt")
    with torch.inference_mode():
        hidden = encoder.model.eval()(**batch).last_hidden_state
    mask = batch["attention_mask"]
    return pool(hidden, mask, "cls")[0].numpy(), pool(hidden, mask, "mean")[0].numpy(), hidden[0].numpy()


def test_local_directory_loads_with_identity(tiny_hub_model: Path):
    encoder = load_encoder(str(tiny_hub_model))
    assert encoder.hidden_size == 16
    assert encoder.max_length == 24
    assert encoder.identity["name"] == tiny_hub_model.name
    assert encoder.identity["source"] == str(tiny_hub_model.resolve())
    assert len(encoder.identity["weights_sha256"]) == 64
    assert not hasattr(encoder.model, "pooler") or encoder.model.pooler is None


def test_a_saved_fine_tuned_encoder_loads_by_its_path_with_the_same_outputs(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    with torch.no_grad():  # "fine-tuning": change one weight
        encoder.model.embeddings.word_embeddings.weight[5] += 1.0
    directory = save_encoder(encoder, tmp_path / "tuned", {"method": "emu", "dev_accuracy": 0.5})
    again = load_encoder(str(directory))
    assert again.identity["source"] == str(directory.resolve())
    assert again.identity["weights_sha256"] != encoder.identity["weights_sha256"]
    for text in TEXTS[:2]:
        for a, b in zip(_manual(encoder, text), _manual(again, text)):
            np.testing.assert_allclose(a, b, atol=1e-6)
    record = json.loads((directory / "finetuned.json").read_text())
    assert record["method"] == "emu" and record["base"]["name"] == tiny_hub_model.name


def test_both_poolings_equal_unpadded_single_text_encoding(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    entry = extract_embeddings(encoder, TEXTS, FP32, EmbeddingStore(tmp_path))
    for i, text in enumerate(TEXTS):
        cls, mean, _ = _manual(encoder, text)
        # batches hold one token count each (nothing padded): a text's vectors are the ones it gets alone, up to
        # the last bits of a one-row matmul's other kernel (bit for bit in tests/encoders/test_store.py)
        np.testing.assert_allclose(entry.vectors("cls")[i], cls, atol=1e-5)
        np.testing.assert_allclose(entry.vectors("mean")[i], mean, atol=1e-5)
    assert entry.lengths.tolist() == [len(encoder.tokenizer(t)["input_ids"]) for t in TEXTS]


def test_pool_by_name_and_bad_name():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    assert pool(hidden, mask, "cls").tolist() == [[1.0, 2.0]]
    assert pool(hidden, mask, "mean").tolist() == [[2.0, 3.0]]  # padding ignored
    with pytest.raises(ValueError, match=r"pooling must be one of \('cls', 'mean'\), got 'max'"):
        pool(hidden, mask, "max")


def test_mean_pooling_takes_a_cpu_mask_for_states_on_another_device():
    # the extraction stage builds its masks on the CPU; on CUDA the states are on the GPU, and
    # mean pooling failed there (found on an H200, docs/benchmarks.md). "meta" stands in for CUDA.
    hidden = torch.zeros(2, 3, 4, device="meta")
    mask = torch.ones(2, 3, dtype=torch.long)
    pooled = pool(hidden, mask, "mean")
    assert pooled.device.type == "meta" and tuple(pooled.shape) == (2, 4)


def test_token_states_stream_to_disk_and_match(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    settings = ExtractionSettings(**{**FP32.__dict__, "token_states": True})
    entry = extract_embeddings(encoder, TEXTS, settings, EmbeddingStore(tmp_path))
    states, mask = entry.token_states([2, 1])
    assert states.dtype == np.float16
    _, _, manual = _manual(encoder, TEXTS[2])
    assert mask.sum(axis=1).tolist() == [len(manual), len(_manual(encoder, TEXTS[1])[2])]
    np.testing.assert_allclose(states[0, : len(manual)].astype(np.float32), manual, atol=2e-3)
    assert not states[1, mask[1].sum() :].any()  # padding is zeros


def test_second_extraction_encodes_nothing(tiny_hub_model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture):
    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path)
    first = extract_embeddings(encoder, TEXTS, FP32, store)
    calls = []
    hook = encoder.model.register_forward_hook(lambda *a: calls.append(1))
    with caplog.at_level(logging.INFO):
        again = extract_embeddings(encoder, TEXTS, FP32, store)
    hook.remove()
    assert calls == []
    assert again.directory == first.directory
    assert "nothing to encode" in caplog.text
    # batch size and chunking are not part of the key; texts and prefix are
    other = ExtractionSettings(**{**FP32.__dict__, "batch_size": 5})
    assert extract_embeddings(encoder, TEXTS, other, store).directory == first.directory
    assert extract_embeddings(encoder, TEXTS[:-1], FP32, store).directory != first.directory
    prefixed = ExtractionSettings(**{**FP32.__dict__, "prefix": "query: "})
    assert extract_embeddings(encoder, TEXTS, prefixed, store).directory != first.directory


def test_bad_input_errors(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path)
    with pytest.raises(ExtractionError, match=r"2 empty text\(s\) to embed, first at positions \[1, 3\]"):
        extract_embeddings(encoder, ["a", "", "b", "  "], FP32, store)
    long_text = " ".join(["music"] * 40)
    strict = ExtractionSettings(**{**FP32.__dict__, "on_too_long": "error"})
    with pytest.raises(
        ExtractionError, match=r"1 text\(s\) longer than max_length 24 tokens; first at position 1 \(42 tokens\)"
    ):
        extract_embeddings(encoder, ["play jazz", long_text], strict, store)
    entry = extract_embeddings(encoder, ["play jazz", long_text], FP32, store)
    assert entry.meta["n_truncated"] == 1
    assert entry.lengths.tolist() == [4, 24]
    too_long = ExtractionSettings(**{**FP32.__dict__, "max_length": 100})
    with pytest.raises(ExtractionError, match="max_length 100 exceeds the encoder's maximum 24"):
        extract_embeddings(encoder, TEXTS, too_long, store)


def test_cached_entry_with_another_dimension_is_refused(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path)
    entry = extract_embeddings(encoder, TEXTS, FP32, store)
    meta = json.loads((entry.directory / "meta.json").read_text())
    (entry.directory / "meta.json").write_text(json.dumps({**meta, "dim": 384}))
    with pytest.raises(ExtractionError, match="have dimension 384 but encoder tiny-bert.* has 16; prune the store"):
        extract_embeddings(encoder, TEXTS, FP32, store)


def test_directory_without_weights_and_unknown_names(
    tiny_hub_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    broken = tmp_path / "no-weights"
    broken.mkdir()
    shutil.copy(tiny_hub_model / "config.json", broken / "config.json")
    with pytest.raises(EncoderLoadError, match="has a config.json but no weights"):
        load_encoder(str(broken))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EncoderLoadError, match="is not a Hugging Face model directory: it has no config.json"):
        load_encoder(str(empty))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        EncoderLoadError, match=r"could not load encoder 'no-such-org/no-such-model'.*Use encoder 'bundled'"
    ):
        load_encoder("no-such-org/no-such-model")


def test_device_and_dtype_resolution():
    device, dtype = resolve_device_and_dtype("cpu", "float32")
    assert (device.type, dtype) == ("cpu", torch.float32)
    with pytest.raises(ExtractionError, match="dtype must be auto, float32, bfloat16 or float16, got 'fp8'"):
        resolve_device_and_dtype("cpu", "fp8")
    if not torch.cuda.is_available():
        with pytest.raises(ExtractionError, match="device 'cuda' requested but CUDA is not available"):
            resolve_device_and_dtype("cuda", "auto")
        expected = (
            torch.bfloat16
            if (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
            else torch.float32
        )
        assert resolve_device_and_dtype("auto", "auto") == (torch.device("cpu"), expected)
