"""The joint intent / slot model: its loss by hand, which states each head reads, its config checks."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from language_agnostic.methods.registry import build
from language_agnostic.methods.slu import JointSlu, SluConfig, build_slu, encode_slu, slu_losses
from language_agnostic.training.loop import FineTunesEncoder, HasAdversary

LN2, LN3 = math.log(2.0), math.log(3.0)


class _Logits(nn.Module):
    """Returns fixed logits, whatever the input: the loss alone under test."""

    def __init__(self, intent: torch.Tensor, slots: torch.Tensor, ignore_index: int = -100) -> None:
        super().__init__()
        self.intent, self.slots = nn.Parameter(intent), nn.Parameter(slots)
        self.config = SimpleNamespace(ignore_index=ignore_index)

    def forward(self, input_ids, attention_mask):
        return self.intent, self.slots


def _hand_batch() -> tuple[_Logits, dict[str, torch.Tensor]]:
    intent = torch.tensor([[0.0, 0.0], [LN3, 0.0]])  # CE: ln 2 (target 0); ln 4 (target 1: p = 1/4)
    slots = torch.tensor(
        [
            [[100.0, -100.0], [0.0, 0.0], [-100.0, 100.0]],  # labelled only at 1 (target 0): ln 2
            [[-100.0, 100.0], [0.0, LN3], [LN3, 0.0]],  # at 1 (target 1, p = 3/4): ln 4/3; at 2 (target 1): ln 4
        ]
    )
    batch = {
        "input_ids": torch.zeros(2, 3, dtype=torch.long),
        "attention_mask": torch.ones(2, 3, dtype=torch.long),
        "intents": torch.tensor([0, 1]),
        "slot_labels": torch.tensor([[-100, 0, -100], [-100, 1, 1]]),
    }
    return _Logits(intent, slots), batch


def test_joint_loss_by_hand_with_ignored_positions():
    model, batch = _hand_batch()
    losses = slu_losses(model, batch)
    intent = (LN2 + 2 * LN2) / 2
    slot = (LN2 + (2 * LN2 - LN3) + 2 * LN2) / 3  # the ignored positions (logits ±100, wrong) add nothing
    assert set(losses) == {"intent", "slot", "total"}
    assert float(losses["intent"].detach()) == pytest.approx(intent)
    assert float(losses["slot"].detach()) == pytest.approx(slot)
    assert float(losses["total"].detach()) == pytest.approx(intent + slot)
    weighted = slu_losses(model, batch, {"intent": 0.5, "slot": 2.0})
    assert float(weighted["total"].detach()) == pytest.approx(0.5 * intent + 2.0 * slot)
    assert float(slu_losses(model, batch, {"slot": 0})["total"].detach()) == pytest.approx(intent)


def test_a_batch_without_slot_labels_has_zero_slot_loss_and_still_trains_the_intent():
    model, batch = _hand_batch()
    batch["slot_labels"] = torch.full((2, 3), -100)
    losses = slu_losses(model, batch)
    assert float(losses["slot"].detach()) == 0.0 and float(losses["total"].detach()) == pytest.approx(1.5 * LN2)
    losses["total"].backward()
    assert model.intent.grad is not None and float(model.slots.grad.abs().sum()) == 0.0


def test_unknown_loss_weights_are_named():
    model, batch = _hand_batch()
    with pytest.raises(ValueError, match=r"unknown SLU loss weight\(s\) \['slots'\]; known: \['intent', 'slot'\]"):
        slu_losses(model, batch, {"slots": 1.0})


class _Table(nn.Module):
    """A stand-in encoder: each id's state is a fixed row, no mixing between tokens."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.table = nn.Embedding(10, dim)

    def forward(self, input_ids, attention_mask):
        return SimpleNamespace(last_hidden_state=self.table(input_ids))


def test_intent_reads_the_first_token_and_slots_every_token():
    torch.manual_seed(0)
    model = JointSlu(_Table(4), 4, SluConfig(n_intents=3, n_labels=5)).eval()
    ids = torch.tensor([[1, 2, 3], [1, 4, 0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    intent, slots = model(ids, mask)
    states = model.encoder.table(ids)
    assert intent.shape == (2, 3) and slots.shape == (2, 3, 5)
    assert torch.allclose(intent, model.intent_head(states[:, 0]))
    assert torch.allclose(slots, model.slot_head(states))
    # the same first token gives the same intent, whatever follows (this encoder does not mix tokens)
    assert torch.allclose(intent[0], intent[1])
    assert torch.equal(encode_slu(model, (ids, mask))["utterance"], states[:, 0])


def test_the_encoder_is_declared_for_its_own_learning_rate():
    model = build("slu", 8, 1, {"n_intents": 4, "n_labels": 7})
    assert isinstance(model, FineTunesEncoder) and not isinstance(model, HasAdversary)
    assert {id(p) for p in model.encoder_parameters()} == {id(p) for p in model.encoder.parameters()}
    heads = {id(p) for p in model.parameters()} - {id(p) for p in model.encoder.parameters()}
    assert heads == {id(p) for p in [*model.intent_head.parameters(), *model.slot_head.parameters()]}
    assert (model.intent_head.out_features, model.slot_head.out_features) == (4, 7)


def test_build_from_an_encoder_config_gives_that_encoder():
    config = {
        "model_type": "bert",
        "vocab_size": 30,
        "hidden_size": 12,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 24,
        "max_position_embeddings": 16,
    }
    model = build_slu(8, 1, {"encoder_config": config, "n_intents": 2, "n_labels": 3})
    assert model.encoder.config.hidden_size == 12 and model.intent_head.in_features == 12


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"n_intents": 1, "n_labels": 3}, "n_intents must be >= 2, got 1"),
        ({"n_intents": 2, "n_labels": 0}, "n_labels must be >= 1, got 0"),
        ({"n_intents": 2, "n_labels": 3, "dropout": 1.0}, r"dropout must be in \[0, 1\), got 1.0"),
        ({"n_intents": 2, "n_labels": 3, "ignore_index": 2}, "ignore_index 2 is a label id"),
    ],
)
def test_bad_configs_are_named(fields, message):
    with pytest.raises(ValueError, match=message):
        SluConfig(**fields)
