"""The models of the run-wide sections and of embeddings, massive, tatoeba, retrieve, headline and export:
every env's parameters pass, and each kind of wrong value stops with its one-line message."""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
from typing import Any

import pytest
from pydantic import Field, create_model

from language_agnostic.config import ParameterError
from language_agnostic.encoders.extraction import ExtractionSettings
from language_agnostic.parameters import embeddings, export, headline, massive, project, retrieve, tatoeba
from language_agnostic.parameters.base import Section, validated
from language_agnostic.reporting.headline import ROW_KEYS, VERDICT_KEYS
from language_agnostic.training.reuse import ReuseSettings
from tests.parameters.conftest import env_parameters, with_value

MODULES = (project, embeddings, massive, tatoeba, retrieve, headline, export)
SECTIONS: dict[str, type[Section]] = {key: model for module in MODULES for key, model in module.SECTIONS.items()}


@functools.cache
def _parameters(env: str) -> dict[str, Any]:
    return env_parameters(env)


def section(key: str, env: str = "base") -> dict[str, Any]:
    """``{key: env's section key}``, a copy (copying one section, not every parameter, keeps the tests fast)."""
    return {key: copy.deepcopy(_parameters(env)[key])}


def check(path: str, value: Any, env: str = "base") -> Section:
    """The section of ``path`` of ``env``'s parameters with ``path`` set to ``value``, validated."""
    key = path.split(".")[0]
    return validated(SECTIONS[key], with_value(section(key, env), path, value)[key], key)


def fails(path: str, value: Any, message: str) -> None:
    with pytest.raises(ParameterError, match=f"^{re.escape(message)}$"):
        check(path, value)


def test_sections_cover_conf_base() -> None:
    assert set(SECTIONS) == {"trained_models", "embeddings", "massive", "tatoeba", "retrieve", "headline", "export"}
    assert set(_parameters("base")) >= set(SECTIONS) | {"processes"}


def test_fields_are_the_code_s_keys() -> None:
    """The blocks a parser reads by a dataclass or a key set take exactly its keys."""
    extraction = {f.name for f in dataclasses.fields(ExtractionSettings)} - {"token_states"}  # set by the code
    assert set(embeddings.Extraction.model_fields) == extraction
    assert set(project.TrainedModels.model_fields) == {f.name for f in dataclasses.fields(ReuseSettings)}
    assert set(headline.Row.model_fields) == ROW_KEYS
    assert set(headline.Verdict.model_fields) == VERDICT_KEYS


# ---------------------------------------------------------------------------- the top level


def root() -> type[Section]:
    fields = {
        key: (hint | None, Field(default=project.SCALAR_DEFAULTS[key], description=description))
        for key, (hint, description) in project.SCALARS.items()
    }
    return create_model("Top", __base__=Section, **fields)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("processes", 1.5, "processes: must be a whole number, got 1.5"),
        ("processes", "two", "processes: must be a whole number, got 'two'"),
        ("processes", 0, "processes: must be >= 1, got 0"),
        ("raw_data_root", "", "raw_data_root: string should have at least 1 character, got ''"),
        ("raw_data_root", 5, "raw_data_root: must be a string, got 5"),
    ],
)
def test_scalars_refuse(key: str, value: Any, message: str) -> None:
    with pytest.raises(ParameterError, match=f"^{re.escape(message)}$"):
        validated(root(), {key: value}, "")


def test_scalars_accept() -> None:
    top = validated(root(), {"processes": 2, "raw_data_root": "/data"}, "")
    assert (top.processes, top.raw_data_root) == (2, "/data")
    assert validated(root(), {}, "").processes == 1
    assert set(project.SCALARS) == set(project.SCALAR_DEFAULTS)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("trained_models.reus", True, "trained_models: unknown key 'reus'; known: ['reuse', 'store']"),
        ("trained_models.reuse", "yes", "trained_models.reuse: must be true or false, got 'yes'"),
        ("trained_models.store", "", "trained_models.store: string should have at least 1 character, got ''"),
        ("trained_models.store", None, "trained_models.store: must be a string, got None"),
        ("trained_models.store", 5, "trained_models.store: must be a string, got 5"),
    ],
)
def test_trained_models_refuse(path: str, value: Any, message: str) -> None:
    fails(path, value, message)


# ---------------------------------------------------------------------------- embeddings

E5 = (
    "embeddings.extraction.prefix: is empty, but embeddings.encoder.name {!r} is an e5 model, which expects "
    "'query: ' or 'passage: '; an empty prefix is for other encoders, got ''"
)
EXTRACTION_KEYS = (
    "['backend', 'batch_size', 'chunk_size', 'device', 'dtype', 'max_length', 'on_too_long', 'prefix', "
    "'processes', 'progress']"
)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "embeddings.poolings_",
            ["cls"],
            "embeddings: unknown key 'poolings_'; known: ['encoder', 'extraction', 'partitions', 'poolings']",
        ),
        ("embeddings.encoder.dir", "x", "embeddings.encoder: unknown key 'dir'; known: ['bundled_dir', 'name']"),
        (
            "embeddings.extraction.batchsize",
            8,
            f"embeddings.extraction: unknown key 'batchsize'; known: {EXTRACTION_KEYS}",
        ),
        (
            "embeddings.extraction.batch_size",
            64.5,
            "embeddings.extraction.batch_size: must be a whole number, got 64.5",
        ),
        (
            "embeddings.extraction.chunk_size",
            "big",
            "embeddings.extraction.chunk_size: must be a whole number, got 'big'",
        ),
        ("embeddings.extraction.batch_size", 0, "embeddings.extraction.batch_size: must be >= 1, got 0"),
        ("embeddings.extraction.processes", 0, "embeddings.extraction.processes: must be >= 1, got 0"),
        ("embeddings.extraction.progress", "yes", "embeddings.extraction.progress: must be true or false, got 'yes'"),
        # conf/base: null
        (
            "embeddings.extraction.max_length",
            "long",
            "embeddings.extraction.max_length: must be a whole number, got 'long'",
        ),
        ("embeddings.extraction.max_length", 0, "embeddings.extraction.max_length: must be >= 1, got 0"),
        (
            "embeddings.extraction.dtype",
            "fp16",
            "embeddings.extraction.dtype: must be one of ['auto', 'float32', 'bfloat16', 'float16'], got 'fp16'",
        ),
        (
            "embeddings.extraction.backend",
            "tensorrt",
            "embeddings.extraction.backend: must be one of "
            "['torch', 'onnx', 'onnx-int8', 'openvino', 'openvino-int8'], got 'tensorrt'",
        ),
        (
            "embeddings.extraction.on_too_long",
            "cut",
            "embeddings.extraction.on_too_long: must be one of ['truncate', 'error'], got 'cut'",
        ),
        (
            "embeddings.extraction.device",
            "gpu",
            "embeddings.extraction.device: must be auto, cpu, cuda or cuda:<N>, got 'gpu'",
        ),
        ("embeddings.encoder.name", "", "embeddings.encoder.name: string should have at least 1 character, got ''"),
        ("embeddings.poolings", ["max"], "embeddings.poolings.0: must be one of ['cls', 'mean'], got 'max'"),
        (
            "embeddings.partitions",
            ["val"],
            "embeddings.partitions.0: must be one of ['train', 'dev', 'test'], got 'val'",
        ),
        (
            "embeddings.partitions",
            [],
            "embeddings.partitions: list should have at least 1 item after validation, not 0, got []",
        ),
        ("embeddings.extraction.prefix", "", E5.format("bundled")),
        ("embeddings.extraction.prefix", None, E5.format("bundled")),
    ],
)
def test_embeddings_refuse(path: str, value: Any, message: str) -> None:
    fails(path, value, message)


def test_empty_prefix_is_for_other_encoders() -> None:
    params = with_value(section("embeddings"), "embeddings.encoder.name", "xlm-roberta-base")
    for empty in ("", None):
        emptied = with_value(params, "embeddings.extraction.prefix", empty)["embeddings"]
        assert validated(embeddings.Embeddings, emptied, "embeddings").extraction.prefix == ""
    e5 = with_value(params, "embeddings.encoder.name", "intfloat/multilingual-e5-base")
    with pytest.raises(ParameterError, match=re.escape(E5.format("intfloat/multilingual-e5-base"))):
        validated(embeddings.Embeddings, with_value(e5, "embeddings.extraction.prefix", "")["embeddings"], "embeddings")


def test_cpu_backends() -> None:
    params = with_value(section("embeddings"), "embeddings.extraction.backend", "onnx")
    validated(embeddings.Embeddings, params["embeddings"], "embeddings")  # device auto: decided when it runs
    cuda = with_value(params, "embeddings.extraction.device", "cuda:0")["embeddings"]
    with pytest.raises(ParameterError) as raised:
        validated(embeddings.Embeddings, cuda, "embeddings")
    assert str(raised.value) == (
        "embeddings.extraction.device: backend 'onnx' runs on the CPU only; set device: cpu "
        "(or backend: torch for CUDA), got 'cuda:0'"
    )
    fp16 = with_value(params, "embeddings.extraction.dtype", "float16")["embeddings"]
    with pytest.raises(ParameterError) as raised:
        validated(embeddings.Embeddings, fp16, "embeddings")
    assert str(raised.value) == (
        "embeddings.extraction.dtype: is not available with backend 'onnx'; use one of ['auto', 'float32'], "
        "got 'float16'"
    )
    bf16 = with_value(
        with_value(params, "embeddings.extraction.backend", "openvino"), "embeddings.extraction.dtype", "bfloat16"
    )
    validated(embeddings.Embeddings, bf16["embeddings"], "embeddings")


def test_extraction_defaults_are_the_settings() -> None:
    defaults = embeddings.Extraction()
    assert {k: getattr(defaults, k) for k in embeddings.Extraction.model_fields} == {
        k: v for k, v in dataclasses.asdict(ExtractionSettings()).items() if k != "token_states"
    }


# ---------------------------------------------------------------------------- massive

LOCALE = "must be a MASSIVE locale code such as 'en-US' or 'ja-JP'"
SMOOTHING = "['none', 'floor', 'add-k', 'exp']"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "massive.locale",
            ["en-US"],
            "massive: unknown key 'locale'; known: ['ingest', 'locales', 'masking', 'negative_pool', 'pairs', "
            "'template_pairs', 'template_retrieval']",
        ),
        ("massive.locales", [], "massive.locales: list should have at least 1 item after validation, not 0, got []"),
        ("massive.locales", "en-US", "massive.locales: must be a list, got 'en-US'"),
        ("massive.locales", ["en-US", "en"], f"massive.locales.1: {LOCALE}, got 'en'"),
        # a named entry: unknown key, wrong type, wrong form, locale not read
        ("massive.pairs.en_de.sauce", "x", "massive.pairs.en_de: unknown key 'sauce'; known: ['source', 'target']"),
        ("massive.pairs.en_de.source", 3, "massive.pairs.en_de.source: must be a string, got 3"),
        ("massive.pairs.en_de.target", "german", f"massive.pairs.en_de.target: {LOCALE}, got 'german'"),
        ("massive.pairs.en_de", "en-US", "massive.pairs.en_de: must be a mapping, got 'en-US'"),
        (
            "massive.pairs.en_fr",
            {"source": "en-US"},
            "massive.pairs.en_fr.target: is missing (required)",
        ),
        (
            "massive.pairs.en_fr",
            {"source": "en-US", "target": "fr-FR"},
            "massive.pairs.en_fr.target: locale 'fr-FR' is not in massive.locales "
            "['en-US', 'de-DE', 'es-ES', 'ja-JP']; add it there, got 'fr-FR'",
        ),
        (
            "massive.ingest.on_bad_rows",
            "skip",
            "massive.ingest: unknown key 'on_bad_rows'; known: ['on_bad_row', 'whitespace_insensitive_locales']",
        ),
        (
            "massive.ingest.on_bad_row",
            "ignore",
            "massive.ingest.on_bad_row: must be one of ['error', 'skip'], got 'ignore'",
        ),
        (
            "massive.ingest.whitespace_insensitive_locales",
            ["ja"],
            f"massive.ingest.whitespace_insensitive_locales.0: {LOCALE}, got 'ja'",
        ),
        ("massive.masking.units", "span", "massive.masking: unknown key 'units'; known: ['mask_token', 'unit']"),
        ("massive.masking.unit", "word", "massive.masking.unit: must be one of ['token', 'span'], got 'word'"),
        (
            "massive.masking.mask_token",
            "",
            "massive.masking.mask_token: string should have at least 1 character, got ''",
        ),
        (
            "massive.template_retrieval.n_targets.triple",
            3,
            "massive.template_retrieval.n_targets: unknown key 'triple'; known: ['multi', 'single']",
        ),
        (
            "massive.template_retrieval.n_targets.single",
            1.5,
            "massive.template_retrieval.n_targets.single: must be a whole number, got 1.5",
        ),
        (
            "massive.template_retrieval.n_targets.multi",
            "five",
            "massive.template_retrieval.n_targets.multi: must be a whole number, got 'five'",
        ),
        (
            "massive.template_retrieval.n_targets.single",
            0,
            "massive.template_retrieval.n_targets.single: must be >= 1, got 0",
        ),
        (
            "massive.template_retrieval.seed",
            2022.5,
            "massive.template_retrieval.seed: must be a whole number, got 2022.5",
        ),
        (
            "massive.template_retrieval.partition",
            "val",
            "massive.template_retrieval.partition: must be one of ['train', 'dev', 'test'], got 'val'",
        ),
        (
            "massive.template_pairs.value_partition",
            ["train"],
            "massive.template_pairs: unknown key 'value_partition'; known: ['partition', 'seed', 'value_partitions']",
        ),
        ("massive.template_pairs.seed", "x", "massive.template_pairs.seed: must be a whole number, got 'x'"),
        (
            "massive.template_pairs.value_partitions",
            ["train", "eval"],
            "massive.template_pairs.value_partitions.1: must be one of ['train', 'dev', 'test'], got 'eval'",
        ),
        (
            "massive.negative_pool.partition",
            "train",
            "massive.negative_pool: unknown key 'partition'; known: ['block_size', 'direction', 'effective_order', "
            "'lowercase', 'partitions', 'smooth_method', 'smooth_value', 'threshold', 'tokenize']",
        ),
        ("massive.negative_pool.threshold", 10, "massive.negative_pool.threshold: must be <= 1, got 10"),
        ("massive.negative_pool.threshold", "high", "massive.negative_pool.threshold: must be a number, got 'high'"),
        (
            "massive.negative_pool.block_size",
            1024.5,
            "massive.negative_pool.block_size: must be a whole number, got 1024.5",
        ),
        ("massive.negative_pool.block_size", 0, "massive.negative_pool.block_size: must be >= 1, got 0"),
        (
            "massive.negative_pool.direction",
            "forward",
            "massive.negative_pool.direction: must be one of ['both', 'hypothesis', 'reference'], got 'forward'",
        ),
        (
            "massive.negative_pool.smooth_method",
            "exp2",
            f"massive.negative_pool.smooth_method: must be one of {SMOOTHING}, got 'exp2'",
        ),
        # conf/base: null
        (
            "massive.negative_pool.smooth_value",
            "big",
            "massive.negative_pool.smooth_value: must be a number, got 'big'",
        ),
        ("massive.negative_pool.smooth_value", 0, "massive.negative_pool.smooth_value: must be > 0, got 0"),
        (
            "massive.negative_pool.lowercase",
            "no",
            "massive.negative_pool.lowercase: must be true or false, got 'no'",
        ),
        (
            "massive.negative_pool.tokenize",
            "13a",
            "massive.negative_pool.tokenize: must be a mapping, got '13a'",
        ),
        (
            "massive.negative_pool.tokenize.french",
            "13a",
            "massive.negative_pool.tokenize.french: must be default or a locale code, got 'french'",
        ),
        (
            "massive.negative_pool.partitions",
            [],
            "massive.negative_pool.partitions: list should have at least 1 item after validation, not 0, got []",
        ),
        ("massive.negative_pool.partitions", "train", "massive.negative_pool.partitions: must be a list, got 'train'"),
    ],
)
def test_massive_refuses(path: str, value: Any, message: str) -> None:
    fails(path, value, message)


def test_massive_pair_names_and_tokenizers() -> None:
    params = section("massive")["massive"]
    params["pairs"]["en-fr"] = {"source": "en-US", "target": "de-DE"}
    with pytest.raises(ParameterError) as raised:
        validated(massive.Massive, params, "massive")
    assert str(raised.value) == (
        "massive.pairs.en-fr: must be letters, digits and underscores (a namespace such as en_de), got 'en-fr'"
    )
    params = section("massive")["massive"]
    params["negative_pool"]["tokenize"]["fr-FR"] = "mecab"
    with pytest.raises(
        ParameterError, match=r"^massive\.negative_pool\.tokenize\.fr-FR: must be one of \[.*'13a'.*\], got 'mecab'$"
    ):
        validated(massive.Massive, params, "massive")


def test_massive_envs_change_it() -> None:
    """emu_languages adds fr-FR, fmda_en_de drops two pairs, fmda_en_zh replaces them."""
    assert "fr-FR" in validated(massive.Massive, section("massive", "emu_languages")["massive"], "massive").locales
    assert list(validated(massive.Massive, section("massive", "fmda_en_de")["massive"], "massive").pairs) == ["en_de"]
    assert list(validated(massive.Massive, section("massive", "fmda_en_zh")["massive"], "massive").pairs) == ["en_zh"]
    assert check("massive.negative_pool.smooth_value", 1).negative_pool.smooth_value == 1


# ---------------------------------------------------------------------------- tatoeba


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "tatoeba.evaluations",
            {},
            "tatoeba: unknown key 'evaluations'; known: ['evaluation', 'figure', 'ingest', 'models', 'report']",
        ),
        (
            "tatoeba.ingest.language",
            "all",
            "tatoeba.ingest: unknown key 'language'; known: ['expected_pairs', 'languages', 'on_bad_row']",
        ),
        ("tatoeba.ingest.expected_pairs", 112.5, "tatoeba.ingest.expected_pairs: must be a whole number, got 112.5"),
        ("tatoeba.ingest.expected_pairs", "all", "tatoeba.ingest.expected_pairs: must be a whole number, got 'all'"),
        ("tatoeba.ingest.expected_pairs", 0, "tatoeba.ingest.expected_pairs: must be >= 1, got 0"),
        ("tatoeba.ingest.languages", "some", "tatoeba.ingest.languages: must be one of ['all'], got 'some'"),
        (
            "tatoeba.ingest.languages",
            ["deu", "de"],
            "tatoeba.ingest.languages.1: must be an ISO 639-3 code such as 'deu', got 'de'",
        ),
        ("tatoeba.ingest.languages", 5, "tatoeba.ingest.languages: must be a list, got 5"),
        (
            "tatoeba.ingest.languages",
            [],
            "tatoeba.ingest.languages: list should have at least 1 item after validation, not 0, got []",
        ),
        (
            "tatoeba.ingest.on_bad_row",
            "ignore",
            "tatoeba.ingest.on_bad_row: must be one of ['error', 'skip'], got 'ignore'",
        ),
        ("tatoeba.models.onl", None, "tatoeba.models: unknown key 'onl'; known: ['only', 'sources']"),
        (
            "tatoeba.models.sources",
            ["qe", "slu"],
            "tatoeba.models.sources.1: must be one of ['qe', 'sts', 'fmda', 'emu'], got 'slu'",
        ),
        # conf/base: null
        ("tatoeba.models.only", "dream@qe", "tatoeba.models.only: must be a list, got 'dream@qe'"),
        (
            "tatoeba.models.only",
            [],
            "tatoeba.models.only: list should have at least 1 item after validation, not 0, got []",
        ),
        ("tatoeba.evaluation.k", 4, "tatoeba.evaluation: unknown key 'k'; known: ['margin_k', 'poolings', 'progress']"),
        ("tatoeba.evaluation.margin_k", 4.5, "tatoeba.evaluation.margin_k: must be a whole number, got 4.5"),
        ("tatoeba.evaluation.margin_k", "four", "tatoeba.evaluation.margin_k: must be a whole number, got 'four'"),
        ("tatoeba.evaluation.margin_k", 0, "tatoeba.evaluation.margin_k: must be >= 1, got 0"),
        (
            "tatoeba.evaluation.poolings",
            ["max"],
            "tatoeba.evaluation.poolings.0: must be one of ['cls', 'mean'], got 'max'",
        ),
        ("tatoeba.report.spread", 20, "tatoeba.report: unknown key 'spread'; known: ['spread_languages']"),
        ("tatoeba.report.spread_languages", 2.5, "tatoeba.report.spread_languages: must be a whole number, got 2.5"),
        ("tatoeba.report.spread_languages", 0, "tatoeba.report.spread_languages: must be >= 1, got 0"),
        ("tatoeba.figure.score", "cosine", "tatoeba.figure: unknown key 'score'; known: ['methods', 'scoring']"),
        ("tatoeba.figure.scoring", "dot", "tatoeba.figure.scoring: must be one of ['cosine', 'margin'], got 'dot'"),
        ("tatoeba.figure.methods", "best", "tatoeba.figure.methods: must be one of ['auto'], got 'best'"),
        (
            "tatoeba.figure.methods",
            ["raw/mean", ""],
            "tatoeba.figure.methods.1: string should have at least 1 character, got ''",
        ),
    ],
)
def test_tatoeba_refuses(path: str, value: Any, message: str) -> None:
    fails(path, value, message)


def test_tatoeba_accepts() -> None:
    assert check("tatoeba.ingest.languages", ["deu", "afr"]).ingest.languages == ["deu", "afr"]
    assert check("tatoeba.ingest.expected_pairs", None).ingest.expected_pairs is None
    assert check("tatoeba.models.only", ["dream@qe"]).models.only == ["dream@qe"]
    assert check("tatoeba.figure.methods", ["raw/mean", "dream@qe/meaning"]).figure.methods == [
        "raw/mean",
        "dream@qe/meaning",
    ]


# ---------------------------------------------------------------------------- retrieve

EXACTLY_ONE = "retrieve.model: give exactly one of path (a trained model file) and run_id (an MLflow run), got {}"


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "retrieve.k",
            5,
            "retrieve: unknown key 'k'; known: ['corpus', 'faiss', 'mode', 'model', 'queries', 'raw_pooling', "
            "'search', 'top_k']",
        ),
        ("retrieve.top_k", 2.5, "retrieve.top_k: must be a whole number, got 2.5"),
        ("retrieve.top_k", "five", "retrieve.top_k: must be a whole number, got 'five'"),
        ("retrieve.top_k", 0, "retrieve.top_k: must be >= 1, got 0"),
        ("retrieve.mode", "dense", "retrieve.mode: must be one of ['meaning', 'template', 'raw'], got 'dense'"),
        ("retrieve.search", "annoy", "retrieve.search: must be one of ['exact', 'faiss'], got 'annoy'"),
        ("retrieve.raw_pooling", "max", "retrieve.raw_pooling: must be one of ['cls', 'mean'], got 'max'"),
        ("retrieve.faiss.m", 32, "retrieve.faiss: unknown key 'm'; known: ['ef_search', 'hnsw_m']"),
        ("retrieve.faiss.hnsw_m", 32.5, "retrieve.faiss.hnsw_m: must be a whole number, got 32.5"),
        ("retrieve.faiss.ef_search", 0, "retrieve.faiss.ef_search: must be >= 1, got 0"),
        (
            "retrieve.queries.file",
            "q.txt",
            "retrieve.queries: unknown key 'file'; known: ['column', 'id_column', 'path']",
        ),
        ("retrieve.queries.path", "", "retrieve.queries.path: string should have at least 1 character, got ''"),
        # conf/base: null
        ("retrieve.queries.column", 5, "retrieve.queries.column: must be a string, got 5"),
        ("retrieve.corpus.id_column", True, "retrieve.corpus.id_column: must be a string, got True"),
        ("retrieve.model.run_id", 5, "retrieve.model.run_id: must be a string, got 5"),
        (
            "retrieve.corpus.path",
            "corpus.csv",
            "retrieve.corpus.column: corpus.csv is a CSV file; name the column that holds the utterances, got None",
        ),
        (
            "retrieve.corpus.column",
            "utt",
            "retrieve.corpus.column: data/01_raw/retrieve/corpus.txt is not a .csv file (one utterance per line); "
            "leave column and id_column empty, got 'utt'",
        ),
        (
            "retrieve.model.name",
            "x",
            "retrieve.model: unknown key 'name'; known: ['artifact', 'path', 'run_id']",
        ),
        ("retrieve.model.path", "", EXACTLY_ONE.format("{'path': '', 'run_id': None}")),
        ("retrieve.model.path", None, EXACTLY_ONE.format("{'path': '', 'run_id': None}")),
        (
            "retrieve.model.run_id",
            "abc123",
            EXACTLY_ONE.format("{'path': 'data/06_models/en_de/fmda_all_together.safetensors', 'run_id': 'abc123'}"),
        ),
    ],
)
def test_retrieve_refuses(path: str, value: Any, message: str) -> None:
    fails(path, value, message)


def test_retrieve_model_may_be_empty() -> None:
    base = section("retrieve")
    from_run = with_value(with_value(base, "retrieve.model.path", None), "retrieve.model.run_id", "abc123")
    model = validated(retrieve.Retrieve, from_run["retrieve"], "retrieve").model
    assert (model.path, model.run_id, model.artifact) == ("", "abc123", "fmda_all_together.safetensors")
    raw = with_value(with_value(base, "retrieve.model.path", ""), "retrieve.mode", "raw")
    raw = with_value(raw, "retrieve.model.artifact", None)
    assert validated(retrieve.Retrieve, raw["retrieve"], "retrieve").model.artifact == ""
    csv = with_value(with_value(base, "retrieve.corpus.path", "c.CSV"), "retrieve.corpus.column", "utt")
    assert validated(retrieve.Retrieve, csv["retrieve"], "retrieve").corpus.column == "utt"


# ---------------------------------------------------------------------------- headline


def headline_with(change: dict[str, Any], where: str = "") -> dict[str, Any]:
    """conf/base's ``headline`` with its first row's (or its verdict's, ``where="verdict"``) keys changed."""
    headline_ = section("headline")["headline"]
    target = headline_["rows"][0]["verdict"] if where else headline_["rows"][0]
    for key, value in change.items():
        if value is ...:
            del target[key]
        else:
            target[key] = value
    return headline_


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        (
            {"papers": "x"},
            "",
            "headline.rows.0: unknown key 'papers'; known: ['claim', 'claims', 'measure', 'paper', 'paper_figure', "
            "'verdict']",
        ),
        ({"claim": ...}, "", "headline.rows.0.claim: is missing (required)"),
        ({"paper": 3}, "", "headline.rows.0.paper: must be a string, got 3"),
        ({"verdict": "holds"}, "", "headline.rows.0.verdict: must be a mapping, got 'holds'"),
        (
            {"on": "en-zh"},
            "verdict",
            "headline.rows.0.verdict: unknown key 'on'; known: ['baseline', 'method', 'percent', 'reports', 'where']",
        ),
        ({"baseline": ...}, "verdict", "headline.rows.0.verdict.baseline: is missing (required)"),
        ({"percent": "yes"}, "verdict", "headline.rows.0.verdict.percent: must be true or false, got 'yes'"),
        ({"where": 5}, "verdict", "headline.rows.0.verdict.where: must be a string, got 5"),
        ({"reports": "fmda_tables"}, "verdict", "headline.rows.0.verdict.reports: must be a list, got 'fmda_tables'"),
    ],
)
def test_headline_refuses(change: dict[str, Any], where: str, message: str) -> None:
    with pytest.raises(ParameterError, match=f"^{re.escape(message)}$"):
        validated(headline.Headline, headline_with(change, where), "headline")


def test_headline_top() -> None:
    fails("headline.rows", "x", "headline.rows: must be a list, got 'x'")
    fails("headline.row", [], "headline: unknown key 'row'; known: ['rows']")
    assert (
        validated(headline.Headline, headline_with({"where": None}, "verdict"), "headline").rows[0].verdict.where
        is None
    )


# ---------------------------------------------------------------------------- export


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("export.out", "x", "export: unknown key 'out'; known: ['log_to_mlflow', 'only', 'out_dir', 'sources']"),
        ("export.sources", ["qe", "slu"], "export.sources.1: must be one of ['qe', 'sts', 'fmda', 'emu'], got 'slu'"),
        ("export.sources", "qe", "export.sources: must be a list, got 'qe'"),
        ("export.only", "dream@qe", "export.only: must be a list, got 'dream@qe'"),
        ("export.out_dir", "", "export.out_dir: string should have at least 1 character, got ''"),
        ("export.log_to_mlflow", "yes", "export.log_to_mlflow: must be true or false, got 'yes'"),
    ],
)
def test_export_refuses(path: str, value: Any, message: str) -> None:
    fails(path, value, message)


def test_export_accepts() -> None:
    assert check("export.only", None).only is None  # every model found
    assert check("export.sources", ["fmda"]).sources == ["fmda"]
