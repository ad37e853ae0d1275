"""Per-language mean centering by hand."""

from __future__ import annotations

import numpy as np
import pytest

from language_agnostic.methods.centering import center, fit_language_means


def test_fit_and_center_by_hand():
    train = np.array([[1.0, 2.0], [3.0, 4.0], [10.0, 0.0]])
    means = fit_language_means(train, ["en", "en", "de"])
    assert means["en"].tolist() == [2.0, 3.0] and means["de"].tolist() == [10.0, 0.0]
    test = np.array([[2.0, 3.0], [11.0, 1.0]])
    assert center(test, ["en", "de"], means).tolist() == [[0.0, 0.0], [1.0, 1.0]]


def test_unknown_language_and_misaligned_labels():
    means = fit_language_means(np.zeros((2, 2)), ["en", "de"])
    with pytest.raises(KeyError, match=r"no training mean for language\(s\) \['ja'\]"):
        center(np.zeros((1, 2)), ["ja"], means)
    with pytest.raises(ValueError, match="3 vectors but 2 language labels"):
        fit_language_means(np.zeros((3, 2)), ["en", "de"])
