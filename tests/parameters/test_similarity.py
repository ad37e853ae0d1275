"""``qe`` and ``sts``: every env's parameters pass their models, and a wrong value is one line naming its path."""

from __future__ import annotations

from typing import Any

import pytest

from language_agnostic.config import ParameterError
from language_agnostic.methods import dream, meat, seed
from language_agnostic.methods.registry import TRAINED_METHODS, check_ablations
from language_agnostic.parameters.base import validated
from language_agnostic.parameters.similarity import LOSS_WEIGHTS, SECTIONS, Heads, Qe, Sts
from language_agnostic.training import heads
from tests.parameters.conftest import ENVS, env_parameters, with_value

CLAIM = {"claim": "c", "method": "seed/meaning", "baseline": "raw/mean", "backbone": "b", "paper": "p"}
QE_PAIRS = "['en-de', 'en-zh', 'ro-en', 'et-en', 'ne-en', 'si-en']"
TRAINING_KEYS = (
    "['batch_size', 'device', 'encoder_lr', 'eval_every_steps', 'fused', 'gradient_accumulation_steps', "
    "'keep_initial', 'lr', 'max_epochs', 'max_grad_norm', 'min_delta', 'mixed_precision', 'patience', 'processes', "
    "'progress', 'schedule', 'seed', 'warmup_ratio', 'weight_decay']"
)


def _check(path: str, value: Any) -> None:
    key = path.split(".")[0]
    validated(SECTIONS[key], with_value(env_parameters("base"), path, value)[key], key)


def test_the_models_follow_the_registry():
    # a head the pipelines train is a key of `methods`, with its method's loss weights
    assert tuple(Heads.model_fields) == TRAINED_METHODS
    assert set(LOSS_WEIGHTS) == set(TRAINED_METHODS)
    for method, module in {"dream": dream, "meat": meat, "seed": seed}.items():
        weights = LOSS_WEIGHTS[method]
        assert {k: f.default for k, f in weights.model_fields.items()} == module.DEFAULT_WEIGHTS
        assert Heads.model_fields[method].annotation.model_fields["loss_weights"].annotation is weights


def test_what_the_envs_write_is_read_as_the_code_reads_it():
    qe = validated(Qe, env_parameters("similarity_seeds")["qe"], "qe")
    assert qe.ablations["dream_seed1"].seed == 1 and qe.ablations["dream_seed1"].loss_weights == {}
    assert qe.ablations["seed_without_lc_seed2"].loss_weights == {"cross": 0}
    # a head's training sets only what it overrides
    assert qe.methods.seed.training.model_fields_set == {"lr", "patience"}
    sts = validated(Sts, env_parameters("base")["sts"], "sts")
    assert sts.corpus.languages["ara"] == "ar" and sts.test.tracks[0] == "ar-en"
    # YAML reads `mixed_precision: no` as false: the word comes back
    changed = with_value(env_parameters("base"), "qe.methods.dream.training.mixed_precision", False)
    assert validated(Qe, changed["qe"], "qe").methods.dream.training.mixed_precision == "no"
    laser = with_value(env_parameters("base"), "sts.corpus.laser_tatoeba", ["deu", "afr"])
    assert validated(Sts, laser["sts"], "sts").corpus.laser_tatoeba == ["deu", "afr"]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # test
        ("qe.test.pairz", [], "qe.test: unknown key 'pairz'; known: ['on_bad_row', 'pairs']"),
        ("qe.test.pairs", ["en-de", "en-fr"], f"qe.test.pairs.1: must be one of {QE_PAIRS}, got 'en-fr'"),
        ("qe.test.pairs", [], "qe.test.pairs: list should have at least 1 item after validation, not 0, got []"),
        ("qe.test.on_bad_row", "ignore", "qe.test.on_bad_row: must be one of ['error', 'skip'], got 'ignore'"),
        (
            "sts.test.tracks",
            ["ar-en", "fr-en"],
            "sts.test.tracks.1: must be one of ['ar-ar', 'ar-en', 'es-es', 'es-en', 'es-en-wmt', 'en-en', 'tr-en'], "
            "got 'fr-en'",
        ),
        # corpus
        (
            "qe.corpus.seeds",
            1,
            "qe.corpus: unknown key 'seeds'; known: ['flores', 'laser_tatoeba', 'mlqe_pe_splits', 'pairs', 'seed', "
            "'validation_fraction']",
        ),
        ("qe.corpus.seed", 2025.5, "qe.corpus.seed: must be a whole number, got 2025.5"),
        ("qe.corpus.validation_fraction", "tenth", "qe.corpus.validation_fraction: must be a number, got 'tenth'"),
        ("qe.corpus.validation_fraction", 1, "qe.corpus.validation_fraction: must be < 1, got 1"),
        ("qe.corpus.pairs", ["en-fr"], f"qe.corpus.pairs.0: must be one of {QE_PAIRS}, got 'en-fr'"),
        (
            "qe.corpus.mlqe_pe_splits",
            ["train", "valid"],
            "qe.corpus.mlqe_pe_splits.1: must be one of ['train', 'dev', 'test'], got 'valid'",
        ),
        (
            "qe.corpus.flores.pairs",
            ["en-ne"],
            "qe.corpus.flores.pairs.0: must be one of ['ne-en', 'si-en'], got 'en-ne'",
        ),
        ("qe.corpus.flores.split", ["dev"], "qe.corpus.flores: unknown key 'split'; known: ['pairs', 'splits']"),
        ("qe.corpus.laser_tatoeba", "every", "qe.corpus.laser_tatoeba: must be one of ['all'], got 'every'"),
        (
            "qe.corpus.laser_tatoeba",
            ["deu", "xyz"],
            "qe.corpus.laser_tatoeba.1: must be the ISO 639-3 code of a LASER Tatoeba language, e.g. 'deu', got 'xyz'",
        ),
        (
            "sts.corpus.languages.kor",
            "ko",
            "sts.corpus.languages.kor: must be one of ['ara', 'deu', 'spa', 'fra', 'ita', 'nld', 'tur', 'ron', 'est', "
            "'zho'], got 'kor'",
        ),
        (
            "sts.corpus.languages.deu",
            "German",
            "sts.corpus.languages.deu: must be a 2- or 3-letter language code such as 'de', got 'German'",
        ),
        ("sts.corpus.keep_labels.ara", "ara", "sts.corpus.keep_labels.ara: must be a list, got 'ara'"),
        ("sts.corpus.version", None, "sts.corpus.version: must be a string, got None"),
        # pooling and training
        ("qe.pooling", "max", "qe.pooling: must be one of ['cls', 'mean'], got 'max'"),
        ("qe.training.lrr", 1, f"qe.training: unknown key 'lrr'; known: {TRAINING_KEYS}"),
        ("qe.training.batch_size", 512.5, "qe.training.batch_size: must be a whole number, got 512.5"),
        ("sts.training.batch_size", 0, "sts.training.batch_size: must be >= 1, got 0"),
        ("qe.training.lr", "fast", "qe.training.lr: must be a number, got 'fast'"),
        ("qe.training.lr", 0, "qe.training.lr: must be > 0, got 0"),
        ("qe.training.device", "tpu", "qe.training.device: must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'tpu'"),
        (
            "qe.training.schedule",
            "step",
            "qe.training.schedule: must be one of ['constant', 'linear', 'cosine'], got 'step'",
        ),
        # conf/base leaves these null (nothing set): a wrong type is still named
        ("qe.training.encoder_lr", "slow", "qe.training.encoder_lr: must be a number, got 'slow'"),
        ("qe.methods.seed.pooling", 3, "qe.methods.seed.pooling: must be one of ['cls', 'mean'], got 3"),
        ("qe.methods.seed.pooling", "max", "qe.methods.seed.pooling: must be one of ['cls', 'mean'], got 'max'"),
        # methods: the heads the pipelines train
        ("qe.methods.lstm", {}, "qe.methods: unknown key 'lstm'; known: ['dream', 'meat', 'seed']"),
        (
            "qe.methods.dream.lr",
            1e-3,
            "qe.methods.dream: unknown key 'lr'; known: ['activation', 'loss_weights', 'method', 'pooling', "
            "'training']",
        ),
        ("qe.methods.dream.method", "lstm", "qe.methods.dream.method: must be one of ['dream'], got 'lstm'"),
        ("qe.methods.seed.method", "dream", "qe.methods.seed.method: must be one of ['seed'], got 'dream'"),
        (
            "qe.methods.meat.activation",
            "relu",
            "qe.methods.meat: unknown key 'activation'; known: ['loss_weights', 'method', 'pooling', 'training']",
        ),
        (
            "qe.methods.dream.activation",
            "swish",
            "qe.methods.dream.activation: must be one of ['none', 'relu', 'tanh', 'gelu'], got 'swish'",
        ),
        (
            "qe.methods.dream.training.max_epochs",
            3.5,
            "qe.methods.dream.training.max_epochs: must be a whole number, got 3.5",
        ),
        ("sts.methods.seed.training.patience", 0, "sts.methods.seed.training.patience: must be >= 1, got 0"),
        ("qe.methods.seed.training.lr", None, "qe.methods.seed.training.lr: must be a number, got None"),
        (
            "qe.methods.meat.training.epochs",
            3,
            f"qe.methods.meat.training: unknown key 'epochs'; known: {TRAINING_KEYS}",
        ),
        (
            "qe.methods.seed.loss_weights.crosss",
            0,
            "qe.methods.seed.loss_weights: unknown key 'crosss'; known: ['cross', 'language', 'meaning']",
        ),
        ("qe.methods.seed.loss_weights.cross", -1, "qe.methods.seed.loss_weights.cross: must be >= 0, got -1"),
        (
            "qe.methods.dream.loss_weights.meaning",
            "off",
            "qe.methods.dream.loss_weights.meaning: must be a number, got 'off'",
        ),
        # ablations: names the user chooses
        (
            "qe.ablations.seed_without_lc.loss_weight",
            {"cross": 0},
            "qe.ablations.seed_without_lc: unknown key 'loss_weight'; known: ['base', 'loss_weights', 'seed']",
        ),
        (
            "qe.ablations.x",
            {"base": "seed", "method": "seed", "seed": 1},
            "qe.ablations.x: unknown key 'method'; known: ['base', 'loss_weights', 'seed']",
        ),
        (
            "qe.ablations.x",
            {"base": "emu", "seed": 1},
            "qe.ablations.x.base: must be one of ['dream', 'meat', 'seed'], got 'emu'",
        ),
        ("qe.ablations.x", {"base": "seed", "seed": 1.5}, "qe.ablations.x.seed: must be a whole number, got 1.5"),
        ("qe.ablations.x", {"base": "seed", "seed": "one"}, "qe.ablations.x.seed: must be a whole number, got 'one'"),
        (
            "qe.ablations.x",
            {"base": "seed", "loss_weights": {"cross": "zero"}},
            "qe.ablations.x.loss_weights.cross: must be a number, got 'zero'",
        ),
        (
            "qe.ablations.x",
            {"base": "seed", "loss_weights": {"reconstruction": 0}},
            "qe.ablations.x.loss_weights: not a loss weight of seed (known: ['cross', 'language', 'meaning']), "
            "got 'reconstruction'",
        ),
        (
            "qe.ablations.x",
            {"base": "seed"},
            "qe.ablations.x: give the loss_weights it changes (e.g. {meaning: 0}) or a training seed, "
            "got {'base': 'seed'}",
        ),
        (
            "qe.ablations.seed",
            {"base": "seed", "seed": 1},
            "qe.ablations.seed: the name must be a new identifier (letters, digits, _), not one of ['dream', 'meat', "
            "'seed', 'raw', 'centering'], got 'seed'",
        ),
        (
            "sts.ablations.x-y",
            {"base": "seed", "seed": 1},
            "sts.ablations.x-y: the name must be a new identifier (letters, digits, _), not one of ['dream', 'meat', "
            "'seed', 'raw', 'centering'], got 'x-y'",
        ),
        # leakage and figure
        (
            "qe.leakage.max_iters",
            1,
            "qe.leakage: unknown key 'max_iters'; known: ['max_iter', 'seed', 'test_per_language', "
            "'train_per_language']",
        ),
        ("qe.leakage.train_per_language", 999.5, "qe.leakage.train_per_language: must be a whole number, got 999.5"),
        ("sts.leakage.max_iter", 0, "sts.leakage.max_iter: must be >= 1, got 0"),
        ("qe.leakage.seed", -1, "qe.leakage.seed: must be >= 0, got -1"),
        ("qe.figure.n_pair", 1, "qe.figure: unknown key 'n_pair'; known: ['n_pairs', 'pair', 'seed']"),
        ("qe.figure.n_pairs", 800.5, "qe.figure.n_pairs: must be a whole number, got 800.5"),
        ("qe.figure.n_pairs", "many", "qe.figure.n_pairs: must be a whole number, got 'many'"),
        ("qe.figure.pair", "en-fr", f"qe.figure.pair: not an evaluation pair of qe.test.pairs {QE_PAIRS}, got 'en-fr'"),
        (
            "sts.figure.pair",
            "de-en",
            "sts.figure.pair: not an evaluation pair of sts.test.tracks ['ar-en', 'es-en', 'tr-en', 'ar-ar', 'es-es', "
            "'en-en'], got 'de-en'",
        ),
        # report
        (
            "qe.report.titel",
            "x",
            "qe.report: unknown key 'titel'; known: ['ablation_tables', 'bootstrap', 'claims', 'paper_corpus_sizes', "
            "'pipeline', 'tables', 'task', 'title']",
        ),
        ("qe.report.pipeline", "sts", "qe.report.pipeline: must be one of ['qe'], got 'sts'"),
        (
            "sts.report.task",
            "quality_estimation",
            "sts.report.task: must be one of ['semantic_textual_similarity'], got 'quality_estimation'",
        ),
        ("qe.report.title", "", "qe.report.title: string should have at least 1 character, got ''"),
        (
            "qe.report.tables",
            {},
            "qe.report.tables: dictionary should have at least 1 item after validation, not 0, got {}",
        ),
        (
            "qe.report.tables.Extra",
            ["en-de", "en-fr"],
            f"qe.report.tables.Extra.1: not an evaluation pair of qe.test.pairs {QE_PAIRS}, got 'en-fr'",
        ),
        ("qe.report.tables.Extra", "en-de", "qe.report.tables.Extra: must be a list, got 'en-de'"),
        (
            "qe.report.ablation_tables.emu",
            "EMU",
            "qe.report.ablation_tables.emu: must be one of ['dream', 'meat', 'seed'], got 'emu'",
        ),
        ("qe.report.bootstrap.resamples", 1e4, "qe.report.bootstrap.resamples: must be a whole number, got 10000.0"),
        ("qe.report.bootstrap.resamples", 0, "qe.report.bootstrap.resamples: must be >= 1, got 0"),
        (
            "qe.report.bootstrap.resample",
            10,
            "qe.report.bootstrap: unknown key 'resample'; known: ['resamples', 'seed']",
        ),
        (
            "qe.report.claims",
            [{**CLAIM, "methd": "x"}],
            "qe.report.claims.0: unknown key 'methd'; known: ['backbone', 'baseline', 'claim', 'direction', 'method', "
            "'paper', 'table']",
        ),
        (
            "qe.report.claims",
            [{**CLAIM, "method": "seed"}],
            "qe.report.claims.0.method: write it as method/embedding (e.g. seed/meaning), got 'seed'",
        ),
        (
            "qe.report.claims",
            [{**CLAIM, "direction": "<"}],
            "qe.report.claims.0.direction: must be one of ['>', 'not >', 'not <'], got '<'",
        ),
        (
            "qe.report.claims",
            [CLAIM, {**CLAIM, "table": "Table 9"}],
            "qe.report.claims.1.table: not one of report.tables ['SEED Table 1 / DREAM Table 2: WMT20 QE'], "
            "got 'Table 9'",
        ),
        ("qe.report.claims", [{**CLAIM, "table": None}], "qe.report.claims.0.table: must be a string, got None"),
        ("qe.report.claims", [{"claim": "c"}], "qe.report.claims.0.method: is missing (required)"),
        (
            "qe.report.paper_corpus_sizes.X",
            {"en-de": 1.5},
            "qe.report.paper_corpus_sizes.X.en-de: must be a whole number, got 1.5",
        ),
        # a block that is not a mapping
        ("sts.leakage", 5, "sts.leakage: must be a mapping, got 5"),
    ],
)
def test_a_wrong_value_is_one_line_naming_its_path(path: str, value: Any, message: str):
    with pytest.raises(ParameterError) as caught:
        _check(path, value)
    assert str(caught.value) == message


@pytest.mark.parametrize("env", ENVS)
def test_every_env_builds_its_heads_settings(env: str):
    # as the config loader hands them to the nodes (validated, only what was set): the heads' code constructs
    # its settings without checks of its own
    params = env_parameters(env)
    for pipeline, model in (("qe", Qe), ("sts", Sts)):
        section = validated(model, params[pipeline], pipeline).model_dump(exclude_unset=True)
        for spec in section["methods"].values():
            heads.head_training_settings(section["training"], heads.head_spec(spec))


@pytest.mark.parametrize(
    "ablation",
    [
        {"base": "emu", "seed": 1},
        {"base": "seed"},
        {"method": "seed", "loss_weights": {"meaning": 0}},
    ],
)
def test_what_check_ablations_refuses_the_model_refuses(ablation: dict[str, Any]):
    changed = with_value(env_parameters("base"), "qe.ablations.x", ablation)
    with pytest.raises(ParameterError):
        check_ablations(changed["qe"]["ablations"], "qe")
    with pytest.raises(ParameterError):
        validated(Qe, changed["qe"], "qe")
