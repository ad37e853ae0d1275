"""Trained models reused by fingerprint (training/reuse.py): exact, invalidated by any change, safe when killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import torch
from kedro.io import MemoryDataset
from kedro.runner import SequentialRunner

from language_agnostic.datasets.torch_state import TrainedHeadDataset
from language_agnostic.methods.trained import load_from_run, read_artifact
from language_agnostic.pipelines.fmda.pipeline import create_pipeline
from language_agnostic.training import reuse
from language_agnostic.training.fmda import train_fmda
from tests.pipelines.test_fmda_pipeline import METHODS, _catalog

VARIANTS = {"all_together": {"pairs": "all"}, "two_stage": {"pairs": ["en_de"], "two_stage": True}}
MODEL_FILES = ("fmda.safetensors", "fmda_two_stage.safetensors")


def _run(model_dir: Path, where: Path, variants: dict | None = None, catalog_edit=None) -> tuple[pd.DataFrame, dict]:
    """The fmda pipeline (two FMDA variants, DREAM) on the tiny tables; its metrics and the model files' bytes."""
    catalog = _catalog(model_dir, where / "store")
    if catalog_edit:
        catalog_edit(catalog)
    reuse.USAGE.reset()
    pipeline = create_pipeline(
        pairs=["en_de"], variants=variants or VARIANTS, unified=[], figure_pair="", methods={"dream": METHODS["dream"]}
    )
    SequentialRunner().run(pipeline, catalog)
    table = catalog["fmda_metrics_table"].load().drop(columns=["run_id"], errors="ignore")
    return table, {name: (where / name).read_bytes() for name in MODEL_FILES if (where / name).is_file()}


def test_an_identical_rerun_reuses_every_model_bit_for_bit_and_a_forced_retrain_gives_the_same(
    tiny_hub_model: Path, tmp_path: Path, trained_model_store: Path
):
    first, first_files = _run(tiny_hub_model, tmp_path / "first")
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (3, 0)
    assert len([p for p in trained_model_store.iterdir() if not p.name.startswith(".")]) == 3

    # another run, other output and embedding-store folders, the same content: nothing trains
    second, second_files = _run(tiny_hub_model, tmp_path / "second")
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (0, 3)
    assert second_files == first_files  # the saved models, byte for byte
    pd.testing.assert_frame_equal(second, first)  # every table cell

    # the forced retrain (trained_models.reuse: false) trains all three again, to the same bits
    reuse.configure({"reuse": False, "store": str(trained_model_store)})
    third, third_files = _run(tiny_hub_model, tmp_path / "third")
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (3, 0)
    assert third_files == first_files
    pd.testing.assert_frame_equal(third, first)


def test_a_changed_parameter_or_input_retrains_only_what_depends_on_it(tiny_hub_model: Path, tmp_path: Path):
    _run(tiny_hub_model, tmp_path / "first")

    # one variant's parameter: that variant alone
    def other_weight(catalog):
        catalog["params:fmda.variants.two_stage"].save({**VARIANTS["two_stage"], "loss_weights": {"tp_con": 0.5}})

    _run(tiny_hub_model, tmp_path / "variant", catalog_edit=other_weight)
    assert (reuse.USAGE.trained, len(reuse.USAGE.reused)) == (["train_fmda_two_stage[two_stage]"], 2)

    # an input dataset (one negative-pool row fewer)
    def fewer_pools(catalog):
        pools = catalog["massive_negative_pools"].load()
        catalog["massive_negative_pools"].save(pools.iloc[1:].reset_index(drop=True))

    _run(tiny_hub_model, tmp_path / "pools", catalog_edit=fewer_pools)
    # every node that reads the pools (DREAM's node reads them too, for `negatives: pool`)
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (3, 0)

    # the shared training parameters: everything
    def other_lr(catalog):
        catalog["params:fmda.training"].save({**catalog["params:fmda.training"].load(), "lr": 2e-3})

    _run(tiny_hub_model, tmp_path / "lr", catalog_edit=other_lr)
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (3, 0)


def test_a_renamed_variant_reuses_its_model_under_the_new_name(tiny_hub_model: Path, tmp_path: Path):
    first, _ = _run(tiny_hub_model, tmp_path / "first")
    trained = read_artifact(tmp_path / "first" / "fmda_two_stage.safetensors")

    # conf/ renames two_stage to staged: a name labels the model, it does not shape it
    def renamed(catalog):
        catalog["params:fmda.variants.staged"] = MemoryDataset(VARIANTS["two_stage"])
        catalog["en_de.fmda_model_staged"] = TrainedHeadDataset(str(tmp_path / "renamed" / "fmda_staged.safetensors"))

    variants = {"all_together": VARIANTS["all_together"], "staged": VARIANTS["two_stage"]}
    second, _ = _run(tiny_hub_model, tmp_path / "renamed", variants=variants, catalog_edit=renamed)
    assert (reuse.USAGE.trained, len(reuse.USAGE.reused)) == ([], 3)
    reused = read_artifact(tmp_path / "renamed" / "fmda_staged.safetensors")
    assert (reused["variant"], reused["method"]) == ("staged", "fmda-staged")
    assert all(torch.equal(reused["state_dict"][k], v) for k, v in trained["state_dict"].items())
    # the same cells, under the new method name
    expected = first.assign(method=first["method"].replace("fmda-two_stage", "fmda-staged"))
    pd.testing.assert_frame_equal(second, expected)


def test_a_stored_steps_outputs_renamed_where_the_name_shows():
    naming = reuse.Naming("name", {"method": str, "name": str}, spelling=lambda n: n.replace("+", "_plus_"))
    outputs = (
        {"method": "cs+wcl", "name": "cs+wcl", "kind": "cs+wcl", "state_dict": {}},
        {"slu.cs_plus_wcl.loss": 1.0, "slu.cs_plus_wcl.kept.dev_exact_match": 0.5, "cs_plus_wcl.other": 2.0},
    )
    runs = [
        {"name": "slu/cs+wcl", "params": {"name": "cs+wcl", "method": "cs+wcl", "loss": "cs+wcl"}, "model": "m_cs+wcl"}
    ]
    (artifact, metrics), (run,) = naming.renamed(outputs, runs, "cs+wcl", "cs+ucl")
    # the declared fields; not another field that happens to hold the same string
    assert (artifact["method"], artifact["name"], artifact["kind"]) == ("cs+ucl", "cs+ucl", "cs+wcl")
    # metric keys in MLflow's spelling, after the prefix only
    assert metrics == {
        "slu.cs_plus_ucl.loss": 1.0,
        "slu.cs_plus_ucl.kept.dev_exact_match": 0.5,
        "cs_plus_wcl.other": 2.0,
    }
    assert run == {
        "name": "slu/cs+ucl",
        "params": {"name": "cs+ucl", "method": "cs+ucl", "loss": "cs+wcl"},
        "model": "m_cs+ucl",
    }
    assert outputs[0]["method"] == "cs+wcl"  # the loaded outputs are not changed in place


class _Encoder:
    def __init__(self, weights: str) -> None:
        self.identity = {"name": "tiny", "source": "/somewhere", "weights_sha256": weights}

    def reuse_identity(self) -> dict:
        return {k: v for k, v in self.identity.items() if k != "source"}


def test_the_fingerprint_follows_the_encoder_the_inputs_and_the_training_code(tmp_path: Path, monkeypatch):
    pools = pd.DataFrame({"locale": ["en-US", "de-DE"], "id": ["1", "2"]})
    params = {"lr": 1e-3, "seed": 0}
    base = reuse.fingerprint(train_fmda, [_Encoder("a" * 64), pools, params])
    assert base == reuse.fingerprint(train_fmda, [_Encoder("a" * 64), pools.copy(), dict(params)])
    # another encoder (weights), another table cell, another parameter value or type
    assert base != reuse.fingerprint(train_fmda, [_Encoder("b" * 64), pools, params])
    assert base != reuse.fingerprint(train_fmda, [_Encoder("a" * 64), pools.replace("2", "3"), params])
    assert base != reuse.fingerprint(train_fmda, [_Encoder("a" * 64), pools, {**params, "seed": 1}])
    assert base != reuse.fingerprint(train_fmda, [_Encoder("a" * 64), pools, {**params, "lr": 1}])
    # where the encoder was read from is not who it is
    moved = _Encoder("a" * 64)
    moved.identity["source"] = "/elsewhere"
    assert base == reuse.fingerprint(train_fmda, [moved, pools, params])

    # the code: a copy of the package with one training module edited changes it; an edit to a module
    # the training does not import (the README's headline table), a comment or a docstring does not.
    # The sources are read once per session (snapshot_code): each edit below is read by a new one.
    copy = tmp_path / "language_agnostic"
    shutil.copytree(reuse.PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(reuse, "PACKAGE_ROOT", copy)

    def session_fingerprint() -> str:
        reuse.snapshot_code()
        return reuse.fingerprint(train_fmda, [_Encoder("a" * 64), pools, params])

    assert session_fingerprint() == base
    with (copy / "reporting" / "headline.py").open("a") as handle:
        handle.write("\n# an edit\n")
    assert session_fingerprint() == base
    contrastive = copy / "methods" / "contrastive.py"  # imported by training/fmda.py's imports
    with contrastive.open("a") as handle:  # a comment and a docstring: not code
        handle.write('\n# an edit\n\n\ndef _helper() -> None:\n    """A docstring."""\n')
    edited = session_fingerprint()
    assert edited != base  # a new function is new code
    contrastive.write_text(contrastive.read_text().replace('"""A docstring."""', '"""Another docstring."""'))
    assert session_fingerprint() == edited
    contrastive.write_text(contrastive.read_text().replace('"""Another docstring."""', "return None"))
    changed = session_fingerprint()
    assert changed != edited
    # within one session the digest stays the code as loaded, and the change is seen
    contrastive.write_text(contrastive.read_text().replace("return None", "return 1"))
    assert reuse.fingerprint(train_fmda, [_Encoder("a" * 64), pools, params]) == changed
    code = reuse.key(train_fmda, [_Encoder("a" * 64), pools, params])["code"]
    assert reuse.code_snapshot().changed(code) == [contrastive]

    class Opaque:
        pass

    with pytest.raises(reuse.NotFingerprintable, match="Opaque"):
        reuse.fingerprint(train_fmda, [Opaque()])


STEP = """
import torch

def step(x):
    return {"state_dict": {"w": torch.ones(2) * x}}, {"m": 1.0}
"""
KILLED = """
import sys, time
from pathlib import Path
from language_agnostic.training import reuse
from step_module import step

def slow_write(data, path):
    Path(path).write_bytes(b"half a model")  # the model file started, never finished
    print("writing", flush=True)
    time.sleep(60)

reuse.write_artifact = slow_write
reuse.configure({"store": sys.argv[1]})
reuse.reusable(step)(2.0)
"""


def test_a_training_killed_mid_way_is_not_reused(tmp_path: Path, monkeypatch):
    import torch

    (tmp_path / "step_module.py").write_text(STEP)
    monkeypatch.syspath_prepend(str(tmp_path))
    from step_module import step  # the same function in both processes: the same fingerprint

    store = tmp_path / "trained"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(store)], stdout=subprocess.PIPE, text=True, cwd=tmp_path, env=env
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "writing"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    (entry,) = [p for p in store.iterdir() if p.name != reuse.LOCKS]
    assert entry.name.startswith(".tmp-") and (entry / "model.safetensors").read_bytes() == b"half a model"

    reuse.configure({"store": str(store)})
    reuse.USAGE.reset()
    train = reuse.reusable(step)
    model, _ = train(2.0)
    assert reuse.USAGE.trained == ["step"] and torch.equal(model["state_dict"]["w"], torch.full((2,), 2.0))
    again, _ = train(2.0)
    assert reuse.USAGE.reused == ["step"] and torch.equal(again["state_dict"]["w"], model["state_dict"]["w"])
    assert reuse.prune(store) == 1  # the killed run's temporary entry
    assert [p.name.startswith(".tmp-") for p in store.iterdir() if p.name != reuse.LOCKS] == [False]


def test_a_reused_model_gets_its_own_child_run_linked_to_the_run_that_trained_it(tiny_hub_model, tmp_path: Path):
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        mlflow.set_experiment("reuse")
        runs, started = {}, time.time()
        for name in ("first", "second"):
            with mlflow.start_run(run_name=name) as parent:
                _run(tiny_hub_model, tmp_path / name, variants={"all_together": {"pairs": "all"}})
                runs[name] = parent.info.run_id
        client = mlflow.MlflowClient()
        children = {
            name: {
                r.info.run_name.removesuffix(" (reused)"): r
                for r in client.search_runs(
                    [client.get_experiment_by_name("reuse").experiment_id],
                    f"tags.mlflow.parentRunId = '{run_id}'",
                )
            }
            for name, run_id in runs.items()
        }
        assert (
            set(children["first"]) == set(children["second"]) == {"fmda/all_together/en-US-de-DE", "dream/en-US-de-DE"}
        )
        for run_name, child in children["second"].items():
            trained = children["first"][run_name]
            # reused where the runs table shows it: its name and a tag column
            assert (
                child.info.run_name == f"{run_name} (reused)" and child.data.tags["language_agnostic.reused"] == "true"
            )
            assert "language_agnostic.reused" not in trained.data.tags
            # it holds the model file the trained run holds, so retrieve.model.run_id=<it> loads the same weights
            (model,) = [a.path for a in client.list_artifacts(trained.info.run_id) if a.path.endswith(".safetensors")]
            assert [a.path for a in client.list_artifacts(child.info.run_id)] == [model]
            reused, original = (load_from_run(r.info.run_id, model, "retrieve.model") for r in (child, trained))
            assert reused["mlflow_run_id"] == child.info.run_id and original["mlflow_run_id"] == trained.info.run_id
            assert all(torch.equal(reused["state_dict"][k], v) for k, v in original["state_dict"].items())
            assert child.data.tags["language_agnostic.trained_by"] == trained.info.run_id
            assert (
                child.data.tags["language_agnostic.fingerprint"] == trained.data.tags["language_agnostic.fingerprint"]
            )
            assert child.data.params == trained.data.params
            # the evaluation's metrics reach the reused run too (the artifact names the new run)
            assert any(k.startswith("cross_lingual_retrieval") for k in child.data.metrics)
        # a trained child run lasts its own training: it ended before the evaluation logged its metrics
        trained = children["first"]["fmda/all_together/en-US-de-DE"]
        evaluated = [k for k in trained.data.metrics if k.startswith("cross_lingual_retrieval")][0]
        assert trained.info.start_time / 1000 >= started - 1
        assert trained.info.end_time <= client.get_metric_history(trained.info.run_id, evaluated)[0].timestamp
        history = client.get_metric_history(trained.info.run_id, "dev_total")
        assert [m.step for m in history] == [0, 1, 2]
    finally:
        mlflow.set_tracking_uri(previous)


def test_the_store_report_lists_entries(tmp_path: Path):
    import torch

    reuse.configure({"store": str(tmp_path)})
    reuse.reusable(lambda: ({"state_dict": {"w": torch.zeros(1)}}, {}), label="zeros")()
    (row,) = reuse.report(tmp_path)
    assert row["step"] == "zeros" and row["bytes"] > 0
    # the entry's directory, not the store's .locks (the directory lists them in no fixed order)
    (entry,) = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    record = json.loads((entry / "record.json").read_text())
    assert record["child_runs"] == [] and record["step"] == "zeros"
