"""Two worker processes (torchrun, gloo on the CPU) against one: a head, an encoder fine-tuning and
embedding extraction give what one process gives; one MLflow run, one set of outputs.

Each launch starts two Python processes (a few seconds each on two cores), so the cases are few and
each checks several things.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import mlflow
import numpy as np
import pytest
import torch
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from transformers import BertConfig, BertModel

from language_agnostic import launch
from language_agnostic.encoders.extraction import ExtractionSettings, extract_embedding_sets
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.encoders.store import EmbeddingStore
from language_agnostic.methods.dream import Dream, dream_losses
from language_agnostic.training.data import QuadrupletBatches
from language_agnostic.training.emu import train_emu
from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.loop import TrainSettings, train
from tests.training.test_emu_training import DE, EN, _utterances


@pytest.fixture
def no_dropout_model(tiny_hub_model: Path, tmp_path: Path) -> Path:
    """The tiny encoder with dropout off: then two processes and one must agree to float rounding
    (with dropout, each process draws its own masks)."""
    directory = tmp_path / "tiny-bert-no-dropout"
    shutil.copytree(tiny_hub_model, directory)
    config = BertConfig.from_pretrained(directory)
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0
    BertModel.from_pretrained(directory, config=config).save_pretrained(directory)
    return directory


def _dream(seed: int = 0) -> tuple[Dream, QuadrupletBatches, QuadrupletBatches]:
    rng = np.random.default_rng(seed)
    meaning = rng.standard_normal((160, 8)).astype(np.float32)
    lang = np.eye(8, dtype=np.float32)[:2] * 3
    source, target = meaning + lang[0], meaning + lang[1] + 0.1 * rng.standard_normal((160, 8)).astype(np.float32)
    ids = np.zeros(160, dtype=np.int64), np.ones(160, dtype=np.int64)
    torch.manual_seed(123)
    # 128 training pairs in batches of 16: 8 batches, 4 per process
    data = QuadrupletBatches(source[:128], target[:128], ids[0][:128], ids[1][:128], batch_size=16)
    dev = QuadrupletBatches(source[128:], target[128:], ids[0][128:], ids[1][128:], batch_size=10, shuffle=False)
    return Dream(8, 2), data, dev


def _dream_loss(model: torch.nn.Module, b: dict) -> dict:
    return dream_losses(model, b)


def test_a_head_on_two_processes_is_one_process_accumulating_two_batches():
    model, data, dev = _dream()
    twin = copy.deepcopy(model)
    settings = {"lr": 1e-2, "max_epochs": 4, "patience": 4, "seed": 7, "progress": False}
    one = train(model, _dream_loss, data, dev, TrainSettings(**settings, gradient_accumulation_steps=2))
    two = train(twin, _dream_loss, data, dev, TrainSettings(**settings, processes=2))
    # the same epochs chosen, dev losses over the whole dev set (4 batches, shared out 2 + 2) and
    # training losses over every process's batches, to float rounding
    assert (two.best_epoch, two.epochs_run) == (one.best_epoch, one.epochs_run)
    for a, b in zip(one.history, two.history, strict=True):
        assert a.keys() == b.keys()
        assert all(a[k] == pytest.approx(b[k], rel=1e-6, abs=1e-7) for k in a)
    # the workers' best weights came back into the caller's model
    for key, value in one.state_dict.items():
        torch.testing.assert_close(two.state_dict[key], value, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(twin.state_dict()[key], value, rtol=1e-5, atol=1e-6)


def test_encoder_fine_tuning_on_two_processes(no_dropout_model: Path):
    encoder = load_encoder(str(no_dropout_model))
    data = {"training_locale": "en-US", "per_intent": 2, "batch_size": 3, "seed": 0}  # 6 sentences: 2 batches
    training = {
        "lr": 1e-3,
        "encoder_lr": 1e-3,
        "max_epochs": 3,
        "patience": 3,
        "seed": 0,
        "progress": False,
        "keep_initial": False,
    }
    _, one, info_one = train_emu(
        _utterances(),
        encoder,
        FineTuning("emu", {"loss": "softmax"}, data, {**training, "gradient_accumulation_steps": 2}, {"prefix": ""}),
    )
    _, two, info_two = train_emu(
        _utterances(),
        encoder,
        FineTuning("emu", {"loss": "softmax"}, data, {**training, "processes": 2}, {"prefix": ""}),
    )
    # the dev score (nearest-neighbour accuracy, computed by the first process) and the kept epoch agree
    assert [r["dev_score"] for r in two.history] == [r["dev_score"] for r in one.history]
    assert info_two["best_epoch"] == info_one["best_epoch"]
    assert [r["dev_total"] for r in two.history] == pytest.approx([r["dev_total"] for r in one.history], rel=1e-5)
    changed = [
        k
        for k in one.state_dict
        if not torch.equal(
            one.state_dict[k], encoder.model.state_dict().get(k.removeprefix("encoder."), one.state_dict[k])
        )
    ]
    assert changed, "the encoder was not trained"
    for key, value in one.state_dict.items():
        torch.testing.assert_close(two.state_dict[key], value, rtol=1e-4, atol=1e-5)


def test_extraction_on_two_processes_writes_what_one_process_writes(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    lists = {"en": EN + ["wake"] * 3, "de": DE + EN[:4]}  # repeats and shared texts
    settings = ExtractionSettings(prefix="", batch_size=4, chunk_size=3, token_states=True, progress=False)
    one = extract_embedding_sets(encoder, lists, settings, EmbeddingStore(tmp_path / "one"))
    two = extract_embedding_sets(
        encoder, lists, ExtractionSettings(**{**settings.__dict__, "processes": 2}), EmbeddingStore(tmp_path / "two")
    )
    for name in lists:
        for pooling in ("cls", "mean"):
            np.testing.assert_array_equal(two[name].vectors(pooling), one[name].vectors(pooling))
        np.testing.assert_array_equal(two[name].lengths, one[name].lengths)
        tokens_two, tokens_one = (
            two[name].token_states(range(len(lists[name]))),
            one[name].token_states(range(len(lists[name]))),
        )
        for a, b in zip(tokens_two, tokens_one, strict=True):
            np.testing.assert_array_equal(a, b)
    # each worker wrote shards of its own share: every distinct text once
    shards = list((tmp_path / "two").glob("v2-*/shards/*/keys.npy"))
    keys = np.concatenate([np.load(path) for path in shards])
    assert len({bytes(k) for k in keys}) == len(keys) == len(set(lists["en"]) | set(lists["de"]))
    assert len({path.parent.name.split("-")[1] for path in shards}) == 2  # two writing processes (pids)


def test_the_emu_pipeline_on_two_processes_makes_one_mlflow_run_and_the_tables_of_one(
    tiny_hub_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from language_agnostic.pipelines.emu.pipeline import create_pipeline
    from tests.pipelines.test_emu_pipeline import FIGURE, _catalog

    methods = {"emu": {"loss": "emu", "options": {"critic_hidden": 8}}, "softmax": {"loss": "softmax"}}
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_experiment("processes_test")  # not an experiment id another test's store left active
    tables = {}
    try:
        for processes in (1, 2):
            launch.set_default_processes(processes)
            catalog: DataCatalog = _catalog(tiny_hub_model, tmp_path / str(processes))
            for name, spec in methods.items():
                catalog[f"params:emu.methods.{name}"] = MemoryDataset(spec)
            with mlflow.start_run(run_name=f"processes={processes}"):
                SequentialRunner().run(create_pipeline(methods=methods, save_encoders=["emu"], figure=FIGURE), catalog)
            tables[processes] = catalog["emu_metrics_table"].load()
        runs = mlflow.search_runs(search_all_experiments=True, output_format="list")
    finally:
        launch.set_default_processes(1)
        mlflow.set_tracking_uri(previous)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    # per run: one parent (this test's) and one child per method, whatever the processes; no run of a worker
    assert sorted(r.info.run_name for r in parents) == ["processes=1", "processes=2"]
    assert len(runs) == 2 * (1 + len(methods))
    one, two = (
        tables[p].sort_values(["method", "task", "source", "target", "metric"]).reset_index(drop=True) for p in (1, 2)
    )
    assert list(two.columns) == list(one.columns)
    assert two[["method", "task", "source", "target", "metric"]].equals(
        one[["method", "task", "source", "target", "metric"]]
    )
    # the raw encoder's rows do not train: identical; the trained rows have the same shape and valid values
    raw = one["method"] == "raw"
    assert two[raw]["value"].tolist() == one[raw]["value"].tolist()
    assert two["value"].notna().all()
