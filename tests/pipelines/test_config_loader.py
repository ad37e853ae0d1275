"""The soft merge of an environment's parameters (pipelines/config_loader.py) and the environments as deltas."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from language_agnostic.config import ParameterError
from language_agnostic.pipelines.config_loader import ProjectConfigLoader, expand_budgets, merge_delta
from tests.conftest import PROJECT_ROOT

BASE = {
    "pairs": {"en_de": {"source": "en-US", "target": "de-DE"}, "en_es": {"source": "en-US", "target": "es-ES"}},
    "methods": {"a": {"lr": 1, "training": {"max_epochs": 1}}, "b": {"lr": 2}},
    "locales": ["en-US", "de-DE"],
    "max_train": 100,
}


def test_mappings_merge_key_by_key_and_lists_are_replaced():
    out = merge_delta(BASE, {"methods": {"a": {"lr": 5}}, "locales": ["fr-FR"], "max_train": None})
    assert out["methods"] == {"a": {"lr": 5, "training": {"max_epochs": 1}}, "b": {"lr": 2}}
    assert out["locales"] == ["fr-FR"] and out["pairs"] == BASE["pairs"]
    assert out["max_train"] is None  # a null over a scalar is a value ("all"), not a removal
    assert BASE["methods"]["a"]["lr"] == 1  # the inputs are not changed


def test_a_null_over_a_mapping_removes_the_key():
    out = merge_delta(BASE, {"pairs": {"en_es": None}, "methods": {"a": {"training": None}}})
    assert list(out["pairs"]) == ["en_de"] and out["methods"]["a"] == {"lr": 1}


def test_replace_makes_a_mapping_replace_bases():
    out = merge_delta(BASE, {"methods": {"_replace": True, "c": {"lr": 3}}})
    assert out["methods"] == {"c": {"lr": 3}}
    with pytest.raises(ValueError, match=r"methods\._replace: expected true or false, got 'yes'"):
        merge_delta(BASE, {"methods": {"_replace": "yes"}})


def test_the_loader_merges_parameters_softly_and_names_the_file_of_a_bad_marker(tmp_path: Path):
    for env, params in {"base": {"x": BASE}, "exp": {"x": {"methods": {"b": None}, "max_train": 5}}}.items():
        (tmp_path / env).mkdir()
        (tmp_path / env / "parameters.yml").write_text(yaml.safe_dump(params))
    loader = ProjectConfigLoader(str(tmp_path), env="exp", base_env="base", merge_strategy={"parameters": "soft"})
    assert loader["parameters"]["x"] == {**BASE, "methods": {"a": BASE["methods"]["a"]}, "max_train": 5}
    (tmp_path / "exp" / "parameters.yml").write_text(yaml.safe_dump({"x": {"methods": {"_replace": 1}}}))
    loader = ProjectConfigLoader(str(tmp_path), env="exp", base_env="base", merge_strategy={"parameters": "soft"})
    with pytest.raises(ValueError, match=r"exp.*x\.methods\._replace: expected true or false, got 1"):
        loader["parameters"]


BUDGETED = {
    "slu": {
        "budgets": {"laj": {"data": {"max_train": 2000, "batch_size": 8}, "training": {"max_epochs": 1, "lr": 5e-3}}},
        "methods": {
            "zsjoint": {"method": "slu"},
            "lajmcl-seed2023": {"method": "lajoint", "budget": "laj", "training": {"seed": 2023, "lr": 1e-3}},
        },
    }
}


def test_a_budget_is_written_out_in_its_methods_under_their_own_keys():
    out = expand_budgets(BUDGETED)
    assert out["slu"]["methods"] == {
        "zsjoint": {"method": "slu"},
        "lajmcl-seed2023": {
            "method": "lajoint",
            "data": {"max_train": 2000, "batch_size": 8},
            "training": {"max_epochs": 1, "lr": 1e-3, "seed": 2023},
        },
    }
    assert BUDGETED["slu"]["methods"]["lajmcl-seed2023"]["budget"] == "laj"  # the input is not changed


def test_an_unknown_budget_names_the_parameter_and_the_budgets(tmp_path: Path):
    bad = {"slu": {**BUDGETED["slu"], "methods": {"lajmcl": {"method": "lajoint", "budget": "full"}}}}
    message = r"^slu\.methods\.lajmcl\.budget: 'full' is not one of slu\.budgets \['laj'\]$"
    with pytest.raises(ParameterError, match=message):
        expand_budgets(bad)
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "parameters.yml").write_text(yaml.safe_dump(bad))
    loader = ProjectConfigLoader(str(tmp_path), env="base", base_env="base", merge_strategy={"parameters": "soft"})
    with pytest.raises(ParameterError, match=r"^slu\.methods\.lajmcl\.budget: 'full' is not one of"):
        loader["parameters"]


def test_the_laj_budget_is_stated_once_in_conf():
    stated = [p for p in (PROJECT_ROOT / "conf").rglob("parameters_slu.yml") if "max_train: 2000" in p.read_text()]
    assert [p.relative_to(PROJECT_ROOT).as_posix() for p in stated] == ["conf/base/parameters_slu.yml"]


def _restated(base: object, env: object, where: str) -> list[str]:
    """Keys of ``env`` whose value equals ``base``'s at the same place (what a delta should leave out)."""
    if isinstance(env, dict) and isinstance(base, dict):
        if env.get("_replace"):
            return []
        return [k for key, value in env.items() if key in base for k in _restated(base[key], value, f"{where}.{key}")]
    return [where] if env == base else []


@pytest.mark.parametrize(
    "env", sorted(p.name for p in (PROJECT_ROOT / "conf").iterdir() if p.is_dir() and p.name not in ("base", "local"))
)
def test_every_environment_holds_only_what_differs_from_base(env: str):
    base: dict = {}
    for path in (PROJECT_ROOT / "conf" / "base").glob("parameters*.yml"):
        base.update(yaml.safe_load(path.read_text()) or {})
    for path in (PROJECT_ROOT / "conf" / env).glob("parameters*.yml"):
        delta = yaml.safe_load(path.read_text()) or {}
        assert _restated(base, delta, path.name) == [], f"{path} restates conf/base's values"


def _loader(tmp_path: Path, delta: dict) -> ProjectConfigLoader:
    """The project's conf/base parameters with ``delta`` as an environment over them."""
    (tmp_path / "base").mkdir(exist_ok=True)
    (tmp_path / "exp").mkdir(exist_ok=True)
    for path in (PROJECT_ROOT / "conf" / "base").glob("parameters*.yml"):
        (tmp_path / "base" / path.name).write_text(path.read_text())
    (tmp_path / "exp" / "parameters.yml").write_text(yaml.safe_dump(delta))
    return ProjectConfigLoader(str(tmp_path), env="exp", base_env="base", merge_strategy={"parameters": "soft"})


def test_the_nodes_get_the_parameters_as_the_typed_models_read_them(tmp_path: Path):
    # YAML's `no` is the word the setting takes; an integer given for a float is that float, so
    # `adversarial: 0` and `adversarial: 0.0` are one setting (one fingerprint, one trained model);
    # a key not given stays unset (the code's default), not filled in
    delta = {
        "fmda": {"training": {"mixed_precision": False}},
        "emu": {"methods": {"emu-no_ld": {"loss_weights": {"adversarial": 0}}}},
    }
    params = _loader(tmp_path, delta)["parameters"]
    assert params["fmda"]["training"]["mixed_precision"] == "no"
    weight = params["emu"]["methods"]["emu-no_ld"]["loss_weights"]["adversarial"]
    assert weight == 0.0 and isinstance(weight, float)
    base = yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "parameters_fmda.yml").read_text())
    assert params["fmda"]["figure"] == base["fmda"]["figure"]  # only the keys written, as written


def test_parameters_the_models_refuse_are_left_as_written_for_the_start_up_check(tmp_path: Path):
    # the run's check (pipelines/parameter_checks.py) names the parameter; a config read does not stop the run
    params = _loader(tmp_path, {"fmda": {"training": {"batch_size": 2.5, "mixed_precision": False}}})["parameters"]
    assert params["fmda"]["training"]["batch_size"] == 2.5
    assert params["fmda"]["training"]["mixed_precision"] is False
