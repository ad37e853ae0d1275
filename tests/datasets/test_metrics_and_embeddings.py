"""The long metrics table upserts by key; embedding manifests reopen store entries."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from kedro.io import DatasetError

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset, EmbeddingStoreDataset
from language_agnostic.datasets.metrics import METRIC_COLUMNS, MetricsTableDataset


def _row(value: float, method: str = "raw", embedding: str = "mean", pipeline: str = "embeddings") -> dict:
    return {
        "pipeline": pipeline,
        "method": method,
        "embedding": embedding,
        "task": "cross_lingual_retrieval",
        "dataset": "massive_test",
        "source": "en-US",
        "target": "de-DE",
        "metric": "accuracy@1",
        "value": value,
        "encoder": "tiny",
        "run_id": "r1",
    }


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
        MetricsTableDataset(str(tmp_path / "m.csv")).save(
            pd.DataFrame([{k: v for k, v in _row(1).items() if k != "encoder"}])
        )


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


def test_outcomes_upsert_whole_groups_and_load_empty_when_missing(tmp_path):
    from language_agnostic.datasets.outcomes import OUTCOME_COLUMNS, OutcomesDataset

    store = OutcomesDataset(str(tmp_path / "o.parquet"))
    assert list(store.load().columns) == OUTCOME_COLUMNS and len(store.load()) == 0

    def rows(method, queries, correct, run):
        return pd.DataFrame(
            {
                "pipeline": "emu",
                "method": method,
                "task": "intent_nn",
                "source": "en-US",
                "target": "en-US",
                "query": queries,
                "correct": correct,
                "run_id": run,
            }
        )

    store.save(
        pd.concat([rows("a", ["1", "2", "3"], [True, False, True], "r1"), rows("b", ["1", "2"], [False, False], "r1")])
    )
    store.save(rows("a", ["1", "2"], [False, True], "r2"))  # a re-run of a replaces all of a's queries, b stays
    out = store.load().sort_values(["method", "query"])
    assert out[["method", "query", "correct", "run_id"]].values.tolist() == [
        ["a", "1", False, "r2"],
        ["a", "2", True, "r2"],
        ["b", "1", False, "r1"],
        ["b", "2", False, "r1"],
    ]
    with pytest.raises(DatasetError, match=r"outcome rows lack column\(s\) \[.correct.\]"):
        store.save(rows("a", ["1"], [True], "r3").drop(columns="correct"))
