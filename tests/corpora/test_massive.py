"""The MASSIVE reader: exact parser output, alignment, and every bad-input case."""

from __future__ import annotations

import json

import pytest

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog
from language_agnostic.corpora.massive import (
    AnnotationError,
    ParseOptions,
    SlotSpan,
    align_tokens,
    check_locale_code,
    iter_massive_rows,
    parse_annot_utt,
)
from tests.conftest import jsonl, massive_row


def test_parse_english_annotation_exactly():
    ann = parse_annot_utt("wake me up at [time : nine am] on [date : friday]")
    assert ann.tokens == ("wake", "me", "up", "at", "nine", "am", "on", "friday")
    assert ann.bio == ("O", "O", "O", "O", "B-time", "I-time", "O", "B-date")
    assert ann.spans == (SlotSpan("time", "nine am", 4, 6), SlotSpan("date", "friday", 7, 8))
    assert ann.text == "wake me up at nine am on friday"


def test_parse_japanese_annotation_exactly():
    ann = parse_annot_utt("[date : 金曜日] の [time : 午前九時] に起こしてください")
    assert ann.tokens == ("金曜日", "の", "午前九時", "に起こしてください")
    assert ann.bio == ("B-date", "O", "B-time", "O")
    assert ann.spans == (SlotSpan("date", "金曜日", 0, 1), SlotSpan("time", "午前九時", 2, 3))


def test_parse_chinese_annotation_exactly():
    ann = parse_annot_utt("[date : 星期五] 早上 [time : 九点] 叫醒我")
    assert ann.tokens == ("星期五", "早上", "九点", "叫醒我")
    assert ann.bio == ("B-date", "O", "B-time", "O")


def test_parse_without_slots():
    ann = parse_annot_utt("olly quiet")
    assert ann.tokens == ("olly", "quiet")
    assert ann.bio == ("O", "O")
    assert ann.spans == ()


def test_value_with_colon_keeps_everything_after_the_first_separator():
    ann = parse_annot_utt("set it to [time : 10:30 am]")
    assert ann.spans == (SlotSpan("time", "10:30 am", 3, 5),)


@pytest.mark.parametrize(
    ("annot", "message"),
    [
        ("wake me up at [time : nine am", r"unbalanced '\[' at character 15"),
        ("wake me up at time : nine am]", r"unbalanced '\]' at character 29"),
        ("wake [time : nine [date : friday]]", r"nested '\[' at character 19"),
        ("wake me up at [time nine am]", r"slot without ' : ' separator"),
        ("wake me up at [time : ]", r"empty value for slot 'time'"),
        ("wake me up at [ : nine]", r"bad slot type ''"),
        ("   ", r"no tokens"),
    ],
)
def test_bad_annotations_raise_with_reason(annot: str, message: str):
    with pytest.raises(AnnotationError, match=message):
        parse_annot_utt(annot)


def test_align_tokens_ignores_whitespace_added_by_annotation():
    assert align_tokens(["金曜日", "の", "午前九時"], "金曜日の午前九時") == [(0, 3), (3, 4), (4, 8)]
    # utt has a space the annotation does not: the token's span includes it
    assert align_tokens(["オリー", "十秒間"], "オリー 十秒間") == [(0, 3), (4, 7)]
    assert align_tokens(["ab", "c"], "a bc") == [(0, 3), (3, 4)]
    assert align_tokens(["ab", "x"], "abc") is None
    assert align_tokens(["ab"], "ab extra") is None


def _rows(text: str, locale: str = "en-US", policy: str = "error", insensitive: bool = False):
    log = RejectLog(policy=policy)
    rows = list(iter_massive_rows(text, "en-US.jsonl", locale, ParseOptions(insensitive, policy), log))
    return rows, log


def test_rows_carry_tokens_slots_and_offsets():
    row = massive_row(
        "7",
        "ja-JP",
        "train",
        "金曜日の午前九時に起こしてください",
        "[date : 金曜日] の [time : 午前九時] に起こしてください",
    )
    rows, log = _rows(jsonl([row]), locale="ja-JP", insensitive=True)
    assert log.rows == []
    (out,) = rows
    assert out["tokens"] == ["金曜日", "の", "午前九時", "に起こしてください"]
    assert out["token_starts"] == [0, 3, 4, 8]
    assert out["token_ends"] == [3, 4, 8, 17]
    assert out["slots"] == [
        {"slot": "date", "value": "金曜日", "start": 0, "end": 1, "char_start": 0, "char_end": 3},
        {"slot": "time", "value": "午前九時", "start": 2, "end": 3, "char_start": 4, "char_end": 8},
    ]


def test_japanese_requires_whitespace_insensitive_comparison():
    row = massive_row("7", "ja-JP", "train", "金曜日の朝", "[date : 金曜日] の朝")
    with pytest.raises(CorpusFormatError, match=r"en-US.jsonl:1: de-bracketed annot_utt"):
        _rows(jsonl([row]), locale="ja-JP", insensitive=False)
    rows, _ = _rows(jsonl([row]), locale="ja-JP", insensitive=True)
    assert len(rows) == 1


GOOD = massive_row("1", "en-US", "train", "wake me up", "wake me up")


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"id": "2", "locale": "en-US"', r"en-US.jsonl:2: malformed JSON"),
        ('["a list"]', r"en-US.jsonl:2: a row must be a JSON object"),
        (json.dumps({"id": "2", "locale": "en-US"}), r"en-US.jsonl:2: missing field\(s\) \['partition'"),
        (
            json.dumps(massive_row("2", "en-US", "validation", "hi", "hi")),
            r"en-US.jsonl:2: unknown partition 'validation'",
        ),
        (
            json.dumps(massive_row("2", "de-DE", "train", "hi", "hi")),
            r"en-US.jsonl:2: locale 'de-DE' in the file for 'en-US'",
        ),
        (json.dumps(massive_row("1", "en-US", "train", "hi", "hi")), r"en-US.jsonl:2: duplicate id '1'"),
        (json.dumps(massive_row("2", "en-US", "train", "  ", "[x : y]")), r"en-US.jsonl:2: empty utterance"),
        (
            json.dumps(massive_row("2", "en-US", "train", "at nine", "at [time : nine")),
            r"en-US.jsonl:2: annot_utt: unbalanced '\['",
        ),
        (
            json.dumps(massive_row("2", "en-US", "train", "at", "at [time : ]")),
            r"en-US.jsonl:2: annot_utt: empty value for slot 'time'",
        ),
        (
            json.dumps(massive_row("2", "en-US", "train", "at ten", "at [time : nine]")),
            r"en-US.jsonl:2: de-bracketed annot_utt 'at nine' != utt 'at ten'",
        ),
    ],
)
def test_bad_rows_error_naming_file_and_line(bad_line: str, message: str):
    text = jsonl([GOOD]) + bad_line + "\n"
    with pytest.raises(CorpusFormatError, match=message):
        _rows(text)


def test_skip_policy_counts_and_keeps_rejects():
    text = (
        jsonl([GOOD])
        + "{oops\n"
        + json.dumps(massive_row("3", "en-US", "eval", "a", "a"))
        + "\n"
        + jsonl([massive_row("4", "en-US", "test", "b", "b")])
    )
    rows, log = _rows(text, policy="skip")
    assert [r["id"] for r in rows] == ["1", "4"]
    assert log.counts() == {"malformed_json": 1, "unknown_partition": 1}
    assert [(r["line"], r["kind"]) for r in log.rows] == [(2, "malformed_json"), (3, "unknown_partition")]
    assert log.rows[1]["key"] == "3"


def test_reject_log_rejects_unknown_policy():
    with pytest.raises(ValueError, match="on_bad_row must be 'error' or 'skip', got 'ignore'"):
        RejectLog(policy="ignore")


@pytest.mark.parametrize("code", ["english", "en_US", "EN-us", "", "en-US-x"])
def test_bad_locale_codes_name_the_parameter(code: str):
    with pytest.raises(CorpusFormatError, match=r"massive.locales\[0\]: .* is not a MASSIVE locale code"):
        check_locale_code(code, "massive.locales[0]")
