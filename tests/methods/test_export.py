"""Trained pooled heads exported as sentence-transformers models give this project's vectors."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods import export, fmda_meaning
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.export import (
    ExportError,
    export_sentence_transformer,
    fmda_sentence_transformer,
    meaning_layers,
)
from language_agnostic.methods.fmda import encode_with_fmda
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


def encode_in_fresh_process(directory: Path, texts: list[str], trust_remote_code: bool = False) -> np.ndarray:
    """``SentenceTransformer(directory).encode(texts)`` in a new interpreter that imports
    sentence-transformers and numpy only (what a user outside the project runs); it fails if
    loading or encoding imported this project's package."""
    script = (
        "import json, sys; from sentence_transformers import SentenceTransformer; "
        f"m = SentenceTransformer(sys.argv[1], device='cpu', trust_remote_code={trust_remote_code}); "
        "v = m.encode(json.loads(sys.argv[2]), batch_size=3).tolist(); "
        "assert 'language_agnostic' not in sys.modules, 'the export imported language_agnostic'; "
        "print(json.dumps(v))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(directory), json.dumps(texts)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
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


def _fmda(options: dict, seed: int = 0) -> dict:
    """An FMDA model with random (seeded) weights, saved as training saves it."""
    torch.manual_seed(seed)
    model = get_method("fmda").build(DIM, 2, options)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0, 0.3)
    return artifact("fmda", model, DIM, 2, options, variant="all_together")


@pytest.mark.parametrize(
    "options",
    [
        {"ffn_layers": 1, "mlp_layers": 1, "attention_scale": "sqrt_d"},  # the default: affine FFNs
        {"ffn_layers": 2, "mlp_layers": 2, "activation": "tanh", "attention_scale": "none"},
    ],
)
def test_fmda_exports_its_meaning_path_and_loads_without_the_project(tiny_hub_model: Path, tmp_path: Path, options):
    encoder = load_encoder(str(tiny_hub_model))
    saved = _fmda(options)
    out = export_sentence_transformer(saved, encoder, tmp_path / "st", prefix="query: ")
    # the project's own vectors: token states from the extraction stage (fp32, stored as fp16), then FMDA's m
    settings = ExtractionSettings(
        prefix="query: ", dtype="float32", device="cpu", batch_size=2, token_states=True, progress=False
    )
    entry = extract_embeddings(encoder, TEXTS, settings, EmbeddingStore(tmp_path / "store"))
    ours = encode_with_fmda(load_trained(saved)[1], entry)["m"]
    # the directory loads in a process that never imports this package (the module is a file in it)
    theirs = encode_in_fresh_process(out, TEXTS, trust_remote_code=True)
    assert theirs.shape == ours.shape == (len(TEXTS), DIM)
    assert _cosines(theirs, ours).min() >= 0.9999
    np.testing.assert_allclose(theirs, ours, atol=2e-3, rtol=2e-3)  # the stored token states are fp16
    modules = json.loads((out / "modules.json").read_text())
    assert [m["type"] for m in modules][1] == "fmda_meaning.FmdaMeaning"
    assert (out / "fmda_meaning.py").read_text() == Path(fmda_meaning.__file__).read_text()
    assert json.loads((out / "language_agnostic.json").read_text())["pooling"] == "token states"


def test_the_fmda_module_file_imports_only_torch_and_sentence_transformers():
    tree = ast.parse(Path(fmda_meaning.__file__).read_text())
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert imported <= {"__future__", "math", "typing", "torch", "sentence_transformers"}, imported


def test_fmda_module_equals_the_models_fast_path_on_padded_batches():
    saved = _fmda({"ffn_layers": 1, "mlp_layers": 1}, seed=3)
    _, model = load_trained(saved)
    module = fmda_meaning.FmdaMeaning(DIM)
    layers = fmda_meaning.MEANING_LAYERS
    module.load_state_dict({k: v for k, v in saved["state_dict"].items() if k.split(".")[0] in layers})
    torch.manual_seed(1)
    states = torch.randn(3, 5, DIM)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    with torch.no_grad():
        out = module({"token_embeddings": states, "attention_mask": mask.long()})["sentence_embedding"]
        torch.testing.assert_close(out, model(states, mask)["m"], atol=1e-5, rtol=1e-5)
        # padding never matters: the second text alone, unpadded
        alone = module({"token_embeddings": states[1:2, :3], "attention_mask": mask[1:2, :3].long()})
        torch.testing.assert_close(alone["sentence_embedding"][0], out[1], atol=1e-5, rtol=1e-5)


def test_a_head_is_not_exported_as_fmda(tiny_hub_model: Path):
    encoder = load_encoder(str(tiny_hub_model))
    with pytest.raises(ExportError, match=r"'seed' is not a model over token states; export it as a head"):
        fmda_sentence_transformer(_head("seed", "mean"), encoder, prefix="")


def test_the_fixed_initialisation_draws_alike_and_leaves_the_callers_random_state():
    """What a checkpoint lacks (BERT's pooler) is drawn from one seed, without moving the caller's generator."""
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    with export._fixed_initialisation():
        first = torch.rand(4)
    with export._fixed_initialisation():
        second = torch.rand(4)
    assert torch.equal(first, second)
    assert torch.equal(torch.random.get_rng_state(), state)
