"""The long metrics table upserts by key; embedding manifests reopen store entries."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from kedro.io import DatasetError

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset, EmbeddingStoreDataset
from language_agnostic.datasets.metrics import METRIC_COLUMNS, MetricsTableDataset


def _row(value: float, method: str = "raw", embedding: str = "mean", pipeline: str = "embeddings") -> dict:
    return {"pipeline": pipeline, "method": method, "embedding": embedding, "task": "cross_lingual_retrieval",
            "dataset": "massive_test", "source": "en-US", "target": "de-DE", "metric": "accuracy@1",
            "value": value, "encoder": "tiny", "run_id": "r1"}


def test_metrics_table_upserts_rows_by_key(tmp_path: Path):
    table = MetricsTableDataset(str(tmp_path / "metrics.csv"))
    assert list(table.load().columns) == METRIC_COLUMNS and table.load().empty
    table.save(pd.DataFrame([_row(0.5), _row(0.4, embedding="cls")]))
    table.save(pd.DataFrame([_row(0.6), _row(0.9, method="fmda", pipeline="fmda")]))
    stored = table.load()
    assert stored[["pipeline", "method", "embedding", "value"]].values.tolist() == [
        ["embeddings", "raw", "cls", 0.4],
        ["embeddings", "raw", "mean", 0.6],  # replaced, not duplicated
        ["fmda", "fmda", "mean", 0.9],
    ]


def test_metrics_table_rejects_rows_without_the_columns(tmp_path: Path):
    with pytest.raises(DatasetError, match=r"metric rows lack column\(s\) \['encoder'\]"):
        MetricsTableDataset(str(tmp_path / "m.csv")).save(pd.DataFrame([{k: v for k, v in _row(1).items() if k != "encoder"}]))


def test_manifest_round_trip_and_missing_entry(tmp_path: Path):
    entry = tmp_path / "store" / "abc"
    entry.mkdir(parents=True)
    (entry / "meta.json").write_text('{"n_texts": 3, "dim": 4}')
    from language_agnostic.encoders.extraction import EmbeddingSet

    dataset = EmbeddingManifestDataset(str(tmp_path / "manifest.json"))
    dataset.save({"sets": {"source": EmbeddingSet(entry)}, "ids": ["1", "2", "3"]})
    loaded = dataset.load()
    assert loaded["ids"] == ["1", "2", "3"]
    assert len(loaded["sets"]["source"]) == 3 and loaded["sets"]["source"].dim == 4
    (entry / "meta.json").unlink()
    with pytest.raises(DatasetError, match="points to a missing embedding entry"):
        dataset.load()
    store = EmbeddingStoreDataset(str(tmp_path / "store")).load()
    assert store.report() == []  # a directory without namespace.json is not part of the store
