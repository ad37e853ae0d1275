"""MASSIVE as SLU: words and BIO labels (character-split locales by hand), the table, label ids."""

from __future__ import annotations

import pandas as pd
import pytest

from language_agnostic.corpora.errors import CorpusFormatError
from language_agnostic.corpora.massive import AnnotationError
from language_agnostic.corpora.massive_slu import (
    align_labels,
    first_subtoken_predictions,
    label_vocabulary,
    slu_table,
    slu_words,
    split_characters,
)


def test_english_words_are_the_parser_tokens():
    words, labels = slu_words("wake me up at [time : nine am] on [date : friday]", "en-US")
    assert words == ["wake", "me", "up", "at", "nine", "am", "on", "friday"]
    assert labels == ["O", "O", "O", "O", "B-time", "I-time", "O", "B-date"]


def test_japanese_is_split_into_characters_with_b_then_i():
    words, labels = slu_words("[date : 金曜日] の [time : 午前九時] に起こして", "ja-JP")
    assert words == ["金", "曜", "日", "の", "午", "前", "九", "時", "に", "起", "こ", "し", "て"]
    assert labels == [
        "B-date",
        "I-date",
        "I-date",
        "O",
        "B-time",
        "I-time",
        "I-time",
        "I-time",
        "O",
        "O",
        "O",
        "O",
        "O",
    ]


def test_pieces_of_an_inside_token_stay_inside():
    # the slot has two annotation tokens: 東京 is B-, タワー is I-; all pieces after the first are I-
    words, labels = slu_words("[place_name : 東京 タワー] まで", "zh-TW")
    assert words == ["東", "京", "タ", "ワ", "ー", "ま", "で"]
    assert labels == ["B-place_name", "I-place_name", "I-place_name", "I-place_name", "I-place_name", "O", "O"]


def test_latin_runs_stay_whole_in_character_split_locales():
    words, labels = slu_words("[device_type : iphoneの充電] を [time : 午後7:30] に BBC", "zh-CN")
    assert words == ["iphone", "の", "充", "電", "を", "午", "後", "7:30", "に", "BBC"]
    assert labels == [
        "B-device_type",
        "I-device_type",
        "I-device_type",
        "I-device_type",
        "O",
        "B-time",
        "I-time",
        "I-time",
        "O",
        "O",
    ]
    # Latin letters beyond ASCII (and full-width Latin) are one run too, not one word per letter
    assert split_characters("boøwyの") == ["boøwy", "の"]
    assert split_characters("ＢＢＣ。") == ["ＢＢＣ", "。"]


def test_punctuation_is_a_word_and_invisible_characters_are_dropped():
    words, labels = slu_words("[date : 明日] 、 晴れ\u200bます？", "ja-JP")
    assert words == ["明", "日", "、", "晴", "れ", "ま", "す", "？"]
    assert labels == ["B-date", "I-date", "O", "O", "O", "O", "O", "O"]


def test_token_of_only_invisible_characters_is_an_error_not_a_silent_loss():
    with pytest.raises(AnnotationError, match="only invisible characters"):
        slu_words("[date : \u200b] 晴れ", "ja-JP")


def test_other_locales_and_an_empty_char_locale_list_are_not_split():
    assert slu_words("[date : 金曜日] の", "ja-JP", char_locales=()) == (["金曜日", "の"], ["B-date", "O"])
    assert slu_words("[date : 金曜日] の", "en-US") == (["金曜日", "の"], ["B-date", "O"])


def _utterances() -> pd.DataFrame:
    return pd.DataFrame(
        [
            ("en-US", "1", "train", "alarm_set", "wake me at [time : nine am]", "extra"),
            ("ja-JP", "1", "train", "alarm_set", "[time : 九時] に", "extra"),
            ("en-US", "2", "test", "alarm_set", "wake me at [time : nine am", "extra"),
            ("ja-JP", "2", "test", "weather_query", "晴れ", "extra"),
            ("ja-JP", "1", "dev", "alarm_set", "[time : 九時]", "extra"),
            ("en-US", "3", "dev", "alarm_set", None, "extra"),
        ],
        columns=["locale", "id", "partition", "intent", "annot_utt", "utt"],
    )


def test_slu_table_rows_rejects_and_counts():
    table, rejects, counts = slu_table(_utterances(), on_bad_row="skip")
    assert table.columns.tolist() == ["locale", "id", "partition", "intent", "words", "labels", "spaced"]
    assert table.to_dict("records") == [
        {
            "locale": "en-US",
            "id": "1",
            "partition": "train",
            "intent": "alarm_set",
            "words": ["wake", "me", "at", "nine", "am"],
            "labels": ["O", "O", "O", "B-time", "I-time"],
            "spaced": [True] * 5,
        },
        # the pieces of a split token are not spaced: the text rebuilds as "九時 に"
        {
            "locale": "ja-JP",
            "id": "1",
            "partition": "train",
            "intent": "alarm_set",
            "words": ["九", "時", "に"],
            "labels": ["B-time", "I-time", "O"],
            "spaced": [True, False, True],
        },
        {
            "locale": "ja-JP",
            "id": "2",
            "partition": "test",
            "intent": "weather_query",
            "words": ["晴", "れ"],
            "labels": ["O", "O"],
            "spaced": [True, False],
        },
    ]
    assert rejects[["locale", "key", "kind"]].values.tolist() == [
        ["en-US", "2", "bad_annotation"],
        ["ja-JP", "1", "duplicate_id"],
        ["en-US", "3", "bad_annotation"],
    ]
    assert "unbalanced '['" in rejects.loc[0, "reason"]
    assert "not a string" in rejects.loc[2, "reason"]
    assert counts["en_US"] == {"rows_in": 3, "rows_out": 1, "rejected": 2, "rejected_bad_annotation": 2}
    assert counts["ja_JP"] == {"rows_in": 3, "rows_out": 2, "rejected": 1, "rejected_duplicate_id": 1}
    assert counts["all"] == {
        "rows_in": 6,
        "rows_out": 3,
        "rejected": 3,
        "rejected_bad_annotation": 2,
        "rejected_duplicate_id": 1,
    }


def test_slu_table_error_mode_names_locale_and_id():
    with pytest.raises(CorpusFormatError, match=r"massive_utterances: locale 'en-US' id '2': annot_utt: unbalanced"):
        slu_table(_utterances())
    with pytest.raises(CorpusFormatError, match=r"missing column\(s\) \['annot_utt'\]"):
        slu_table(_utterances().drop(columns="annot_utt"))
    with pytest.raises(ValueError, match="on_bad_row must be 'error' or 'skip'"):
        slu_table(_utterances(), on_bad_row="ignore")  # type: ignore[arg-type]


def test_label_vocabulary_has_o_then_b_and_i_of_every_slot_seen():
    a = pd.DataFrame({"labels": [["O", "B-time", "I-time"], ["B-date"]]})
    b = pd.DataFrame({"labels": [["I-alarm_type", "O"]]})
    assert label_vocabulary([a, b]) == ["O", "B-alarm_type", "I-alarm_type", "B-date", "I-date", "B-time", "I-time"]
    assert label_vocabulary(pd.DataFrame({"labels": [["O"]]})) == ["O"]
    with pytest.raises(ValueError, match=r"tables\[0\]: label 'time' is not"):
        label_vocabulary([pd.DataFrame({"labels": [["time"]]})])
    with pytest.raises(ValueError, match=r"tables\[1\]: no 'labels' column"):
        label_vocabulary([a, pd.DataFrame({"words": [["x"]]})])


LABEL_TO_ID = {"O": 0, "B-time": 1, "I-time": 2}


def test_align_labels_first_subtoken_only():
    # [CLS] wake | nine ##ty | am [SEP]
    word_ids = [None, 0, 1, 1, 2, None]
    assert align_labels(word_ids, ["O", "B-time", "I-time"], LABEL_TO_ID) == [-100, 0, 1, -100, 2, -100]
    assert align_labels(word_ids, ["O", "B-time", "I-time"], LABEL_TO_ID, ignore_index=-1) == [-1, 0, 1, -1, 2, -1]


def test_align_labels_bad_input_is_named():
    with pytest.raises(ValueError, match=r"word_ids\[2\] = 3 but there are 2 labels"):
        align_labels([None, 0, 3], ["O", "O"], LABEL_TO_ID)
    with pytest.raises(ValueError, match=r"labels\[1\] = 'B-date' is not in label_to_id"):
        align_labels([0, 1], ["O", "B-date"], LABEL_TO_ID)
    with pytest.raises(ValueError, match=r"word_ids\[2\]: word 0 comes back"):
        align_labels([0, 1, 0], ["O", "O"], LABEL_TO_ID)


def test_first_subtoken_predictions_inverts_the_alignment():
    word_ids = [None, 0, 1, 1, 2, None]
    assert first_subtoken_predictions(word_ids, [9, 0, 1, 2, 2, 9]) == [0, 1, 2]
    # the last word truncated away: an error by default, the fill id when asked
    with pytest.raises(ValueError, match="word 2 of 3 has no sub-token"):
        first_subtoken_predictions([None, 0, 1, None], [9, 0, 1, 9], n_words=3)
    assert first_subtoken_predictions([None, 0, 1, None], [9, 0, 1, 9], n_words=3, fill=0) == [0, 1, 0]
    with pytest.raises(ValueError, match="4 word_ids but 3 predicted_ids"):
        first_subtoken_predictions([None, 0, 1, None], [9, 0, 1])
    with pytest.raises(ValueError, match="word_ids has word 2 but n_words is 2"):
        first_subtoken_predictions([0, 1, 2], [0, 0, 0], n_words=2)


def test_alignment_with_a_real_fast_tokenizer():
    from tokenizers import Tokenizer, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "wake": 3, "nine": 4, "##ty": 5, "am": 6}
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    encoding = tokenizer.encode(["wake", "ninety", "am"], is_pretokenized=True)
    assert encoding.tokens == ["[CLS]", "wake", "nine", "##ty", "am", "[SEP]"]
    ids = align_labels(encoding.word_ids, ["O", "B-time", "I-time"], LABEL_TO_ID)
    assert ids == [-100, 0, 1, -100, 2, -100]
    # predicting the gold ids back gives the gold label per word
    predicted = [0 if i == -100 else i for i in ids]
    assert first_subtoken_predictions(encoding.word_ids, predicted) == [0, 1, 2]
