"""Joint intent detection and slot filling over a fine-tuned encoder (the zero-shot SLU baselines).

One model serves both baselines of the SLU experiment; they differ only in their training data:

- ``zsjoint``: the encoder fine-tuned on English MASSIVE with an intent head over the first
  token's final state and a slot head over every token's state, a BIO label read off each
  word's first sub-token; the loss is ``L = L_I + L_S`` (both cross-entropy, the slot loss
  averaged over the labelled sub-tokens only);
- ``cosda``: the same model trained on dynamically code-switched English (CoSDA-ML,
  :mod:`language_agnostic.text.code_switch`); see ``training/slu_data.py``.

A batch has ``input_ids`` and ``attention_mask`` ``(B, L)``, ``intents`` ``(B,)`` and
``slot_labels`` ``(B, L)``, the latter ``ignore_index`` on every sub-token that carries no label
(special tokens, a prefix, a word's later sub-tokens, padding).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from language_agnostic.encoders.loading import LoadedEncoder, encoder_from_config
from language_agnostic.methods.losses import Batch, Losses, LossWeights, Options, check_loss_weights
from language_agnostic.methods.trained import load_over_base

WEIGHTS = ("intent", "slot")  # loss_weights keys; both default to 1 (L = L_I + L_S)
SLU_OPTIONS = ("encoder_config", "n_intents", "n_labels", "dropout", "ignore_index")


@dataclass(frozen=True)
class SluConfig:
    """The joint model's hyper-parameters.

    Attributes:
        n_intents: Classes of the intent head.
        n_labels: BIO labels of the slot head (``O`` and ``B-x`` / ``I-x`` per slot type).
        encoder_config: The encoder's ``transformers`` config as a dict (``config.to_dict()``),
            so that a saved model can be rebuilt without a download; ``None``: the encoder is
            given (or, in :func:`build_slu`, a one-layer test BERT).
        dropout: Dropout on the encoder's final states before both heads.
        ignore_index: The slot label id the loss skips.
    """

    n_intents: int
    n_labels: int
    encoder_config: Mapping[str, Any] | None = None
    dropout: float = 0.1
    ignore_index: int = -100

    def __post_init__(self) -> None:
        if self.n_intents < 2:
            raise ValueError(f"n_intents must be >= 2, got {self.n_intents}")
        if self.n_labels < 1:
            raise ValueError(f"n_labels must be >= 1, got {self.n_labels}")
        check_dropout_and_ignore_index(self.dropout, self.ignore_index, self.n_labels)


def check_dropout_and_ignore_index(dropout: float, ignore_index: int, n_labels: int) -> None:
    """The checks a joint intent / slot model's config shares (:class:`SluConfig`, LAJoint's).

    Raises:
        ValueError: ``dropout`` outside ``[0, 1)``, or ``ignore_index`` one of the ``n_labels`` label ids.
    """
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    if 0 <= ignore_index < n_labels:
        raise ValueError(f"ignore_index {ignore_index} is a label id (0..{n_labels - 1}); use a negative one")


class JointSlu(nn.Module):
    """An encoder, dropout, an intent head over the first token and a slot head over every token."""

    def __init__(self, encoder: nn.Module, dim: int, config: SluConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = encoder
        self.dropout = nn.Dropout(config.dropout)
        self.intent_head = nn.Linear(dim, config.n_intents)
        self.slot_head = nn.Linear(dim, config.n_labels)

    def states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The encoder's final token states ``(B, L, D)``."""
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(intent_logits (B, n_intents), slot_logits (B, L, n_labels))``."""
        h = self.dropout(self.states(input_ids, attention_mask))
        return self.intent_head(h[:, 0]), self.slot_head(h)

    # --- what the training loop reads (training.loop.FineTunesEncoder) ---
    def encoder_parameters(self) -> Iterator[nn.Parameter]:
        """Trained at ``TrainSettings.encoder_lr``; both heads at ``lr``."""
        return self.encoder.parameters()


def intent_slot_losses(
    intent_logits: torch.Tensor,
    slot_logits: torch.Tensor,
    intents: torch.Tensor,
    slot_labels: torch.Tensor,
    ignore_index: int,
) -> Losses:
    """``{"intent": L_I, "slot": L_S}``, unweighted (the caller sums them).

    ``L_I`` is the mean cross-entropy of the intents; ``L_S`` the mean cross-entropy over the
    positions whose slot label is not ``ignore_index`` (0 when a batch has none).
    """
    intent = F.cross_entropy(intent_logits.float(), intents)
    if bool((slot_labels != ignore_index).any()):
        slot = F.cross_entropy(slot_logits.float().flatten(0, 1), slot_labels.flatten(), ignore_index=ignore_index)
    else:  # no labelled position: cross-entropy's mean would be 0/0
        slot = slot_logits.float().sum() * 0.0
    return {"intent": intent, "slot": slot}


def weighted_joint_losses(model: nn.Module, batch: Batch, weights: LossWeights | None, method: str) -> Losses:
    """``L = w_I L_I + w_S L_S`` (:func:`intent_slot_losses`; weights 1 by default) of a joint model, whose
    ``model(input_ids, attention_mask)`` is ``(intent_logits, slot_logits)``, on one batch.

    Raises:
        ValueError: an unknown loss weight (naming ``method``, it and the known ones).
    """
    check_loss_weights(weights, WEIGHTS, method)
    w = {"intent": 1.0, "slot": 1.0, **{k: float(v) for k, v in dict(weights or {}).items()}}
    intent_logits, slot_logits = model(batch["input_ids"], batch["attention_mask"])
    parts = intent_slot_losses(
        intent_logits, slot_logits, batch["intents"], batch["slot_labels"], model.config.ignore_index
    )
    return {**parts, "total": w["intent"] * parts["intent"] + w["slot"] * parts["slot"]}


def slu_losses(
    model: JointSlu, batch: Batch, weights: LossWeights | None = None, options: Options | None = None
) -> Losses:
    """The joint baseline's ``L = w_I L_I + w_S L_S`` on one batch (:func:`weighted_joint_losses`)."""
    del options
    return weighted_joint_losses(model, batch, weights, "SLU")


def build_slu(dim: int, n_languages: int, options: Mapping[str, Any]) -> JointSlu:
    """A joint model from its build spec (``methods.registry``): the encoder from its config, untrained.

    ``encoder_config`` is the fine-tuned encoder's ``transformers`` config as a dict: the
    artifact's state dict holds every encoder weight, so
    :func:`~language_agnostic.methods.registry.load_trained` needs no download. Without it, a
    one-layer BERT of width ``dim`` (the protocol's tests), with 2 intents and 3 labels unless
    given. ``n_languages`` is unused.
    """
    del n_languages
    options = dict(options)
    encoder, width = encoder_from_config(options.get("encoder_config"), dim)
    return JointSlu(encoder, width, SluConfig(**{"n_intents": 2, "n_labels": 3, **options}))


def encode_slu(model: JointSlu, inputs: tuple[torch.Tensor, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``{"utterance": the first token's final state}`` of ``(input_ids, attention_mask)``:
    what the intent head reads.
    """
    return {"utterance": model.states(*inputs)[:, 0]}


def rebuild_slu(encoder: LoadedEncoder, artifact: Mapping[str, Any]) -> JointSlu:
    """The fine-tuned model: a copy of the base encoder with the artifact's tensors loaded over it, in eval mode.

    Raises:
        ValueError: the artifact's tensors do not fit this encoder, or it holds none.
    """
    options = {k: v for k, v in dict(artifact["build"]["options"]).items() if k != "encoder_config"}
    model = JointSlu(copy.deepcopy(encoder.model), int(encoder.hidden_size), SluConfig(**options))
    return load_over_base(model, artifact, "SLU")
