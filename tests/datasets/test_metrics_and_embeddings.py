"""The long metrics table upserts by key and keeps one configuration per method; embedding manifests reopen
store entries."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from kedro.io import DatasetError

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset, EmbeddingStoreDataset
from language_agnostic.datasets.metrics import STORED_COLUMNS, MetricsTableDataset, set_method_configs


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
    assert list(table.load().columns) == STORED_COLUMNS and table.load().empty
    table.save(pd.DataFrame([_row(0.5), _row(0.4, embedding="cls")]))
    table.save(pd.DataFrame([_row(0.6), _row(0.9, method="fmda", pipeline="fmda")]))
    stored = table.load()
    assert stored[["pipeline", "method", "embedding", "value"]].values.tolist() == [
        ["embeddings", "raw", "cls", 0.4],
        ["embeddings", "raw", "mean", 0.6],  # replaced, not duplicated
        ["fmda", "fmda", "mean", 0.9],
    ]


def _fmda_rows(method: str, pairs: list[tuple[str, str]], value: float, run: str) -> list[dict]:
    return [
        {**_row(value, method=method, embedding="m", pipeline="fmda"), "source": s, "target": t, "run_id": run}
        for s, t in pairs
    ]


PAIRS = [("en-US", "de-DE"), ("en-US", "es-ES"), ("en-US", "ja-JP")]


def test_an_edit_on_one_pair_leaves_one_configuration_per_method(tmp_path: Path):
    """A default run on three pairs, then the temperature edit on EN-DE only: ``fmda-infonce`` keeps the
    edited EN-DE row alone (none of the default's), every other method keeps its default rows."""
    table = MetricsTableDataset(str(tmp_path / "metrics.csv"), leaderboard=None)
    try:
        set_method_configs({("fmda", "fmda"): "aaaa", ("fmda", "fmda-infonce"): "bbbb"})
        table.save(pd.DataFrame(_fmda_rows("fmda", PAIRS, 0.7, "r1") + _fmda_rows("fmda-infonce", PAIRS, 0.8, "r1")))
        set_method_configs({})
        set_method_configs({("fmda", "fmda"): "aaaa", ("fmda", "fmda-infonce"): "cccc"})
        table.save(
            pd.DataFrame(_fmda_rows("fmda", PAIRS[:1], 0.7, "r2") + _fmda_rows("fmda-infonce", PAIRS[:1], 0.6, "r2"))
        )
    finally:
        set_method_configs({})
    stored = table.load()
    assert stored[["method", "target", "value", "run_id", "config"]].values.tolist() == [
        ["fmda", "de-DE", 0.7, "r2", "aaaa"],  # the same configuration: refreshed by r2,
        ["fmda", "es-ES", 0.7, "r1", "aaaa"],  # and r1's other pairs stay
        ["fmda", "ja-JP", 0.7, "r1", "aaaa"],
        ["fmda-infonce", "de-DE", 0.6, "r2", "cccc"],  # another configuration: r1's rows all gone
    ]
    assert stored.groupby("method")["config"].nunique().max() == 1


def test_rows_saved_with_their_own_config_and_a_table_without_the_column(tmp_path: Path):
    path = tmp_path / "metrics.csv"
    pd.DataFrame(_fmda_rows("fmda", PAIRS, 0.7, "r0")).to_csv(path, index=False)  # written before `config`
    table = MetricsTableDataset(str(path), leaderboard=None)
    assert table.load()["config"].tolist() == ["", "", ""]
    table.save(pd.DataFrame([{**r, "config": "dddd"} for r in _fmda_rows("fmda", PAIRS[2:], 0.5, "r1")]))
    assert table.load()[["target", "config"]].values.tolist() == [["ja-JP", "dddd"]]


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


def test_a_manifest_names_its_lists_relative_to_itself_so_a_moved_data_folder_opens_its_own(tmp_path: Path):
    from language_agnostic.encoders.extraction import EmbeddingSet

    def entry(root: Path, n: int) -> Path:
        directory = root / "04_feature" / "embeddings" / "v2-ns" / "lists" / "k1"
        directory.mkdir(parents=True)
        (directory / "meta.json").write_text(json.dumps({"n_texts": n, "dim": 4}))
        return directory

    old, elsewhere = tmp_path / "old" / "data", tmp_path / "cache" / "embeddings" / "v2-ns" / "lists" / "k2"
    inside = entry(old, 3)
    elsewhere.mkdir(parents=True)
    (elsewhere / "meta.json").write_text(json.dumps({"n_texts": 5, "dim": 4}))
    manifest = old / "04_feature" / "en_de" / "fmda_inputs.json"
    EmbeddingManifestDataset(str(manifest)).save({"sets": {"a": EmbeddingSet(inside), "b": EmbeddingSet(elsewhere)}})
    assert json.loads(manifest.read_text())["sets"] == {
        "a": "../embeddings/v2-ns/lists/k1",  # the catalog's store, inside the same data/
        "b": str(elsewhere.resolve()),  # a store outside it stays where it is when data/ moves
    }
    new = tmp_path / "new" / "data"
    shutil.copytree(old, new)  # the old data/ stays: an absolute path would open its list (3 texts)
    (new / "04_feature" / "embeddings" / "v2-ns" / "lists" / "k1" / "meta.json").write_text(
        json.dumps({"n_texts": 7, "dim": 4})  # the copy's own list, told apart by its count
    )
    loaded = EmbeddingManifestDataset(str(new / "04_feature" / "en_de" / "fmda_inputs.json")).load()
    assert (len(loaded["sets"]["a"]), len(loaded["sets"]["b"])) == (7, 5)
    # a manifest of an earlier version (absolute paths) still opens
    manifest = new / "04_feature" / "en_de" / "old.json"
    manifest.write_text(json.dumps({"sets": {"b": str(elsewhere)}}))
    assert len(EmbeddingManifestDataset(str(manifest)).load()["sets"]["b"]) == 5


def test_outcomes_upsert_whole_groups_and_load_empty_when_missing(tmp_path):
    from language_agnostic.datasets.outcomes import STORED_COLUMNS as OUTCOME_STORED
    from language_agnostic.datasets.outcomes import OutcomesDataset

    store = OutcomesDataset(str(tmp_path / "o.parquet"))
    assert list(store.load().columns) == OUTCOME_STORED and len(store.load()) == 0

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
    # rows of b under another configuration: b's old groups go, whatever their direction
    store.save(rows("b", ["1"], [True], "r4").assign(target="de-DE", config="other"))
    out = store.load()
    assert out[out["method"] == "b"][["target", "run_id", "config"]].values.tolist() == [["de-DE", "r4", "other"]]
