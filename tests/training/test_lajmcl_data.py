"""LAJ-MCL batches on the tiny tokenizer: the label prefix in front of SluBatches' utterances (labels moved
with their words, the length limit shrunk), and MCL's extras (value spans, slot-level negatives, word pairs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from language_agnostic.encoders.loading import load_encoder
from language_agnostic.text.code_switch import CodeSwitcher
from language_agnostic.text.slot_negatives import value_spans
from language_agnostic.training.lajmcl_data import LajBatches, label_tokenisation, value_id_row
from language_agnostic.training.slu_data import SluBatches

SLOTS = ("date", "genre", "time")
LABELS = {"O": 0, "B-date": 1, "I-date": 2, "B-genre": 3, "I-genre": 4, "B-time": 5, "I-time": 6}
IGN = -100
WORDS = [["wake", "me", "up", "at", "nine", "am"], ["play", "some", "jazzy", "music"], ["weather", "today"]]
TAGS = [["O", "O", "O", "O", "B-time", "I-time"], ["O", "O", "B-genre", "O"], ["O", "B-date"]]
DICTIONARIES = {
    "de": {
        "wake": ["weck"],
        "play": ["spiel"],
        "music": ["musik"],
        "nine": ["neun"],
        "weather": ["wetter"],
        "today": ["heute"],
        "me": ["mich"],
        "am": ["uhr"],
    }
}


@pytest.fixture
def encoder(tiny_hub_model: Path):
    return load_encoder(str(tiny_hub_model))


def _tokens(encoder, ids: torch.Tensor) -> list[str]:
    return encoder.tokenizer.convert_ids_to_tokens(ids.tolist())


def test_the_label_prefix_goes_in_front_and_the_labels_move_with_their_words(encoder):
    data = LajBatches(
        encoder, WORDS[1:], TAGS[1:], [1, 2], LABELS, {"prefix": "query: "}, slots=SLOTS, batch_size=2, shuffle=False
    )
    batch = next(iter(data.batches(0, torch.Generator().manual_seed(0))))
    assert set(batch) == {"input_ids", "attention_mask", "intents", "slot_labels"}
    # [CLS], s_O s_B s_I and the 3 slots (placeholders), [SEP], then SluBatches' row without its [CLS]:
    # "query:" (two unknown sub-tokens), play some jazz ##y music [SEP]
    assert _tokens(encoder, batch["input_ids"][0]) == (
        ["[CLS]"] + ["[UNK]"] * 6 + ["[SEP]", "[UNK]", "[UNK]", "play", "some", "jazz", "##y", "music", "[SEP]"]
    )
    plain = next(
        iter(
            SluBatches(
                encoder, WORDS[1:], TAGS[1:], [1, 2], LABELS, {"prefix": "query: "}, batch_size=2, shuffle=False
            ).batches(0, torch.Generator())
        )
    )
    # every label moves K + 4 = 7 to the right, the prefix positions get none
    assert batch["slot_labels"][0].tolist() == [IGN] * 10 + [0, 0, 3, IGN, 0, IGN]
    assert batch["slot_labels"][:, 8:].tolist() == plain["slot_labels"][:, 1:].tolist()
    assert batch["input_ids"][:, 8:].tolist() == plain["input_ids"][:, 1:].tolist()
    assert batch["attention_mask"][1].tolist() == [1] * 13 + [0] * 3 and batch["intents"].tolist() == [1, 2]


def test_the_prefix_shrinks_the_utterances_length_limit(encoder):
    # the tiny encoder takes 24 positions; the prefix of 3 slots takes 7 (K + 4) of them
    assert label_tokenisation(encoder, {"prefix": ""}, 3).max_length == 17
    data = LajBatches(
        encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": "", "max_length": 14}, slots=SLOTS, shuffle=False
    )
    # 14 - 7 = 7 for "[CLS] wake me up at nine am [SEP]" (8): cut to 7 with the end token kept, "am" lost
    assert data.tokens.truncated.tolist() == [True, False, False] and data.tokens.words_cut.tolist() == [1, 0, 0]
    assert max(len(x) for x in data.tokens.input_ids) == 14
    with pytest.raises(ValueError, match="leaves 2 positions"):
        LajBatches(encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": "", "max_length": 9}, slots=SLOTS)
    with pytest.raises(ValueError, match=r"slot\(s\) \['genre'\] are not in slots"):
        LajBatches(encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": ""}, slots=("date", "time"))


def test_mcl_needs_the_english_and_switched_pairs(encoder):
    with pytest.raises(ValueError, match="keep_source"):
        LajBatches(encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": ""}, slots=SLOTS, mcl=True)
    with pytest.raises(ValueError, match="word_negatives must be >= 0"):
        LajBatches(encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": ""}, slots=SLOTS, word_negatives=-1)


def test_value_spans_read_bio_as_seqeval():
    assert value_spans(["O", "B-time", "I-time", "B-time", "I-date", "I-date", "O"]) == [
        (1, 3, "time"),
        (3, 4, "time"),
        (4, 6, "date"),
    ]
    # word ids of "[CLS] x (2 sub-tokens) y z [SEP]": values (1, 3) get id 5 on all their sub-tokens
    assert value_id_row([None, 0, 0, 1, 2, None], [(1, 3, "time")], 5) == [-1, -1, -1, 5, 5, -1]


def test_mcl_batches_pair_every_value_with_its_switched_version(encoder):
    switcher = CodeSwitcher(DICTIONARIES, ratio=1.0)
    data = LajBatches(
        encoder,
        WORDS,
        TAGS,
        [0, 1, 2],
        LABELS,
        {"prefix": ""},
        slots=SLOTS,
        batch_size=3,
        shuffle=False,
        switcher=switcher,
        keep_source=True,
        mcl=True,
    )
    batch = next(iter(data.batches(0, torch.Generator().manual_seed(0))))
    assert batch["input_ids"].shape[0] == 6 and batch["intents"].tolist() == [0, 1, 2, 0, 1, 2]
    # values: "nine am" (time, row 0) = 0, "jazzy" (genre, row 1) = 1, "today" (date, row 2) = 2
    assert batch["value_slots"].tolist() == [2, 1, 0] and batch["value_rows"].tolist() == [0, 1, 2]
    ids = batch["value_ids"]
    # row 0: [CLS] 6 labels [SEP] wake me up at nine am [SEP]: "nine" at 12, "am" at 13
    assert ids[0].tolist()[:15] == [-1] * 12 + [0, 0, -1]
    assert ids[1].tolist()[:14] == [-1] * 10 + [1, 1, -1, -1]  # jazz ##y: both sub-tokens
    # the switched row 3 is "weck mich up at neun uhr": "neun uhr" (neun u ##h ##r) keeps id 0 on every sub-token
    assert _tokens(encoder, batch["input_ids"][3])[8:17] == [
        "weck",
        "mich",
        "up",
        "at",
        "neun",
        "u",
        "##h",
        "##r",
        "[SEP]",
    ]
    assert ids[3].tolist()[8:17] == [-1, -1, -1, -1, 0, 0, 0, 0, -1]
    # "wetter heute" (w ##e ##t ##t ##e ##r h ##e ##u ##t ##e): heute's five sub-tokens are value 2
    assert ids[5].tolist()[8:20] == [-1] * 6 + [2] * 5 + [-1]


def _mcl_data(encoder, pools, **kwargs):
    from language_agnostic.text.slot_negatives import SlotNegatives

    switcher = CodeSwitcher(DICTIONARIES, ratio=1.0)
    return LajBatches(
        encoder,
        WORDS,
        TAGS,
        [0, 1, 2],
        LABELS,
        {"prefix": ""},
        slots=SLOTS,
        batch_size=3,
        shuffle=False,
        switcher=switcher,
        keep_source=True,
        mcl=True,
        slot_negatives=SlotNegatives(pools, switcher, 2),
        **kwargs,
    )


def test_slot_negatives_rows_follow_their_utterances_and_keep_the_value_ids(encoder):
    # time's pool is "today" (-> heute), genre's is empty (its value has no negative), date's is "six"
    data = _mcl_data(encoder, {"time": [("today",)], "genre": [], "date": [("six",)]}, word_negatives=2)
    batch = next(iter(data.batches(0, torch.Generator().manual_seed(0))))
    assert batch["neg_input_ids"].shape[0] == 6  # N_s x N, row m * N + i
    for m in range(2):
        # negative m of utterance 0: the switched "weck mich up at" with heute for "nine am" (value 0)
        assert _tokens(encoder, batch["neg_input_ids"][3 * m])[8:17] == [
            "weck",
            "mich",
            "up",
            "at",
            "h",
            "##e",
            "##u",
            "##t",
            "##e",
        ]
        assert batch["neg_value_ids"][3 * m].tolist()[8:18] == [-1] * 4 + [0] * 5 + [-1]
        # utterance 1's genre value (1) has no negative: no sub-token carries its id
        assert 1 not in batch["neg_value_ids"][3 * m + 1].tolist()
        assert _tokens(encoder, batch["neg_input_ids"][3 * m + 1])[8:13] == ["spiel", "some", "jazz", "##y", "musik"]
        # utterance 2: "wetter" and "six" (value 2, the date; "six" is not in the dictionary)
        assert _tokens(encoder, batch["neg_input_ids"][3 * m + 2])[8:16] == [
            "w",
            "##e",
            "##t",
            "##t",
            "##e",
            "##r",
            "six",
            "[SEP]",
        ]
        assert batch["neg_value_ids"][3 * m + 2].tolist()[8:16] == [-1] * 6 + [2, -1]


def test_word_pairs_are_slot_words_against_other_labels_and_the_batches_are_seeded(encoder):
    data = _mcl_data(encoder, {"time": [("today",)], "genre": [("six",)], "date": [("six",)]}, word_negatives=2)
    batch = next(iter(data.batches(0, torch.Generator().manual_seed(0))))
    again = next(iter(data.batches(0, torch.Generator().manual_seed(0))))
    assert all(torch.equal(batch[k], again[k]) for k in batch)
    labels = batch["slot_labels"]
    pairs = batch["word_pairs"]
    assert set(pairs[:, 0].tolist()) == set(range(6))  # source and switched rows
    for row, a, r in pairs.tolist():
        assert labels[row, a] not in (0, IGN) and labels[row, r] not in (labels[row, a], IGN)
    # utterance 0 (source): anchors "nine" (B-time, 12) and "am" (I-time, 13), 2 negatives each
    assert sorted(p[1] for p in pairs.tolist() if p[0] == 0) == [12, 12, 13, 13]
    # MCL's draws leave the joint batch as it is without them
    plain = LajBatches(
        encoder,
        WORDS,
        TAGS,
        [0, 1, 2],
        LABELS,
        {"prefix": ""},
        slots=SLOTS,
        batch_size=3,
        shuffle=False,
        switcher=CodeSwitcher(DICTIONARIES, ratio=1.0),
        keep_source=True,
    )
    base = next(iter(plain.batches(0, torch.Generator().manual_seed(0))))
    assert set(base) == {"input_ids", "attention_mask", "intents", "slot_labels"}
    assert all(torch.equal(base[k], batch[k]) for k in base)


def test_grouping_by_length_covers_every_utterance_is_seeded_and_pads_less(encoder):
    # slu.data.group_by_length, as SluBatches: 🤗's get_length_grouped_indices on the prefixed rows
    words = [["play"] * n for n in (1, 9, 2, 8, 3, 7, 4, 6)] * 8
    labels = [["O"] * len(w) for w in words]
    intents = list(range(len(words)))

    def batches(group: bool, seed: int = 0, **kwargs) -> list[dict[str, torch.Tensor]]:
        data = LajBatches(
            encoder,
            words,
            labels,
            intents,
            LABELS,
            {"prefix": ""},
            slots=SLOTS,
            batch_size=4,
            group_by_length=group,
            **kwargs,
        )
        return list(data.batches(1, torch.Generator().manual_seed(seed)))

    grouped = batches(True)
    assert sorted(i for b in grouped for i in b["intents"].tolist()) == intents  # every utterance once
    assert all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(grouped, batches(True)))
    assert [b["intents"].tolist() for b in grouped] != [b["intents"].tolist() for b in batches(True, seed=1)]
    assert grouped[0]["input_ids"].shape[1] == max(b["input_ids"].shape[1] for b in grouped)  # the longest first
    padded = sum(int(b["attention_mask"].numel() - b["attention_mask"].sum()) for b in grouped)
    assert padded < sum(int(b["attention_mask"].numel() - b["attention_mask"].sum()) for b in batches(False))
    # with keep_source an utterance and its switched version stay in one batch, and MCL's extras still come
    switched = batches(True, switcher=CodeSwitcher(DICTIONARIES, ratio=1.0), keep_source=True, mcl=True)
    assert all(torch.equal(b["intents"][:4], b["intents"][4:]) for b in switched)
    assert sorted(i for b in switched for i in b["intents"][: len(b["intents"]) // 2].tolist()) == intents
    assert all("value_ids" in b for b in switched)
