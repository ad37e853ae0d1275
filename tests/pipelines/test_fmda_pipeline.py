"""The ``fmda`` pipeline on small tables with a tiny local encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from language_agnostic.datasets.embeddings import EmbeddingStoreDataset
from language_agnostic.datasets.torch_state import TrainedHeadDataset
from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1
from language_agnostic.pipelines.fmda.pipeline import create_pipeline

EN = ["wake me up at nine", "play jazz music", "what is the weather", "set an alarm for six", "play some music",
      "what is the weather today", "wake me up", "set an alarm", "play jazz", "weather today", "alarm for nine",
      "music please", "wake me at six", "jazz for me", "the weather at nine", "set music"]
DE = ["weck mich um neun", "spiel jazz musik", "wie ist das wetter", "stelle einen wecker", "spiel etwas musik",
      "wie ist das wetter heute", "weck mich", "wecker stellen", "spiel jazz", "wetter heute", "wecker um neun",
      "musik bitte", "weck mich um sechs", "jazz für mich", "das wetter um neun", "musik an"]
PARTITIONS = ["train"] * 8 + ["dev"] * 4 + ["test"] * 4
EXTRACTION = {"prefix": "", "dtype": "float32", "device": "cpu", "batch_size": 4, "progress": False}
TRAINING = {"batch_size": 4, "lr": 1e-3, "max_epochs": 2, "patience": 2, "seed": 0, "progress": False}


def _masked() -> pd.DataFrame:
    rows = []
    for locale, texts in (("en-US", EN), ("de-DE", DE)):
        for i, (text, partition) in enumerate(zip(texts, PARTITIONS)):
            words = text.split()
            rows.append({"locale": locale, "id": str(i), "partition": partition, "utt": text,
                         "template_text": " ".join(words[:-1] + ["[MASK]"]), "residual_text": "[MASK] " + words[-1],
                         "n_slot_tokens": 1})
    return pd.DataFrame(rows)


def _template(k: int) -> pd.DataFrame:
    rows = []
    for locale, texts in (("en-US", EN), ("de-DE", DE)):
        for source in range(12, 16):
            for index in range(k):
                rows.append({"locale": locale, "source_id": str(source), "target_index": index, "template": "x",
                             "source_utt": texts[source], "target_utt": texts[(source + index + 1) % 16]})
    return pd.DataFrame(rows)


def _catalog(model_dir: Path, store: Path) -> DataCatalog:
    params: dict[str, Any] = {
        "params:embeddings.encoder": {"name": str(model_dir)},
        "params:embeddings.extraction": EXTRACTION,
        "params:massive.pairs.en_de": {"source": "en-US", "target": "de-DE"},
        "params:fmda.model": {"ffn_layers": 1, "mlp_layers": 1, "activation": "gelu", "attention_scale": "sqrt_d",
                              "utterance_target": "cls"},
        "params:fmda.variant": {"ablation": "full", "loss_weights": {}},
        "params:fmda.training": TRAINING,
        "params:fmda.dream": {"pooling": "cls", "activation": "none", "loss_weights": {}, "training": TRAINING},
    }
    pools = pd.DataFrame([{"locale": loc, "id": str(i), "utt": ""} for loc in ("en-US", "de-DE") for i in range(0, 8, 2)])
    return DataCatalog({
        "massive_masked_texts": MemoryDataset(_masked()),
        "massive_template_retrieval_single": MemoryDataset(_template(1)),
        "massive_template_retrieval_multi": MemoryDataset(_template(2)),
        "massive_negative_pools": MemoryDataset(pools),
        "embedding_store": EmbeddingStoreDataset(str(store)),
        "encoder": MemoryDataset(copy_mode="assign"),
        # on disk (safetensors), so the runner does not release it after evaluation
        "en_de.fmda_model": TrainedHeadDataset(str(store.parent / "fmda.safetensors")),
        **{name: MemoryDataset(value) for name, value in params.items()},
    })


def test_fmda_pipeline_end_to_end_on_tiny_data(tiny_hub_model: Path, tmp_path: Path):
    catalog = _catalog(tiny_hub_model, tmp_path / "store")
    SequentialRunner().run(create_pipeline(pairs=["en_de"]), catalog)
    table = catalog["fmda_metrics_table"].load()
    embeddings = {("raw", "cls"), ("raw", "mean"), ("centering", "mean"), ("dream", "meaning"),
                  ("fmda", "m"), ("fmda", "tp"), ("fmda", "rs")}
    assert set(zip(table["method"], table["embedding"])) == embeddings
    # 7 embeddings x (2 retrieval directions + 2 locales x (accuracy@1 + MAP))
    assert len(table) == 7 * (2 + 4)
    assert table["value"].between(0, 1).all()
    # the raw rows equal retrieval computed here from the encoder directly
    encoder = load_encoder(str(tiny_hub_model))
    settings = ExtractionSettings(**EXTRACTION)
    store = EmbeddingStore(tmp_path / "check")
    a = extract_embeddings(encoder, EN[12:], settings, store).vectors("mean")
    b = extract_embeddings(encoder, DE[12:], settings, store).vectors("mean")
    raw = table[(table["method"] == "raw") & (table["embedding"] == "mean") & (table["task"] == "cross_lingual_retrieval")]
    assert raw.set_index("source")["value"].to_dict() == pytest.approx(
        {"en-US": retrieval_accuracy_at_1(a, b), "de-DE": retrieval_accuracy_at_1(b, a)})
    model = catalog["en_de.fmda_model"].load()
    assert model["ablation"] == "full" and 1 <= model["best_epoch"] <= 2
    history = catalog["en_de.fmda_history"].load()
    assert [point["step"] for point in history["fmda.dev_total"]] == [1, 2]
    markdown = catalog["fmda_tables_markdown"].load()
    assert "## Cross-lingual semantic retrieval, accuracy@1 (Table 2)" in markdown
    assert "| fmda/tp |" in markdown


def test_unknown_ablation_is_named(tiny_hub_model: Path, tmp_path: Path):
    from language_agnostic.pipelines.fmda.nodes import train_fmda

    with pytest.raises(ValueError, match="fmda.variant.ablation must be one of"):
        train_fmda({"sets": {}}, pd.DataFrame(), {}, {"ablation": "no_everything"}, {"max_epochs": 1})


def test_unknown_training_and_model_keys_are_named():
    from language_agnostic.pipelines.fmda.nodes import train_fmda

    with pytest.raises(ValueError, match=r"fmda.training: unknown key\(s\) \['epochs'\]"):
        train_fmda({"sets": {}}, pd.DataFrame(), {}, {"ablation": "full"}, {"epochs": 3})
