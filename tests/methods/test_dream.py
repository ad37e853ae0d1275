"""DREAM's losses on hand-built tensors with known values."""

from __future__ import annotations

import math

import pytest
import torch

from language_agnostic.methods.dream import Dream, dream_losses, meaning_loss, reconstruction_loss


def _halving_model() -> Dream:
    """MLP_M = MLP_L = e / 2 (so they reconstruct e exactly); MLP_I outputs zeros."""
    model = Dream(dim=2, n_languages=2)
    with torch.no_grad():
        for head in (model.meaning[0], model.language[0]):
            head.weight.copy_(torch.eye(2) / 2)
            head.bias.zero_()
        model.identify.weight.zero_()
        model.identify.bias.zero_()
    return model


def test_losses_by_hand():
    s, t = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0]])
    s2, t2 = torch.tensor([[0.0, 1.0]]), torch.tensor([[-1.0, 0.0]])
    batch = {"s": s, "t": t, "s2": s2, "t2": t2, "s_lang": torch.tensor([0]), "t_lang": torch.tensor([1])}
    losses = dream_losses(_halving_model(), batch)
    assert losses["reconstruction"].item() == 0.0  # e/2 + e/2 = e
    # parallel: 1 - cos = 0; random: max(0, cos(s, s2) = 0) + max(0, cos(t, t2) = -1) = 0
    assert losses["meaning"].item() == 0.0
    # 2 - cos(s_L, s2_L) - cos(t_L, t2_L) = 2 - 0 - (-1)
    assert losses["language_similarity"].item() == pytest.approx(3.0)
    # zero logits over 2 languages: cross-entropy ln 2 on each side
    assert losses["language_id"].item() == pytest.approx(math.log(2))
    assert losses["language_push"].item() == pytest.approx(1.0)  # cos(s_L, t_L) = 1, left out by default
    assert losses["total"].item() == pytest.approx(3.0 + math.log(2))
    weighted = dream_losses(_halving_model(), batch, {"language_push": 0.5, "language": 0.0})
    assert weighted["total"].item() == pytest.approx(0.5)


def test_reconstruction_is_mean_squared_error_over_dimensions():
    e = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    assert reconstruction_loss(e, torch.zeros(1, 4), torch.zeros(1, 4)).item() == pytest.approx(30 / 4)


def test_meaning_loss_hinges_at_zero():
    a = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    b = torch.tensor([[0.0, 1.0], [1.0, 1.0]])
    # parallel: (1 - 0) and (1 - 0.7071); random partners: cos 1 and 1 twice
    expected = ((1 + 1 + 1) + (1 - 2**-0.5 + 1 + 1)) / 2
    assert meaning_loss(a, b, a, b).item() == pytest.approx(expected, rel=1e-6)


def test_bad_weights_and_activation():
    with pytest.raises(ValueError, match=r"unknown DREAM loss weight\(s\) \['contrast'\]"):
        x = torch.zeros(1, 2)
        batch = {"s": x, "t": x, "s2": x, "t2": x, "s_lang": torch.tensor([0]), "t_lang": torch.tensor([0])}
        dream_losses(_halving_model(), batch, {"contrast": 1.0})
    with pytest.raises(ValueError, match="activation must be one of"):
        Dream(4, 2, activation="swish")


def test_dream_infonce_replaces_only_the_meaning_loss():
    import math

    from language_agnostic.methods.dream import Dream, dream_losses

    torch.manual_seed(0)
    model = Dream(4, 2)
    s, t, s2, t2 = (torch.randn(3, 4) for _ in range(4))
    batch = {"s": s, "t": t, "s2": s2, "t2": t2, "s_lang": torch.zeros(3, dtype=torch.long)}
    batch["t_lang"] = torch.ones(3, dtype=torch.long)
    pairwise = dream_losses(model, batch)
    infonce = dream_losses(model, batch, meaning="infonce", temperature=1.0)
    for part in ("reconstruction", "language_similarity", "language_id"):
        assert infonce[part] == pairwise[part]
    s_m, t_m = model(s)[0].detach(), model(t)[0].detach()
    logits = torch.nn.functional.normalize(s_m, dim=-1) @ torch.nn.functional.normalize(t_m, dim=-1).T
    by_hand = (
        sum(
            -math.log(math.exp(logits[i, i]) / sum(math.exp(logits[i, j]) for j in range(3)))
            + -math.log(math.exp(logits[i, i]) / sum(math.exp(logits[j, i]) for j in range(3)))
            for i in range(3)
        )
        / 6
    )
    assert infonce["meaning"].item() == pytest.approx(float(by_hand), abs=1e-5)
    with pytest.raises(ValueError, match="meaning must be 'pairwise' or 'infonce'"):
        dream_losses(model, batch, meaning="triplet")
