"""TarArchiveDataset: members read lazily in place; a missing archive says where to get it."""

from __future__ import annotations

from pathlib import Path

import pytest
from kedro.io import DatasetError

from language_agnostic.corpora.errors import MissingRawDataError
from language_agnostic.datasets import TarArchiveDataset
from tests.conftest import write_massive_archive

URL = "https://amazon-massive-nlu-dataset.s3.amazonaws.com/amazon-massive-dataset-1.1.tar.gz"


def test_members_are_listed_and_read_on_demand(tmp_path: Path):
    path = write_massive_archive(tmp_path / "a.tar.gz", {"en-US": "line one\n", "ja-JP": "日本語\n"})
    members = TarArchiveDataset(str(path), "test archive", URL).load()
    assert list(members) == ["1.1/data/en-US.jsonl", "1.1/data/ja-JP.jsonl"]
    assert len(members) == 2
    assert members.source == str(path)
    assert members["1.1/data/ja-JP.jsonl"]() == "日本語\n"
    with pytest.raises(KeyError):
        members["1.1/data/fr-FR.jsonl"]


def test_missing_archive_names_the_path_the_url_and_the_override(tmp_path: Path):
    path = tmp_path / "massive" / "amazon-massive-dataset-1.1.tar.gz"
    dataset = TarArchiveDataset(str(path), "MASSIVE 1.1 tarball", URL)
    assert not dataset.exists()
    with pytest.raises(DatasetError) as info:
        dataset.load()
    # Kedro wraps load errors; the original is kept as the cause
    cause = info.value.__cause__ if not isinstance(info.value, MissingRawDataError) else info.value
    assert isinstance(cause, MissingRawDataError)
    message = str(cause)
    assert message.startswith(f"MASSIVE 1.1 tarball not found at '{path}'. Download it from {URL}")
    assert "LANGUAGE_AGNOSTIC_DATA_ROOT" in message
    assert "--params=raw_data_root=" in message


def test_not_a_tar_archive(tmp_path: Path):
    path = tmp_path / "broken.tar.gz"
    path.write_bytes(b"this is not a tarball")
    with pytest.raises(DatasetError, match="is not a readable tar archive"):
        TarArchiveDataset(str(path)).load()


def test_raw_data_is_read_only(tmp_path: Path):
    path = write_massive_archive(tmp_path / "a.tar.gz", {"en-US": ""})
    dataset = TarArchiveDataset(str(path), "MASSIVE 1.1 tarball")
    with pytest.raises(DatasetError, match="raw data and read-only"):
        dataset.save(dataset.load())


def test_datasets_that_inherit_init_keep_their_settings_by_name(tmp_path: Path) -> None:
    # Kedro's `kedro catalog` / viz show _init_config(); an inherited __init__ used to give {"args", "kwargs"}
    from language_agnostic.datasets.archive import ZipArchiveDataset
    from language_agnostic.datasets.directory import TrainedModelsDataset
    from language_agnostic.datasets.embeddings import EmbeddingStoreDataset

    zipped = ZipArchiveDataset(str(tmp_path / "sts.zip"), description="STS17", source_url="https://x")
    assert zipped._init_config() == {
        "type": "language_agnostic.datasets.archive.ZipArchiveDataset",
        "filepath": str(tmp_path / "sts.zip"),
        "description": "STS17",
        "source_url": "https://x",
        "encoding": "utf-8",
    }
    store, shelf = EmbeddingStoreDataset(str(tmp_path / "store")), TrainedModelsDataset(str(tmp_path / "models"))
    assert store._init_config() == {
        "type": f"{EmbeddingStoreDataset.__module__}.EmbeddingStoreDataset",
        "path": str(tmp_path / "store"),
    }
    assert shelf._init_config() == {
        "type": f"{TrainedModelsDataset.__module__}.TrainedModelsDataset",
        "path": str(tmp_path / "models"),
    }
    assert store.load().root == tmp_path / "store"
    assert shelf.load().root == tmp_path / "models"
    with pytest.raises(DatasetError, match="the embedding store is written by extraction nodes"):
        store.save(store.load())
    with pytest.raises(DatasetError, match="trained models are written by the pipelines that train them"):
        shelf.save(shelf.load())
