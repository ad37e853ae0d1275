"""CoSDA-ML code-switching: MUSE files, determinism, ratio 0 / 1, multi-word labels, coverage."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from language_agnostic.corpora.errors import CorpusFormatError
from language_agnostic.text.code_switch import CodeSwitcher, load_muse, read_muse

DE = {"wake": ["weck"], "me": ["mich"], "up": ["auf"], "at": ["um"], "nine": ["neun"], "friday": ["freitag"]}
ES = {"wake": ["despierta"], "me": ["me"], "nine": ["nueve"], "am": ["am"], "friday": ["viernes"]}
SENTENCE = ["wake", "me", "up", "at", "nine", "am", "on", "friday"]
LABELS = ["O", "O", "O", "O", "B-time", "I-time", "O", "B-date"]


def test_read_muse_space_and_tab_lines_several_translations_and_counts(tmp_path: Path):
    path = tmp_path / "en-xx.txt"
    path.write_text("wake weck\nwake wecken\n\nnew\tnueva york\nnine\tneun\nwake weck\n", encoding="utf-8")
    dictionary, counts = read_muse(path)
    assert dictionary == {"wake": ["weck", "wecken"], "new": ["nueva york"], "nine": ["neun"]}
    assert counts == {"lines": 5, "pairs": 4, "duplicates": 1, "sources": 3}
    assert load_muse(path) == dictionary


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("wake weck\nnine\n", r"en-bad.txt:2: expected 'source target', got 1 space-separated field"),
        ("wake weck\n\nnew york nueva\n", r"en-bad.txt:3: expected 'source target', got 3 space-separated"),
        ("wake\tweck\tauf\n", r"en-bad.txt:1: expected 'source<TAB>target', got 3 tab-separated"),
        ("wake\t\n", r"en-bad.txt:1: empty source or target in 'wake\\t'"),
        ("new york\tnueva york\n", r"en-bad.txt:1: source 'new york' is not a single word"),
    ],
)
def test_malformed_muse_line_names_file_and_line(tmp_path: Path, content: str, message: str):
    path = tmp_path / "en-bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CorpusFormatError, match=message):
        load_muse(path)


def test_same_seed_same_switches_and_every_call_switches_afresh():
    a = CodeSwitcher({"de": DE, "es": ES}, ratio=0.5, seed=7)
    b = CodeSwitcher({"es": ES, "de": DE}, ratio=0.5, seed=7)  # the order of languages does not matter
    runs_a = [a.switch(SENTENCE, LABELS) for _ in range(5)]
    runs_b = [b.switch(SENTENCE, LABELS) for _ in range(5)]
    assert runs_a == runs_b
    # dynamic: the same sentence comes out differently across calls (epochs)
    assert len({tuple(words) for words, _ in runs_a}) > 1
    # an explicit generator makes a call reproducible on its own, random.Random or numpy
    assert a.switch(SENTENCE, LABELS, random.Random(3)) == a.switch(SENTENCE, LABELS, random.Random(3))
    assert a.switch(SENTENCE, LABELS, np.random.default_rng(3)) == a.switch(SENTENCE, LABELS, np.random.default_rng(3))
    with pytest.raises(TypeError, match="rng must be a random.Random or numpy.random.Generator, got int"):
        a.switch(SENTENCE, LABELS, 3)  # type: ignore[arg-type]


def test_ratio_zero_changes_nothing():
    switcher = CodeSwitcher({"de": DE, "es": ES}, ratio=0.0, seed=0)
    for _ in range(20):
        assert switcher.switch(SENTENCE, LABELS) == (SENTENCE, LABELS)


def test_ratio_one_replaces_every_covered_word():
    switcher = CodeSwitcher({"de": DE}, ratio=1.0, seed=0)
    words, labels = switcher.switch(["Wake", "me", "up", "on", "Friday"], ["O", "O", "O", "O", "B-date"])
    # look-up is lower-cased; "on" has no entry and stays
    assert words == ["weck", "mich", "auf", "on", "freitag"]
    assert labels == ["O", "O", "O", "O", "B-date"]


def test_multi_word_translations_expand_b_i_and_o_labels():
    table = {"new": ["nueva ciudad"], "york": ["de york"], "in": ["en el"], "paris": ["paris"]}
    switcher = CodeSwitcher({"es": table}, ratio=1.0, seed=0)
    words, labels = switcher.switch(["in", "new", "york", "paris"], ["O", "B-place", "I-place", "B-city"])
    assert words == ["en", "el", "nueva", "ciudad", "de", "york", "paris"]
    assert labels == ["O", "O", "B-place", "I-place", "I-place", "I-place", "B-city"]


def test_a_word_missing_from_the_drawn_language_stays():
    # "up" is only in German: over many calls it is sometimes German, sometimes kept
    switcher = CodeSwitcher({"de": DE, "es": ES}, ratio=1.0, seed=1)
    outcomes = {switcher.switch(["up"], ["O"])[0][0] for _ in range(50)}
    assert outcomes == {"auf", "up"}


def test_coverage_by_hand():
    switcher = CodeSwitcher({"de": DE, "es": ES}, ratio=0.1, seed=0)
    corpus = [["Wake", "me", "up"], ["at", "nine", "am", "please"], []]
    # 7 tokens; de has wake, me, up, at, nine (5); es has wake, me, nine, am (4)
    assert switcher.coverage(corpus) == {"de": pytest.approx(5 / 7), "es": pytest.approx(4 / 7)}
    with pytest.raises(ValueError, match="no word tokens"):
        switcher.coverage([[]])


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"ratio must be a number in \[0, 1\], got 1.5"):
        CodeSwitcher({"de": DE}, ratio=1.5, seed=0)
    with pytest.raises(ValueError, match="dictionaries: no language"):
        CodeSwitcher({}, ratio=0.5, seed=0)
    with pytest.raises(ValueError, match="3 words but 2 labels"):
        CodeSwitcher({"de": DE}, ratio=0.5, seed=0).switch(["a", "b", "c"], ["O", "O"])


def test_code_switch_languages_are_configured_or_the_dictionaries_of_configured_locales():
    from language_agnostic.text.code_switch import code_switch_languages

    locales = ["en-US", "de-DE", "ja-JP", "zh-CN"]
    assert code_switch_languages({}, locales, ["de", "es", "ja", "zh"]) == ["de", "ja", "zh"]
    assert code_switch_languages({"languages": ["fr"]}, locales, ["de"]) == ["fr"]  # as configured
    assert code_switch_languages({"languages": []}, ["en-US"], ["de", "en"]) == []  # English is the source
