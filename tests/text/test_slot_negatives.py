"""Algorithm 1 of LAJ-MCL (slot-level hard negatives): frequent values, similar slots, negative pools, and
seeded negative utterances whose values come only from similar slots' frequent values, code-switched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.text.code_switch import CodeSwitcher
from language_agnostic.text.slot_negatives import (
    SlotNegatives,
    frequent_values,
    mean_pooled_embedder,
    negative_pools,
    similar_slots,
    slot_description,
)

WORDS = [
    ["wake", "me", "friday", "at", "nine", "am"],
    ["alarm", "for", "Friday"],
    ["go", "home", "at", "six"],
    ["drive", "to", "the", "office"],
    ["wake", "me", "monday"],
    ["go", "home"],
]
TAGS = [
    ["O", "O", "B-date", "O", "B-time", "I-time"],
    ["O", "O", "B-date"],
    ["O", "B-place_name", "O", "B-time"],
    ["O", "O", "B-place_name", "I-place_name"],
    ["O", "O", "B-date"],
    ["O", "B-place_name"],
]
# hand embeddings: date ~ time, place_name ~ city (cosines: date-time .994, date-city .110, date-place 0)
EMBEDDINGS = {"date": [1.0, 0.0], "time": [0.9, 0.1], "place name": [0.0, 1.0], "city": [0.1, 0.9]}


def embed(texts):
    return np.array([EMBEDDINGS[text.split(":")[0]] for text in texts])


def test_frequent_values_count_lower_cased_values_and_break_ties_by_text():
    frequent = frequent_values(WORDS, TAGS, 2)
    # friday x2 (Friday folded in), monday x1; home x2, the office x1; nine am x1 and six x1 (a tie: by text)
    assert frequent == {
        "date": [("friday",), ("monday",)],
        "time": [("nine", "am"), ("six",)],
        "place_name": [("home",), ("the", "office")],
    }
    assert frequent_values(WORDS, TAGS, 1)["time"] == [("nine", "am")]
    assert frequent_values(WORDS, TAGS, 0) == {"date": [], "time": [], "place_name": []}
    with pytest.raises(ValueError, match="p_v must be >= 0"):
        frequent_values(WORDS, TAGS, -1)


def test_a_slot_is_described_by_its_name_and_values():
    assert slot_description("place_name", [("home",), ("the", "office")]) == "place name: home, the office"
    assert slot_description("date", []) == "date"


def test_similar_slots_by_cosine():
    e = np.array([EMBEDDINGS[k] for k in ("date", "time", "place name", "city")])
    assert similar_slots(e, 1) == [[1], [0], [3], [2]]
    # date: time (.994) then city (.110) then place (0)
    assert similar_slots(e, 2)[0] == [1, 3]
    with pytest.raises(ValueError, match="p_s must be >= 1"):
        similar_slots(e, 0)
    with pytest.raises(ValueError, match="zero"):
        similar_slots(np.zeros((2, 2)), 1)


def test_pools_are_the_similar_slots_frequent_values():
    frequent = {**frequent_values(WORDS, TAGS, 2), "city": [("berlin",)]}
    pools, similar = negative_pools(["date", "time", "place_name", "city"], frequent, embed, p_s=1)
    assert similar == {"date": ["time"], "time": ["date"], "place_name": ["city"], "city": ["place_name"]}
    assert pools == {
        "date": [("nine", "am"), ("six",)],
        "time": [("friday",), ("monday",)],
        "place_name": [("berlin",)],
        "city": [("home",), ("the", "office")],
    }
    pools2, _ = negative_pools(["date", "time", "place_name", "city"], frequent, embed, p_s=2)
    assert pools2["date"] == [("nine", "am"), ("six",), ("berlin",)]  # time's, then city's


def test_negatives_are_seeded_and_drawn_only_from_similar_slots():
    frequent = {**frequent_values(WORDS, TAGS, 20), "city": [("berlin",), ("paris",)]}
    pools, _ = negative_pools(["date", "time", "place_name", "city"], frequent, embed, p_s=1)
    sampler = SlotNegatives(pools, None, n_negatives=2)
    words, labels = ["wake", "me", "friday", "at", "six"], ["O", "O", "B-date", "O", "B-time"]
    first = sampler.negatives(words, labels, np.random.default_rng(7))
    assert first == sampler.negatives(words, labels, np.random.default_rng(7))  # seeded
    seen_date, seen_time = set(), set()
    for seed in range(40):
        negatives = sampler.negatives(words, labels, np.random.default_rng(seed))
        assert len(negatives) == 2
        pairs = []
        for w, lab, replaced in negatives:
            assert replaced == [0, 1] and w[:2] == ["wake", "me"] and lab[:2] == ["O", "O"]
            spans = [(i, x) for i, x in enumerate(lab) if x != "O"]
            date = tuple(w[i] for i, x in spans if x.endswith("date"))
            time = tuple(w[i] for i, x in spans if x.endswith("time"))
            # a date value becomes one of time's frequent values and vice versa; never the value itself
            assert date in {("nine", "am"), ("six",)} and time in {("friday",), ("monday",)}
            assert time != ("six",)  # never the value itself
            pairs.append((date, time))
            seen_date.add(date)
            seen_time.add(time)
        # N_s = 2 distinct values per slot value when the pool has two: both of each pool, one per negative
        assert {p[1] for p in pairs} == {("friday",), ("monday",)}
        assert len({p[0] for p in pairs}) == 2
    assert seen_date == {("nine", "am"), ("six",)}


def test_the_source_value_is_never_its_own_negative_and_an_empty_pool_leaves_the_value_out():
    pools = {"date": [("friday",), ("monday",)], "time": []}
    sampler = SlotNegatives(pools, None, n_negatives=3)
    source_words, source_labels = ["wake", "me", "Friday", "at", "six"], ["O", "O", "B-date", "O", "B-time"]
    switched_words = ["weck", "mich", "freitag", "um", "sechs"]
    for seed in range(10):
        for w, lab, replaced in sampler.negatives(
            switched_words,
            source_labels,
            np.random.default_rng(seed),
            source_words=source_words,
            source_labels=source_labels,
        ):
            # only "monday" is left for the date (friday is the source's value), drawn with replacement;
            # the time has no candidate: kept, labelled O, not among the replaced values
            assert w == ["weck", "mich", "monday", "um", "sechs"]
            assert lab == ["O", "O", "B-date", "O", "O"] and replaced == [0]
    with pytest.raises(ValueError, match="n_negatives"):
        SlotNegatives(pools, None, n_negatives=0)


def test_negative_values_are_code_switched():
    switcher = CodeSwitcher({"de": {"nine": ["neun"], "am": ["uhr"], "six": ["sechs"]}}, ratio=1.0)
    sampler = SlotNegatives({"date": [("nine", "am"), ("six",)]}, switcher, n_negatives=2)
    negatives = sampler.negatives(["weck", "mich", "freitag"], ["O", "O", "B-date"], np.random.default_rng(0))
    values = sorted(tuple(w[2:]) for w, _, _ in negatives)
    assert values == [("neun", "uhr"), ("sechs",)]
    assert sorted(tuple(lab[2:]) for _, lab, _ in negatives) == [("B-date",), ("B-date", "I-date")]


def test_build_with_the_tiny_encoder(tiny_hub_model: Path):
    from language_agnostic.encoders.loading import load_encoder

    encoder = load_encoder(str(tiny_hub_model))
    embedder = mean_pooled_embedder(encoder.model, encoder.tokenizer, batch_size=2)
    got = embedder(["wake me up", "play music", "weather today"])
    with torch.no_grad():
        enc = encoder.tokenizer(["play music"], return_tensors="pt")
        expected = encoder.model(**enc).last_hidden_state[0].mean(0).numpy()  # no padding: the plain mean
    assert got.shape == (3, 16) and np.allclose(got[1], expected, atol=1e-5)
    sampler = SlotNegatives.build(WORDS, TAGS, ["date", "place_name", "time"], embedder, p_v=20, p_s=1, n_negatives=2)
    assert set(sampler.similar) == {"date", "place_name", "time"}
    for slot, pool in sampler.pools.items():
        (other,) = sampler.similar[slot]
        assert other != slot and pool == frequent_values(WORDS, TAGS, 20)[other]


def test_p_v_0_describes_slots_by_name_and_pool_values_still_fill_the_pools():
    # Table 6's p_v = 0: "not concatenating B_k for slot representation"; V_k from pool_values frequent values
    described = []

    def recording(texts):
        described.extend(texts)
        return embed(texts)

    built = SlotNegatives.build(WORDS, TAGS, ["date", "time", "place_name"], recording, p_v=0, p_s=1, pool_values=2)
    assert described == ["date", "time", "place name"]
    assert built.pools["date"] == [("nine", "am"), ("six",)]
    empty = SlotNegatives.build(WORDS, TAGS, ["date", "time", "place_name"], embed, p_v=0, p_s=1)  # as line 8 writes it
    assert all(v == [] for v in empty.pools.values())
