"""``export``: the heads in data/06_models written as sentence-transformers models, the rest named."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import mlflow
import mlflow.pyfunc
import numpy as np
import pytest
import torch
import yaml
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from sentence_transformers import SentenceTransformer

from language_agnostic.datasets.directory import ModelShelf
from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.export import exportable
from language_agnostic.methods.fmda import encode_with_fmda
from language_agnostic.methods.registry import artifact, get_method, load_trained
from language_agnostic.methods.trained import write_artifact
from language_agnostic.pipelines.export import nodes
from language_agnostic.pipelines.export.pipeline import create_pipeline
from language_agnostic.pipelines.project_config import PipelineConfigurationError

TEXTS = ["wake me up at nine am", "spiel etwas musik", "play some jazz music"]
QE = {"ablations": {}}
EXTRACTION = {"prefix": "query: ", "max_length": None}


def _plan(export: dict, emu: dict | None = None) -> dict:
    return nodes.plan_exports(export, QE, {}, {}, {}, {}, emu or {})


def test_plan_lists_the_heads_of_the_sources_and_names_mistakes():
    plan = _plan({"sources": ["qe"]})
    assert [m["name"] for m in plan["models"]] == ["dream@qe", "meat@qe", "seed@qe"]  # centring is not a head
    assert [m["name"] for m in _plan({"sources": ["qe"], "only": "seed@qe"})["models"]] == ["seed@qe"]
    # EMU's saved fine-tuned encoders, with the pooling they were trained with
    emu = {"save_encoders": ["emu-no_ld"], "methods": {"emu-no_ld": {"options": {"pooling": "cls"}}}}
    (spec,) = _plan({"sources": ["emu"]}, emu)["models"]
    assert (spec["name"], spec["kind"], spec["path"], spec["embedding"]) == (
        "emu-no_ld@massive",
        "encoder",
        "emu/encoders/emu_no_ld",
        "cls",
    )
    with pytest.raises(
        PipelineConfigurationError, match=r"export.only: \['dream@sts'\] are not models of the configured"
    ):
        _plan({"sources": ["qe"], "only": ["dream@sts"]})


def test_export_writes_what_is_there_and_skips_the_rest(tiny_hub_model: Path, tmp_path: Path, monkeypatch, caplog):
    # the encoder check looks the head's MLflow run up: a store of the test's own, not ./mlflow.db
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
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
    with caplog.at_level(logging.INFO, logger="language_agnostic.methods.apply"):
        SequentialRunner().run(pipeline, catalog)
    report = catalog["export_report"].load()
    assert [e["name"] for e in report["exported"]] == ["seed@qe"]
    # the log names the pipeline asking (it once said "tatoeba" for every caller)
    lines = [r.getMessage() for r in caplog.records if r.name == "language_agnostic.methods.apply"]
    assert "export: 1 of 3 expected models loaded, 2 skipped" in lines
    assert any(line.startswith("export: dream@qe skipped: ") for line in lines)
    assert report["exported"][0]["directory"] == str(out / "qe" / "seed")
    assert report["exported"][0]["mlflow_run_id"] == "abc"
    assert "mlflow_model_uri" not in report["exported"][0]  # run "abc" is not in the store, and no run is active
    skipped = {s["method"]: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {"dream@qe", "meat@qe"}
    assert (
        skipped["dream@qe"]
        == f"{tmp_path / 'models' / 'qe' / 'dream.safetensors'} not found; `kedro run --pipelines=qe` makes it"
    )
    # the exported model gives the project's vectors, by each route
    settings = ExtractionSettings(prefix="query: ", dtype="float32", device="cpu", batch_size=2, progress=False)
    pooled = extract_embeddings(encoder, TEXTS, settings, EmbeddingStore(tmp_path / "store")).vectors("mean")
    ours = control_meaning(load_trained(saved)[1], np.asarray(pooled), "seed")
    directory = out / "qe" / "seed"
    pyfunc = mlflow.pyfunc.load_model(str(directory))
    np.testing.assert_allclose(np.asarray(pyfunc.predict(TEXTS)), ours, atol=1e-4, rtol=1e-4)
    theirs = SentenceTransformer(str(directory / nodes.ST_SUBDIRECTORY), device="cpu").encode(TEXTS)
    np.testing.assert_allclose(theirs, ours, atol=1e-4, rtol=1e-4)
    # a signature (strings in, a vector per string out), an input example, pinned requirements
    signature = pyfunc.metadata.get_input_schema().to_dict(), pyfunc.metadata.get_output_schema().to_dict()
    assert signature[0] == [{"type": "string", "required": True}]
    assert signature[1][0]["tensor-spec"]["dtype"] == "float32"
    assert list(signature[1][0]["tensor-spec"]["shape"]) == [-1, encoder.hidden_size]
    assert (directory / "input_example.json").is_file()
    requirements = (directory / "requirements.txt").read_text().split()
    assert {r.split("==")[0] for r in requirements} >= set(nodes.REQUIREMENTS) and all("==" in r for r in requirements)
    record = json.loads((directory / "language_agnostic.json").read_text())
    assert record["source_file"] == str(tmp_path / "models" / "qe" / "seed.safetensors")
    assert pyfunc.metadata.metadata["language_agnostic"]["name"] == "seed@qe"
    # a rerun replaces the export
    SequentialRunner().run(pipeline, catalog)
    assert (directory / "MLmodel").is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("method", ["dream", "fmda"])  # standard modules; FMDA's module shipped as a file
def test_mlflow_serves_an_exported_model_over_http(tiny_hub_model: Path, tmp_path: Path, method: str):
    """``mlflow models serve`` (local environment, 127.0.0.1) answers a list of texts with their vectors."""
    encoder = load_encoder(str(tiny_hub_model))
    torch.manual_seed(1)
    options = {"activation": "none"} if method == "dream" else {}
    model = get_method(method).build(encoder.hidden_size, 2, options)
    saved = artifact(method, model, encoder.hidden_size, 2, options, pooling="cls")
    directory = nodes.save_model(exportable(saved, encoder, "query: "), tmp_path / method, {"name": f"{method}@test"})
    expected = mlflow.pyfunc.load_model(str(directory)).predict(TEXTS)
    port = _free_port()
    mlflow_cli = Path(sys.executable).with_name("mlflow")
    # the server starts `uvicorn` by name: the interpreter's bin directory must be on PATH (as in an activated venv)
    env = {**os.environ, "PATH": f"{mlflow_cli.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    log = tmp_path / "serve.log"
    server = subprocess.Popen(
        [
            str(mlflow_cli),
            "models",
            "serve",
            "-m",
            str(directory),
            "--env-manager",
            "local",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline, answer = time.monotonic() + 120, None
        body = json.dumps({"inputs": TEXTS}).encode()
        while time.monotonic() < deadline and answer is None:
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/invocations", data=body, headers={"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(request, timeout=10) as response:
                    answer = json.loads(response.read())
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"mlflow models serve exited with {server.returncode}: {log.read_text()[-2000:]}")
                time.sleep(1)
        assert answer is not None, "no answer from mlflow models serve within 120 s"
        np.testing.assert_allclose(np.asarray(answer["predictions"]), expected, atol=1e-5)
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_fine_tuned_encoder_exports_with_its_pooling(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    # a "fine-tuned" copy of the tiny encoder, saved as the emu pipeline saves one
    torch.manual_seed(3)
    with torch.no_grad():
        for parameter in encoder.model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    tuned = tmp_path / "models" / "emu" / "encoders" / "emu"
    encoder.model.save_pretrained(tuned)
    encoder.tokenizer.save_pretrained(tuned)
    (tuned / "finetuned.json").write_text(json.dumps({"name": "emu/emu", "base": dict(encoder.identity)}))
    base = load_encoder(str(tiny_hub_model))  # the unchanged base, as configured
    out = tmp_path / "st"
    emu = {"save_encoders": ["emu"], "methods": {"emu": {"options": {"pooling": "mean"}}}}
    plan = _plan({"sources": ["emu"]}, emu)
    report = nodes.export_models(
        ModelShelf(tmp_path / "models"), plan, base, dict(base.identity), EXTRACTION, {"out_dir": str(out)}
    )
    assert [e["name"] for e in report["exported"]] == ["emu@massive"] and not report["skipped"]
    directory = out / "massive" / "emu"
    record = json.loads((directory / "language_agnostic.json").read_text())
    assert (record["method"], record["pooling"], record["encoder"]["name"]) == ("emu", "mean", "emu/emu")
    # the project's vectors of the fine-tuned encoder: the extraction stage over its directory (fp32)
    settings = ExtractionSettings(prefix="query: ", dtype="float32", device="cpu", batch_size=2, progress=False)
    ours = extract_embeddings(load_encoder(str(tuned)), TEXTS, settings, EmbeddingStore(tmp_path / "store"))
    theirs = np.asarray(mlflow.pyfunc.load_model(str(directory)).predict(TEXTS))
    np.testing.assert_allclose(theirs, np.asarray(ours.vectors("mean")), atol=1e-4, rtol=1e-4)
    modules = json.loads((directory / nodes.ST_SUBDIRECTORY / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling"]


def test_fmda_exports_through_the_pipeline_and_loads_by_every_route(tiny_hub_model: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.chdir(tmp_path)  # the store's artifacts go to ./mlruns: the test's, not the project's
    encoder = load_encoder(str(tiny_hub_model))
    torch.manual_seed(2)
    model = get_method("fmda").build(encoder.hidden_size, 2, {})
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    with mlflow.start_run(run_name="fmda-all_together") as training:  # the run that "trained" it
        pass
    run_id = training.info.run_id
    saved = artifact(
        "fmda",
        model,
        encoder.hidden_size,
        2,
        {},
        variant="all_together",
        mlflow_run_id=run_id,
        encoder=encoder.identity,
    )
    write_artifact(saved, tmp_path / "models" / "en_de" / "fmda_all_together.safetensors")
    massive = {"pairs": {"en_de": {"source": "en-US", "target": "de-DE"}}}
    fmda = {"variants": {"all_together": {"pairs": "all"}}}
    plan = nodes.plan_exports({"sources": ["fmda"]}, {}, {}, massive, fmda, {}, {})
    assert [(m["name"], m["kind"]) for m in plan["models"]] == [("fmda@en_de", "fmda")]
    out = tmp_path / "exported"
    report = nodes.export_models(
        ModelShelf(tmp_path / "models"), plan, encoder, dict(encoder.identity), EXTRACTION, {"out_dir": str(out)}
    )
    assert [e["name"] for e in report["exported"]] == ["fmda@en_de"] and not report["skipped"]
    directory = out / "en_de" / "fmda"
    record = json.loads((directory / "language_agnostic.json").read_text())
    assert (record["method"], record["pooling"], record["mlflow_run_id"]) == ("fmda", "token states", run_id)
    assert record["training_languages"] == ["deu", "eng"]
    # the project's vectors: token states of the extraction stage (fp32, stored as fp16), then FMDA's m
    settings = ExtractionSettings(
        prefix="query: ", dtype="float32", device="cpu", batch_size=2, token_states=True, progress=False
    )
    entry = extract_embeddings(encoder, TEXTS, settings, EmbeddingStore(tmp_path / "store"))
    ours = torch.from_numpy(encode_with_fmda(load_trained(saved)[1], entry)["m"])
    pyfunc = mlflow.pyfunc.load_model(str(directory))
    np.testing.assert_allclose(np.asarray(pyfunc.predict(TEXTS)), ours.numpy(), atol=2e-3, rtol=2e-3)
    # and from the tracking store: a logged model of the run that trained it
    (entry,) = report["exported"]
    assert entry["mlflow_logged_in_run"] == run_id and entry["mlflow_model_uri"].startswith("models:/")
    assert entry["mlflow_logged_now"] is True
    logged = mlflow.pyfunc.load_model(entry["mlflow_model_uri"])
    np.testing.assert_allclose(np.asarray(logged.predict(TEXTS)), ours.numpy(), atol=2e-3, rtol=2e-3)
    # a rerun with nothing changed rewrites the directory but logs no second copy: the first is named
    client = mlflow.MlflowClient()
    experiment = [client.get_run(run_id).info.experiment_id]
    again = nodes.export_models(
        ModelShelf(tmp_path / "models"), plan, encoder, dict(encoder.identity), EXTRACTION, {"out_dir": str(out)}
    )
    (repeat,) = again["exported"]
    assert (repeat["mlflow_model_uri"], repeat["export_digest"]) == (entry["mlflow_model_uri"], entry["export_digest"])
    assert repeat["mlflow_logged_now"] is False
    assert len(client.search_logged_models(experiment_ids=experiment)) == 1
    st_dir = directory / nodes.ST_SUBDIRECTORY
    theirs = SentenceTransformer(str(st_dir), device="cpu", trust_remote_code=True).encode(TEXTS)
    np.testing.assert_allclose(theirs, ours.numpy(), atol=2e-3, rtol=2e-3)
    modules = json.loads((st_dir / "modules.json").read_text())
    assert [m["type"] for m in modules] == [
        "sentence_transformers.base.modules.transformer.Transformer",
        "fmda_meaning.FmdaMeaning",
    ]
    assert (st_dir / "fmda_meaning.py").is_file()
    # without trust_remote_code sentence-transformers refuses, naming the flag
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        SentenceTransformer(str(st_dir), device="cpu")


def test_an_exports_digest_follows_its_files_not_the_save(tiny_hub_model: Path, tmp_path: Path):
    """Two saves of one model differ only in MLmodel's per-save fields (the encoder's missing pooler is drawn
    from a fixed seed): one digest; a changed weight or record: another."""
    encoder = load_encoder(str(tiny_hub_model))
    torch.manual_seed(4)
    head = get_method("seed").build(encoder.hidden_size, 2, {})
    saved = artifact("seed", head, encoder.hidden_size, 2, pooling="mean")
    first = nodes.save_model(exportable(saved, encoder, "query: "), tmp_path / "a", {"name": "seed@test"})
    second = nodes.save_model(exportable(saved, encoder, "query: "), tmp_path / "b", {"name": "seed@test"})
    mlmodels = [yaml.safe_load((d / "MLmodel").read_text()) for d in (first, second)]
    assert mlmodels[0]["model_uuid"] != mlmodels[1]["model_uuid"]  # why the digest leaves these fields out
    assert nodes.export_digest(first) == nodes.export_digest(second)
    with torch.no_grad():
        next(head.parameters()).view(-1)[0] += 1.0
    changed = artifact("seed", head, encoder.hidden_size, 2, pooling="mean")
    third = nodes.save_model(exportable(changed, encoder, "query: "), tmp_path / "c", {"name": "seed@test"})
    assert nodes.export_digest(third) != nodes.export_digest(first)
    # the record (metadata) is part of the export too
    fourth = nodes.save_model(exportable(saved, encoder, "query: "), tmp_path / "d", {"name": "seed@other"})
    assert nodes.export_digest(fourth) != nodes.export_digest(first)


@pytest.mark.slow
def test_two_exports_of_one_head_over_the_bundled_encoder_are_the_same_files(real_bundled: Path, tmp_path: Path):
    """The bundled encoder ships no pooler: the export draws it from a fixed seed, so a rerun's export has the
    digest of the first and is not logged to MLflow again (``pipelines/export``)."""
    encoder = load_encoder("bundled", real_bundled)
    torch.manual_seed(0)
    saved = artifact("seed", get_method("seed").build(encoder.hidden_size, 2, {}), encoder.hidden_size, 2, {})
    first, second = (
        nodes.save_model(exportable(saved, encoder, "query: "), tmp_path / name, {"name": "seed@qe"}) for name in "ab"
    )
    assert nodes.export_digest(first) == nodes.export_digest(second)
