"""SLU metrics on hand-built predictions: intent accuracy, span F1 (seqeval default mode), exact match."""

from __future__ import annotations

import numpy as np
import pytest
from seqeval.metrics import f1_score
from seqeval.scheme import IOB2

from language_agnostic.evaluation.slu import (
    exact_match,
    intent_accuracy,
    slot_error_statistics,
    slot_f1,
    slot_spans,
    slu_scores,
)

GOLD_INTENTS = ["alarm_set", "weather_query", "alarm_set", "play_music"]
PRED_INTENTS = ["alarm_set", "weather_query", "alarm_set", "play_radio"]
GOLD_LABELS = [
    ["O", "B-time", "I-time", "O", "B-date"],  # spans: time 1-2, date 4
    ["B-place", "O"],  # place 0
    ["I-time", "I-time", "O"],  # time 0-1: the default mode opens a span at I-
    ["O", "B-date"],  # date 1
]
PRED_LABELS = [
    ["O", "B-time", "I-time", "O", "O"],  # time 1-2 right, date missed
    ["B-place", "O"],  # right
    ["B-time", "I-time", "O"],  # time 0-1: the same span as the gold one
    ["O", "B-date"],  # right (the intent is wrong)
]


def test_slot_f1_counts_a_span_that_starts_with_i():
    # gold spans 5, predicted 4, correct 4: P = 1, R = 4/5, F1 = 2 * 0.8 / 1.8 = 8/9
    assert slot_f1(GOLD_LABELS, PRED_LABELS) == pytest.approx(8 / 9)
    # strict IOB2 would drop the gold I-time span (gold 4, correct 3: F1 = 3/4); we must not
    assert f1_score(GOLD_LABELS, PRED_LABELS, mode="strict", scheme=IOB2) == pytest.approx(3 / 4)


def test_slot_f1_span_boundaries_and_types_must_match():
    # a predicted span one token short and one of the wrong type: gold 2, pred 2, correct 0
    assert slot_f1([["B-time", "I-time", "B-date"]], [["B-time", "O", "B-time"]]) == 0.0
    # one of two gold spans found, one extra predicted span: P = 1/2, R = 1/2, F1 = 1/2
    assert slot_f1([["B-time", "O", "B-date"], ["O"]], [["B-time", "O", "O"], ["B-place"]]) == pytest.approx(0.5)


def test_intent_accuracy_and_exact_match_by_hand():
    assert intent_accuracy(GOLD_INTENTS, PRED_INTENTS) == 0.75
    # only utterance 1 has both the intent and every label right; utterance 2 has the same span
    # but a different label sequence (I- against B-), utterance 3 the wrong intent
    assert exact_match(GOLD_INTENTS, PRED_INTENTS, GOLD_LABELS, PRED_LABELS) == 0.25
    assert slu_scores(GOLD_INTENTS, PRED_INTENTS, GOLD_LABELS, PRED_LABELS) == pytest.approx(
        {"intent_accuracy": 0.75, "slot_f1": 8 / 9, "exact_match": 0.25}
    )


def test_arrays_from_parquet_are_accepted():
    gold = [np.array(labels, dtype=object) for labels in GOLD_LABELS]
    assert slot_f1(gold, PRED_LABELS) == pytest.approx(8 / 9)
    assert exact_match(GOLD_INTENTS, PRED_INTENTS, gold, PRED_LABELS) == 0.25


def test_misaligned_input_is_named():
    with pytest.raises(ValueError, match="labels: utterance 0 has 5 gold but 4 predicted labels"):
        slot_f1(GOLD_LABELS, [PRED_LABELS[0][:4], *PRED_LABELS[1:]])
    with pytest.raises(ValueError, match="labels: 4 gold but 3 predicted utterances"):
        slot_f1(GOLD_LABELS, PRED_LABELS[:3])
    with pytest.raises(ValueError, match="intents: 4 gold but 2 predicted utterances"):
        intent_accuracy(GOLD_INTENTS, PRED_INTENTS[:2])
    with pytest.raises(ValueError, match="3 intents but 4 label lists"):
        exact_match(GOLD_INTENTS[:3], PRED_INTENTS[:3], GOLD_LABELS, PRED_LABELS)
    with pytest.raises(ValueError, match="intents: no utterances"):
        intent_accuracy([], [])


def test_slot_error_statistics_by_hand():
    gold = [
        ["O", "B-time", "I-time", "O", "B-date"],  # 0: time 1-2, date 4
        ["B-place", "O", "B-time"],  # 1: place 0, time 2
        ["B-time", "I-time", "O", "B-date", "O"],  # 2: time 0-1, date 3
        ["O", "B-date", "O"],  # 3: date 1
        ["I-time", "I-time", "O"],  # 4: time 0-1 (opened by I-)
        ["B-a", "B-b", "O", "B-c"],  # 5: a 0, b 1, c 3
    ]
    pred = [
        ["O", "B-time", "I-time", "O", "O"],  # 0: a span missed -> slot_num
        ["B-date", "O", "B-time"],  # 1: place -> date, same words -> slot_type (1)
        ["B-time", "O", "O", "B-time", "I-time"],  # 2: time 0 (bound) and time 3-4 for date 3 (both)
        ["O", "B-date", "O"],  # 3: right
        ["B-time", "I-time", "O"],  # 4: the same span as the gold one: right
        ["B-a", "O", "B-b", "B-b"],  # 5: b 1 -> b 2 (bound), c 3 -> b 3 (type)
    ]
    assert slot_spans(gold[4]) == [("time", 0, 1)]
    # utterances 0, 1, 2, 5 have slot errors; 0 by its count; pairs: 1 type (utt. 1), 1 bound + 1 both (utt. 2),
    # 1 bound + 1 type (utt. 5)
    assert slot_error_statistics(gold, pred) == {
        "utterance": 4,
        "slot_num": 1,
        "slot_type": 2,
        "slot_bound": 2,
        "slot_both": 1,
    }
    # a predicted span where gold has none is a count error too, and right predictions count nothing
    assert slot_error_statistics([["O", "O"]], [["B-x", "O"]]) == {
        "utterance": 1,
        "slot_num": 1,
        "slot_type": 0,
        "slot_bound": 0,
        "slot_both": 0,
    }
    assert set(slot_error_statistics(gold, gold).values()) == {0}
    with pytest.raises(ValueError, match="utterance 0 has 5 gold but 4 predicted labels"):
        slot_error_statistics(gold[:1], [pred[0][:4]])
