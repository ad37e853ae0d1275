"""Parameters checked when a run starts: one message naming the parameter, before any node runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kedro.framework.startup import bootstrap_project

from language_agnostic.config import ParameterError
from language_agnostic.pipelines.parameter_checks import CommandError, check_parameters, validate_command
from language_agnostic.pipelines.project_config import VALIDATE_ONLY, load_parameters
from tests.conftest import PROJECT_ROOT
from tests.parameters.conftest import ENVS, env_parameters, with_value

# a made-up but complete set of registered pipelines (validate_command's tests need not build them)
PIPELINES = ("fmda", "qe", "sts", "emu", "slu", "tatoeba", "retrieve", "headline", "export", "massive", "embeddings")


@pytest.fixture(scope="module")
def base() -> dict:
    bootstrap_project(PROJECT_ROOT)  # the project's config loader and its resolvers
    return load_parameters(PROJECT_ROOT)


def test_the_configured_parameters_pass(base: dict):
    check_parameters(base)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("fmda.training.lr", -1, "fmda.training.lr: must be > 0, got -1"),
        ("fmda.training.batch_size", "abc", "fmda.training.batch_size: must be a whole number, got 'abc'"),
        ("fmda.training.lrr", 1, "fmda.training: unknown key 'lrr'; known: ['batch_size', 'device', "),
        ("fmda.training.seed", 1.5, "fmda.training.seed: must be a whole number, got 1.5"),
        (
            "fmda.variants.infonce.training.seed",
            "x",
            "fmda.variants.infonce.training.seed: must be a whole number, got 'x'",
        ),
        ("fmda.variants.infonce.ablation", "none", "fmda.variants.infonce.ablation: must be one of ['full', "),
        ("fmda.methods.dream.training.lr", "fast", "fmda.methods.dream.training.lr: must be a number, got 'fast'"),
        ("fmda.model.activation", "tanhh", "fmda.model.activation: must be one of ['none', 'relu', 'gelu', 'tanh']"),
        ("qe.methods.seed.training.patience", 0, "qe.methods.seed.training.patience: must be >= 1, got 0"),
        ("sts.training.batch_size", 0, "sts.training.batch_size: must be >= 1, got 0"),
        ("emu.training.mixed_precision", "bf15", "emu.training.mixed_precision: must be one of ['no', 'bf16', "),
        ("slu.training.encoder_lr", -1e-5, "slu.training.encoder_lr: must be >= 0, got -1e-05"),
        (
            "embeddings.extraction.batch_size",
            "big",
            "embeddings.extraction.batch_size: must be a whole number, got 'big'",
        ),
        # a fraction where a whole number is meant, in blocks no settings dataclass parses
        (
            "massive.template_retrieval.n_targets.single",
            1.5,
            "massive.template_retrieval.n_targets.single: must be a whole number, got 1.5",
        ),
        ("fmda.figure.n_pairs", 800.5, "fmda.figure.n_pairs: must be a whole number, got 800.5"),
        ("retrieve.top_k", 2.5, "retrieve.top_k: must be a whole number, got 2.5"),
        # a key conf/base leaves null, given a wrong type
        (
            "embeddings.extraction.max_length",
            "long",
            "embeddings.extraction.max_length: must be a whole number, got 'long'",
        ),
        # an unknown key inside a variant
        ("fmda.variants.infonce.lrr", 1, "fmda.variants.infonce: unknown key 'lrr'; known: ['ablation', 'loss', "),
    ],
)
def test_a_wrong_value_is_named(base: dict, path: str, value: object, message: str):
    with pytest.raises(ParameterError) as caught:
        check_parameters(with_value(base, path, value))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value), str(caught.value)


def test_yaml_words_and_empty_values_mean_what_the_docs_say(base: dict):
    # `mixed_precision: no` reads as false in YAML; an empty prefix (`--params=embeddings.extraction.prefix=`)
    # as null: both are accepted as the word and the empty string (the prefix for an encoder other than e5)
    check_parameters(with_value(base, "fmda.training.mixed_precision", False))
    xlmr = with_value(base, "embeddings.encoder.name", "xlm-roberta-base")
    check_parameters(with_value(xlmr, "embeddings.extraction.prefix", None))
    check_parameters(with_value(xlmr, "embeddings.extraction.prefix", ""))


@pytest.mark.parametrize("prefix", [None, ""])
def test_an_empty_prefix_for_an_e5_encoder_is_named(base: dict, prefix: str | None):
    with pytest.raises(ParameterError) as caught:
        check_parameters(with_value(base, "embeddings.extraction.prefix", prefix))
    assert str(caught.value) == (
        "embeddings.extraction.prefix: is empty, but embeddings.encoder.name 'bundled' is an e5 model, which "
        "expects 'query: ' or 'passage: '; an empty prefix is for other encoders, got ''"
    )


def test_every_environment_passes():

    for env in ENVS:
        check_parameters(env_parameters(env))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # an unknown key in every pipeline's block, named with the block's known keys
        ("fmda.figure.n_pair", 1, "fmda.figure: unknown key 'n_pair'; known: ['intent', 'n_pairs', "),
        ("qe.corpus.seeds", 1, "qe.corpus: unknown key 'seeds'; known: ['flores', 'laser_tatoeba', "),
        ("sts.leakage.max_iters", 1, "sts.leakage: unknown key 'max_iters'; known: ['max_iter', 'seed', "),
        ("emu.evaluation.direction", "all", "emu.evaluation: unknown key 'direction'; known: ['directions', "),
        ("emu.data.per_intents", 5, "emu.data: unknown key 'per_intents'; known: ['adversarial', "),
        ("slu.code_switch.ratios", 1, "slu.code_switch: unknown key 'ratios'; known: ['keep_source', "),
        ("slu.data.max_trains", 1, "slu.data: unknown key 'max_trains'; known: ['batch_size', 'dev_locale', "),
        ("tatoeba.figure.scorings", "x", "tatoeba.figure: unknown key 'scorings'; known: ['methods', 'scoring']"),
        ("retrieve.topk", 3, "retrieve: unknown key 'topk'; known: ['corpus', 'faiss', 'mode', 'model', "),
        ("headline.rowz", [], "headline: unknown key 'rowz'; known: ['rows']"),
        ("export.out", "x", "export: unknown key 'out'; known: ['log_to_mlflow', 'only', 'out_dir', 'sources']"),
        ("massive.ingest.on_bad_rows", "skip", "massive.ingest: unknown key 'on_bad_rows'; known: ['on_bad_row', "),
        ("embeddings.extraction.batchsize", 8, "embeddings.extraction: unknown key 'batchsize'; known: ['backend', "),
        ("embeddings.encoders", {}, "embeddings: unknown key 'encoders'; known: ['encoder', 'extraction', "),
        ("fmdaa.training.lr", 1, "the top level: unknown key 'fmdaa'; known: ['embeddings', "),
        # a wrong type where a number, a true/false or a mapping is meant
        ("massive.negative_pool.threshold", "abc", "massive.negative_pool.threshold: must be a number, got 'abc'"),
        ("tatoeba.evaluation.margin_k", "four", "tatoeba.evaluation.margin_k: must be a whole number, got 'four'"),
        ("export.log_to_mlflow", "yes please", "export.log_to_mlflow: must be true or false, got 'yes please'"),
        ("retrieve.faiss", 32, "retrieve.faiss: must be a mapping, got 32"),
        # a word emptied (`--params=key=` reads as null)
        ("tatoeba.ingest.on_bad_row", None, "tatoeba.ingest.on_bad_row: must be one of ['error', 'skip'], got None"),
        ("retrieve.mode", "", "retrieve.mode: must be one of ['meaning', 'template', 'raw'], got ''"),
        ("embeddings.extraction.dtype", None, "embeddings.extraction.dtype: must be one of ['auto', "),
        ("emu.data.adversarial", "", "emu.data.adversarial: must be one of ['unlabelled', 'parallel'], got ''"),
        ("qe.training.device", None, "qe.training.device: must be a string, got None"),
        (
            "fmda.model.activation",
            None,
            "fmda.model.activation: must be one of ['none', 'relu', 'gelu', 'tanh'], got None",
        ),
    ],
)
def test_a_wrong_value_in_any_block_is_named(base: dict, path: str, value: object, message: str):
    with pytest.raises(ParameterError) as caught:
        check_parameters(with_value(base, path, value))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value), str(caught.value)


def test_a_documented_empty_value_passes(base: dict):
    check_parameters(with_value(base, "fmda.figure.pair", ""))  # "" = no figure
    check_parameters(with_value(base, "raw_data_root", "/data"))  # the catalog's --params=raw_data_root=...


@pytest.mark.parametrize(
    ("command", "kind", "message"),
    [
        (
            "kedro run --pipelines=fmdaa",
            CommandError,
            "--pipelines: unknown pipeline(s) ['fmdaa']; known: ['embeddings', ",
        ),
        (
            "kedro run --pipelines=fmda --env=fmda_seed",
            CommandError,
            "--env=fmda_seed: no such environment; known: ['base', ",
        ),
        ("kedro run --pipeline-s=fmda", CommandError, "No such option '--pipeline-s'"),
        (
            "kedro run --pipelines=fmda --params=fmda.training.lr=-1",
            ParameterError,
            "fmda.training.lr: must be > 0, got -1",
        ),
        (
            "kedro run --pipelines=fmda --params=fmda.training.batch_size=abc",
            ParameterError,
            "fmda.training.batch_size: must be a whole number, got 'abc'",
        ),
        (
            "kedro run --pipelines=fmda --params=fmda.training.lrr=1",
            ParameterError,
            "fmda.training: unknown key 'lrr'",
        ),
        ("kedro run --pipelines=fmda --params=embeddings.extraction.prefix=", ParameterError, "is an e5 model"),
        (
            'kedro run --pipelines=tatoeba --params="tatoeba.ingest.on_bad_row="',
            ParameterError,
            "must be one of ['error', 'skip'], got None",
        ),
        ("echo kedro run", CommandError, "not a kedro run command: 'echo kedro run'"),
    ],
)
def test_a_wrong_command_is_named(base: dict, command: str, kind: type, message: str):
    with pytest.raises(kind) as caught:
        validate_command(command, PROJECT_ROOT, PIPELINES)
    assert message in str(caught.value)


def test_a_command_s_env_and_params_reach_the_checked_parameters(base: dict):
    params = validate_command(
        '.venv/bin/kedro run --pipelines=fmda,massive --env=fmda_en_de --params="fmda.training.lr=3e-4,processes=2"',
        PROJECT_ROOT,
        PIPELINES,
    )
    assert params["fmda"]["training"]["lr"] == 3e-4
    assert params["processes"] == 2
    assert list(params["massive"]["pairs"]) == ["en_de"]
    params = validate_command(
        "kedro run --pipelines=embeddings"
        " --params=embeddings.encoder.name=xlm-roberta-base,embeddings.extraction.prefix=",
        PROJECT_ROOT,
        PIPELINES,
    )
    # Kedro reads `key=` as null; the models (and so every node) as "" (pipelines/config_loader.py)
    assert params["embeddings"]["extraction"]["prefix"] == ""


def _kedro_run(*args: str, **env: str) -> subprocess.CompletedProcess:
    kedro = Path(sys.executable).with_name("kedro")
    return subprocess.run(
        [str(kedro), "run", *args],
        cwd=PROJECT_ROOT,
        env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_run_with_a_wrong_parameter_stops_before_its_first_node_without_a_traceback():
    done = _kedro_run("--pipelines=fmda", "--params=fmda.training.lr=-1")
    assert done.returncode != 0
    assert "Error (ParameterError): fmda.training.lr: must be > 0, got -1" in done.stderr
    assert "Traceback" not in done.stderr and "Running node" not in done.stderr


def test_validate_only_checks_a_run_and_runs_no_node():
    # the documented advice for an encoder other than e5: an empty prefix on the command line
    done = _kedro_run(
        "--pipelines=fmda",
        "--params=embeddings.encoder.name=xlm-roberta-base,embeddings.extraction.prefix=",
        **{VALIDATE_ONLY: "1"},
    )
    assert done.returncode == 0, done.stderr
    assert f"{VALIDATE_ONLY}=1: the parameters of this run are valid; no node was run" in done.stdout
    assert "Running node" not in done.stderr + done.stdout
