"""``emu``'s model: every env's parameters pass, a wrong one is one line naming its path, and the model's keys
are the ones the code reads (``EmuData``, ``TrainSettings``, ``EmuConfig``, ``method_settings``), which build their
settings from the values the model hands on without checking them again."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from language_agnostic.config import ParameterError
from language_agnostic.methods.emu import EmuConfig
from language_agnostic.parameters.base import validated
from language_agnostic.parameters.emu import (
    Emu,
    EmuDataBlock,
    EmuLossWeights,
    EmuMethod,
    EmuOptions,
    EmuTraining,
    Training,
)
from language_agnostic.training.emu import WEIGHT_FIELDS, EmuData, _emu_data, method_settings
from language_agnostic.training.loop import TrainSettings
from tests.parameters.conftest import ENVS, env_parameters, with_value

# what training/emu.py:method_settings reads of an entry
ENTRY_KEYS = {"method", "loss", "loss_weights", "training", "data", "options"}

TRAINING_KEYS = (
    "['device', 'encoder_lr', 'eval_every_steps', 'fused', 'gradient_accumulation_steps', 'keep_initial', 'lr', "
    "'max_epochs', 'max_grad_norm', 'min_delta', 'mixed_precision', 'patience', 'processes', 'progress', "
    "'schedule', 'seed', 'warmup_ratio', 'weight_decay']"
)
DATA_KEYS = (
    "['adversarial', 'adversarial_locales', 'batch_size', 'encoder_trainable', 'labelled_locales', 'per_intent', "
    "'seed', 'training_locale']"
)
METHODS = (
    "['contrastive', 'contrastive-m2', 'emu', 'emu-no_ld', 'emu-no_ld_cl', 'emu-parallel', 'npair', "
    "'npair-unscaled', 'softmax']"
)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # emu.data
        ("emu.data.per_intent", 20.5, "emu.data.per_intent: must be a whole number, got 20.5"),
        ("emu.data.batch_size", "sixteen", "emu.data.batch_size: must be a whole number, got 'sixteen'"),
        ("emu.data.batch_size", 0, "emu.data.batch_size: must be >= 1, got 0"),
        ("emu.data.seed", -1, "emu.data.seed: must be >= 0, got -1"),
        (
            "emu.data.adversarial",
            "both",
            "emu.data.adversarial: must be one of ['unlabelled', 'parallel'], got 'both'",
        ),
        (
            "emu.data.encoder_trainable",
            "none",
            "emu.data.encoder_trainable: must be one of ['all', 'no_embeddings'], got 'none'",
        ),
        (
            "emu.data.training_locale",
            "en_US",
            "emu.data.training_locale: must be a MASSIVE locale code such as 'en-US' or 'ja-JP', got 'en_US'",
        ),
        ("emu.data.labelled_locales", "de-DE", "emu.data.labelled_locales: must be a list, got 'de-DE'"),
        ("emu.data.per_intentt", 3, f"emu.data: unknown key 'per_intentt'; known: {DATA_KEYS}"),
        # emu.training
        ("emu.training.max_epochs", 2.5, "emu.training.max_epochs: must be a whole number, got 2.5"),
        ("emu.training.lr", "fast", "emu.training.lr: must be a number, got 'fast'"),
        ("emu.training.lr", 0, "emu.training.lr: must be > 0, got 0"),
        ("emu.training.encoder_lr", -1e-5, "emu.training.encoder_lr: must be >= 0, got -1e-05"),
        ("emu.training.patience", 0, "emu.training.patience: must be >= 1, got 0"),
        (
            "emu.training.mixed_precision",
            "fp8",
            "emu.training.mixed_precision: must be one of ['no', 'bf16', 'fp16', 'auto'], got 'fp8'",
        ),
        ("emu.training.device", "gpu", "emu.training.device: must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu'"),
        ("emu.training.progress", "yes", "emu.training.progress: must be true or false, got 'yes'"),
        ("emu.training.lrr", 1, f"emu.training: unknown key 'lrr'; known: {TRAINING_KEYS}"),
        # emu.methods: an entry
        (
            "emu.methods.emu.lrr",
            1,
            "emu.methods.emu: unknown key 'lrr'; known: "
            "['budget', 'data', 'loss', 'loss_weights', 'method', 'options', 'training']",
        ),
        ("emu.methods.emu.method", "slu", "emu.methods.emu.method: must be one of ['emu'], got 'slu'"),
        (
            "emu.methods.emu.loss",
            "triplet",
            "emu.methods.emu.loss: must be one of ['emu', 'softmax', 'contrastive', 'npair'], got 'triplet'",
        ),
        ("emu.methods.npair.options.scale", 0, "emu.methods.npair.options.scale: must be > 0, got 0"),
        (
            "emu.methods.emu.options.critic_steps",
            2.5,
            "emu.methods.emu.options.critic_steps: must be a whole number, got 2.5",
        ),
        (
            "emu.methods.emu.options.centers",
            "random",
            "emu.methods.emu.options.centers: must be one of ['centroid', 'learned'], got 'random'",
        ),
        (
            "emu.methods.emu.options.n_intents",
            60,
            "emu.methods.emu.options: unknown key 'n_intents'; known: ['alpha', 'center_rate', 'centers', 'clip', "
            "'critic_dropout', 'critic_hidden', 'critic_lr', 'critic_steps', 'margin', 'pooling', 'scale']",
        ),
        (
            "emu.methods.emu.loss_weights.gamma",
            0,
            "emu.methods.emu.loss_weights: unknown key 'gamma'; known: ['adversarial', 'center']",
        ),
        (
            "emu.methods.emu.loss_weights.center",
            "none",
            "emu.methods.emu.loss_weights.center: must be a number, got 'none'",
        ),
        ("emu.methods.emu.loss_weights.center", -1, "emu.methods.emu.loss_weights.center: must be >= 0, got -1"),
        # an entry's overrides of emu.data / emu.training
        ("emu.methods.emu.data.per_intent", 1.5, "emu.methods.emu.data.per_intent: must be a whole number, got 1.5"),
        ("emu.methods.emu.training.seed", 1.5, "emu.methods.emu.training.seed: must be a whole number, got 1.5"),
        (
            "emu.methods.emu.training.lrr",
            1,
            f"emu.methods.emu.training: unknown key 'lrr'; known: {TRAINING_KEYS}",
        ),
        # training/emu.py:prepare_emu: no critic for several labelled locales
        (
            "emu.methods.emu.data.labelled_locales",
            ["en-US", "de-DE"],
            "emu.methods.emu.data.labelled_locales: several labelled locales and EMU's critic (one per language, "
            "Algorithm 1) are not built together: set loss_weights.adversarial: 0 (EMU w/o LD, as the paper's "
            "Table 3), got ['en-US', 'de-DE']",
        ),
        # a budget that emu.budgets does not name (conf/ as written, before the loader expands it)
        ("emu.methods.emu.budget", "laj", "emu.methods.emu.budget: must be one of emu.budgets [], got 'laj'"),
        # emu.only (conf/base: null), emu.save_encoders
        ("emu.only", 3, "emu.only: must be a list, got 3"),
        ("emu.only", "emuu", f"emu.only: names ['emuu'] not in emu.methods {METHODS}, got ['emuu']"),
        ("emu.save_encoders", ["x"], f"emu.save_encoders: names ['x'] not in emu.methods {METHODS}, got ['x']"),
        # emu.evaluation, emu.figure
        (
            "emu.evaluation.directions",
            "some",
            "emu.evaluation.directions: must be one of ['training', 'all'], got 'some'",
        ),
        ("emu.figure.n_intents", 1.5, "emu.figure.n_intents: must be a whole number, got 1.5"),
        ("emu.figure.per_intent", 0, "emu.figure.per_intent: must be >= 1, got 0"),
        (
            "emu.figure.size",
            3,
            "emu.figure: unknown key 'size'; known: ['locales', 'methods', 'n_intents', 'per_intent', 'seed']",
        ),
        (
            "emu.verbose",
            True,
            "emu: unknown key 'verbose'; known: ['budgets', 'data', 'evaluation', 'figure', 'methods', 'only', "
            "'save_encoders', 'training']",
        ),
    ],
)
def test_a_wrong_value_is_one_line_naming_its_path(path: str, value: Any, message: str):
    with pytest.raises(ParameterError, match=f"^{re.escape(message)}$"):
        validated(Emu, with_value(env_parameters(), path, value)["emu"], "emu")


def test_a_block_the_nodes_read_is_required():
    params = env_parameters()["emu"]
    del params["evaluation"]
    with pytest.raises(ParameterError, match=re.escape("emu.evaluation: is missing (required)")):
        validated(Emu, params, "emu")


def test_values_are_read_as_the_code_reads_them():
    params = with_value(env_parameters(), "emu.training.mixed_precision", False)  # YAML's `no`
    params = with_value(params, "emu.training.lr", 1)  # an int for a float
    emu = validated(Emu, with_value(params, "emu.only", "emu")["emu"], "emu")
    assert (emu.training.mixed_precision, emu.training.lr, emu.only) == ("no", 1.0, ["emu"])
    # `--params=emu.only=` (empty): every method
    assert validated(Emu, with_value(params, "emu.only", "")["emu"], "emu").only is None
    # an entry's overrides hold only what it sets (the rest is emu.data's / emu.training's)
    method = emu.methods["emu-parallel"]
    assert method.data.model_fields_set == {"adversarial"} and not method.training.model_fields_set


def test_no_methods_is_emu_alone_as_the_pipeline_builds_it():
    params = env_parameters()["emu"]
    del params["methods"], params["save_encoders"], params["only"]
    assert list(validated(Emu, params, "emu").methods) == ["emu"]


def test_the_keys_are_the_codes():
    # the blocks the code parses into settings take exactly those settings' fields
    assert set(EmuDataBlock.model_fields) == {f.name for f in dataclasses.fields(EmuData)}
    assert (
        set(Training.model_fields)
        == set(EmuTraining.model_fields)
        == {f.name for f in dataclasses.fields(TrainSettings)}
    )
    # a method: method_settings' keys (and the loader's budget), EMU's weights, EmuConfig's settings less those
    # the entry sets elsewhere (loss, the weights) or the code derives (n_intents, training_languages)
    assert set(EmuMethod.model_fields) == ENTRY_KEYS | {"budget"}
    assert set(EmuLossWeights.model_fields) == set(WEIGHT_FIELDS)
    derived = {"n_intents", "training_languages", "loss", *WEIGHT_FIELDS.values()}
    assert set(EmuOptions.model_fields) == {f.name for f in dataclasses.fields(EmuConfig)} - derived


@pytest.mark.parametrize("env", ENVS)
def test_every_env_builds_its_settings(env: str):
    # the values the loader hands the nodes (checked and typed by the model) build every method's settings as
    # training/emu.py:prepare_emu builds them, with no check of their own
    emu = env_parameters(env)["emu"]
    for name, spec in (emu.get("methods") or {"emu": {}}).items():
        config, training, data = method_settings(name, spec)
        EmuConfig(**config, n_intents=2, training_languages=("en-US",))
        TrainSettings(**{**emu["training"], **training})
        _emu_data({**emu["data"], **data})
