"""The whole of conf/ as one model, and the files generated from it (the editors' JSON Schema, the docs' tables)."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml

from language_agnostic.config import ParameterError
from language_agnostic.parameters import root
from tests.conftest import PROJECT_ROOT
from tests.parameters.conftest import ENVS, env_parameters, with_value

PARAMETER_FILES = sorted((PROJECT_ROOT / "conf").glob("*/parameters*.yml"))


@pytest.mark.parametrize("env", ENVS)
def test_every_environment_is_valid(env: str):
    root.check(env_parameters(env))


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("fmdaa", {}, "the top level: unknown key 'fmdaa'; known: ['embeddings', "),
        ("processes", 1.5, "processes: must be a whole number, got 1.5"),
        ("fmda.training.lr", -1, "fmda.training.lr: must be > 0, got -1"),
        ("fmda.variants.infonce.lrr", 1, "fmda.variants.infonce: unknown key 'lrr'; known: ["),
    ],
)
def test_a_wrong_value_anywhere_is_one_line_naming_it(path: str, value: object, message: str):
    with pytest.raises(ParameterError) as caught:
        root.check(with_value(env_parameters(), path, value))
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_generated_files_match_the_models(tmp_path):
    # the committed schema and docs page are what `python -m language_agnostic.parameters write` gives now
    (tmp_path / "conf" / "base").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    for path in (PROJECT_ROOT / "conf" / "base").glob("parameters*.yml"):
        (tmp_path / "conf" / "base" / path.name).write_text(path.read_text())
    schema, docs = root.write(tmp_path)
    assert schema.read_text() == (PROJECT_ROOT / "conf" / root.SCHEMA_FILE).read_text(), "run: make parameters"
    assert docs.read_text() == (PROJECT_ROOT / "docs" / root.DOCS_FILE).read_text(), "run: make parameters"


@pytest.mark.parametrize("path", PARAMETER_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_parameters_file_points_at_the_schema_and_a_stock_validator_accepts_it(path):
    text = path.read_text()
    assert text.startswith(f"# yaml-language-server: $schema=../{root.SCHEMA_FILE}\n")
    schema = json.loads((PROJECT_ROOT / "conf" / root.SCHEMA_FILE).read_text())
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(text) or {})


def test_a_stock_validator_refuses_what_the_models_refuse():
    schema = json.loads((PROJECT_ROOT / "conf" / root.SCHEMA_FILE).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    wrong = {"fmda": {"figure": {"n_pairs": 800.5}, "variants": {"infonce": {"lrr": 1}}}}
    # a mapping may also be null in an env file (anyOf): the reasons are in each error's context
    messages = sorted(_messages(validator.iter_errors(wrong)))
    assert any(re.search(r"800\.5 is not of type 'integer'", m) for m in messages), messages
    assert any("'lrr' was unexpected" in m for m in messages), messages


def _messages(errors) -> list[str]:
    out = []
    for error in errors:
        out.append(error.message)
        out += _messages(error.context or [])
    return out
