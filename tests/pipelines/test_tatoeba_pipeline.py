"""The ``tatoeba`` pipeline end to end on tiny data: a tiny encoder, three tiny language pairs,
a few tiny trained models.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset

from language_agnostic.datasets.directory import TextDirectoryDataset, TrainedModelsDataset
from language_agnostic.datasets.embeddings import EmbeddingStoreDataset
from language_agnostic.datasets.metrics import MetricsTableDataset
from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1
from language_agnostic.methods.registry import artifact, build
from language_agnostic.methods.trained import write_artifact
from language_agnostic.pipelines.tatoeba import create_pipeline
from tests.conftest import PROJECT_ROOT

EXTRACTION = {"prefix": "", "dtype": "float32", "device": "cpu", "batch_size": 4, "progress": False}
# words of the tiny encoder's vocabulary (tests/conftest.py); xho and fra stand for languages no model saw
PAIRS = {
    "deu": (
        ["weck mich um neun", "spiel etwas musik", "weck mich"],
        ["wake me up at nine", "play some jazz music", "wake me up"],
    ),
    "fra": (["play music", "set alarm"], ["play some music", "set an alarm for six"]),
    "xho": (["what is the weather", "alarm"], ["what is the weather today", "wake me up"]),
}


def _conf() -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name in ("qe", "sts", "massive", "fmda", "emu", "tatoeba"):
        params.update(yaml.safe_load((PROJECT_ROOT / "conf" / "base" / f"parameters_{name}.yml").read_text()))
    params["fmda_paper"] = {"variants": {}, "unified": {"pairs": []}}
    return params


def _data(tmp_path: Path, model_dir: Path) -> tuple[Path, Path]:
    folder = tmp_path / "tatoeba" / "v1"
    folder.mkdir(parents=True)
    for language, (xxx, eng) in PAIRS.items():
        (folder / f"tatoeba.{language}-eng.{language}").write_text("\n".join(xxx) + "\n", encoding="utf-8")
        (folder / f"tatoeba.{language}-eng.eng").write_text("\n".join(eng) + "\n", encoding="utf-8")
    models = tmp_path / "06_models"
    identity = load_encoder(str(model_dir)).identity
    torch.manual_seed(0)
    write_artifact(
        artifact(
            "dream",
            build("dream", 16, 8, {"activation": "none"}),
            16,
            8,
            {"activation": "none"},
            encoder=identity,
            pooling="mean",
            name="dream",
        ),
        models / "qe" / "dream.safetensors",
    )
    write_artifact(
        {"state_dict": {"de": torch.full((16,), 0.1), "en": torch.zeros(16)}, "method": "centering", "pooling": "mean"},
        models / "qe" / "centering.safetensors",
    )
    options = {
        "ffn_layers": 1,
        "mlp_layers": 1,
        "activation": "gelu",
        "attention_scale": "sqrt_d",
        "utterance_target": "mean",
        "init": "identity",
    }
    write_artifact(
        {
            **artifact("fmda", build("fmda", 16, 2, options), 16, 2, options, encoder=identity),
            "variant": "all_together",
        },
        models / "en_de" / "fmda_all_together.safetensors",
    )
    shutil.copytree(model_dir, models / "emu" / "encoders" / "emu")  # a "fine-tuned" encoder that equals the raw one
    return folder, models


def _catalog(tmp_path: Path, model_dir: Path, folder: Path, models: Path) -> DataCatalog:
    conf = _conf()
    params = {
        "params:embeddings.encoder": {"name": str(model_dir)},
        "params:embeddings.extraction": EXTRACTION,
        **{f"params:{key}": conf[key] for key in ("qe", "sts", "massive", "fmda", "fmda_paper", "emu")},
        **{f"params:tatoeba.{key}": value for key, value in conf["tatoeba"].items()},
    }
    params["params:tatoeba.ingest"] = {**conf["tatoeba"]["ingest"], "expected_pairs": 3}
    params["params:tatoeba.evaluation"] = {**conf["tatoeba"]["evaluation"], "progress": False}
    return DataCatalog(
        {
            "tatoeba_files": TextDirectoryDataset(str(folder), pattern="tatoeba.*-eng.*"),
            "models_directory": TrainedModelsDataset(str(models)),
            "embedding_store": EmbeddingStoreDataset(str(tmp_path / "store")),
            "encoder": MemoryDataset(copy_mode="assign"),
            "tatoeba_models": MemoryDataset(copy_mode="assign"),
            "tatoeba_metrics_table": MetricsTableDataset(str(tmp_path / "metrics.csv")),
            # intermediate outputs the runner would release from memory
            "tatoeba_scores": CSVDataset(filepath=str(tmp_path / "scores.csv")),
            "tatoeba_languages": CSVDataset(
                filepath=str(tmp_path / "languages.csv"), load_args={"keep_default_na": False}
            ),
            **{name: MemoryDataset(value) for name, value in params.items()},
        }
    )


def _raw_accuracy(model_dir: Path, tmp_path: Path, language: str) -> tuple[float, float]:
    """The raw encoder's mean-pooling accuracy@1 of one pair, computed here apart from the pipeline."""
    encoder = load_encoder(str(model_dir))
    settings = ExtractionSettings(**EXTRACTION)
    store = EmbeddingStore(tmp_path / "check")
    xxx, eng = (
        np.asarray(extract_embeddings(encoder, side, settings, store).vectors("mean")) for side in PAIRS[language]
    )
    return retrieval_accuracy_at_1(xxx, eng), retrieval_accuracy_at_1(eng, xxx)


def test_every_present_model_on_every_language_both_directions(
    tiny_hub_model: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    folder, models = _data(tmp_path, tiny_hub_model)
    catalog = _catalog(tmp_path, tiny_hub_model, folder, models)
    with caplog.at_level(logging.WARNING):
        SequentialRunner().run(create_pipeline(), catalog)
    scores = catalog["tatoeba_scores"].load()
    per_method = scores.groupby(["method", "embedding"])["language"].nunique().to_dict()
    assert per_method == {
        ("raw", "mean"): 3,
        ("raw", "cls"): 3,
        ("dream@qe", "meaning"): 3,
        ("fmda@en_de", "m"): 3,
        ("emu@massive", "mean"): 3,
        ("centering@qe", "mean"): 1,
    }  # centering: deu (a "de" mean) only
    assert (scores.groupby(["method", "embedding", "language"]).size() == 4).all()  # 2 directions x 2 scorings
    # the raw encoder against an independent computation, per direction
    deu = scores[
        (scores["method"] == "raw")
        & (scores["embedding"] == "mean")
        & (scores["language"] == "deu")
        & (scores["scoring"] == "cosine")
    ].set_index("source")["accuracy"]
    assert (deu["deu"], deu["eng"]) == pytest.approx(_raw_accuracy(tiny_hub_model, tmp_path, "deu"))
    # the "fine-tuned" encoder is a copy of the raw one: its own encoding pass gives the same answers
    key = ["language", "source", "scoring"]
    emu = scores[scores["method"] == "emu@massive"].set_index(key)["accuracy"]
    raw = scores[(scores["method"] == "raw") & (scores["embedding"] == "mean")].set_index(key)["accuracy"]
    pd.testing.assert_series_equal(emu.sort_index(), raw.sort_index(), check_names=False)

    languages = catalog["tatoeba_languages"].load().set_index("language")
    assert languages.loc["deu", ["iso639_1", "script", "pairs", "seen"]].tolist() == ["de", "Latn", 3, True]
    assert "qe" in languages.loc["deu", "seen_by"] and not languages.loc["xho", "seen"]
    assert languages.loc["fra", "seen_by"] == "sts"  # the STS corpus holds French
    # every model not on disk is named with the command that makes it
    assert (
        "tatoeba: meat@qe skipped: " in caplog.text
        and "qe/meat.safetensors not found; `kedro run --pipelines=qe` makes it" in caplog.text
    )
    report = catalog["tatoeba_report_markdown"].load()
    assert "- `seed@sts`: " in report and "## Averages, cosine similarity" in report
    metrics = pd.read_csv(tmp_path / "metrics.csv")
    tatoeba = metrics[metrics["pipeline"] == "tatoeba"]
    assert len(tatoeba) == len(scores) and set(tatoeba["encoder"]) == {
        load_encoder(str(tiny_hub_model)).identity["name"]
    }
    assert set(tatoeba["task"]) == {"bitext_retrieval"} and set(tatoeba["metric"]) == {
        "accuracy@1",
        "margin_accuracy@1",
    }
    board = (tmp_path / "leaderboard.md").read_text()
    assert "bitext_retrieval / tatoeba / accuracy@1 (deu, eng, fra, xho: 6)" in board
    assert catalog["tatoeba_metrics"].load()["tatoeba.ingest.total.pairs"]["value"] == 7.0
    per_language = catalog["tatoeba_per_language"].load()
    assert {"accuracy", "error", "xxx_to_eng", "eng_to_xxx", "seen", "script"} <= set(per_language.columns)
    assert len(catalog["tatoeba_figure"].load().axes) == 2

    # a warm rerun encodes nothing: both lists (raw with token states for FMDA, and the fine-tuned encoder's, each
    # in its encoder's namespace) are stored, and so is FMDA's meaning table
    entries = sorted(p.name for p in (tmp_path / "store").glob("v2-*/lists/*"))
    derived = sorted(p.name for p in next((tmp_path / "store").glob("v2-*/derived")).iterdir())
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="language_agnostic"):
        SequentialRunner().run(create_pipeline(), _catalog(tmp_path, tiny_hub_model, folder, models))
    assert caplog.text.count("1 list(s) already stored, nothing to encode") == 2 and "encoding" not in caplog.text
    assert "fmda@en_de: meaning embeddings cache hit" in caplog.text
    assert sorted(p.name for p in (tmp_path / "store").glob("v2-*/lists/*")) == entries and len(entries) == 2
    assert (
        sorted(p.name for p in next((tmp_path / "store").glob("v2-*/derived")).iterdir()) == derived
        and len(derived) == 1
    )
    pd.testing.assert_frame_equal(catalog["tatoeba_scores"].load(), scores)


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch):
    """The project bootstrapped from its root, as tests/pipelines/test_project.py does;
    pipelines built from conf/ again after.
    """
    from kedro.framework.startup import bootstrap_project

    from language_agnostic.pipelines.project_config import forget_session_config

    monkeypatch.chdir(PROJECT_ROOT)
    bootstrap_project(PROJECT_ROOT)
    yield PROJECT_ROOT
    forget_session_config()


def test_the_registry_and_the_catalog_follow_the_raw_data_root(project: Path, tmp_path: Path):
    from kedro.framework.session import KedroSession

    from language_agnostic.pipeline_registry import register_pipelines

    with KedroSession.create(PROJECT_ROOT, runtime_params={"raw_data_root": str(tmp_path)}) as session:
        catalog = session.load_context().catalog
        pipelines = register_pipelines()
        assert catalog["tatoeba_files"]._describe()["path"] == f"{tmp_path}/tatoeba/v1"  # noqa: SLF001
        with pytest.raises(
            Exception, match=rf"LASER Tatoeba test sets \(tatoeba/v1\) not found at '{tmp_path}/tatoeba/v1'"
        ):
            catalog.load("tatoeba_files")
        assert catalog["tatoeba_models"]._copy_mode == "assign"  # noqa: SLF001
    names = {n.name for n in pipelines["tatoeba"].nodes}
    assert {"ingest_tatoeba_node", "evaluate_tatoeba_node", "report_tatoeba_node", "load_encoder_node"} <= names
    assert "parse_massive_node" not in names  # it reads no MASSIVE output
