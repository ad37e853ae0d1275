"""FMDA template / residual texts: exact outputs for English, Japanese and the span unit."""

from __future__ import annotations

import pytest

from language_agnostic.corpora.errors import RejectLog
from language_agnostic.corpora.massive import ParseOptions, iter_massive_rows
from language_agnostic.text.masking import mask_utterance, template_and_residual
from tests.conftest import jsonl, massive_row


def _parsed(locale: str, utt: str, annot: str) -> dict:
    text = jsonl([massive_row("1", locale, "train", utt, annot)])
    options = ParseOptions(whitespace_insensitive=locale in ("ja-JP", "zh-CN"))
    (row,) = iter_massive_rows(text, "t.jsonl", locale, options, RejectLog())
    return row


def _masks(row: dict, unit: str = "token", mask: str = "<mask>") -> tuple[str, str]:
    return template_and_residual(row["utt"], row["token_starts"], row["token_ends"], row["bio"], mask, unit)


def test_english_template_and_residual_per_token():
    row = _parsed("en-US", "wake me up at nine am on friday", "wake me up at [time : nine am] on [date : friday]")
    assert _masks(row) == (
        "wake me up at <mask> <mask> on <mask>",
        "<mask> <mask> <mask> <mask> nine am <mask> friday",
    )


def test_english_span_unit_gives_one_mask_per_run():
    row = _parsed("en-US", "wake me up at nine am on friday", "wake me up at [time : nine am] on [date : friday]")
    assert _masks(row, unit="span") == ("wake me up at <mask> on <mask>", "<mask> nine am <mask> friday")


def test_adjacent_slots_are_one_span():
    row = _parsed("en-US", "wake me up at five am this week", "wake me up at [time : five am] [date : this week]")
    assert _masks(row, unit="span", mask="[MASK]") == (
        "wake me up at [MASK]",
        "[MASK] five am this week",
    )


def test_japanese_masks_without_inventing_spaces():
    # the annotation has spaces around the brackets that utt does not have
    row = _parsed(
        "ja-JP", "金曜日の午前九時に起こしてください", "[date : 金曜日] の [time : 午前九時] に起こしてください"
    )
    assert _masks(row) == ("<mask>の<mask>に起こしてください", "金曜日<mask>午前九時<mask>")


def test_utterance_without_slots_has_an_all_masked_residual():
    row = _parsed("en-US", "stop now", "stop now")
    assert _masks(row) == ("stop now", "<mask> <mask>")


def test_mask_utterance_rejects_mismatched_lengths_and_units():
    with pytest.raises(ValueError, match="differ in length: 2, 2, 1"):
        mask_utterance("a b", [0, 2], [1, 3], [True], "<mask>")
    with pytest.raises(ValueError, match="mask unit must be 'token' or 'span', got 'word'"):
        mask_utterance("a b", [0, 2], [1, 3], [True, False], "<mask>", unit="word")  # type: ignore[arg-type]
