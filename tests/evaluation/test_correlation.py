"""Pearson and paired cosine by hand."""

from __future__ import annotations

import numpy as np
import pytest

from language_agnostic.evaluation.correlation import paired_cosine, pearson


def test_pearson_by_hand():
    # x = [1, 2, 3], y = [1, 3, 2]: cov = 0.5 (sample), var = 1 each -> r = 0.5
    assert pearson(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])) == pytest.approx(0.5)
    assert pearson(np.array([1.0, 2.0, 3.0]), np.array([-2.0, -4.0, -6.0])) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="need two aligned 1-d arrays"):
        pearson(np.array([1.0]), np.array([1.0]))


def test_paired_cosine():
    a = np.array([[1.0, 0.0], [1.0, 1.0]])
    b = np.array([[0.0, 2.0], [2.0, 2.0]])
    np.testing.assert_allclose(paired_cosine(a, b), [0.0, 1.0], atol=1e-7)
