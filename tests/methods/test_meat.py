"""MEAT: losses by hand, and alternating adversarial training in the shared loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from language_agnostic.methods.meat import Meat, meat_losses, uniform_cross_entropy
from language_agnostic.training.data import QuadrupletBatches
from language_agnostic.training.loop import TrainSettings, train


def _half_model() -> Meat:
    model = Meat(2, 2)
    with torch.no_grad():
        for head in (model.meaning, model.language):
            head.weight.copy_(torch.eye(2) / 2)
            head.bias.zero_()
        model.discriminator.weight.zero_()
        model.discriminator.bias.zero_()
    return model


def test_losses_by_hand():
    s, t = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]])
    losses = meat_losses(_half_model(), {"s": s, "t": t, "s_lang": torch.tensor([0]), "t_lang": torch.tensor([1])})
    assert losses["reconstruction"].item() == pytest.approx(0.0, abs=1e-7)  # e/2 + e/2 = e
    # 1 - cos(s, t/2 + s/2) twice: cos([1,0], [1, .5]) = 1/sqrt(1.25); cos([1,1], [1, .5]) = 1.5/sqrt(2*1.25)
    expected_cross = (1 - 1 / math.sqrt(1.25)) + (1 - 1.5 / math.sqrt(2.5))
    assert losses["cross_reconstruction"].item() == pytest.approx(expected_cross, rel=1e-6)
    assert losses["language_push"].item() == pytest.approx(2**-0.5)  # cos(s_L, t_L)
    # zero logits are already uniform; both sides summed, as the released code does
    assert losses["uniform"].item() == pytest.approx(2 * math.log(2))
    assert losses["adversary"].item() == pytest.approx(2 * math.log(2))
    assert losses["total"].item() == pytest.approx(expected_cross + 2**-0.5 + 2 * math.log(2), rel=1e-6)


def test_uniform_cross_entropy_is_smallest_when_uniform():
    assert uniform_cross_entropy(torch.zeros(1, 4)).item() == pytest.approx(math.log(4))
    assert uniform_cross_entropy(torch.tensor([[5.0, 0.0, 0.0, 0.0]])).item() > math.log(4)


class _Pairs:
    """Adapt quadruplet batches to MEAT's pair-only loss."""

    def __init__(self, data: QuadrupletBatches) -> None:
        self.data = data

    def batches(self, epoch, generator):
        for b in self.data.batches(epoch, generator):
            yield {"s": b["s"], "t": b["t"], "s_lang": b["s_lang"], "t_lang": b["t_lang"]}


def test_alternating_training_updates_both_sides():
    rng = np.random.default_rng(0)
    meaning = rng.standard_normal((200, 6)).astype(np.float32)
    src, tgt = meaning + 2 * np.eye(6, dtype=np.float32)[0], meaning - 2 * np.eye(6, dtype=np.float32)[0]
    ids = (np.zeros(200, dtype=np.int64), np.ones(200, dtype=np.int64))
    torch.manual_seed(0)
    model = Meat(6, 2)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    train_data = _Pairs(QuadrupletBatches(src[:160], tgt[:160], ids[0][:160], ids[1][:160], batch_size=32))
    dev_data = _Pairs(QuadrupletBatches(src[160:], tgt[160:], ids[0][160:], ids[1][160:], batch_size=32, shuffle=False))
    result = train(
        model,
        lambda m, b: meat_losses(m, b),
        train_data,
        dev_data,
        TrainSettings(lr=1e-2, max_epochs=3, patience=3, progress=False),
    )
    assert not torch.equal(result.state_dict["discriminator.weight"], before["discriminator.weight"])
    assert not torch.equal(result.state_dict["meaning.weight"], before["meaning.weight"])
    assert "train_adversary" in result.history[1]  # [0]: the initial weights, scored on dev only


def test_adversarial_model_needs_an_adversary_loss():
    model = Meat(2, 2)
    data = _Pairs(
        QuadrupletBatches(
            np.eye(2, dtype=np.float32).repeat(2, 0),
            np.eye(2, dtype=np.float32).repeat(2, 0),
            np.zeros(4),
            np.ones(4),
            batch_size=2,
        )
    )

    def without_adversary(m, b):
        losses = meat_losses(m, b)
        return {k: v for k, v in losses.items() if k != "adversary"}

    with pytest.raises(ValueError, match="the model has adversary parameters but the loss has no 'adversary' term"):
        train(model, without_adversary, data, data, TrainSettings(max_epochs=1, progress=False))


def test_discriminator_steps_first_and_the_heads_see_it_updated():
    """As the released code: per batch, a discriminator step, then the heads' step against the updated discriminator."""
    model = Meat(2, 2)
    data = _Pairs(
        QuadrupletBatches(
            np.eye(2, dtype=np.float32).repeat(2, 0),
            np.eye(2, dtype=np.float32).repeat(2, 0),
            np.zeros(4),
            np.ones(4),
            batch_size=4,
            shuffle=False,
        )
    )
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []

    def recording(m, b):
        if m.training:
            seen.append((m.discriminator.weight.detach().clone(), m.meaning.weight.detach().clone()))
        return meat_losses(m, b)

    train(model, recording, data, data, TrainSettings(lr=0.1, max_epochs=1, patience=1, progress=False))
    (d_before, m_before), (d_for_heads, m_for_heads) = seen  # one batch: two forwards
    assert not torch.equal(d_before, d_for_heads)  # the discriminator stepped in between
    assert torch.equal(m_before, m_for_heads)  # the heads had not yet
