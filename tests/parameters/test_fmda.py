"""``fmda`` and ``fmda_paper``: every env's parameters pass; a wrong value anywhere is one line naming its path."""

from __future__ import annotations

import re
from typing import Any

import pytest

from language_agnostic.config import ParameterError
from language_agnostic.methods.fmda import FmdaConfig
from language_agnostic.parameters.base import validated
from language_agnostic.parameters.fmda import SECTIONS, Fmda, FmdaPaper
from language_agnostic.training import fmda as fmda_training
from tests.parameters.conftest import ENVS, env_parameters, with_value

TRAINING_KEYS = (
    "['batch_size', 'device', 'encoder_lr', 'eval_every_steps', 'fused', 'gradient_accumulation_steps', "
    "'keep_initial', 'length_buckets', 'lr', 'max_epochs', 'max_grad_norm', 'min_delta', 'mixed_precision', "
    "'patience', 'processes', 'progress', 'schedule', 'seed', 'select_on', 'warmup_ratio', 'weight_decay']"
)
HEAD_TRAINING_KEYS = TRAINING_KEYS.replace("'length_buckets', ", "")
VARIANT_KEYS = "['ablation', 'loss', 'loss_weights', 'pairs', 'training', 'two_stage']"
LOSS_KEYS = "['contrastive', 'margin', 'negative', 'temperature']"
ABLATIONS = (
    "['full', 'no_reconstruction', 'no_utterance_reconstruction', 'no_template_reconstruction', "
    "'no_residual_reconstruction', 'no_contrastive']"
)
FMDA_WEIGHTS = "['lang', 'utt_rec', 'tp_rec', 'tp_rec_cl', 'rs_rec', 'rs_rec_cl', 'tp_con', 'm_con']"
NO_WEIGHTS = dict.fromkeys(("lang", "utt_rec", "tp_rec", "tp_rec_cl", "rs_rec", "rs_rec_cl", "tp_con", "m_con"), 0)
POOLED = "['dream', 'linear-infonce', 'dream-infonce']"


def _check(path: str, value: Any, env: str = "paper") -> Any:
    """The section of ``path`` with ``value`` at ``path`` (over ``env``'s parameters), validated."""
    key = path.split(".")[0]
    return validated(SECTIONS[key], with_value(env_parameters(env), path, value)[key], key)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # fmda.model
        (
            "fmda.model.layers",
            2,
            "fmda.model: unknown key 'layers'; known: ['activation', 'attention_scale', "
            "'ffn_layers', 'init', 'mlp_layers', 'utterance_target']",
        ),
        ("fmda.model.ffn_layers", 1.5, "fmda.model.ffn_layers: must be a whole number, got 1.5"),
        ("fmda.model.mlp_layers", "two", "fmda.model.mlp_layers: must be a whole number, got 'two'"),
        ("fmda.model.mlp_layers", 0, "fmda.model.mlp_layers: must be >= 1, got 0"),
        (
            "fmda.model.activation",
            "swish",
            "fmda.model.activation: must be one of ['none', 'relu', 'gelu', 'tanh'], got 'swish'",
        ),
        # fmda.loss
        ("fmda.loss.tau", 0.1, f"fmda.loss: unknown key 'tau'; known: {LOSS_KEYS}"),
        ("fmda.loss.margin", "abc", "fmda.loss.margin: must be a number, got 'abc'"),
        ("fmda.loss.margin", -1.5, "fmda.loss.margin: must be >= -1, got -1.5"),
        ("fmda.loss.temperature", 0, "fmda.loss.temperature: must be > 0, got 0"),
        (
            "fmda.loss.contrastive",
            "triplet",
            "fmda.loss.contrastive: must be one of ['pairwise', 'infonce'], got 'triplet'",
        ),
        ("fmda.loss.negative", False, "fmda.loss.negative: must be one of ['hinge', 'linear'], got False"),
        # fmda.training
        ("fmda.training.learning_rate", 1e-3, f"fmda.training: unknown key 'learning_rate'; known: {TRAINING_KEYS}"),
        ("fmda.training.lr", -1, "fmda.training.lr: must be > 0, got -1"),
        ("fmda.training.lr", None, "fmda.training.lr: must be a number, got None"),
        ("fmda.training.batch_size", "abc", "fmda.training.batch_size: must be a whole number, got 'abc'"),
        ("fmda.training.batch_size", 0, "fmda.training.batch_size: must be >= 1, got 0"),
        ("fmda.training.max_epochs", 60.5, "fmda.training.max_epochs: must be a whole number, got 60.5"),
        (
            "fmda.training.select_on",
            "dev_accuracy",
            "fmda.training.select_on: must be one of ['dev_loss', 'dev_retrieval'], got 'dev_accuracy'",
        ),
        (
            "fmda.training.mixed_precision",
            "fp8",
            "fmda.training.mixed_precision: must be one of ['no', 'bf16', 'fp16', 'auto'], got 'fp8'",
        ),
        (
            "fmda.training.mixed_precision",
            True,  # YAML's `yes`
            "fmda.training.mixed_precision: must be one of ['no', 'bf16', 'fp16', 'auto'], got 'yes'",
        ),
        ("fmda.training.device", "gpu", "fmda.training.device: must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu'"),
        ("fmda.training.length_buckets", "yes", "fmda.training.length_buckets: must be true or false, got 'yes'"),
        # null by default (no clipping / every epoch): a value must still be of its type
        ("fmda.training.max_grad_norm", "abc", "fmda.training.max_grad_norm: must be a number, got 'abc'"),
        ("fmda.training.eval_every_steps", 0, "fmda.training.eval_every_steps: must be >= 1, got 0"),
        ("fmda.training.processes", 2.5, "fmda.training.processes: must be a whole number, got 2.5"),
        # fmda.variants.<name>
        ("fmda.variants.infonce.lrr", 1, f"fmda.variants.infonce: unknown key 'lrr'; known: {VARIANT_KEYS}"),
        (
            "fmda.variants.infonce.training.seed",
            1.5,
            "fmda.variants.infonce.training.seed: must be a whole number, got 1.5",
        ),
        (
            "fmda.variants.infonce.training.lr",
            "fast",
            "fmda.variants.infonce.training.lr: must be a number, got 'fast'",
        ),
        ("fmda.variants.infonce.training.lr", None, "fmda.variants.infonce.training.lr: must be a number, got None"),
        ("fmda.variants.infonce.training.patience", 0, "fmda.variants.infonce.training.patience: must be >= 1, got 0"),
        (
            "fmda.variants.infonce.training.epochs",
            3,
            f"fmda.variants.infonce.training: unknown key 'epochs'; known: {TRAINING_KEYS}",
        ),
        ("fmda.variants.infonce.loss.temp", 0.1, f"fmda.variants.infonce.loss: unknown key 'temp'; known: {LOSS_KEYS}"),
        (
            "fmda.variants.infonce.loss.contrastive",
            "triplet",
            "fmda.variants.infonce.loss.contrastive: must be one of ['pairwise', 'infonce'], got 'triplet'",
        ),
        (
            "fmda.variants.two_stage.two_stage",
            "yes",
            "fmda.variants.two_stage.two_stage: must be true or false, got 'yes'",
        ),
        (
            "fmda.variants.two_stage.ablation",
            "no_language",
            f"fmda.variants.two_stage.ablation: must be one of {ABLATIONS}, got 'no_language'",
        ),
        (
            "fmda.variants.two_stage.pairs",
            "en_de",
            "fmda.variants.two_stage.pairs: must be one of ['all'], got 'en_de'",
        ),
        ("fmda.variants.two_stage.pairs", ["en_de", 1], "fmda.variants.two_stage.pairs.1: must be a string, got 1"),
        (
            "fmda.variants.two_stage.pairs",
            [],  # no pair: the variant trains nowhere (remove it with `two_stage: ~` instead)
            "fmda.variants.two_stage.pairs: list should have at least 1 item after validation, not 0, got []",
        ),
        (
            "fmda.variants.two_stage.loss_weights",
            {"language": 0},
            f"fmda.variants.two_stage.loss_weights.language: must be one of {FMDA_WEIGHTS}, got 'language'",
        ),
        (
            "fmda.variants.two_stage.loss_weights",
            {"lang": "zero"},
            "fmda.variants.two_stage.loss_weights.lang: must be a number, got 'zero'",
        ),
        (
            "fmda.variants.two_stage.loss_weights",
            {"lang": -1},
            "fmda.variants.two_stage.loss_weights.lang: must be >= 0, got -1",
        ),
        (
            "fmda.variants.two_stage.loss_weights",
            {"tp_rec": 0, "tp_rec_cl": 0, "tp_con": 0},
            "fmda.variants.two_stage.loss_weights: every FMDA loss weight is 0 in stage 1 with ablation 'full': "
            "nothing to train, got {'tp_rec': 0, 'tp_rec_cl': 0, 'tp_con': 0}",
        ),
        (
            "fmda.variants.all_together.loss_weights",
            NO_WEIGHTS,
            "fmda.variants.all_together.loss_weights: every FMDA loss weight is 0 with ablation 'full': "
            f"nothing to train, got {NO_WEIGHTS}",
        ),
        ("fmda.variants.all_together", None, "fmda.variants.all_together: must be a mapping, got None"),
        # fmda.methods.<name>
        (
            "fmda.methods.dream.lrr",
            1,
            "fmda.methods.dream: unknown key 'lrr'; known: ['activation', 'loss_weights', "
            "'method', 'negatives', 'pairs', 'pooling', 'training']",
        ),
        ("fmda.methods.dream.method", "seed", f"fmda.methods.dream.method: must be one of {POOLED}, got 'seed'"),
        # no `method`: the entry's name is the method
        ("fmda.methods.meat", {"pooling": "mean"}, f"fmda.methods.meat.method: must be one of {POOLED}, got 'meat'"),
        ("fmda.methods.dream.pooling", "max", "fmda.methods.dream.pooling: must be one of ['mean', 'cls'], got 'max'"),
        (
            "fmda.methods.dream.negatives",
            "batch",
            "fmda.methods.dream.negatives: must be one of ['pool', 'all'], got 'batch'",
        ),
        (
            "fmda.methods.dream.activation",
            "swish",
            "fmda.methods.dream.activation: must be one of ['none', 'relu', 'tanh', 'gelu'], got 'swish'",
        ),
        (
            "fmda.methods.dream.loss_weights",
            {"lang": 1},
            "fmda.methods.dream.loss_weights.lang: must be one of "
            "['reconstruction', 'meaning', 'language', 'language_push'], got 'lang'",
        ),
        ("fmda.methods.dream.pairs", 3, "fmda.methods.dream.pairs: must be a list, got 3"),
        (
            "fmda.methods.dream.training.max_epochs",
            200.5,
            "fmda.methods.dream.training.max_epochs: must be a whole number, got 200.5",
        ),
        ("fmda.methods.dream.training.lr", "abc", "fmda.methods.dream.training.lr: must be a number, got 'abc'"),
        ("fmda.methods.dream.training.patience", 0, "fmda.methods.dream.training.patience: must be >= 1, got 0"),
        (
            "fmda.methods.dream.training.mixed_precision",
            "fp8",
            "fmda.methods.dream.training.mixed_precision: must be one of ['no', 'bf16', 'fp16', 'auto'], got 'fp8'",
        ),
        # pooled vectors have no length: the parser drops it silently, the model refuses it
        (
            "fmda.methods.dream.training.length_buckets",
            True,
            f"fmda.methods.dream.training: unknown key 'length_buckets'; known: {HEAD_TRAINING_KEYS}",
        ),
        (
            "fmda.methods.linear_infonce.activation",
            "relu",
            "fmda.methods.linear_infonce.activation: linear-infonce "
            "takes no activation (one linear map trained by InfoNCE), got 'relu'",
        ),
        (
            "fmda.methods.linear_infonce.loss_weights",
            {"meaning": 1},
            "fmda.methods.linear_infonce.loss_weights: "
            "linear-infonce takes no loss_weights (one linear map trained by InfoNCE), got {'meaning': 1}",
        ),
        # fmda.template_pairs_holdout
        (
            "fmda.template_pairs_holdout.fraction",
            0.1,
            "fmda.template_pairs_holdout: unknown key 'fraction'; known: ['dev_fraction', 'seed']",
        ),
        ("fmda.template_pairs_holdout.seed", 1.5, "fmda.template_pairs_holdout.seed: must be a whole number, got 1.5"),
        ("fmda.template_pairs_holdout.seed", -1, "fmda.template_pairs_holdout.seed: must be >= 0, got -1"),
        (
            "fmda.template_pairs_holdout.dev_fraction",
            "tenth",
            "fmda.template_pairs_holdout.dev_fraction: must be a number, got 'tenth'",
        ),
        ("fmda.template_pairs_holdout.dev_fraction", 1, "fmda.template_pairs_holdout.dev_fraction: must be < 1, got 1"),
        # fmda.figure
        (
            "fmda.figure.size",
            3,
            "fmda.figure: unknown key 'size'; known: ['intent', 'n_pairs', 'n_templates', "
            "'pair', 'per_template', 'seed', 'split']",
        ),
        ("fmda.figure.n_pairs", 800.5, "fmda.figure.n_pairs: must be a whole number, got 800.5"),
        ("fmda.figure.n_pairs", "many", "fmda.figure.n_pairs: must be a whole number, got 'many'"),
        ("fmda.figure.n_templates", 1, "fmda.figure.n_templates: must be >= 2, got 1"),
        (
            "fmda.figure.split",
            "validation",
            "fmda.figure.split: must be one of ['train', 'dev', 'test'], got 'validation'",
        ),
        ("fmda.figure.pair", 1, "fmda.figure.pair: must be a string, got 1"),
        # fmda
        (
            "fmda.variant",
            {},
            "fmda: unknown key 'variant'; known: ['figure', 'loss', 'methods', 'model', "
            "'template_pairs_holdout', 'training', 'variants']",
        ),
        ("fmda.methods", [1], "fmda.methods: must be a mapping, got [1]"),
        # fmda_paper.variants.<name>
        ("fmda_paper.variants.linear.lrr", 1, f"fmda_paper.variants.linear: unknown key 'lrr'; known: {VARIANT_KEYS}"),
        (
            "fmda_paper.variants.linear.training.seed",
            1.5,
            "fmda_paper.variants.linear.training.seed: must be a whole number, got 1.5",
        ),
        (
            "fmda_paper.variants.linear.training.batch_size",
            "big",
            "fmda_paper.variants.linear.training.batch_size: must be a whole number, got 'big'",
        ),
        ("fmda_paper.variants.linear.loss.margin", 1, "fmda_paper.variants.linear.loss.margin: must be < 1, got 1"),
        (
            "fmda_paper.variants.linear.loss.negative",
            "cubic",
            "fmda_paper.variants.linear.loss.negative: must be one of ['hinge', 'linear'], got 'cubic'",
        ),
        # fmda_paper.unified
        (
            "fmda_paper.unified.two_stage",
            True,
            "fmda_paper.unified: unknown key 'two_stage'; known: ['ablation', "
            "'loss', 'loss_weights', 'pairs', 'training']",
        ),
        ("fmda_paper.unified.pairs", "en_de", "fmda_paper.unified.pairs: must be a list, got 'en_de'"),
        ("fmda_paper.unified.ablation", "none", f"fmda_paper.unified.ablation: must be one of {ABLATIONS}, got 'none'"),
        (
            "fmda_paper.unified.training.max_epochs",
            1.5,
            "fmda_paper.unified.training.max_epochs: must be a whole number, got 1.5",
        ),
        ("fmda_paper.unified.training.lr", "abc", "fmda_paper.unified.training.lr: must be a number, got 'abc'"),
        ("fmda_paper.unified.loss.temperature", -1, "fmda_paper.unified.loss.temperature: must be > 0, got -1"),
        (
            "fmda_paper.unified.loss_weights",
            {"m_con": "one"},
            "fmda_paper.unified.loss_weights.m_con: must be a number, got 'one'",
        ),
        ("fmda_paper.unify", {}, "fmda_paper: unknown key 'unify'; known: ['unified', 'variants']"),
    ],
)
def test_a_wrong_value_is_one_line_naming_its_path(path: str, value: Any, message: str):
    with pytest.raises(ParameterError, match=f"^{re.escape(message)}$"):
        _check(path, value)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("fmda.training.mixed_precision", False),  # YAML's `no`
        ("fmda.methods.dream.training.mixed_precision", False),
        ("fmda.training.lr", 1),  # an int is a float
        ("fmda.training.device", "cuda:1"),
        ("fmda.training.max_grad_norm", None),  # no clipping
        ("fmda.variants.infonce.training.processes", None),
        ("fmda.variants.infonce.training.mixed_precision", False),
        ("fmda.variants.x", {"pairs": ["en_de"], "ablation": "no_contrastive", "loss_weights": {"lang": 2}}),
        ("fmda.methods.dream-infonce", {"activation": "relu"}),  # method: its name
        ("fmda.figure.pair", None),  # no figure
        ("fmda.figure.pair", ""),
    ],
)
def test_what_the_models_accept_the_training_code_builds(path: str, value: Any):
    _check(path, value)
    _build_settings(with_value(env_parameters("paper"), path, value))


@pytest.mark.parametrize("env", ENVS)
def test_every_env_builds_its_settings(env: str):
    _build_settings(env_parameters(env))


def _build_settings(params: dict[str, Any]) -> None:
    """Every settings object the fmda training nodes build, from ``params`` as the config loader hands them to
    the nodes (validated, only what was set): the code constructs them without checks of its own."""
    fmda = validated(Fmda, params.get("fmda") or {}, "fmda").model_dump(exclude_unset=True)
    paper = validated(FmdaPaper, params.get("fmda_paper") or {}, "fmda_paper").model_dump(exclude_unset=True)
    training, loss = fmda.get("training", {}), fmda.get("loss", {})
    FmdaConfig(**fmda.get("model", {}), dim=8, n_languages=2)
    for spec in [*fmda.get("variants", {}).values(), *paper.get("variants", {}).values(), paper.get("unified", {})]:
        fmda_training._variant_setup(training, spec, loss)
    for spec in fmda.get("methods", {}).values():
        parsed = fmda_training.pooled_head_spec(spec)
        fmda_training._training_settings(fmda_training._head_training(training, parsed))


def test_values_are_read_as_the_code_reads_them():
    fmda = _check("fmda.training.mixed_precision", False)
    assert isinstance(fmda, Fmda)
    assert fmda.training.mixed_precision == "no"
    head = _check("fmda.methods.dream.training.mixed_precision", False).methods["dream"]
    assert head.training.mixed_precision == "no"
    assert _check("fmda.figure.pair", None).figure.pair == ""
    # a head without `method` is the method of its name; a variant's overrides hold only what it sets
    head = _check("fmda.methods.dream-infonce", {"pooling": "cls"}, env="base").methods["dream-infonce"]
    assert (head.method, head.pooling, head.negatives, head.activation) == ("dream-infonce", "cls", "all", "none")
    variant = _check("fmda.loss.margin", 0.3).variants["infonce"]
    assert variant.training.model_dump(exclude_unset=True) == {"length_buckets": False}
    assert variant.loss.model_dump(exclude_unset=True) == {"contrastive": "infonce"}
    # absent blocks: the code's defaults (no variants: all_together alone; no figure)
    empty = validated(Fmda, {}, "fmda")
    assert list(empty.variants) == ["all_together"] and empty.figure.pair == "" and empty.methods == {}
    assert empty.training.select_on == "dev_loss" and empty.loss.margin == 0.0
    paper = validated(FmdaPaper, {}, "fmda_paper")
    assert paper.variants == {} and paper.unified.pairs == []
