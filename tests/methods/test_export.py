"""Trained pooled heads exported as sentence-transformers models give this project's vectors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.export import ExportError, export_sentence_transformer, meaning_layers
from language_agnostic.methods.registry import artifact, get_method, load_trained

TEXTS = ["wake me up at nine am", "spiel etwas musik", "what is the weather today", "set an alarm for six please"]


DIM = 16  # the tiny encoder's hidden size


def _head(method: str, pooling: str, options: dict | None = None, seed: int = 0) -> dict:
    """A head with random (seeded) weights, saved as training saves it."""
    torch.manual_seed(seed)
    model = get_method(method).build(DIM, 2, dict(options or {}))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0, 0.2)
    return artifact(method, model, DIM, 2, options, pooling=pooling)


def encode_in_fresh_process(directory: Path, texts: list[str]) -> np.ndarray:
    """``SentenceTransformer(directory).encode(texts)`` in a new interpreter that imports
    sentence-transformers and numpy only (what a user outside the project runs)."""
    script = (
        "import json, sys; from sentence_transformers import SentenceTransformer; "
        "m = SentenceTransformer(sys.argv[1], device='cpu'); "
        "print(json.dumps(m.encode(json.loads(sys.argv[2]), batch_size=3).tolist()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(directory), json.dumps(texts)], capture_output=True, text=True, check=True
    )
    return np.asarray(json.loads(done.stdout.strip().splitlines()[-1]), dtype=np.float32)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.parametrize(
    ("method", "pooling", "options"),
    [("dream", "cls", {"activation": "tanh"}), ("seed", "mean", {}), ("linear-infonce", "mean", {})],
)
def test_sentence_transformers_gives_the_projects_vectors_in_a_fresh_process(
    tiny_hub_model: Path, tmp_path: Path, method: str, pooling: str, options: dict
):
    encoder = load_encoder(str(tiny_hub_model))
    saved = _head(method, pooling, options)
    out = export_sentence_transformer(saved, encoder, tmp_path / "st", prefix="query: ", provenance={"name": method})
    # the project's own vectors: the extraction stage (fp32), then the head
    settings = ExtractionSettings(prefix="query: ", dtype="float32", device="cpu", batch_size=2, progress=False)
    pooled = extract_embeddings(encoder, TEXTS, settings, EmbeddingStore(tmp_path / "store")).vectors(pooling)
    _, model = load_trained(saved)
    ours = control_meaning(model, np.asarray(pooled), method)
    theirs = encode_in_fresh_process(out, TEXTS)
    assert theirs.shape == ours.shape == (len(TEXTS), DIM)
    assert _cosines(theirs, ours).min() >= 0.9999
    np.testing.assert_allclose(theirs, ours, atol=1e-4, rtol=1e-4)
    # standard modules only, the prefix as the default prompt, and where the model came from
    modules = json.loads((out / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling", "Dense"]
    config = json.loads((out / "config_sentence_transformers.json").read_text())
    assert config["prompts"]["query"] == "query: " and config["default_prompt_name"] == "query"
    record = json.loads((out / "language_agnostic.json").read_text())
    assert record["method"] == method and record["pooling"] == pooling and record["name"] == method


def test_what_cannot_be_exported_is_named(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    with pytest.raises(ExportError, match=r"'fmda': only heads over pooled vectors export"):
        meaning_layers(torch.nn.Module(), "fmda")
    with pytest.raises(ExportError, match=r"'dream': its meaning network is not one linear layer"):
        meaning_layers(torch.nn.Sequential(), "dream")
    with pytest.raises(ExportError, match=r"pooling 'max' has no sentence-transformers mode"):
        export_sentence_transformer(_head("seed", "max"), encoder, tmp_path / "x", prefix="")
