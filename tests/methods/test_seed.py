"""SEED: exact reversibility and its losses on hand-built tensors."""

from __future__ import annotations

import pytest
import torch

from language_agnostic.methods.seed import Seed, seed_losses


def _half_model() -> Seed:
    model = Seed(2)
    with torch.no_grad():
        model.meaning.weight.copy_(torch.eye(2) / 2)
        model.meaning.bias.zero_()
    return model


def test_language_embedding_reconstructs_the_input_exactly():
    torch.manual_seed(0)
    model = Seed(16)
    e = torch.randn(8, 16)
    meaning, language = model(e)
    # exact by construction; in floating point up to one rounding of (e - m) + m
    torch.testing.assert_close(meaning + language, e, rtol=0, atol=1e-6)
    assert (meaning + language - e).abs().max().item() <= 4 * torch.finfo(torch.float32).eps * e.abs().max().item()


def test_losses_by_hand():
    # meaning = language = e / 2
    s, t = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0]])
    s2, t2 = torch.tensor([[0.0, 1.0]]), torch.tensor([[-1.0, 0.0]])
    batch = {"s": s, "t": t, "s2": s2, "t2": t2}
    losses = seed_losses(_half_model(), batch)
    # L_M = 2(1 - 1) + max(0, 0) + max(0, -1) = 0
    assert losses["meaning"].item() == pytest.approx(0.0)
    # L_L = (1 - cos(s, s2)) + (1 - cos(t, t2)) = 1 + 2
    assert losses["language"].item() == pytest.approx(3.0)
    # L_C: max(0, cos(s_M, s_L)) = 1 twice; cos(s, s/2 + s2/2) = 1/sqrt(2); cos(t, t/2 + t2/2) is
    # undefined for a zero vector (cosine_similarity gives 0); cos(s, t/2 + s/2) = 1 twice
    expected = 1 + 1 + 2 - 2**-0.5 - 0.0 + 2 - 1 - 1
    assert losses["cross"].item() == pytest.approx(expected, abs=1e-6)
    assert losses["total"].item() == pytest.approx(3.0 + expected, abs=1e-6)
    only_meaning = seed_losses(_half_model(), batch, {"language": 0.0, "cross": 0.0})
    assert only_meaning["total"].item() == pytest.approx(0.0)


def test_unknown_weight():
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError, match=r"unknown SEED loss weight\(s\) \['reconstruction'\]"):
        seed_losses(_half_model(), {"s": x, "t": x, "s2": x, "t2": x}, {"reconstruction": 1.0})
