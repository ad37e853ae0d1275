"""``export``: the heads in data/06_models written as sentence-transformers models, the rest named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from sentence_transformers import SentenceTransformer

from language_agnostic.datasets.directory import ModelShelf
from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.registry import artifact, get_method, load_trained
from language_agnostic.methods.trained import write_artifact
from language_agnostic.pipelines.export import nodes
from language_agnostic.pipelines.export.pipeline import create_pipeline
from language_agnostic.pipelines.project_config import PipelineConfigurationError

TEXTS = ["wake me up at nine am", "spiel etwas musik", "play some jazz music"]
QE = {"ablations": {}}
EXTRACTION = {"prefix": "query: ", "max_length": None}


def _plan(export: dict) -> dict:
    return nodes.plan_exports(export, QE, {}, {}, {}, {}, {})


def test_plan_lists_the_heads_of_the_sources_and_names_mistakes():
    plan = _plan({"sources": ["qe"]})
    assert [m["name"] for m in plan["models"]] == ["dream@qe", "meat@qe", "seed@qe"]  # centring is not a head
    assert [m["name"] for m in _plan({"sources": ["qe"], "only": "seed@qe"})["models"]] == ["seed@qe"]
    with pytest.raises(PipelineConfigurationError, match=r"export: unknown key\(s\) \['sorces'\]"):
        _plan({"sorces": ["qe"]})
    with pytest.raises(PipelineConfigurationError, match=r"export.sources: \['emu'\] have no pooled heads"):
        _plan({"sources": ["emu"]})
    with pytest.raises(PipelineConfigurationError, match=r"export.only: \['dream@sts'\] are not heads"):
        _plan({"sources": ["qe"], "only": ["dream@sts"]})


def test_export_writes_what_is_there_and_skips_the_rest(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    torch.manual_seed(0)
    head = get_method("seed").build(encoder.hidden_size, 2, {})
    with torch.no_grad():
        for parameter in head.parameters():
            parameter.normal_(0, 0.2)
    saved = artifact("seed", head, encoder.hidden_size, 2, pooling="mean", mlflow_run_id="abc")
    write_artifact(saved, tmp_path / "models" / "qe" / "seed.safetensors")
    out = tmp_path / "st"
    export = {"sources": ["qe"], "out_dir": str(out)}
    catalog = DataCatalog(
        {
            "models_directory": MemoryDataset(ModelShelf(tmp_path / "models"), copy_mode="assign"),
            "encoder": MemoryDataset(encoder, copy_mode="assign"),
            "encoder_identity": MemoryDataset(dict(encoder.identity)),
            "params:export": MemoryDataset(export),
            "params:embeddings.extraction": MemoryDataset(EXTRACTION),
            **{f"params:{name}": MemoryDataset({}) for name in ("sts", "massive", "fmda", "fmda_paper", "emu")},
            "params:qe": MemoryDataset(QE),
            "export_report": MemoryDataset(),
        }
    )
    pipeline = create_pipeline().only_nodes("plan_exports_node", "export_models_node")
    SequentialRunner().run(pipeline, catalog)
    report = catalog["export_report"].load()
    assert [e["name"] for e in report["exported"]] == ["seed@qe"]
    assert report["exported"][0]["directory"] == str(out / "qe" / "seed")
    assert report["exported"][0]["mlflow_run_id"] == "abc"
    skipped = {s["method"]: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {"dream@qe", "meat@qe"}
    assert (
        skipped["dream@qe"]
        == f"{tmp_path / 'models' / 'qe' / 'dream.safetensors'} not found; `kedro run --pipeline=qe` makes it"
    )
    # the exported model gives the project's vectors
    settings = ExtractionSettings(prefix="query: ", dtype="float32", device="cpu", batch_size=2, progress=False)
    pooled = extract_embeddings(encoder, TEXTS, settings, EmbeddingStore(tmp_path / "store")).vectors("mean")
    ours = control_meaning(load_trained(saved)[1], np.asarray(pooled), "seed")
    theirs = SentenceTransformer(str(out / "qe" / "seed"), device="cpu").encode(TEXTS)
    np.testing.assert_allclose(theirs, ours, atol=1e-4, rtol=1e-4)
    record = json.loads((out / "qe" / "seed" / "language_agnostic.json").read_text())
    assert record["source_file"] == str(tmp_path / "models" / "qe" / "seed.safetensors")
