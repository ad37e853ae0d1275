"""Bitext retrieval accuracy by cosine and by ratio margin, on cases computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from language_agnostic.evaluation.bitext import (
    accuracy_at_1,
    bitext_accuracies,
    cosine_matrix,
    mean_top_k,
    ratio_margin,
)
from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1

# x0 finds y0; x1 finds y2 (cos 1 against 0.707 for its own y1); x2 finds y1 (cos 1 against 0.707):
#   cos = [[1, .707, 0], [0, .707, 1], [.707, 1, .707]]
X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
Y = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 3.0]])

# y0 is a hub: the nearest y of every x by cosine (x -> y accuracy 1/3)
HUB = np.array([[0.9, 0.5, 0.4], [0.8, 0.7, 0.3], [0.75, 0.2, 0.7]])
# k = 2: r_x = means of each row's two best = [0.7, 0.75, 0.725]; r_y = of each column's = [0.85, 0.6, 0.55];
# margin = cos / ((r_x + r_y) / 2), e.g. [1, 0] = 0.8 / 0.8 = 1.0 and [1, 1] = 0.7 / 0.675 = 1.037037
HUB_MARGIN_K2 = np.array(
    [
        [0.9 / 0.775, 0.5 / 0.65, 0.4 / 0.625],
        [0.8 / 0.8, 0.7 / 0.675, 0.3 / 0.65],
        [0.75 / 0.7875, 0.2 / 0.6625, 0.7 / 0.6375],
    ]
)


def test_cosine_accuracy_both_directions_by_hand():
    s = 0.5**0.5
    np.testing.assert_allclose(cosine_matrix(X, Y), [[1, s, 0], [0, s, 1], [s, 1, s]], atol=1e-6)
    got = bitext_accuracies(X, Y, k=4)
    # y0 -> x0 right; y1 -> x2 (cos 1) wrong; y2 -> x1 (cos 1) wrong
    assert got[("x>y", "cosine")] == pytest.approx(1 / 3) and got[("y>x", "cosine")] == pytest.approx(1 / 3)
    # k = 4 is capped at the 3 candidates: r = row / column means; margin keeps the same answers here
    # (row 1: 1/0.569036 = 1.757 at y2 against 0.707/0.686887 = 1.029 at y1)
    assert got[("x>y", "margin")] == pytest.approx(1 / 3) and got[("y>x", "margin")] == pytest.approx(1 / 3)


def test_ratio_margin_demotes_a_hub_by_hand():
    margin = ratio_margin(HUB, k=2)
    np.testing.assert_allclose(margin, HUB_MARGIN_K2, rtol=1e-9)
    assert accuracy_at_1(HUB) == pytest.approx(1 / 3)  # every x retrieves the hub y0
    assert accuracy_at_1(margin) == 1.0  # the margin gives each its own
    assert accuracy_at_1(margin.T) == 1.0 and accuracy_at_1(HUB.T) == 1.0
    np.testing.assert_allclose(mean_top_k(HUB, 2, axis=1), [0.7, 0.75, 0.725])
    np.testing.assert_allclose(mean_top_k(HUB, 2, axis=0), [0.85, 0.6, 0.55])
    np.testing.assert_allclose(mean_top_k(HUB, 9, axis=0), HUB.mean(axis=0))  # k capped at the candidates


def test_ties_go_to_the_first_candidate_and_bad_shapes_are_refused():
    assert accuracy_at_1(np.array([[1.0, 1.0], [1.0, 1.0]])) == 0.5  # row 1's tie goes to column 0
    # opposite pairs: every neighbourhood mean is 0, so the margin is ±inf, and 0 / 0 is never chosen
    margin = ratio_margin(np.array([[0.5, -0.5], [-0.5, 0.5]]), k=2)
    assert margin.tolist() == [[np.inf, -np.inf], [-np.inf, np.inf]] and accuracy_at_1(margin) == 1.0
    assert ratio_margin(np.zeros((2, 2)), k=2).tolist() == [[-np.inf, -np.inf], [-np.inf, -np.inf]]
    with pytest.raises(ValueError, match=r"^3 x rows but 2 y rows: a parallel set is aligned pairs$"):
        bitext_accuracies(X, Y[:2])
    with pytest.raises(ValueError, match=r"square matrix"):
        accuracy_at_1(np.zeros((2, 3)))


def test_cosine_accuracy_is_the_projects_retrieval_accuracy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 8)).astype(np.float32)
    y = x + rng.standard_normal((300, 8)).astype(np.float32)
    got = bitext_accuracies(x, y)
    assert got[("x>y", "cosine")] == retrieval_accuracy_at_1(x, y)
    assert got[("y>x", "cosine")] == retrieval_accuracy_at_1(y, x)
