"""``slu``'s model: every env's parameters pass, a wrong one is one line naming its path, and the model's keys
are the ones the code reads (``SluData``, ``TrainSettings``, ``method_settings``, ``method_config``, ``MclData``), which
build their settings from the values the model hands on without checking them again."""

from __future__ import annotations

import copy
import dataclasses
import re
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from language_agnostic.config import ParameterError
from language_agnostic.methods.lajmcl import MARGINS, MclConfig
from language_agnostic.methods.lajmcl import WEIGHTS as LAJOINT_WEIGHTS
from language_agnostic.methods.lajoint import LajointConfig
from language_agnostic.methods.slu import WEIGHTS as SLU_WEIGHTS
from language_agnostic.methods.slu import SluConfig
from language_agnostic.parameters.base import validated
from language_agnostic.parameters.slu import (
    LAJOINT_ONLY_OPTIONS,
    METHOD_NAME_PATTERN,
    SLU_OPTIONS,
    CodeSwitch,
    Margins,
    MclOptions,
    Slu,
    SluDataBlock,
    SluLossWeights,
    SluMethod,
    SluOptions,
    SluTraining,
)
from language_agnostic.pipelines.config_loader import expand_budgets
from language_agnostic.pipelines.slu.nodes import METHOD_NAME
from language_agnostic.training.lajmcl import MclData, method_config
from language_agnostic.training.loop import TrainSettings
from language_agnostic.training.slu import CodeSwitchSettings, SluData, _method_config, code_switch_settings
from language_agnostic.training.slu_methods import method_kind, method_settings
from tests.conftest import PROJECT_ROOT
from tests.parameters.conftest import ENVS, env_parameters, with_value

TRAINING_KEYS = (
    "['device', 'encoder_lr', 'eval_every_steps', 'fused', 'gradient_accumulation_steps', 'keep_initial', 'lr', "
    "'max_epochs', 'max_grad_norm', 'min_delta', 'mixed_precision', 'patience', 'processes', 'progress', "
    "'schedule', 'seed', 'train_layers', 'warmup_ratio', 'weight_decay']"
)
ENTRY_KEYS = "['budget', 'code_switch', 'data', 'loss_weights', 'method', 'options', 'training']"
# what training/slu_methods.py:method_settings reads of an entry (code_switch: pipelines/slu/nodes.py)
SETTINGS_KEYS = {"method", "loss_weights", "options", "training", "data"}
OPTIONS = (
    "['abstract_texts', 'compressor', 'dropout', 'head_dim', 'ignore_index', 'margins', 'mcl', 'projector', "
    "'slot_affinity', 'slot_temperature']"
)
LOCALES = "['en-US', 'de-DE', 'es-ES', 'fr-FR', 'ja-JP', 'zh-CN']"
MCL_ON = (
    "the MCL levels weighted > 0 (unset: 0.5) need code_switch: true with keep_source: true; for LAJoint "
    "without MCL set them to 0, got {'utterance': 0.5, 'slot_value': 0.5, 'word': 0.5}"
)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # slu.locales, slu.data
        ("slu.locales", "en-US", "slu.locales: must be a list, got 'en-US'"),
        ("slu.locales", [], "slu.locales: list should have at least 1 item after validation, not 0, got []"),
        ("slu.data.max_train", 2000.5, "slu.data.max_train: must be a whole number, got 2000.5"),
        ("slu.data.max_train", "all", "slu.data.max_train: must be a whole number, got 'all'"),
        ("slu.data.max_train", 0, "slu.data.max_train: must be >= 1, got 0"),
        ("slu.data.batch_size", 0, "slu.data.batch_size: must be >= 1, got 0"),
        ("slu.data.group_by_length", "yes", "slu.data.group_by_length: must be true or false, got 'yes'"),
        ("slu.data.dev_locale", 3, "slu.data.dev_locale: must be a string, got 3"),
        (
            "slu.data.batchsize",
            2,
            "slu.data: unknown key 'batchsize'; known: "
            "['batch_size', 'dev_locale', 'group_by_length', 'max_train', 'seed', 'training_locale']",
        ),
        (
            "slu.data.training_locale",
            "it-IT",
            f"slu.data.training_locale: must be one of slu.locales {LOCALES}, got 'it-IT'",
        ),
        (
            "slu.data.code_switch",
            {"ratio": 0.9},
            "slu.data: unknown key 'code_switch'; known: "
            "['batch_size', 'dev_locale', 'group_by_length', 'max_train', 'seed', 'training_locale']",
        ),
        # slu.code_switch
        ("slu.code_switch.ratio", 1.5, "slu.code_switch.ratio: must be <= 1, got 1.5"),
        ("slu.code_switch.ratio", "high", "slu.code_switch.ratio: must be a number, got 'high'"),
        ("slu.code_switch.languages", "de", "slu.code_switch.languages: must be a list, got 'de'"),
        ("slu.code_switch.keep_source", 1, "slu.code_switch.keep_source: must be true or false, got 1"),
        (
            "slu.code_switch.switch",
            "all",
            "slu.code_switch: unknown key 'switch'; known: ['keep_source', 'languages', 'ratio', 'seed']",
        ),
        # slu.training (TrainSettings and train_layers; conf/base's train_layers: null)
        ("slu.training.train_layers", 6.5, "slu.training.train_layers: must be a whole number, got 6.5"),
        ("slu.training.train_layers", "six", "slu.training.train_layers: must be a whole number, got 'six'"),
        ("slu.training.train_layers", -1, "slu.training.train_layers: must be >= 0, got -1"),
        ("slu.training.max_epochs", 2.5, "slu.training.max_epochs: must be a whole number, got 2.5"),
        ("slu.training.warmup_ratio", 1, "slu.training.warmup_ratio: must be < 1, got 1"),
        (
            "slu.training.schedule",
            "step",
            "slu.training.schedule: must be one of ['constant', 'linear', 'cosine'], got 'step'",
        ),
        ("slu.training.max_grad_norm", 0, "slu.training.max_grad_norm: must be > 0, got 0"),
        ("slu.training.lrr", 1, f"slu.training: unknown key 'lrr'; known: {TRAINING_KEYS}"),
        # slu.figure
        ("slu.figure.n_utterances", 10.5, "slu.figure.n_utterances: must be a whole number, got 10.5"),
        ("slu.figure.intent", "", "slu.figure.intent: string should have at least 1 character, got ''"),
        ("slu.figure.locales", ["it-IT"], f"slu.figure.locales: must be among slu.locales {LOCALES}, got ['it-IT']"),
        # slu.budgets
        ("slu.budgets.laj.data.max_train", 0.5, "slu.budgets.laj.data.max_train: must be a whole number, got 0.5"),
        ("slu.budgets.laj.options", {}, "slu.budgets.laj: unknown key 'options'; known: ['data', 'training']"),
        # slu.methods: an entry
        ("slu.methods.lajmcl.lrr", 1, f"slu.methods.lajmcl: unknown key 'lrr'; known: {ENTRY_KEYS}"),
        (
            "slu.methods.lajmcl.method",
            "joint",
            "slu.methods.lajmcl.method: must be one of ['slu', 'lajoint'], got 'joint'",
        ),
        ("slu.methods.cosda.code_switch", "yes", "slu.methods.cosda.code_switch: must be true or false, got 'yes'"),
        # a method's options: the settings' fields the code derives are not options
        (
            "slu.methods.zsjoint.options.n_labels",
            3,
            f"slu.methods.zsjoint.options: unknown key 'n_labels'; known: {OPTIONS}",
        ),
        (
            "slu.methods.lajmcl.options.slots",
            ["x"],
            f"slu.methods.lajmcl.options: unknown key 'slots'; known: {OPTIONS}",
        ),
        (
            "slu.methods.lajmcl.options.projector",
            "no",
            "slu.methods.lajmcl.options.projector: must be true or false, got 'no'",
        ),
        (
            "slu.methods.lajmcl.options.mcl.p_s",
            5.5,
            "slu.methods.lajmcl.options.mcl.p_s: must be a whole number, got 5.5",
        ),
        ("slu.methods.lajmcl.options.mcl.p_v", -1, "slu.methods.lajmcl.options.mcl.p_v: must be >= 0, got -1"),
        (
            "slu.methods.lajmcl.options.mcl.pp",
            5,
            "slu.methods.lajmcl.options.mcl: unknown key 'pp'; known: "
            "['init_layers', 'p_s', 'p_v', 'pool_values', 'slot_negatives', 'word_negatives']",
        ),
        (
            "slu.methods.lajmcl.options.slot_affinity",
            "l2",
            "slu.methods.lajmcl.options.slot_affinity: must be one of ['dot', 'cosine'], got 'l2'",
        ),
        (
            "slu.methods.lajmcl.options.slot_temperature",
            float("inf"),
            "slu.methods.lajmcl.options.slot_temperature: input should be a finite number, got inf",
        ),
        (
            "slu.methods.lajmcl.options.margins.utterance",
            -0.1,
            "slu.methods.lajmcl.options.margins.utterance: must be >= 0, got -0.1",
        ),
        (
            "slu.methods.lajmcl.options.margins.sentence",
            0.1,
            "slu.methods.lajmcl.options.margins: unknown key 'sentence'; known: ['slot_value', 'utterance', 'word']",
        ),
        ("slu.methods.lajmcl.loss_weights.word", -1, "slu.methods.lajmcl.loss_weights.word: must be >= 0, got -1"),
        (
            "slu.methods.lajmcl.loss_weights.wordd",
            1,
            "slu.methods.lajmcl.loss_weights: unknown key 'wordd'; known: "
            "['intent', 'slot', 'slot_value', 'utterance', 'word']",
        ),
        # an entry's overrides of slu.training / slu.data / slu.code_switch
        (
            "slu.methods.lajmcl.training.train_layers",
            6.5,
            "slu.methods.lajmcl.training.train_layers: must be a whole number, got 6.5",
        ),
        ("slu.methods.lajmcl.data.batch_size", 0, "slu.methods.lajmcl.data.batch_size: must be >= 1, got 0"),
        (
            "slu.methods.lajmcl.data.code_switch.languages",
            [],
            "slu.methods.lajmcl.data.code_switch.languages: list should have at least 1 item after validation, "
            "not 0, got []",
        ),
        # method slu (methods/slu.py:SluConfig, WEIGHTS) takes no lajoint setting
        (
            "slu.methods.zsjoint.options.mcl",
            {"p_s": 5},
            "slu.methods.zsjoint.options.mcl: is method lajoint's only; method slu takes options "
            "['dropout', 'ignore_index'], got {'p_s': 5}",
        ),
        (
            "slu.methods.zsjoint.loss_weights.word",
            0,
            "slu.methods.zsjoint.loss_weights.word: is method lajoint's only; method slu takes loss_weights "
            "['intent', 'slot'], got 0.0",
        ),
        # data.code_switch without code_switch: true (training/slu.py would read a half code_switch)
        (
            "slu.methods.zsjoint.data.code_switch",
            {"keep_source": False},
            "slu.methods.zsjoint.data.code_switch: takes effect with code_switch: true only, "
            "got {'keep_source': False}",
        ),
        # training/lajmcl.py:mcl_levels: MCL needs the switched copy beside the English
        ("slu.methods.lajmcl.code_switch", False, f"slu.methods.lajmcl.loss_weights: {MCL_ON}"),
        ("slu.methods.lajmcl.data.code_switch.keep_source", False, f"slu.methods.lajmcl.loss_weights: {MCL_ON}"),
        ("slu.code_switch.keep_source", False, f"slu.methods.lajmcl.loss_weights: {MCL_ON}"),
        # training/lajmcl.py:slot_level_negatives: p_v 0 without a pool
        (
            "slu.methods.lajmcl.options.mcl.p_v",
            0,
            "slu.methods.lajmcl.options.mcl.p_v: 0 with pool_values null leaves every negative pool V_k empty "
            "(Algorithm 1, line 8): set mcl.pool_values (Table 6's p_v = 0: slots described by name only), got 0",
        ),
        # the method's own locale overrides (pipelines/slu/nodes.py reads slu.locales only)
        (
            "slu.methods.zsjoint.data.dev_locale",
            "it-IT",
            f"slu.methods.zsjoint.data.dev_locale: must be one of slu.locales {LOCALES}, got 'it-IT'",
        ),
        # names: pipelines/slu/nodes.py:method_key
        (
            "slu.methods",
            {"a.b": {}},
            "slu.methods.a.b: must be a method name: letters, digits, '_', '-' and '+' only, got 'a.b'",
        ),
        (
            "slu.methods",
            {"a-b": {}, "a_b": {}},
            "slu.methods.a_b: becomes the node name 'a_b' as 'a-b' does: rename one, got 'a_b'",
        ),
        ("slu.methods.lajmcl", None, "slu.methods.lajmcl: must be a mapping, got None"),
        (
            "slu.verbose",
            True,
            "slu: unknown key 'verbose'; known: ['budgets', 'code_switch', 'data', 'figure', 'locales', 'methods', "
            "'training']",
        ),
    ],
)
def test_a_wrong_value_is_one_line_naming_its_path(path: str, value: Any, message: str):
    with pytest.raises(ParameterError, match=f"^{re.escape(message)}$"):
        validated(Slu, with_value(env_parameters(), path, value)["slu"], "slu")


def _base_as_written() -> dict[str, Any]:
    """conf/base's ``slu`` as the YAML writes it (budgets not expanded)."""
    return yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "parameters_slu.yml").read_text())["slu"]


def test_a_budget_is_a_name_of_slu_budgets():
    written = _base_as_written()
    assert written["methods"]["lajmcl"]["budget"] == "all_data"
    validated(Slu, written, "slu")  # conf/ as written, `budget: all_data` unexpanded
    wrong = copy.deepcopy(written)
    wrong["methods"]["lajmcl"]["budget"] = "big"
    with pytest.raises(
        ParameterError,
        match=re.escape("slu.methods.lajmcl.budget: must be one of slu.budgets ['all_data', 'laj'], got 'big'"),
    ):
        validated(Slu, wrong, "slu")
    # the loader refuses it too, when it expands the budgets (before any run or check reads them)
    with pytest.raises(
        ParameterError,
        match=re.escape("slu.methods.lajmcl.budget: 'big' is not one of slu.budgets ['all_data', 'laj']"),
    ):
        expand_budgets({"slu": wrong})


def test_a_budget_is_merged_under_the_method():
    lajmcl = validated(Slu, env_parameters()["slu"], "slu").methods["lajmcl"]
    assert lajmcl.budget is None  # expanded by the loader
    assert (lajmcl.data.max_train, lajmcl.data.batch_size, lajmcl.training.train_layers) == (None, 8, 6)
    quick = validated(Slu, env_parameters("slu_quick")["slu"], "slu").methods["lajmcl-laj_budget"]
    assert (quick.data.max_train, quick.data.batch_size, quick.training.train_layers) == (2000, 8, 6)
    # conf/paper: `lajmcl: {training: ~}` drops the budget's training
    paper = validated(Slu, env_parameters("paper")["slu"], "slu").methods["lajmcl"]
    assert not paper.training.model_fields_set and not paper.data.model_fields_set


def test_values_are_read_as_the_code_reads_them():
    params = with_value(env_parameters(), "slu.training.mixed_precision", False)  # YAML's `no`
    slu = validated(Slu, with_value(params, "slu.training.lr", 1)["slu"], "slu")
    assert (slu.training.mixed_precision, slu.training.lr) == ("no", 1.0)
    grid = validated(Slu, env_parameters("slu_grid")["slu"], "slu").methods["lajoint-cs+scl-ps5-pv0"]
    assert (grid.options.mcl.p_v, grid.options.mcl.pool_values) == (0, 20)


def test_no_methods_is_zsjoint_and_cosda_as_the_pipeline_builds_them():
    params = env_parameters()["slu"]
    del params["methods"]
    methods = validated(Slu, params, "slu").methods
    assert {name: m.code_switch for name, m in methods.items()} == {"zsjoint": False, "cosda": True}


def test_the_keys_are_the_codes():
    fields = {cls: {f.name for f in dataclasses.fields(cls)} for cls in (SluData, TrainSettings, MclData)}
    assert set(SluDataBlock.model_fields) == fields[SluData] - {"code_switch"}  # slu.code_switch and the method
    assert set(SluTraining.model_fields) == fields[TrainSettings] | {"train_layers"}
    assert set(CodeSwitch.model_fields) == {f.name for f in dataclasses.fields(CodeSwitchSettings)}
    assert set(SluMethod.model_fields) == SETTINGS_KEYS | {"code_switch", "budget"}
    assert set(SluLossWeights.model_fields) == set(LAJOINT_WEIGHTS)
    assert set(Margins.model_fields) == set(MARGINS)
    assert set(MclOptions.model_fields) == fields[MclData]
    # a method's options: SluConfig's (slu) and LajointConfig's, MclConfig's and mcl (lajoint), less the derived
    derived = {"n_intents", "n_labels", "slots", "encoder_config"}
    slu = {f.name for f in dataclasses.fields(SluConfig)} - derived
    lajoint = {f.name for c in (LajointConfig, MclConfig) for f in dataclasses.fields(c)} - derived | {"mcl"}
    assert set(SLU_OPTIONS) == slu and set(SluOptions.model_fields) == lajoint
    assert set(LAJOINT_ONLY_OPTIONS) == lajoint - slu and set(SLU_WEIGHTS) < set(LAJOINT_WEIGHTS)
    # the names the pipeline takes
    assert METHOD_NAME_PATTERN == METHOD_NAME.pattern


def test_code_switch_needs_a_ratio():
    params = env_parameters()["slu"]
    del params["code_switch"]["ratio"]
    with pytest.raises(ParameterError, match=re.escape("slu.code_switch.ratio: is missing (required)")):
        validated(Slu, params, "slu")


@pytest.mark.parametrize("env", ENVS)
def test_every_env_builds_its_settings(env: str):
    # the values the loader hands the nodes (checked and typed by the model) build every method's settings as
    # training/slu.py and training/lajmcl.py build them, with no check of their own
    slu = env_parameters(env)["slu"]
    encoder = SimpleNamespace(model=SimpleNamespace(config=SimpleNamespace(to_dict=dict)))
    for name, spec in (slu.get("methods") or {"zsjoint": {}}).items():
        method, training, data = method_settings(name, {k: v for k, v in spec.items() if k != "code_switch"})
        if method_kind(spec) == "lajoint":
            method_config(method, name, 2, ["a", "b"], encoder)
        else:
            _method_config(method, name, 2, 3, encoder)
        TrainSettings(**{k: v for k, v in {**slu["training"], **training}.items() if k != "train_layers"})
        SluData(**{**slu["data"], **{k: v for k, v in data.items() if k != "code_switch"}})
        switch = {k: v for k, v in slu["code_switch"].items() if k != "languages"}
        code_switch_settings({"languages": ["de"], **switch, **dict(data.get("code_switch") or {})})
