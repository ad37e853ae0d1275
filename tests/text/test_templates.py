"""Template-retrieval targets: same template, different values, deterministic per seed."""

from __future__ import annotations

import random

from language_agnostic.corpora.errors import RejectLog
from language_agnostic.corpora.massive import ParseOptions, iter_massive_rows
from language_agnostic.text.templates import (
    build_template_set,
    build_value_inventory,
    make_targets,
    template_signature,
)
from tests.conftest import jsonl, massive_row

ROWS = [
    ("wake me up at nine am on friday", "wake me up at [time : nine am] on [date : friday]"),
    ("wake me up at noon on monday", "wake me up at [time : noon] on [date : monday]"),
    ("set an alarm for six pm", "set an alarm for [time : six pm]"),
    ("set an alarm for Noon", "set an alarm for [time : Noon]"),
    ("what is the weather on sunday", "what is the weather on [date : sunday]"),
    ("play some jazz", "play some [music_genre : jazz]"),
    ("quiet please", "quiet please"),
]


def _rows(locale: str = "en-US", rows=ROWS) -> list[dict]:
    text = jsonl([massive_row(str(i), locale, "test", u, a) for i, (u, a) in enumerate(rows)])
    return list(iter_massive_rows(text, "t.jsonl", locale, ParseOptions(), RejectLog()))


def test_value_inventory_is_sorted_and_merges_case_variants():
    assert build_value_inventory(_rows()) == {
        "date": ["friday", "monday", "sunday"],
        "music_genre": ["jazz"],
        # "Noon" is "noon" (first spelling kept)
        "time": ["nine am", "noon", "six pm"],
    }


def test_template_signature():
    assert template_signature(_rows()[0]) == "wake me up at [time] on [date]"


def test_targets_keep_the_template_and_change_every_value():
    rows = _rows()
    inventory = build_value_inventory(rows)
    targets, reason = make_targets(rows[0], inventory, 4, random.Random(0))
    assert reason is None
    assert len(set(targets)) == 4
    expected_pool = {f"wake me up at {t} on {d}" for t in ("noon", "six pm") for d in ("monday", "sunday")}
    # only 2 x 2 combinations differ in both values, so four targets are exactly those
    assert set(targets) == expected_pool


def test_case_only_difference_is_not_a_new_value():
    rows = _rows()
    inventory = build_value_inventory(rows)
    targets, reason = make_targets(rows[3], inventory, 2, random.Random(0))  # "Noon"
    assert reason is None
    assert set(targets) == {"set an alarm for nine am", "set an alarm for six pm"}


def test_reasons_for_skipping():
    rows = _rows()
    inventory = build_value_inventory(rows)
    assert make_targets(rows[6], inventory, 1, random.Random(0)) == ([], "no slot")
    assert make_targets(rows[5], inventory, 1, random.Random(0)) == ([], "no other value of slot type 'music_genre'")
    assert make_targets(rows[0], inventory, 5, random.Random(0)) == (
        [],
        "only 4 distinct value combination(s) for 5 targets",
    )


def test_template_set_is_deterministic_per_seed_and_counts_skips():
    rows = _rows()
    first, counts = build_template_set(rows, rows, 1, seed=7, name="single")
    again, _ = build_template_set(rows, rows, 1, seed=7, name="single")
    assert first == again
    assert counts == {"sources_in": 7, "sets_out": 5, "skipped_no_slot": 1, "skipped_no_alternative": 1}
    assert [r["source_id"] for r in first] == ["0", "1", "2", "3", "4"]
    assert first[0]["template"] == "wake me up at [time] on [date]"
    for record in first:
        source = next(r for r in rows if r["id"] == record["source_id"])
        assert record["source_utt"] == source["utt"]
        assert record["target_utt"] != source["utt"]
    # other seeds draw other values somewhere across enough seeds
    drawn = {
        tuple(r["target_utt"] for r in build_template_set(rows, rows, 1, seed=s, name="single")[0]) for s in range(20)
    }
    assert len(drawn) > 1


def test_japanese_targets_use_surface_values_without_annotation_spaces():
    rows_ja = [
        ("金曜日の午前九時に起こして", "[date : 金曜日] の [time : 午前九時] に起こして"),
        ("明日の正午に起こして", "[date : 明日] の [time : 正午] に起こして"),
    ]
    text = jsonl([massive_row(str(i), "ja-JP", "test", u, a) for i, (u, a) in enumerate(rows_ja)])
    rows = list(iter_massive_rows(text, "t", "ja-JP", ParseOptions(whitespace_insensitive=True), RejectLog()))
    out, counts = build_template_set(rows, rows, 1, seed=1, name="single")
    assert [r["target_utt"] for r in out] == ["明日の正午に起こして", "金曜日の午前九時に起こして"]
    assert counts["sets_out"] == 2
