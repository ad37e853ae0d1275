"""The ``embeddings`` pipeline on tiny data with a tiny local encoder, run twice (cache)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from language_agnostic.datasets.embeddings import EmbeddingStoreDataset
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.pipelines.embeddings.nodes import embed_pair_texts
from language_agnostic.pipelines.embeddings.pipeline import create_pipeline

EXTRACTION = {"prefix": "", "dtype": "float32", "device": "cpu", "batch_size": 2, "progress": False}


def _pairs() -> pd.DataFrame:
    en = ["wake me up at nine", "play jazz music", "what is the weather", "set an alarm"]
    de = ["weck mich um neun", "spiel jazz musik", "wie ist das wetter", "stelle einen wecker"]
    return pd.DataFrame(
        {
            "id": ["1", "2", "3", "4"],
            "partition": ["test", "test", "test", "train"],
            "scenario": "x",
            "intent": "x_y",
            "source_locale": "en-US",
            "target_locale": "de-DE",
            "source_utt": en,
            "target_utt": de,
        }
    )


def _catalog(tiny_hub_model: Path, store: Path) -> DataCatalog:
    params = {
        "params:embeddings.encoder": {"name": str(tiny_hub_model)},
        "params:embeddings.extraction": EXTRACTION,
        "params:embeddings.partitions": ["test"],
        "params:embeddings.poolings": ["cls", "mean"],
    }
    return DataCatalog(
        {
            "en_de.massive_pairs": MemoryDataset(_pairs()),
            "embedding_store": EmbeddingStoreDataset(str(store)),
            "encoder": MemoryDataset(copy_mode="assign"),
            **{name: MemoryDataset(value) for name, value in params.items()},
        }
    )


def _accuracy_bounds(sim: np.ndarray, tie: float = 1e-4) -> tuple[float, float]:
    """The accuracy@1 of ``sim`` (queries x keys, gold on the diagonal) as a range.

    A random tiny model puts some cosines within 1e-6 of each other (its first-token vectors are
    nearly constant), where batched and one-at-a-time arithmetic may order them differently on
    another CPU. A query whose gold key is within ``tie`` of the best other key may count either way.
    """
    gold = np.diag(sim)
    best_other = np.where(np.eye(len(sim), dtype=bool), -np.inf, sim).max(1)
    sure = (gold > best_other + tie).sum()
    ambiguous = (np.abs(gold - best_other) <= tie).sum()
    return sure / len(sim), (sure + ambiguous) / len(sim)


def _expected_accuracy(tiny_hub_model: Path, pooling: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """Retrieval computed here independently: one text at a time, numpy cosine, bounds as above."""
    encoder = load_encoder(str(tiny_hub_model))
    rows = _pairs()[lambda d: d["partition"] == "test"]

    def vec(text: str) -> np.ndarray:
        with torch.inference_mode():
            hidden = encoder.model.eval()(**encoder.tokenizer([text], return_tensors="pt")).last_hidden_state[0]
        v = (hidden[0] if pooling == "cls" else hidden.mean(0)).numpy()
        return v / np.linalg.norm(v)

    a = np.stack([vec(t) for t in rows["source_utt"]])
    b = np.stack([vec(t) for t in rows["target_utt"]])
    return _accuracy_bounds(a @ b.T), _accuracy_bounds(b @ a.T)


def test_accuracy_bounds_by_hand():
    sim = np.array([[0.9, 0.5, 0.1], [0.2, 0.3, 0.8], [0.5, 0.50001, 0.5]])
    # query 0 right for sure, query 1 wrong for sure, query 2 a tie within 1e-4
    assert _accuracy_bounds(sim) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert _accuracy_bounds(sim, tie=0.0) == (pytest.approx(1 / 3), pytest.approx(1 / 3))


def test_pipeline_embeds_evaluates_and_reuses_the_cache(
    tiny_hub_model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    pipeline = create_pipeline(pairs=["en_de"])
    catalog = _catalog(tiny_hub_model, tmp_path / "store")
    SequentialRunner().run(pipeline, catalog)
    table = catalog["metrics_table"].load()
    assert len(table) == 4  # 2 poolings x 2 directions
    for pooling in ("cls", "mean"):
        forward, backward = _expected_accuracy(tiny_hub_model, pooling)
        got = table[table["embedding"] == pooling].set_index("source")["value"]
        # values are stored rounded to 6 decimals
        assert forward[0] - 1e-6 <= got["en-US"] <= forward[1] + 1e-6
        assert backward[0] - 1e-6 <= got["de-DE"] <= backward[1] + 1e-6
    assert set(table["encoder"]) == {tiny_hub_model.name}
    markdown = catalog["raw_encoder_retrieval_markdown"].load()
    assert "| pooling | en→de | de→en |" in markdown
    metrics = catalog["embeddings_metrics"].load()
    assert set(metrics) == {f"raw.{p}.{d}.acc1" for p in ("cls", "mean") for d in ("en_US_to_de_DE", "de_DE_to_en_US")}
    (namespace,) = (tmp_path / "store").glob("v2-*")  # one encoder and setting
    entries = sorted(p.name for p in (namespace / "lists").iterdir())
    assert len(entries) == 2  # the English and the German side

    caplog.clear()
    with caplog.at_level(logging.INFO):
        SequentialRunner().run(create_pipeline(pairs=["en_de"]), _catalog(tiny_hub_model, tmp_path / "store"))
    assert caplog.text.count("2 list(s) already stored, nothing to encode") == 1  # both sides in one pass
    assert "encoding" not in caplog.text.replace("nothing to encode", "")
    assert sorted(p.name for p in (namespace / "lists").iterdir()) == entries


def test_a_partition_the_pair_table_lacks_is_named(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStoreDataset(str(tmp_path)).load()
    with pytest.raises(ValueError, match=r"embeddings.partitions: \['validation'\] not in the pair table"):
        embed_pair_texts(_pairs(), encoder, store, EXTRACTION, ["validation"])
