"""Parameters checked when a run starts: one message naming the parameter, before any node runs."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kedro.framework.startup import bootstrap_project

from language_agnostic.config import ParameterError
from language_agnostic.pipelines.parameter_checks import (
    CommandError,
    base_parameters,
    check_parameters,
    validate_command,
)
from language_agnostic.pipelines.project_config import VALIDATE_ONLY, load_parameters
from tests.conftest import PROJECT_ROOT

# a made-up but complete set of registered pipelines (validate_command's tests need not build them)
PIPELINES = ("fmda", "qe", "sts", "emu", "slu", "tatoeba", "retrieve", "headline", "export", "massive", "embeddings")


@pytest.fixture(scope="module")
def base() -> dict:
    bootstrap_project(PROJECT_ROOT)  # the project's config loader and its resolvers
    return load_parameters(PROJECT_ROOT)


def _with(params: dict, path: str, value: object) -> dict:
    changed = copy.deepcopy(params)
    *parents, last = path.split(".")
    node = changed
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return changed


def test_the_configured_parameters_pass(base: dict):
    check_parameters(base)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("fmda.training.lr", -1, "fmda.training: lr must be > 0, got -1.0"),
        ("fmda.training.batch_size", "abc", "fmda.training.batch_size must be a whole number >= 1, got 'abc'"),
        ("fmda.training.lrr", 1, "fmda.training: unknown key(s) ['lrr']"),
        ("fmda.training.seed", 1.5, "fmda.training.seed must be int, got 1.5"),
        ("fmda.variants.infonce.training.seed", "x", "fmda.variants.infonce.training.seed must be int, got 'x'"),
        ("fmda.variants.infonce.ablation", "none", "fmda.variants.infonce: fmda.variants: ablation must be one of"),
        ("fmda.methods.dream.training.lr", "fast", "fmda.methods.dream.training.lr must be float, got 'fast'"),
        ("fmda.model.activation", "tanhh", "fmda.model: activation must be one of"),
        ("qe.methods.seed.training.patience", 0, "qe.training: max_epochs and patience must be >= 1"),
        ("sts.training.batch_size", 0, "sts.training.batch_size must be a whole number >= 1, got 0"),
        ("emu.training.mixed_precision", "bf15", "emu.training: mixed_precision must be one of"),
        ("slu.training.encoder_lr", -1e-5, "slu.training: encoder_lr must be >= 0"),
        ("embeddings.extraction.batch_size", "big", "embeddings.extraction.batch_size must be int, got 'big'"),
    ],
)
def test_a_wrong_value_is_named(base: dict, path: str, value: object, message: str):
    with pytest.raises(ParameterError) as caught:
        check_parameters(_with(base, path, value))
    assert message in str(caught.value)


def test_yaml_words_and_empty_values_mean_what_the_docs_say(base: dict):
    # `mixed_precision: no` reads as false in YAML; an empty prefix (`--params=embeddings.extraction.prefix=`)
    # as null: both are accepted as the word and the empty string (the prefix for an encoder other than e5)
    check_parameters(_with(base, "fmda.training.mixed_precision", False))
    xlmr = _with(base, "embeddings.encoder.name", "xlm-roberta-base")
    check_parameters(_with(xlmr, "embeddings.extraction.prefix", None), base_parameters(PROJECT_ROOT / "conf"))
    check_parameters(_with(xlmr, "embeddings.extraction.prefix", ""), base_parameters(PROJECT_ROOT / "conf"))


@pytest.mark.parametrize("prefix", [None, ""])
def test_an_empty_prefix_for_an_e5_encoder_is_named(base: dict, prefix: str | None):
    with pytest.raises(ParameterError) as caught:
        check_parameters(_with(base, "embeddings.extraction.prefix", prefix))
    assert str(caught.value) == (
        "embeddings.extraction.prefix is empty, but embeddings.encoder.name 'bundled' is an e5 model, which "
        "expects 'query: ' or 'passage: '; an empty prefix is for other encoders"
    )


@pytest.fixture(scope="module")
def schema(base: dict) -> dict:
    return base_parameters(PROJECT_ROOT / "conf")


def test_every_environment_passes(schema: dict):
    from kedro.framework.project import settings

    for env in sorted(p.name for p in (PROJECT_ROOT / "conf").iterdir() if p.is_dir()):
        loader = settings.CONFIG_LOADER_CLASS(
            conf_source=str(PROJECT_ROOT / "conf"), env=env, **settings.CONFIG_LOADER_ARGS
        )
        check_parameters(dict(loader["parameters"]), schema)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # an unknown key in every pipeline's block, named with the block's known keys
        ("fmda.figure.n_pair", 1, "fmda.figure: unknown key(s) ['n_pair']; known: ['intent', 'n_pairs', "),
        # the keys its parser pops before building TrainSettings are known too
        ("fmda.training.lrr", 1, "fmda.training: unknown key(s) ['lrr']; known: ['batch_size', 'device', "),
        ("qe.corpus.seeds", 1, "qe.corpus: unknown key(s) ['seeds']; known: ['flores', 'laser_tatoeba', "),
        ("sts.leakage.max_iters", 1, "sts.leakage: unknown key(s) ['max_iters']; known: ['max_iter', 'seed', "),
        ("emu.evaluation.direction", "all", "emu.evaluation: unknown key(s) ['direction']; known: ['directions', "),
        ("emu.data.per_intents", 5, "emu.data: unknown key(s) ['per_intents']; known: ['adversarial', "),
        ("slu.code_switch.ratios", 1, "slu.code_switch: unknown key(s) ['ratios']; known: ['keep_source', "),
        ("slu.data.max_trains", 1, "slu.data: unknown key(s) ['max_trains']; known: ['batch_size', 'dev_locale', "),
        ("tatoeba.figure.scorings", "x", "tatoeba.figure: unknown key(s) ['scorings']; known: ['methods', 'scoring']"),
        ("retrieve.topk", 3, "retrieve: unknown key(s) ['topk']; known: ['corpus', 'faiss', 'mode', 'model', "),
        ("headline.rowz", [], "headline: unknown key(s) ['rowz']; known: ['rows']"),
        ("export.out", "x", "export: unknown key(s) ['out']; known: ['log_to_mlflow', 'only', 'out_dir', 'sources']"),
        (
            "massive.ingest.on_bad_rows",
            "skip",
            "massive.ingest: unknown key(s) ['on_bad_rows']; known: ['on_bad_row', ",
        ),
        (
            "embeddings.extraction.batchsize",
            8,
            "embeddings.extraction: unknown key(s) ['batchsize']; known: ['backend', ",
        ),
        ("embeddings.encoders", {}, "embeddings: unknown key(s) ['encoders']; known: ['encoder', 'extraction', "),
        ("fmdaa.training.lr", 1, "the top level of the parameters: unknown key(s) ['fmdaa']; known: ['embeddings', "),
        # a wrong type where conf/base holds a number, a true/false or a mapping
        (
            "massive.negative_pool.threshold",
            "abc",
            "massive.negative_pool.threshold must be a number (conf/base: 0.1), got 'abc'",
        ),
        (
            "tatoeba.evaluation.margin_k",
            "four",
            "tatoeba.evaluation.margin_k must be a number (conf/base: 4), got 'four'",
        ),
        ("export.log_to_mlflow", "yes please", "export.log_to_mlflow must be true or false, got 'yes please'"),
        ("retrieve.faiss", 32, "retrieve.faiss must be a mapping of ['ef_search', 'hnsw_m'], got 32"),
        # a word emptied (`--params=key=` reads as null)
        ("tatoeba.ingest.on_bad_row", None, "tatoeba.ingest.on_bad_row must not be empty (conf/base: 'error')"),
        ("retrieve.mode", "", "retrieve.mode must not be empty (conf/base: 'meaning')"),
        ("embeddings.extraction.dtype", None, "embeddings.extraction.dtype must not be empty (conf/base: 'auto')"),
        ("emu.data.adversarial", "", "emu.data.adversarial must not be empty (conf/base: 'unlabelled')"),
        ("qe.training.device", None, "qe.training: device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got ''"),
        (
            "fmda.model.activation",
            None,
            "fmda.model: activation must be one of ['gelu', 'none', 'relu', 'tanh'], got ''",
        ),
    ],
)
def test_a_wrong_value_in_any_block_is_named(base: dict, schema: dict, path: str, value: object, message: str):
    with pytest.raises(ParameterError) as caught:
        check_parameters(_with(base, path, value), schema)
    assert message in str(caught.value)


def test_a_documented_empty_value_passes(base: dict, schema: dict):
    check_parameters(_with(base, "fmda.figure.pair", ""), schema)  # "" = no figure
    check_parameters(_with(base, "raw_data_root", "/data"), schema)  # the catalog's --params=raw_data_root=...


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
            "fmda.training: lr must be > 0, got -1.0",
        ),
        (
            "kedro run --pipelines=fmda --params=fmda.training.batch_size=abc",
            ParameterError,
            "fmda.training.batch_size must be a whole number >= 1, got 'abc'",
        ),
        (
            "kedro run --pipelines=fmda --params=fmda.training.lrr=1",
            ParameterError,
            "fmda.training: unknown key(s) ['lrr']",
        ),
        ("kedro run --pipelines=fmda --params=embeddings.extraction.prefix=", ParameterError, "is an e5 model"),
        ('kedro run --pipelines=tatoeba --params="tatoeba.ingest.on_bad_row="', ParameterError, "must not be empty"),
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
    assert params["embeddings"]["extraction"]["prefix"] is None  # Kedro reads `key=` as null; the check as ""


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
    assert "Error (ParameterError): fmda.training: lr must be > 0, got -1.0" in done.stderr
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
