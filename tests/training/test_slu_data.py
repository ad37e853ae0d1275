"""SLU batches on a tiny local tokenizer: first-sub-token labels, the prefix, truncation counted,
code-switching per epoch.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from language_agnostic.encoders.extraction import ExtractionError
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.text.code_switch import CodeSwitcher
from language_agnostic.training.slu_data import SluBatches, tokenise_words, word_tokenisation

LABELS = {"O": 0, "B-time": 1, "I-time": 2, "B-genre": 3, "I-genre": 4, "B-date": 5, "I-date": 6}
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
    }
}


@pytest.fixture
def encoder(tiny_hub_model: Path):
    return load_encoder(str(tiny_hub_model))


def _tokens(encoder, ids: torch.Tensor) -> list[str]:
    return encoder.tokenizer.convert_ids_to_tokens(ids.tolist())


def test_labels_sit_on_first_sub_tokens_and_the_prefix_and_specials_get_none(encoder):
    data = SluBatches(encoder, WORDS[1:], TAGS[1:], [1, 2], LABELS, {"prefix": "query: "}, batch_size=2, shuffle=False)
    batch = next(iter(data.batches(0, torch.Generator().manual_seed(0))))
    assert set(batch) == {"input_ids", "attention_mask", "intents", "slot_labels"}
    # "query:" is two sub-tokens of a leading word (unknown to this vocabulary); "jazzy" is jazz ##y
    assert _tokens(encoder, batch["input_ids"][0]) == [
        "[CLS]",
        "[UNK]",
        "[UNK]",
        "play",
        "some",
        "jazz",
        "##y",
        "music",
        "[SEP]",
    ]
    assert batch["slot_labels"][0].tolist() == [IGN, IGN, IGN, 0, 0, 3, IGN, 0, IGN]
    # the shorter utterance is padded: pad id, mask 0, label ignored
    assert _tokens(encoder, batch["input_ids"][1]) == [
        "[CLS]",
        "[UNK]",
        "[UNK]",
        "weather",
        "today",
        "[SEP]",
        "[PAD]",
        "[PAD]",
        "[PAD]",
    ]
    assert batch["attention_mask"][1].tolist() == [1] * 6 + [0] * 3
    assert batch["slot_labels"][1].tolist() == [IGN, IGN, IGN, 0, 5, IGN, IGN, IGN, IGN]
    assert batch["intents"].tolist() == [1, 2]
    # the prefix as leading words gives the same ids as the embedding stage's prefixed text
    assert batch["input_ids"][0].tolist() == encoder.tokenizer("query: play some jazzy music")["input_ids"]


def test_without_a_prefix_the_first_word_follows_the_start_token(encoder):
    data = SluBatches(encoder, WORDS[2:], TAGS[2:], [0], LABELS, {"prefix": ""}, shuffle=False)
    batch = next(iter(data.batches(0, torch.Generator())))
    assert batch["slot_labels"][0].tolist() == [IGN, 0, 5, IGN] and len(data) == 1 == data.n_batches()


def test_truncation_is_counted_and_error_refuses(encoder):
    tokenisation = word_tokenisation(encoder, {"prefix": "", "max_length": 6})
    tokens = tokenise_words(encoder.tokenizer, WORDS, tokenisation)
    # "wake me up at nine am" is 8 sub-tokens with [CLS] / [SEP]: cut to 6, the end token kept, 2 words lost;
    # "play some jazzy music" is 7 (jazz ##y): one sub-token of "music" goes, and with it the word
    assert tokens.truncated.tolist() == [True, True, False] and tokens.words_cut.tolist() == [2, 1, 0]
    assert encoder.tokenizer.convert_ids_to_tokens(tokens.input_ids[0]) == ["[CLS]", "wake", "me", "up", "at", "[SEP]"]
    assert tokens.word_ids[1] == [None, 0, 1, 2, 2, None]
    data = SluBatches(encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": "", "max_length": 7}, shuffle=False)
    assert data.n_truncated == 1 and data.tokens.words_cut.tolist() == [1, 0, 0]
    batch = next(iter(data.batches(0, torch.Generator())))
    assert batch["slot_labels"][0].tolist() == [IGN, 0, 0, 0, 0, 1, IGN]  # "am" (I-time) lost
    with pytest.raises(ExtractionError, match="utterance 0 has 8 sub-tokens, more than max_length 7"):
        SluBatches(encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": "", "max_length": 7, "on_too_long": "error"})
    with pytest.raises(ExtractionError, match="exceeds the encoder's maximum 24"):
        word_tokenisation(encoder, {"max_length": 100})


def test_every_epoch_switches_anew_and_the_same_seeds_switch_the_same(encoder):
    switcher = CodeSwitcher(DICTIONARIES, ratio=0.5, seed=0)
    data = SluBatches(
        encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": ""}, shuffle=False, switcher=switcher, switch_seed=7
    )

    def epoch(seed: int) -> tuple[list[list[str]], dict[str, torch.Tensor]]:
        words, _ = data.switched(torch.Generator().manual_seed(seed))
        return words, next(iter(data.batches(seed, torch.Generator().manual_seed(seed))))

    first, first_batch = epoch(1)
    again, again_batch = epoch(1)
    other, _ = epoch(2)
    assert first == again and all(torch.equal(first_batch[k], again_batch[k]) for k in first_batch)
    assert first != other
    assert first != WORDS or other != WORDS  # something was switched

    # another switch seed, another switching from the same epoch generators
    def switched_with(switch_seed: int) -> list[list[list[str]]]:
        other_seed = SluBatches(
            encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": ""}, switcher=switcher, switch_seed=switch_seed
        )
        return [other_seed.switched(torch.Generator().manual_seed(s))[0] for s in range(1, 6)]

    assert switched_with(7) == [epoch(s)[0] for s in range(1, 6)] != switched_with(8)


def test_switched_words_carry_their_labels_into_the_batch(encoder):
    # ratio 1: every word with a translation is switched ("jazzy", "some", "up", ... have none)
    data = SluBatches(
        encoder,
        WORDS,
        TAGS,
        [0, 1, 2],
        LABELS,
        {"prefix": ""},
        shuffle=False,
        switcher=CodeSwitcher(DICTIONARIES, ratio=1.0),
    )
    words, labels = data.switched(torch.Generator().manual_seed(0))
    assert words == [
        ["weck", "mich", "up", "at", "neun", "am"],
        ["spiel", "some", "jazzy", "musik"],
        ["wetter", "heute"],
    ]
    assert labels == TAGS
    batch = next(iter(data.batches(3, torch.Generator().manual_seed(0))))
    real = batch["attention_mask"][1].bool()
    assert _tokens(encoder, batch["input_ids"][1][real]) == ["[CLS]", "spiel", "some", "jazz", "##y", "musik", "[SEP]"]
    assert batch["slot_labels"][1][real].tolist() == [IGN, 0, 0, 3, IGN, 0, IGN]
    assert data.truncated_by_epoch == {3: 0}
    # the unswitched tokenisation is kept for reporting and for data without a switcher
    assert data.tokens.input_ids[1] == encoder.tokenizer("play some jazzy music")["input_ids"]


def test_keep_source_puts_each_utterance_beside_its_switched_version(encoder):
    switcher = CodeSwitcher(DICTIONARIES, ratio=1.0)
    both = SluBatches(
        encoder,
        WORDS,
        TAGS,
        [0, 1, 2],
        LABELS,
        {"prefix": ""},
        batch_size=2,
        shuffle=False,
        switcher=switcher,
        keep_source=True,
    )
    only = SluBatches(
        encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": ""}, batch_size=2, shuffle=False, switcher=switcher
    )
    first, second = list(both.batches(1, torch.Generator().manual_seed(0)))
    (switched, _) = list(only.batches(1, torch.Generator().manual_seed(0)))
    # utterances 0, 1 as they are, then their switched versions (the same switch as without keep_source)
    real = first["attention_mask"].bool()
    assert _tokens(encoder, first["input_ids"][1][real[1]]) == [
        "[CLS]",
        "play",
        "some",
        "jazz",
        "##y",
        "music",
        "[SEP]",
    ]
    assert _tokens(encoder, first["input_ids"][3][real[3]]) == [
        "[CLS]",
        "spiel",
        "some",
        "jazz",
        "##y",
        "musik",
        "[SEP]",
    ]
    width = switched["input_ids"].shape[1]
    assert torch.equal(first["input_ids"][2:, :width], switched["input_ids"])
    assert first["intents"].tolist() == [0, 1, 0, 1] and second["intents"].tolist() == [2, 2]
    assert (
        first["slot_labels"][3][real[3]].tolist()
        == first["slot_labels"][1][real[1]].tolist()
        == [IGN, 0, 0, 3, IGN, 0, IGN]
    )
    assert both.n_batches() == only.n_batches() == 2 and len(both) == 3


def test_grouping_by_length_batches_similar_lengths_and_covers_every_utterance(encoder):
    words = [["play"] * n for n in (1, 9, 2, 8, 3, 7, 4, 6)]
    labels = [["O"] * len(w) for w in words]
    data = SluBatches(
        encoder, words, labels, list(range(8)), LABELS, {"prefix": ""}, batch_size=2, group_by_length=True
    )
    batches = list(data.batches(1, torch.Generator().manual_seed(0)))
    # every utterance once, and the same generator gives the same batches
    assert sorted(i for b in batches for i in b["intents"].tolist()) == list(range(8))
    again = list(data.batches(1, torch.Generator().manual_seed(0)))
    assert all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(batches, again))
    # the first batch holds the longest utterance (🤗's get_length_grouped_indices)
    assert 1 in batches[0]["intents"].tolist()
    wide = SluBatches(
        encoder, words * 8, labels * 8, list(range(8)) * 8, LABELS, {"prefix": ""}, batch_size=4, group_by_length=True
    )
    padded = sum(int(b["attention_mask"].numel()) for b in wide.batches(1, torch.Generator().manual_seed(0)))
    shuffled = SluBatches(encoder, words * 8, labels * 8, list(range(8)) * 8, LABELS, {"prefix": ""}, batch_size=4)
    assert padded < sum(int(b["attention_mask"].numel()) for b in shuffled.batches(1, torch.Generator().manual_seed(0)))


def test_shuffling_follows_the_generator(encoder):
    data = SluBatches(encoder, WORDS, TAGS, [0, 1, 2], LABELS, {"prefix": ""}, batch_size=1, shuffle=True)
    order = lambda seed: [int(b["intents"][0]) for b in data.batches(0, torch.Generator().manual_seed(seed))]  # noqa: E731
    assert order(0) == order(0) and sorted(order(0)) == [0, 1, 2] and len(data) == 3 == data.n_batches()


def test_bad_inputs_are_named(encoder):
    with pytest.raises(ValueError, match="train: 2 utterances, 2 label lists and 1 intents"):
        SluBatches(encoder, WORDS[:2], TAGS[:2], [0], LABELS, what="train")
    with pytest.raises(ValueError, match="train: utterance 1 has 4 words but 3 labels"):
        SluBatches(encoder, WORDS[:2], [TAGS[0], TAGS[1][:3]], [0, 1], LABELS, what="train")
    with pytest.raises(ValueError, match=r"train: utterance 0: labels\[4\] = 'B-time' is not in label_to_id"):
        SluBatches(encoder, WORDS[:1], TAGS[:1], [0], {"O": 0}, {"prefix": ""}, what="train")
    with pytest.raises(ExtractionError, match="1 utterance\\(s\\) without words, first at position 1"):
        SluBatches(encoder, [WORDS[0], []], [TAGS[0], []], [0, 1], LABELS)
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        SluBatches(encoder, WORDS, TAGS, [0, 1, 2], LABELS, batch_size=0)


def _wordpiece(vocab: list[str]):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    ids = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *vocab])}
    tok = Tokenizer(models.WordPiece(ids, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
    )


def test_unspaced_words_are_tokenised_as_the_text_reads():
    from language_agnostic.training.slu_data import WordTokenisation, tokenise_spaced_words

    tokenizer = _wordpiece(["wake", "##up", "me", "set", "setup"])
    plain = WordTokenisation(prefix="", max_length=16)
    # "wake"+"up" written together: two sub-tokens, one per word (no word-start marker between them)
    tokens, covering = tokenise_spaced_words(tokenizer, [["wake", "up", "me"]], [[True, False, True]], plain)
    assert tokenizer.convert_ids_to_tokens(tokens.input_ids[0]) == ["[CLS]", "wake", "##up", "me", "[SEP]"]
    assert tokens.word_ids[0] == [None, 0, 1, 2, None] and covering[0] == [1, 2, 3]
    # one sub-token spanning two words: the first word's; the second is covered by it, with none of its own
    tokens, covering = tokenise_spaced_words(tokenizer, [["set", "up"]], [[True, False]], plain)
    assert tokenizer.convert_ids_to_tokens(tokens.input_ids[0]) == ["[CLS]", "setup", "[SEP]"]
    assert tokens.word_ids[0] == [None, 0, None] and covering[0] == [1, 1]
    # the prefix belongs to no word
    tokens, covering = tokenise_spaced_words(
        tokenizer, [["me"]], [[True]], WordTokenisation(prefix="set ", max_length=16)
    )
    assert tokens.word_ids[0] == [None, None, 0, None] and covering[0] == [2]
    with pytest.raises(ValueError, match="2 words but 1 spacing flags"):
        tokenise_spaced_words(tokenizer, [["set", "up"]], [[True]], plain)


def test_a_word_without_its_own_sub_token_continues_the_covering_ones_label():
    from language_agnostic.training.slu_data import WordTokenisation, tokenise_spaced_words
    from language_agnostic.training.slu_predict import predict_ids

    class Fixed(torch.nn.Module):
        """Every sub-token predicts label 1 (B-x), the intent 0."""

        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, ids, mask):
            slots = torch.zeros(*ids.shape, 3)
            slots[..., 1] = 1.0
            return torch.zeros(len(ids), 2), slots

    tokenizer = _wordpiece(["set", "setup", "me"])
    tokens, covering = tokenise_spaced_words(
        tokenizer, [["set", "up", "me"]], [[True, False, True]], WordTokenisation(prefix="", max_length=16)
    )
    _, labels = predict_ids(Fixed(), tokens, 0, 8, fill=0, covering=covering, inside=[0, 2, 2])
    # "setup" is set's first sub-token (B-x); "up" has none of its own: I-x; "me" its own: B-x
    assert labels == [[1, 2, 1]]
    _, plain = predict_ids(Fixed(), tokens, 0, 8, fill=0)
    assert plain == [[1, 0, 1]]  # without the covering map, such a word would fall back to the fill (O)
