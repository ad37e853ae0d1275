"""Leave-one-out nearest-neighbour intent classification, its Wilson interval and McNemar's test, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from language_agnostic.evaluation.intent_nn import accuracy_with_interval, mcnemar, nearest_neighbour_correct


def test_leave_one_out_excludes_the_query_and_its_translation():
    # English queries 1, 2, 3; German candidates with the same ids (translations) and one more
    en = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1]])
    de = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1], [0.1, 1.0]])
    ids_en, ids_de = ["1", "2", "3"], ["1", "2", "3", "4"]
    labels_en, labels_de = ["alarm", "music", "alarm"], ["alarm", "music", "alarm", "weather"]
    correct = nearest_neighbour_correct(en, ids_en, labels_en, de, ids_de, labels_de)
    # query 1: its translation (1) excluded; nearest is 3 (alarm) -> right
    # query 2: translation excluded; nearest is 4 (weather) -> wrong
    # query 3: translation excluded; nearest is 1 (alarm) -> right
    assert correct.tolist() == [True, False, True]
    # monolingual: the query itself is its own id, so it is excluded the same way
    mono = nearest_neighbour_correct(en, ids_en, labels_en, en, ids_en, labels_en)
    assert mono.tolist() == [True, False, True]
    # without the exclusion every query would find itself: the rule is what makes it 2/3
    assert nearest_neighbour_correct(en, ids_en, labels_en, en, ["a", "b", "c"], labels_en).all()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="2 queries, 1 ids and 2 labels must align"):
        nearest_neighbour_correct(np.eye(2), ["1"], ["a", "b"], np.eye(2), ["1", "2"], ["a", "b"])
    with pytest.raises(ValueError, match="no candidate other than itself"):
        nearest_neighbour_correct(np.eye(2)[:1], ["1"], ["a"], np.eye(2)[:1], ["1"], ["a"])


def test_wilson_interval_by_hand():
    correct = np.array([True] * 7 + [False] * 3)
    p = accuracy_with_interval(correct)
    # Wilson 95 %: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z = 1.959964
    z, n, phat = 1.959963984540054, 10, 0.7
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert (p.value, p.n) == (0.7, 10)
    assert p.low == pytest.approx(centre - half) and p.high == pytest.approx(centre + half)


def test_mcnemar_by_hand():
    a = np.array([True, True, True, True, False, True])
    b = np.array([False, False, False, True, False, True])
    result = mcnemar(a, b)
    # discordant: a alone right 3 times, b alone 0 times -> two-sided exact p = 2 * 0.5**3
    assert (result.only_a, result.only_b) == (3, 0)
    assert result.pvalue == pytest.approx(0.25)
    assert mcnemar(a, a).pvalue == 1.0
