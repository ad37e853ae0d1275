"""LAJoint: the label-aware joint intent / slot model of LAJ-MCL (Liang et al. 2022, §3.1).

The encoder reads the slot set beside the utterance (eq. 1)::

    [CLS] s_O s_B s_I s_1 ... s_K [SEP] x_1 ... x_T [SEP]

The ``K + 3`` label positions carry learned embeddings (:attr:`LAJoint.label_embeddings`,
given to the encoder through ``inputs_embeds``; every other position keeps its word
embedding), initialised from each label's text (:func:`initial_label_embeddings`). The
encoder's outputs at the label positions become the BIO label representations (``O``, then
``B-`` / ``I-`` of every slot through the label compressor, eq. 2–3); words and labels go
through one projector (eq. 4–5) and a word's slot label is ``softmax(H_t · {H_k/‖H_k‖₂}ᵀ)``;
the intent is read off ``[CLS]``; ``L_J = L_I + L_S`` (eq. 6).

The label order is the project's label vocabulary (``corpora.massive_slu.label_vocabulary``):
``O, B-s_1, I-s_1, B-s_2, I-s_2, ...`` with the slots sorted, so the slot logits index the
same ids as :class:`~language_agnostic.methods.slu.JointSlu`'s and every SLU metric and
prediction helper applies unchanged.

Positions in a sequence (``K`` slots): ``0`` ``[CLS]``; ``1, 2, 3`` ``s_O, s_B, s_I``;
``4 .. K + 3`` the slots; ``K + 4`` ``[SEP]``; the utterance's own tokens (its prefix, e.g.
e5's ``query:``, its words, its end token) from ``K + 5`` on: every position of the
utterance's own tokenisation but its start token moves ``K + 4`` to the right
(:func:`prepend_labels`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from language_agnostic.methods.losses import Batch, Losses, LossWeights, Options
from language_agnostic.methods.slu import check_dropout_and_ignore_index, intent_slot_losses, weighted_joint_losses
from language_agnostic.text.slot_negatives import slot_text

ABSTRACT_TEXTS = ("outside", "begin", "inside")  # the texts s_O, s_B, s_I are initialised from
INIT_LAYERS = 3  # §3.1: "the mean-pooling over the hidden states of the bottom 3 layers"


def label_names(slots: Sequence[str]) -> list[str]:
    """The BIO labels in model order: ``["O", "B-s_1", "I-s_1", ...]`` (the order of ``label_vocabulary``)."""
    return ["O"] + [f"{p}{s}" for s in slots for p in ("B-", "I-")]


def n_label_positions(n_slots: int) -> int:
    """Label positions of eq. 1: ``s_O, s_B, s_I`` and the ``K`` slots."""
    return n_slots + 3


def prefix_shift(n_slots: int) -> int:
    """How far every token of the utterance but its start token moves: the ``K + 3`` labels and a ``[SEP]``."""
    return n_slots + 4


def prepend_labels(ids: Sequence[int], n_slots: int, cls_id: int, sep_id: int, placeholder_id: int) -> list[int]:
    """``[CLS] <K + 3 placeholders> [SEP]`` followed by an utterance's ids without its start token (eq. 1).

    The placeholders' embeddings are replaced by the label embeddings in
    :meth:`LAJoint.encode`; their ids only fill the tensor.

    Raises:
        ValueError: the utterance does not start with ``cls_id`` (a tokenizer whose start token
            is not its ``cls_token``, or ids without special tokens).
    """
    if not ids or ids[0] != cls_id:
        raise ValueError(f"the utterance's ids must start with the start token {cls_id}, got {list(ids[:3])}")
    return [cls_id, *([placeholder_id] * n_label_positions(n_slots)), sep_id, *ids[1:]]


@dataclass(frozen=True)
class LajointConfig:
    """LAJoint's hyper-parameters.

    Attributes:
        n_intents: Classes of the intent head.
        slots: The slot names in label order (sorted, as ``label_vocabulary`` sorts them).
        encoder_config: The encoder's ``transformers`` config as a dict, so a saved model can be
            rebuilt without a download; ``None``: the encoder is given.
        compressor: Eq. 2–3; ``False`` ("− compressor", Table 4): ``E_k^B = (E_B + E_k) / 2`` and
            ``E_k^I = (E_I + E_k) / 2``, the parameter-free combination that still tells B from I.
        projector: Eq. 4–5; ``False`` ("− projector"): ``H = E``.
        dropout: Dropout on the encoder's outputs before every head.
        ignore_index: The slot label id the loss skips.
        abstract_texts: The texts ``s_O``, ``s_B``, ``s_I`` are initialised from.
    """

    n_intents: int
    slots: tuple[str, ...]
    encoder_config: Mapping[str, Any] | None = None
    compressor: bool = True
    projector: bool = True
    dropout: float = 0.1
    ignore_index: int = -100
    abstract_texts: tuple[str, str, str] = field(default=ABSTRACT_TEXTS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "slots", tuple(str(s) for s in self.slots))
        object.__setattr__(self, "abstract_texts", tuple(str(s) for s in self.abstract_texts))
        if self.n_intents < 2:
            raise ValueError(f"n_intents must be >= 2, got {self.n_intents}")
        if len(self.slots) < 1:
            raise ValueError("slots must name at least one slot")
        if len(set(self.slots)) != len(self.slots):
            raise ValueError(f"slots must be distinct, got {list(self.slots)}")
        if len(self.abstract_texts) != 3:
            raise ValueError(f"abstract_texts must be 3 texts (O, B, I), got {list(self.abstract_texts)}")
        check_dropout_and_ignore_index(self.dropout, self.ignore_index, self.n_labels)

    @property
    def n_slots(self) -> int:
        return len(self.slots)

    @property
    def n_labels(self) -> int:
        """``O`` and ``B-`` / ``I-`` of every slot."""
        return 2 * len(self.slots) + 1

    def label_texts(self) -> list[str]:
        """The text of every label position: ``s_O, s_B, s_I``, then the slots (:func:`slot_text`)."""
        return [*self.abstract_texts, *(slot_text(s) for s in self.slots)]


@dataclass
class LajointOutputs:
    """One forward pass.

    Attributes:
        states: The encoder's outputs ``E`` after dropout ``(B, L, D)`` (label positions included).
        intent_logits: ``(B, n_intents)`` from ``E_[CLS]``.
        slot_logits: ``(B, L, n_labels)``: every position against every label (the label prefix's
            rows are meaningless and carry ``ignore_index`` labels).
        words: ``H_t`` of every position ``(B, L, D)`` (eq. 4).
        labels: ``H_k`` of every label ``(B, n_labels, D)`` in label order (eq. 5).
    """

    states: torch.Tensor
    intent_logits: torch.Tensor
    slot_logits: torch.Tensor
    words: torch.Tensor
    labels: torch.Tensor


class LAJoint(nn.Module):
    """The label-aware joint model (§3.1): label embeddings, encoder, compressor, projector, heads.

    Args:
        encoder: A ``transformers`` encoder that accepts ``inputs_embeds`` (BERT, XLM-R).
        dim: Its hidden size ``d``.
        config: The hyper-parameters.
        label_init: The initial label embeddings ``(K + 3, d)`` (:func:`initial_label_embeddings`);
            ``None``: small random ones (tests, or a model whose weights are loaded next).
    """

    def __init__(
        self, encoder: nn.Module, dim: int, config: LajointConfig, label_init: torch.Tensor | None = None
    ) -> None:
        super().__init__()
        self.config = config
        self.encoder = encoder
        n = n_label_positions(config.n_slots)
        if label_init is None:
            label_init = torch.randn(n, dim) * 0.02
        if tuple(label_init.shape) != (n, dim):
            raise ValueError(
                f"label_init must be ({n}, {dim}) for {config.n_slots} slots, got {tuple(label_init.shape)}"
            )
        self.label_embeddings = nn.Parameter(label_init.detach().clone().float())
        self.dropout = nn.Dropout(config.dropout)
        # eq. 2-3: W_cb, W_ci in R^{2d x d} with their biases
        self.compress_b = nn.Linear(2 * dim, dim) if config.compressor else None
        self.compress_i = nn.Linear(2 * dim, dim) if config.compressor else None
        self.project = (
            nn.Linear(dim, dim) if config.projector else nn.Identity()
        )  # eq. 4-5: one W_p for words and labels
        self.intent_head = nn.Linear(dim, config.n_intents)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``E = M(X)`` ``(B, L, D)``: the word embeddings of ``input_ids`` with the label positions' replaced.

        Position and token-type embeddings are the encoder's own (added after ``inputs_embeds``;
        sequences are right-padded, so XLM-R's positions from ``inputs_embeds`` equal those it
        derives from ids).
        """
        n = self.label_embeddings.shape[0]
        if input_ids.shape[1] < n + 2:
            raise ValueError(f"input_ids of length {input_ids.shape[1]} cannot hold [CLS], {n} labels and [SEP]")
        words = self.encoder.get_input_embeddings()(input_ids)
        labels = self.label_embeddings.to(words.dtype).unsqueeze(0).expand(words.shape[0], -1, -1)
        embeds = torch.cat([words[:, :1], labels, words[:, 1 + n :]], dim=1)
        return self.encoder(inputs_embeds=embeds, attention_mask=attention_mask).last_hidden_state

    def label_states(self, states: torch.Tensor) -> torch.Tensor:
        """``[E_O, E_1^B, E_1^I, ..., E_K^B, E_K^I]`` ``(B, 2K + 1, D)`` from the label positions (eq. 2–3)."""
        k = self.config.n_slots
        e_o, e_b, e_i = states[:, 1:2], states[:, 2:3], states[:, 3:4]
        e_k = states[:, 4 : 4 + k]
        if self.compress_b is not None and self.compress_i is not None:
            b = self.compress_b(torch.cat([e_b.expand_as(e_k), e_k], dim=-1))  # eq. 2: (E_B || E_k) W_cb + b_cb
            i = self.compress_i(torch.cat([e_i.expand_as(e_k), e_k], dim=-1))  # eq. 3
        else:
            b, i = (e_b + e_k) / 2, (e_i + e_k) / 2
        bio = torch.stack([b, i], dim=2).flatten(1, 2)  # B-s_1, I-s_1, B-s_2, ...: the label vocabulary's order
        return torch.cat([e_o, bio], dim=1)

    def outputs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> LajointOutputs:
        """Everything of one forward pass (:class:`LajointOutputs`)."""
        states = self.dropout(self.encode(input_ids, attention_mask))
        words = self.project(states)  # eq. 4
        labels = self.project(self.label_states(states))  # eq. 5
        # p_t^S = softmax(H_t {||H_k||_2}^T): the label vectors are L2-normalised, the word's are not,
        # so a word's norm acts as the inverse temperature the model learns
        slot_logits = words @ F.normalize(labels, dim=-1).transpose(1, 2)
        return LajointOutputs(states, self.intent_head(states[:, 0]), slot_logits, words, labels)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(intent_logits (B, n_intents), slot_logits (B, L, n_labels))``,
        as :class:`~language_agnostic.methods.slu.JointSlu`.
        """
        out = self.outputs(input_ids, attention_mask)
        return out.intent_logits, out.slot_logits

    # --- what the training loop reads (training.loop.FineTunesEncoder) ---
    def encoder_parameters(self) -> Iterator[nn.Parameter]:
        """The encoder and the label embeddings (input embeddings like the word embeddings) train at
        ``encoder_lr``; the compressor, projector and heads at ``lr``."""
        yield from self.encoder.parameters()
        yield self.label_embeddings


def joint_losses(
    outputs: LajointOutputs, intents: torch.Tensor, slot_labels: torch.Tensor, ignore_index: int
) -> dict[str, torch.Tensor]:
    """``L_I`` and ``L_S`` of eq. 6 (unweighted; the caller sums them), as the
    :mod:`~language_agnostic.methods.slu` baselines compute them (:func:`intent_slot_losses`): ``L_S``
    is the mean over the labelled positions (the paper sums over a sentence's words; the mean keeps
    the baselines' scale, so their learning rates carry over).
    """
    return intent_slot_losses(outputs.intent_logits, outputs.slot_logits, intents, slot_labels, ignore_index)


def lajoint_losses(
    model: LAJoint, batch: Batch, weights: LossWeights | None = None, options: Options | None = None
) -> Losses:
    """``L_J = w_I L_I + w_S L_S`` (eq. 6; weights 1 by default) on a batch with the label prefix, as the joint
    baseline computes it (:func:`~language_agnostic.methods.slu.weighted_joint_losses`: ``forward`` gives the
    intent and slot logits of :meth:`LAJoint.outputs`).
    """
    del options
    return weighted_joint_losses(model, batch, weights, "LAJoint")


@torch.no_grad()
def initial_label_embeddings(
    encoder: nn.Module, tokenizer: Any, texts: Sequence[str], layers: int = INIT_LAYERS
) -> torch.Tensor:
    """Label embeddings from the labels' texts (§3.1, "Embeddings for Slot Labels").

    Each text is encoded as it is (with the tokenizer's special tokens, no e5 prefix); a token's
    embedding is the mean of its hidden states over the bottom ``layers`` transformer layers
    (``hidden_states[1 .. layers]``: the layers' outputs, not the embedding layer's), and a
    label's is the mean over its own tokens (special tokens left out), scaled to unit L2 norm
    ("the normalized mean-pooling").

    Args:
        encoder: The ``transformers`` encoder (left in the mode it was in).
        tokenizer: Its tokenizer.
        texts: One text per label position (:meth:`LajointConfig.label_texts`).
        layers: How many of the bottom layers to average.

    Returns:
        ``(len(texts), D)`` float32 on the CPU.

    Raises:
        ValueError: ``layers`` outside ``1 .. the encoder's layers``, or a text without tokens.
    """
    n_layers = int(encoder.config.num_hidden_layers)
    if not 1 <= layers <= n_layers:
        raise ValueError(f"layers must be in 1..{n_layers} (the encoder's layers), got {layers}")
    was_training = encoder.training
    encoder.eval()
    device = next(encoder.parameters()).device
    out = []
    try:
        for text in texts:
            enc = tokenizer(str(text), return_tensors="pt", return_special_tokens_mask=True)
            own = enc.pop("special_tokens_mask")[0] == 0
            if not bool(own.any()):
                raise ValueError(f"label text {text!r} has no tokens")
            hidden = encoder(**{k: v.to(device) for k, v in enc.items()}, output_hidden_states=True).hidden_states
            token = torch.stack(hidden[1 : layers + 1]).mean(0)[0]  # (L, D): mean over the bottom layers
            out.append(F.normalize(token[own.to(device)].float().mean(0), dim=0).cpu())
    finally:
        encoder.train(was_training)
    return torch.stack(out)


def build_lajoint(encoder: nn.Module, tokenizer: Any, config: LajointConfig, layers: int = INIT_LAYERS) -> LAJoint:
    """A LAJoint over ``encoder`` (used as given, not copied) with its label embeddings initialised from the texts."""
    init = initial_label_embeddings(encoder, tokenizer, config.label_texts(), layers)
    return LAJoint(encoder, int(encoder.config.hidden_size), config, init)
