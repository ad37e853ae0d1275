"""The shared parts of the parameter models: strict types and one-line messages naming the path."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field

from language_agnostic.config import ParameterError
from language_agnostic.parameters.base import Blank, Section, Word, validated


class _Training(Section):
    lr: Annotated[float, Field(gt=0)] = 1e-3
    """Learning rate."""
    epochs: Annotated[int, Field(ge=1)] = 3
    """Epochs."""
    mixed_precision: Literal["no", "bf16", "auto"] = "auto"
    """Precision."""
    word: Word = "yes"
    """A word."""
    prefix: Blank = "query: "
    """A prefix."""


class _Block(Section):
    training: _Training = _Training()
    """Shared training settings."""
    variants: dict[str, _Training] = {}
    """Named entries."""
    seed: int | None = None
    """Null: none."""


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"training": {"lr": -1}}, "fmda.training.lr: must be > 0, got -1"),
        ({"training": {"epochs": 3.5}}, "fmda.training.epochs: must be a whole number, got 3.5"),
        ({"training": {"epochs": 0}}, "fmda.training.epochs: must be >= 1, got 0"),
        ({"training": {"lr": "abc"}}, "fmda.training.lr: must be a number, got 'abc'"),
        (
            {"training": {"mixed_precision": "fp8"}},
            "fmda.training.mixed_precision: must be one of ['no', 'bf16', 'auto'], got 'fp8'",
        ),
        (
            {"training": {"lrr": 1}},
            "fmda.training: unknown key 'lrr'; known: ['epochs', 'lr', 'mixed_precision', 'prefix', 'word']",
        ),
        (
            {"variants": {"x": {"lrr": 1}}},
            "fmda.variants.x: unknown key 'lrr'; known: ['epochs', 'lr', 'mixed_precision', 'prefix', 'word']",
        ),
        ({"variants": {"x": {"epochs": 1.5}}}, "fmda.variants.x.epochs: must be a whole number, got 1.5"),
        ({"seed": "one"}, "fmda.seed: must be a whole number, got 'one'"),
        ({"seeds": 1}, "fmda: unknown key 'seeds'; known: ['seed', 'training', 'variants']"),
        ({"training": 3}, "fmda.training: must be a mapping, got 3"),
    ],
)
def test_a_wrong_value_is_one_line_naming_its_path(value: dict, message: str):
    with pytest.raises(ParameterError) as caught:
        validated(_Block, value, "fmda")
    assert str(caught.value) == message


def test_yaml_words_and_nulls_are_read_as_the_settings_mean_them():
    block = validated(_Block, {"training": {"word": False, "prefix": None, "lr": 1}, "seed": None}, "fmda")
    # YAML reads `no` as false: the word comes back; null for a prefix is no prefix; an int is a float
    assert (block.training.word, block.training.prefix, block.training.lr, block.seed) == ("no", "", 1.0, None)
