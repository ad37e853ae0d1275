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
from language_agnostic.pipelines.parameter_checks import check_parameters
from language_agnostic.pipelines.project_config import load_parameters
from tests.conftest import PROJECT_ROOT


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
    # as null: both are accepted as the word and the empty string
    check_parameters(_with(base, "fmda.training.mixed_precision", False))
    check_parameters(_with(base, "embeddings.extraction.prefix", None))


def test_a_run_with_a_wrong_parameter_stops_before_its_first_node_without_a_traceback():
    kedro = Path(sys.executable).with_name("kedro")
    done = subprocess.run(
        [str(kedro), "run", "--pipelines=fmda", "--params=fmda.training.lr=-1"],
        cwd=PROJECT_ROOT,
        env={**os.environ, "KEDRO_DISABLE_TELEMETRY": "true"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "Error (ParameterError): fmda.training: lr must be > 0, got -1.0" in done.stderr
    assert "Traceback" not in done.stderr and "Running node" not in done.stderr
