"""EMU's losses on hand-built tensors, the WGAN critic's clipping in the training loop, and a step on a tiny encoder."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch
from torch import nn
from transformers import BertConfig, BertModel

from language_agnostic.methods.emu import (
    Emu,
    EmuConfig,
    center_loss,
    class_means,
    critic_loss,
    emu_losses,
    l2_constrained_logits,
    npair_cosine_loss,
    siamese_contrastive_loss,
    update_centroids,
)
from language_agnostic.training.loop import TrainSettings, train


def test_l2_constrained_softmax_by_hand():
    classifier = nn.Linear(2, 2)
    with torch.no_grad():
        classifier.weight.copy_(torch.eye(2))
        classifier.bias.zero_()
    u = torch.tensor([[3.0, 4.0]])  # ‖u‖ = 5: u/‖u‖ = (0.6, 0.8); × α 50 = (30, 40)
    logits = l2_constrained_logits(u, classifier, alpha=50.0)
    assert logits[0].tolist() == pytest.approx([30.0, 40.0])
    # the norm of u does not matter, only its direction
    assert l2_constrained_logits(10 * u, classifier, 50.0)[0].tolist() == pytest.approx([30.0, 40.0])
    ce = torch.nn.functional.cross_entropy(logits, torch.tensor([0]))
    assert float(ce.detach()) == pytest.approx(10 + math.log1p(math.exp(-10)))


def test_center_loss_by_hand():
    u = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    centers = torch.tensor([[1.0, 1.0], [2.0, 2.0]])
    # ½ (‖(0, 1)‖² + ‖(1, 2)‖²) = ½ (1 + 5)
    assert float(center_loss(u, torch.tensor([0, 1]), centers)) == pytest.approx(3.0)
    # summed over the batch as eq. 1 prints it, not averaged
    assert float(center_loss(torch.cat([u, u]), torch.tensor([0, 1, 0, 1]), centers)) == pytest.approx(6.0)


def test_centroids_start_at_class_means_and_move_by_wens_rule():
    u = torch.tensor([[2.0, 0.0], [2.0, 2.0], [5.0, 5.0]])
    labels = torch.tensor([0, 0, 1])
    # class 0: mean (2, 1); class 1: (5, 5); class 2 has no row: zero
    assert torch.allclose(class_means(u, labels, 3), torch.tensor([[2.0, 1.0], [5.0, 5.0], [0.0, 0.0]]))
    centers = torch.tensor([[0.0, 0.0], [1.0, 1.0], [7.0, 7.0]])
    update_centroids(centers, u, labels, rate=0.5)
    # Wen et al. eq. 4: Δc_0 = (2·(0, 0) − (4, 2)) / 3, c_0 − ½Δc_0 = (2/3, 1/3); Δc_1 = ((1, 1) − (5, 5)) / 2 → (2, 2);
    # class 2 is not in the batch and stays
    assert torch.allclose(centers, torch.tensor([[2 / 3, 1 / 3], [2.0, 2.0], [7.0, 7.0]]))


def test_centroid_centres_are_not_trained_and_move_only_in_training_mode():
    model = _tiny_emu("emu", adversarial_weight=0.0)
    assert "centers" not in dict(model.named_parameters()) and "centers" in model.state_dict()
    assert "centers" in dict(_tiny_emu("emu", centers="learned").named_parameters())
    batch = next(iter(_Data(1).batches(0, torch.Generator().manual_seed(1))))
    model.eval()
    emu_losses(model, batch)
    assert torch.count_nonzero(model.centers) == 0  # dev batches leave the centroids alone
    model.train()
    emu_losses(model, batch)
    assert torch.count_nonzero(model.centers[:3]) > 0


def test_npair_scale_sharpens_the_softmax_over_cosines():
    anchor = positive = torch.eye(4)
    labels = torch.arange(4)
    # cosine 1 with its own positive, 0 with the three others: CE = log(1 + 3 e^{−s})
    for scale in (1.0, 10.0):
        expected = math.log(1 + 3 * math.exp(-scale))
        assert float(npair_cosine_loss(anchor, positive, labels, scale)) == pytest.approx(expected, rel=1e-3)


class _First(nn.Module):
    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return u[:, 0]


def test_critic_loss_is_the_wasserstein_estimate():
    u_t = torch.tensor([[1.0], [3.0]])  # D = 1, 3: mean 2
    v_l = torch.tensor([[0.0], [-2.0]])  # D = 0, -2: mean -1
    assert float(critic_loss(_First(), u_t, v_l)) == pytest.approx(-1.0 - 2.0)


def test_baseline_losses_by_hand():
    a, b = torch.tensor([[0.0, 0.0], [0.0, 0.0]]), torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    # d = 5 (same intent: d² = 25), d = 1 (different, margin 2: (2 - 1)² = 1); batch mean
    assert float(siamese_contrastive_loss(a, b, torch.tensor([1, 0]), margin=2.0)) == pytest.approx((25 + 1) / 2)
    anchor = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    positive = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    # anchor 0: cosines (1, 1) -> CE = log 2; anchor 1: cosines (0, 0) -> log 2
    assert float(npair_cosine_loss(anchor, positive, torch.tensor([0, 1]))) == pytest.approx(math.log(2))
    # a positive of the anchor's own intent is not its negative: masked out, CE 0 for anchor 0
    masked = npair_cosine_loss(anchor, positive, torch.tensor([0, 0]))
    assert float(masked) == pytest.approx(0.0, abs=1e-6)


def _tiny_emu(loss: str = "emu", **config) -> Emu:
    torch.manual_seed(0)
    bert = BertModel(
        BertConfig(
            vocab_size=50,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=16,
        ),
        add_pooling_layer=False,
    )
    return Emu(bert, 16, EmuConfig(n_intents=3, loss=loss, critic_hidden=8, **config))


def _ids(generator: torch.Generator, n: int, offset: int = 0) -> dict[str, torch.Tensor]:
    ids = torch.randint(5 + offset, 25 + offset, (n, 6), generator=generator)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


class _Data:
    """Labelled batches (with adversarial sentences) and an endless stream of critic batches."""

    def __init__(self, n_batches: int = 2) -> None:
        self.n_batches = n_batches

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[dict[str, torch.Tensor]]:
        for _ in range(self.n_batches):
            adv = _ids(generator, 4, offset=20)
            yield {
                **_ids(generator, 4),
                "labels": torch.tensor([0, 1, 2, 0]),
                "adv_input_ids": adv["input_ids"],
                "adv_attention_mask": adv["attention_mask"],
            }

    def adversary_batches(self, epoch: int, generator: torch.Generator) -> Iterator[dict[str, torch.Tensor]]:
        while True:
            adv = _ids(generator, 4, offset=20)
            yield {**_ids(generator, 4), "adv_input_ids": adv["input_ids"], "adv_attention_mask": adv["attention_mask"]}


def test_critic_weights_stay_clipped_after_every_update():
    model = _tiny_emu(clip=0.01, critic_steps=3)
    seen: list[float] = []
    clip = model.after_adversary_step

    def checked() -> None:
        clip()
        seen.append(max(float(p.detach().abs().max()) for p in model.critics.parameters()))

    model.after_adversary_step = checked  # type: ignore[method-assign]
    train(
        model,
        lambda m, b: emu_losses(m, b),
        _Data(2),
        _Data(1),
        TrainSettings(lr=1e-3, max_epochs=2, patience=5, seed=0, progress=False),
    )
    # k = 3 critic updates before each of the 2 encoder steps of 2 epochs
    assert len(seen) == 3 * 2 * 2
    assert max(seen) <= 0.01 + 1e-9
    # the critic started far outside [-c, c]: the clipping, not the initialisation, keeps it there
    assert max(float(p.detach().abs().max()) for p in _tiny_emu().critics.parameters()) > 0.01


def test_without_the_discriminator_no_critic_trains():
    model = _tiny_emu(adversarial_weight=0.0)
    assert list(model.adversary_parameters()) == []
    losses = emu_losses(model, next(iter(_Data(1).batches(0, torch.Generator().manual_seed(0)))))
    assert set(losses) == {"l2_softmax", "center", "total"}
    with pytest.raises(ValueError, match=r"unknown EMU loss weight\(s\) \['lambda'\]"):
        emu_losses(model, next(iter(_Data(1).batches(0, torch.Generator().manual_seed(0)))), {"lambda": 1.0})


def test_a_training_step_on_a_tiny_encoder_lowers_l_c():
    model = _tiny_emu()
    batch = next(iter(_Data(1).batches(0, torch.Generator().manual_seed(1))))

    def l_c() -> float:
        model.eval()
        with torch.no_grad():
            parts = emu_losses(model, batch)
        return float(parts["l2_softmax"] + model.config.center_weight * parts["center"])

    before = l_c()
    model.train()
    optimiser = torch.optim.Adam([p for n, p in model.named_parameters() if not n.startswith("critics")], lr=1e-3)
    for _ in range(3):
        optimiser.zero_grad()
        emu_losses(model, batch)["total"].backward()
        optimiser.step()
    assert l_c() < before


def test_config_names_its_mistakes():
    with pytest.raises(
        ValueError, match=r"loss must be one of \['emu', 'softmax', 'contrastive', 'npair'\], got 'triplet'"
    ):
        EmuConfig(n_intents=3, loss="triplet")
    with pytest.raises(ValueError, match="pooling must be 'mean' or 'cls'"):
        EmuConfig(n_intents=3, pooling="max")
    with pytest.raises(ValueError, match=r"centers must be one of \['centroid', 'learned'\], got 'mean'"):
        EmuConfig(n_intents=3, centers="mean")
    with pytest.raises(ValueError, match="scale and margin must be > 0"):
        EmuConfig(n_intents=3, loss="npair", scale=0)


def test_an_emu_artifact_comes_back_from_its_encoder_config_alone():
    from language_agnostic.methods.registry import artifact, load_trained

    model = _tiny_emu()
    options = {"encoder_config": model.encoder.config.to_dict(), "n_intents": 3, "critic_hidden": 8}
    saved = artifact("emu", model, 16, 1, options)
    _, again = load_trained(saved)
    batch = _ids(torch.Generator().manual_seed(3), 4)
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(**batch), again(**batch))
