"""The loss-weight checks every method shares: defaults merged, unknown names rejected by name."""

from __future__ import annotations

import pytest

from language_agnostic.methods.losses import check_loss_weights, with_default_weights


def test_weights_over_the_defaults_as_given():
    defaults = {"meaning": 1.0, "language": 1.0}
    assert with_default_weights(None, defaults, "SEED") == {"meaning": 1.0, "language": 1.0}
    merged = with_default_weights({"language": 0}, defaults, "SEED")
    assert merged == {"meaning": 1.0, "language": 0} and isinstance(merged["language"], int)
    assert defaults == {"meaning": 1.0, "language": 1.0}  # not changed in place


def test_unknown_weights_are_named_with_the_known_ones():
    with pytest.raises(
        ValueError, match=r"^unknown SEED loss weight\(s\) \['a', 'z'\]; known: \['language', 'meaning'\]$"
    ):
        with_default_weights({"z": 1.0, "a": 2.0, "meaning": 0.5}, {"meaning": 1.0, "language": 1.0}, "SEED")
    # check_loss_weights names the known ones in their own order
    with pytest.raises(ValueError, match=r"^unknown SLU loss weight\(s\) \['slots'\]; known: \['intent', 'slot'\]$"):
        check_loss_weights({"slots": 1.0}, ("intent", "slot"), "SLU")
    check_loss_weights(None, ("intent", "slot"), "SLU")  # nothing given: nothing to reject
