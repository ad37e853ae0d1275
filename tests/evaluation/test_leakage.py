"""The language probe: separable languages are found, mixed ones are not."""

from __future__ import annotations

import numpy as np
import pytest

from language_agnostic.evaluation.leakage import language_probe_accuracy


def test_probe_finds_a_language_direction_and_not_noise():
    rng = np.random.default_rng(0)
    meaning = rng.standard_normal((400, 6))
    langs = np.array(["en", "de"] * 200)
    shifted = meaning + np.where(langs[:, None] == "en", 3.0, -3.0) * np.eye(6)[0]
    assert language_probe_accuracy(shifted[:300], langs[:300], shifted[300:], langs[300:]) == 1.0
    chance = language_probe_accuracy(meaning[:300], langs[:300], meaning[300:], langs[300:])
    assert 0.35 <= chance <= 0.65


def test_probe_input_errors():
    x = np.zeros((4, 2))
    with pytest.raises(ValueError, match=r"at least two languages in training, got \['en'\]"):
        language_probe_accuracy(x, ["en"] * 4, x, ["en"] * 4)
    with pytest.raises(ValueError, match=r"test language\(s\) \['ja'\] not in the probe's training data"):
        language_probe_accuracy(np.eye(4), ["en", "de", "en", "de"], x, ["ja"] * 4)
