"""FMDA: the attention equations by hand, padding, losses with known values, freezing."""

from __future__ import annotations

import math

import pytest
import torch

from language_agnostic.methods.contrastive import ContrastiveSettings, info_nce
from language_agnostic.methods.fmda import (
    ABLATIONS,
    LOSS_WEIGHTS,
    Fmda,
    FmdaConfig,
    contrastive_loss,
    fmda_losses,
    freeze_template_encoder,
    masked_text_reconstruction_loss,
    two_stage_weights,
)


def _identity_model(dim: int = 2, **kwargs) -> Fmda:
    model = Fmda(FmdaConfig(dim=dim, n_languages=2, **kwargs))
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear):
                if module.weight.shape[0] == module.weight.shape[1]:
                    module.weight.copy_(torch.eye(dim))
                else:
                    module.weight.zero_()
                module.bias.zero_()
        model.identify.weight.zero_()  # language identification gives uniform probabilities
    return model


def test_forward_by_hand():
    states = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    out = _identity_model()(states, torch.tensor([[1, 1]]))
    # Q = first token [1, 0]; scores = Q·K^T / sqrt(2) = [0.7071, 0]
    a = math.exp(2**-0.5) / (math.exp(2**-0.5) + 1)
    assert out["attn_tp"][0].tolist() == pytest.approx([a, 1 - a])
    # residual attention: softmax(1 - attn)
    r = math.exp(1 - a) / (math.exp(1 - a) + math.exp(a))
    assert out["attn_rs"][0].tolist() == pytest.approx([r, 1 - r])
    assert out["tp"][0].tolist() == pytest.approx([a, 1 - a])  # V = identity of the token states
    assert out["rs"][0].tolist() == pytest.approx([r, 1 - r])
    assert out["m"][0].tolist() == pytest.approx([a + r, 2 - a - r])
    assert out["lang"][0].tolist() == [1.0, 0.0]
    unscaled = _identity_model(attention_scale="none")(states, torch.tensor([[1, 1]]))
    assert unscaled["attn_tp"][0, 0].item() == pytest.approx(math.e / (math.e + 1))


def test_identity_init_gives_the_hand_computed_forward_of_the_identity_model():
    states = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    out = Fmda(FmdaConfig(dim=2, n_languages=2, init="identity"))(states, torch.tensor([[1, 1]]))
    a = math.exp(2**-0.5) / (math.exp(2**-0.5) + 1)
    r = math.exp(1 - a) / (math.exp(1 - a) + math.exp(a))
    # the same numbers as test_forward_by_hand: only the language classifier is left random
    assert out["tp"][0].tolist() == pytest.approx([a, 1 - a])
    assert out["m"][0].tolist() == pytest.approx([a + r, 2 - a - r])
    assert out["lang"][0].tolist() == [1.0, 0.0]
    deep = Fmda(FmdaConfig(dim=2, n_languages=2, init="identity", mlp_layers=2, activation="none"))
    assert deep(states, torch.tensor([[1, 1]]))["m"][0].tolist() == pytest.approx([a + r, 2 - a - r])
    with pytest.raises(ValueError, match="init must be 'pytorch' or 'identity', got 'xavier'"):
        FmdaConfig(dim=2, n_languages=2, init="xavier")


def test_first_row_equals_the_full_attention_and_padding_is_ignored():
    torch.manual_seed(0)
    model = Fmda(FmdaConfig(dim=8, n_languages=3, ffn_layers=2, mlp_layers=2))
    states = torch.randn(1, 5, 8)
    out = model(states, torch.ones(1, 5))
    # the paper's full L x L form, then its first row
    q, k = model.query_tp(states), model.key_tp(states)
    attn = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(8), dim=-1)
    rs_attn = torch.softmax(1 - attn, dim=-1)
    torch.testing.assert_close(out["tp"], (attn @ model.value_tp(states))[:, 0])
    torch.testing.assert_close(out["rs"], (rs_attn @ model.value_rs(states))[:, 0])
    padded = torch.cat([states, 100 * torch.randn(1, 3, 8)], dim=1)
    out_padded = model(padded, torch.tensor([[1] * 5 + [0] * 3]))
    for name in ("lang", "tp", "rs", "m"):
        torch.testing.assert_close(out_padded[name], out[name])
    assert out_padded["attn_tp"][0, 5:].abs().sum().item() == 0


@pytest.mark.parametrize("ffn_layers", [1, 2])
def test_fast_path_equals_the_tokenwise_form_with_odd_lengths_and_padding(ffn_layers):
    torch.manual_seed(1)
    model = Fmda(FmdaConfig(dim=6, n_languages=2, ffn_layers=ffn_layers))
    lengths = torch.tensor([1, 3, 7])  # odd lengths, one utterance of a single token
    mask = torch.arange(7)[None, :] < lengths[:, None]
    states = torch.randn(3, 7, 6).masked_fill(~mask[..., None], 1e3)  # padding holds garbage
    fast, slow = model(states, mask), model.tokenwise(states, mask)
    for name in ("lang", "tp", "rs", "m", "attn_tp", "attn_rs"):
        assert fast[name].shape == slow[name].shape
        torch.testing.assert_close(fast[name], slow[name], rtol=1e-5, atol=1e-5)
    assert fast["attn_tp"][0].tolist() == [1.0] + [0.0] * 6  # one token takes all the weight
    assert not fast["attn_tp"].masked_select(~mask).any() and not fast["attn_rs"].masked_select(~mask).any()
    fast["m"].sum().backward()  # gradients reach every FFN through the fast path
    assert all(
        p.grad is not None and p.grad.abs().sum() > 0
        for n, p in model.named_parameters()
        if n.startswith(("query_tp", "key_tp", "value_tp", "value_rs")) and n.endswith("weight")
    )


def test_contrastive_loss_by_hand():
    # cos(x1, x2) = 1, cos(x1, neg1) = 0, cos(x2, neg2) = -1
    x1, x2 = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0]])
    neg1, neg2 = torch.tensor([[0.0, 1.0]]), torch.tensor([[-1.0, 0.0]])
    # eq. 3-4 as printed: a negative at cos -1 *earns* -1
    assert contrastive_loss(x1, x2, neg1, neg2, ContrastiveSettings(negative="linear")).item() == pytest.approx(
        -1 + 0 - 1
    )
    # hinged (the default): an orthogonal or opposite negative costs nothing
    assert contrastive_loss(x1, x2, neg1, neg2).item() == pytest.approx(-1 + 0 + 0)
    # the margin: max(0, cos - m); here cos(x1, neg1') = 0.6
    near = torch.tensor([[0.6, 0.8]])
    hinge = ContrastiveSettings(margin=0.5)
    assert contrastive_loss(x1, x2, near, neg2, hinge).item() == pytest.approx(-1 + 0.1 + 0)
    with pytest.raises(ValueError, match="needs the negatives"):
        contrastive_loss(x1, x2, None, None)


def test_infonce_by_hand():
    # two orthogonal pairs, tau = 1: each row's logits are (1, 0), loss = log(1 + e^-1) both ways
    x = torch.eye(2)
    settings = ContrastiveSettings(contrastive="infonce", temperature=1.0)
    assert contrastive_loss(x, x, None, None, settings).item() == pytest.approx(math.log(1 + math.exp(-1)), abs=1e-6)
    # rows swapped in x2: each row picks the wrong partner, loss = log(1 + e^1)
    assert info_nce(x, x.flip(0), 1.0).item() == pytest.approx(math.log(1 + math.exp(1)), abs=1e-6)
    # a lower temperature sharpens it: (1/0.5, 0) -> log(1 + e^-2)
    assert info_nce(x, x, 0.5).item() == pytest.approx(math.log(1 + math.exp(-2)), abs=1e-6)
    # only the cosines count: scaling a row changes nothing
    assert info_nce(x * torch.tensor([[3.0], [0.2]]), x, 1.0).item() == pytest.approx(
        math.log(1 + math.exp(-1)), abs=1e-6
    )


def test_hinge_linear_and_infonce_disagree_where_they_should():
    """Negatives pushed from orthogonal to opposite: the linear loss falls, the hinge does not, InfoNCE barely."""
    x1, x2 = torch.eye(2), torch.eye(2)
    orthogonal, opposite = torch.tensor([[0.0, 1.0], [1.0, 0.0]]), -torch.eye(2)
    linear, hinge = ContrastiveSettings(negative="linear"), ContrastiveSettings()
    assert (
        contrastive_loss(x1, x2, opposite, opposite, linear)
        < contrastive_loss(x1, x2, orthogonal, orthogonal, linear) - 1.9
    )
    assert (
        contrastive_loss(x1, x2, opposite, opposite, hinge)
        == contrastive_loss(x1, x2, orthogonal, orthogonal, hinge)
        == -1
    )


def test_contrastive_settings_reject_bad_values():
    with pytest.raises(ValueError, match="negative must be one of"):
        ContrastiveSettings(negative="squared")
    with pytest.raises(ValueError, match="contrastive must be one of"):
        ContrastiveSettings(contrastive="triplet")
    with pytest.raises(ValueError, match="temperature must be > 0"):
        ContrastiveSettings(temperature=0)


def _batch(model: Fmda) -> dict[str, torch.Tensor]:
    s = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    t = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    s2 = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])
    t2 = torch.tensor([[[-1.0, 0.0], [0.0, 1.0]]])
    one = torch.ones(1, 2)
    out = model(s, one)
    return {
        "s_states": s,
        "s_mask": one,
        "t_states": t,
        "t_mask": one,
        "s2_states": s2,
        "s2_mask": one,
        "t2_states": t2,
        "t2_mask": one,
        # targets equal to what the model reconstructs, so those losses are exactly 0
        "s_tp_target": (out["tp"] + out["lang"]).detach(),
        "t_tp_target": (out["tp"] + out["lang"]).detach(),
        "s_rs_target": (out["rs"] + out["lang"]).detach(),
        "t_rs_target": (out["rs"] + out["lang"]).detach(),
        "s_lang": torch.tensor([0]),
        "t_lang": torch.tensor([1]),
    }


def test_losses_with_known_values():
    model = _identity_model()
    losses = fmda_losses(model, _batch(model))
    assert set(losses) == set(LOSS_WEIGHTS) | {"total"}
    # identify is all zeros: ln 2 per utterance, two utterances
    assert losses["lang"].item() == pytest.approx(2 * math.log(2))
    for name in ("tp_rec", "tp_rec_cl", "rs_rec", "rs_rec_cl"):
        assert losses[name].item() == pytest.approx(0.0, abs=1e-12), name
    # utterance reconstruction: MLP_rec = identity, target = first-token state [1, 0]
    out = model(_batch(model)["s_states"], torch.ones(1, 2))
    recon = out["lang"] + out["tp"] + out["rs"]
    expected = ((recon - torch.tensor([[1.0, 0.0]])) ** 2).mean().item()
    assert losses["utt_rec"].item() == pytest.approx(2 * expected)
    assert losses["total"].item() == pytest.approx(sum(v.item() for k, v in losses.items() if k != "total"))
    no_con = fmda_losses(model, _batch(model), ABLATIONS["no_contrastive"])
    assert no_con["total"].item() == pytest.approx(
        losses["total"].item() - losses["tp_con"].item() - losses["m_con"].item()
    )


@pytest.mark.parametrize("stage", [1, 2])
def test_a_term_weighted_zero_is_not_computed_and_changes_nothing(stage: int):
    """Two-stage FMDA's weights: the stage's terms alone, the same total and gradients as every term
    computed with the others weighted 0 (the weights as 1e-30 keep them in the graph)."""
    torch.manual_seed(0)
    model = Fmda(FmdaConfig(dim=4, n_languages=2))
    batch = {
        **{f"{k}_states": torch.randn(3, 5, 4) for k in ("s", "t", "s2", "t2")},
        **{f"{k}_mask": torch.ones(3, 5, dtype=torch.bool) for k in ("s", "t", "s2", "t2")},
        **{f"{k}_target": torch.randn(3, 4) for k in ("s_tp", "t_tp", "s_rs", "t_rs")},
        "s_lang": torch.zeros(3, dtype=torch.long),
        "t_lang": torch.ones(3, dtype=torch.long),
    }
    weights = two_stage_weights(stage)
    skipped = fmda_losses(model, batch, weights)
    assert set(skipped) == {name for name, weight in weights.items() if weight} | {"total"}
    skipped["total"].backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    tiny = {name: weight or 1e-30 for name, weight in weights.items()}
    everything = fmda_losses(model, batch, tiny)
    assert set(everything) == set(LOSS_WEIGHTS) | {"total"}
    everything["total"].backward()
    assert everything["total"].item() == pytest.approx(skipped["total"].item(), rel=1e-6)
    for name, p in model.named_parameters():
        if name in grads:
            torch.testing.assert_close(p.grad, grads[name], rtol=1e-5, atol=1e-12)
        else:  # no term that uses it is trained in this stage
            assert p.grad is None or float(p.grad.abs().max()) < 1e-20, name
    with pytest.raises(ValueError, match="every FMDA loss weight is 0"):
        fmda_losses(model, batch, dict.fromkeys(LOSS_WEIGHTS, 0.0))


def test_utterance_target_variants():
    model = _identity_model(utterance_target="mean")
    batch = _batch(model)
    out = model(batch["s_states"], batch["s_mask"])
    recon = out["lang"] + out["tp"] + out["rs"]
    expected = ((recon - torch.tensor([[0.5, 0.5]])) ** 2).mean().item()
    assert fmda_losses(model, batch)["utt_rec"].item() == pytest.approx(2 * expected)
    tokens = _identity_model(utterance_target="tokens")
    per_token = ((recon - torch.tensor([[1.0, 0.0]])) ** 2).mean() + ((recon - torch.tensor([[0.0, 1.0]])) ** 2).mean()
    assert fmda_losses(tokens, batch)["utt_rec"].item() == pytest.approx(2 * per_token.item() / 2)


def test_masked_text_reconstruction_own_and_cross_language():
    s = {"tp": torch.tensor([[1.0, 0.0]]), "lang": torch.tensor([[0.0, 1.0]])}
    t = {"tp": torch.tensor([[2.0, 0.0]]), "lang": torch.tensor([[0.0, 3.0]])}
    batch = {"s_tp_target": torch.tensor([[1.0, 1.0]]), "t_tp_target": torch.tensor([[2.0, 3.0]])}
    # own language: s_tp + s_lang = (1, 1) and t_tp + t_lang = (2, 3) are their targets exactly
    assert masked_text_reconstruction_loss(s, t, batch, "tp", cross=False).item() == 0.0
    # cross: s_tp + t_lang = (1, 3) against t's (2, 3), t_tp + s_lang = (2, 1) against s's (1, 1): 1/2 + 1/2
    assert masked_text_reconstruction_loss(s, t, batch, "tp", cross=True).item() == 1.0


def test_frozen_template_encoder_gets_no_gradient():
    torch.manual_seed(0)
    model = Fmda(FmdaConfig(dim=2, n_languages=2))
    freeze_template_encoder(model)
    fmda_losses(model, _batch(model))["total"].backward()
    for name in ("query_tp", "key_tp", "value_tp"):
        assert all(p.grad is None for p in getattr(model, name).parameters()), name
    assert model.value_rs[0].weight.grad is not None


def test_bad_configuration_and_weights():
    with pytest.raises(ValueError, match="utterance_target must be 'cls', 'mean' or 'tokens', got 'pooler'"):
        FmdaConfig(dim=2, n_languages=2, utterance_target="pooler")
    with pytest.raises(ValueError, match="attention_scale must be 'sqrt_d' or 'none'"):
        FmdaConfig(dim=2, n_languages=2, attention_scale="learned")
    model = _identity_model()
    with pytest.raises(ValueError, match=r"unknown FMDA loss weight\(s\) \['contrast'\]"):
        fmda_losses(model, _batch(model), {"contrast": 1.0})


def test_two_stage_weights_split_the_losses():
    from language_agnostic.methods.fmda import two_stage_weights

    one, two = two_stage_weights(1), two_stage_weights(2)
    assert {k for k, v in one.items() if v == 1.0} == {"tp_rec", "tp_rec_cl", "tp_con"}
    assert all(one[k] + two[k] == 1.0 for k in LOSS_WEIGHTS)
    with pytest.raises(ValueError, match="stage must be 1 or 2"):
        two_stage_weights(3)
