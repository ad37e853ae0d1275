"""An exported head over the real bundled encoder gives the project's vectors on real MASSIVE sentences."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.export import export_sentence_transformer
from language_agnostic.methods.fmda import encode_with_fmda
from language_agnostic.methods.registry import artifact, get_method, load_trained
from tests.conftest import REAL_MASSIVE
from tests.methods.test_export import encode_in_fresh_process

LOCALES = ("en-US", "de-DE", "ja-JP")
PER_LOCALE = 40


def _massive_sentences() -> list[str]:
    """The first test utterances of three locales (Latin and Japanese script, short and long)."""
    if not REAL_MASSIVE.is_file():
        pytest.skip(f"MASSIVE not found at {REAL_MASSIVE}")
    texts = []
    with tarfile.open(REAL_MASSIVE) as archive:
        for locale in LOCALES:
            rows = archive.extractfile(f"1.1/data/{locale}.jsonl").read().decode("utf-8").splitlines()
            test = [json.loads(r)["utt"] for r in rows if json.loads(r)["partition"] == "test"]
            texts += test[:PER_LOCALE]
    return texts


@pytest.mark.slow
@pytest.mark.parametrize(("method", "pooling"), [("dream", "cls"), ("seed", "mean"), ("linear-infonce", "mean")])
def test_exported_head_gives_the_projects_vectors_on_massive(
    real_bundled: Path, tmp_path: Path, method: str, pooling: str
):
    texts = _massive_sentences()
    encoder = load_encoder("bundled", real_bundled)
    torch.manual_seed(0)
    head = get_method(method).build(encoder.hidden_size, 2, {})
    with torch.no_grad():
        for parameter in head.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))  # not the identity: the head must be applied
    saved = artifact(method, head, encoder.hidden_size, 2, {}, pooling=pooling)
    out = export_sentence_transformer(saved, encoder, tmp_path / "st", prefix="query: ")
    settings = ExtractionSettings(prefix="query: ", dtype="float32", device="cpu", progress=False)
    pooled = extract_embeddings(encoder, texts, settings, EmbeddingStore(tmp_path / "store")).vectors(pooling)
    ours = control_meaning(load_trained(saved)[1], np.asarray(pooled), method)
    theirs = encode_in_fresh_process(out, texts)
    cosine = (theirs * ours).sum(1) / np.linalg.norm(theirs, axis=1) / np.linalg.norm(ours, axis=1)
    assert theirs.shape == ours.shape == (len(texts), encoder.hidden_size)
    assert cosine.min() >= 0.9999


@pytest.mark.slow
def test_exported_fmda_gives_the_projects_vectors_on_massive(real_bundled: Path, tmp_path: Path):
    texts = _massive_sentences()
    encoder = load_encoder("bundled", real_bundled)
    torch.manual_seed(0)
    options = {"init": "identity"}  # as the pipeline trains it, then moved off the identity
    model = get_method("fmda").build(encoder.hidden_size, 2, options)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.02 * torch.randn_like(parameter))
    saved = artifact("fmda", model, encoder.hidden_size, 2, options)
    out = export_sentence_transformer(saved, encoder, tmp_path / "st", prefix="query: ")
    settings = ExtractionSettings(prefix="query: ", dtype="float32", device="cpu", token_states=True, progress=False)
    entry = extract_embeddings(encoder, texts, settings, EmbeddingStore(tmp_path / "store"))
    ours = encode_with_fmda(load_trained(saved)[1], entry)["m"]
    theirs = encode_in_fresh_process(out, texts, trust_remote_code=True)
    cosine = (theirs * ours).sum(1) / np.linalg.norm(theirs, axis=1) / np.linalg.norm(ours, axis=1)
    assert theirs.shape == ours.shape == (len(texts), encoder.hidden_size)
    assert cosine.min() >= 0.9999
