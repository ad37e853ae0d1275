"""MCL: LAJ-MCL's multi-level contrastive learning (Liang et al. 2022, §3.2, Appendix B) on top of LAJoint.

Pure loss functions, one per level, on tensors (each names its equation):

- :func:`utterance_loss`: eq. 7–8, a triplet loss on ``[CLS]`` through ``g_u``, L2 distance,
  the switched version the positive, every other source and switched utterance of the batch
  a negative;
- :func:`slot_affinity`, :func:`slot_guided_similarity`, :func:`slot_loss`: eq. 9–11, values
  compared by the KL divergence of their affinity distributions over the slot set;
- :func:`word_negative_probabilities`, :func:`sample_word_negatives`, :func:`word_loss`:
  eq. 12–13, slot words against their label, negatives drawn by ``q_r = sin(1/|r − t|)``;

and :func:`lajmcl_losses`, ``L = L_J + λ1 L_u + λ2 L_s + λ3 L_w`` (eq. 14) on a batch of
:class:`~language_agnostic.training.lajmcl_data.LajBatches`.

Readings of the paper where it leaves a choice (each is the one place it is decided):

- every triplet loss is averaged over its (anchor, negative) pairs;
- eq. 13 names ``f_w`` "cosine similarity" inside ``max(0, f(pos) − f(neg) + r)``, the form of a
  *distance* (eq. 8 and 11 use an L2 distance and a divergence): taken literally it would push
  a word away from its own label. ``f_w`` here is the cosine distance ``1 − cos``, i.e.
  ``max(0, cos(z_k, z̄) − cos(z_k, z_t) + r_w)``;
- eq. 10's ``KL(aff(z), aff(ẑ))`` is ``KL(P ‖ Q)`` with ``P = softmax(aff(z))`` (the source
  value's) and ``Q = softmax(aff(ẑ))``; all three values of a triple are set against the same
  slot representations ``Z_K^s``, the source utterance's (:func:`lajmcl_losses`), so that
  their distributions live on one basis.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from language_agnostic.encoders.loading import LoadedEncoder, encoder_from_config
from language_agnostic.methods.lajoint import LAJoint, LajointConfig, joint_losses
from language_agnostic.methods.losses import Batch, Losses, LossWeights, Options, check_loss_weights
from language_agnostic.methods.trained import load_over_base

WEIGHTS = ("intent", "slot", "utterance", "slot_value", "word")  # w_I, w_S, λ1, λ2, λ3
MARGINS = ("utterance", "slot_value", "word")  # r_u, r_s, r_w
# Appendix C searches λ in {0.3, 0.5, 0.7, 1.0} and r in {0.1, 0.3, 0.5, 0.7} without saying what it chose;
# both default to 0.5, a value of both grids
DEFAULT_LAMBDA = 0.5
DEFAULT_MARGIN = 0.5


class ProjectionHead(nn.Module):
    """``g(x) = σ(x W_1) W_2`` with ReLU (eq. 7 and 9; no biases, as written)."""

    def __init__(self, dim: int, hidden: int | None = None, out: int | None = None) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden or dim, bias=False)
        self.w2 = nn.Linear(hidden or dim, out or dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(torch.relu(self.w1(x)))


def l2_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Euclidean distance over the last axis (``f_u`` of eq. 8); a floor under the square root keeps
    the gradient finite where two vectors coincide."""
    return (a - b).pow(2).sum(-1).clamp_min(1e-12).sqrt()


def utterance_loss(z: torch.Tensor, z_pos: torch.Tensor, margin: float) -> torch.Tensor:
    """Utterance-level CL (eq. 8): ``mean max(0, f_u(z_i, ẑ_i) − f_u(z_i, z̄) + r_u)``.

    For source utterance ``i`` the positive is its switched version ``ẑ_i``; the negatives
    ``z̄`` are the ``2N − 2`` other utterances of the batch, source and switched. The mean runs
    over all ``N (2N − 2)`` (anchor, negative) pairs.

    Args:
        z: ``g_u`` of the source utterances' ``[CLS]`` ``(N, d)`` (eq. 7).
        z_pos: ``g_u`` of their switched versions, row for row ``(N, d)``.
        margin: ``r_u``.

    Returns:
        A scalar; 0 (in the graph) for a batch of one utterance, which has no negative.
    """
    n = z.shape[0]
    if n < 2:
        return (z.sum() + z_pos.sum()) * 0.0
    pos = l2_distance(z, z_pos)  # (N,)
    every = torch.cat([z, z_pos])  # (2N, d): candidates
    dist = l2_distance(z.unsqueeze(1), every.unsqueeze(0))  # (N, 2N)
    idx = torch.arange(n, device=z.device)
    negative = torch.ones(n, 2 * n, dtype=torch.bool, device=z.device)
    negative[idx, idx] = False  # itself
    negative[idx, idx + n] = False  # its positive
    hinge = torch.relu(pos.unsqueeze(1) - dist + margin)
    return hinge[negative].mean()


AFFINITIES = ("dot", "cosine")


def slot_affinity(z: torch.Tensor, slots: torch.Tensor, temperature: float = 1.0, kind: str = "dot") -> torch.Tensor:
    """``aff(z) = z (Z_K^s)ᵀ / τ_s`` (eq. 10's affinity; the paper's: ``dot`` with ``τ_s = 1``): ``z`` ``(..., d)``
    against ``slots`` ``(..., K, d)`` or ``(K, d)`` → ``(..., K)``, in fp32.

    ``cosine`` L2-normalises ``z`` and every slot first, in fp32, so the affinities lie in
    ``[−1/τ_s, 1/τ_s]`` (the form of the contrastive family's NT-Xent): with ``dot`` the norms of
    ``g_s``'s outputs are free, and training grows them until the softmaxes are one-hot: on the
    same slot, both KLs of eq. 11 are 0 and the term sits at its margin with no gradient; on
    different slots, a gradient spike that global clipping turns into a slot-level-only step
    (``docs/slu.md``). ``dot`` is computed in its inputs' precision (bf16 under autocast), as
    the rows in the docs were.
    """
    if kind not in AFFINITIES:
        raise ValueError(f"slot affinity must be one of {list(AFFINITIES)}, got {kind!r}")
    if kind == "cosine":
        z, slots = F.normalize(z.float(), dim=-1), F.normalize(slots.float(), dim=-1)
    return (z.unsqueeze(-2) * slots).sum(-1).float() / temperature


def slot_guided_similarity(
    z: torch.Tensor, z_other: torch.Tensor, slots: torch.Tensor, temperature: float = 1.0, kind: str = "dot"
) -> torch.Tensor:
    """Slot-guided value similarity (eq. 10): ``KL(softmax(aff(z)) ‖ softmax(aff(z')))`` over the slot set.

    Args:
        z: Values ``(..., d)`` (the reference distribution ``P``).
        z_other: Values ``(..., d)`` (``Q``).
        slots: ``Z_K^s`` ``(..., K, d)`` or ``(K, d)``, broadcast against the values.
        temperature: ``τ_s`` of :func:`slot_affinity`.
        kind: ``dot`` (eq. 10) or ``cosine`` (:func:`slot_affinity`).

    Returns:
        ``(...)``: ``Σ_k P_k (log P_k − log Q_k)``, 0 for values with the same distribution.
    """
    log_p = torch.log_softmax(slot_affinity(z, slots, temperature, kind), dim=-1)
    log_q = torch.log_softmax(slot_affinity(z_other, slots, temperature, kind), dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(-1)


def slot_loss(
    z: torch.Tensor,
    z_pos: torch.Tensor,
    z_neg: torch.Tensor,
    slots: torch.Tensor,
    margin: float,
    valid: torch.Tensor | None = None,
    temperature: float = 1.0,
    kind: str = "dot",
) -> torch.Tensor:
    """Slot-level CL (eq. 11): ``mean max(0, f_s(z, ẑ) − f_s(z, z̄) + r_s)``, ``f_s`` the KL of eq. 10.

    Args:
        z: ``g_s`` of the source values ``(G, d)`` (eq. 9).
        z_pos: ``g_s`` of their switched versions ``(G, d)``.
        z_neg: ``g_s`` of their negatives ``(N_s, G, d)`` (Algorithm 1).
        slots: ``Z_K^s`` ``(G, K, d)`` (each value's slot representations) or ``(K, d)``.
        margin: ``r_s``.
        valid: ``(N_s, G)`` bool: the triples that exist (a value truncated away, or one without a
            negative, is left out); ``None``: all.
        temperature: ``τ_s`` of :func:`slot_affinity`.
        kind: ``dot`` (eq. 10) or ``cosine`` (:func:`slot_affinity`).

    Returns:
        The mean over the valid (value, negative) pairs; 0 (in the graph) when there is none.
    """
    pos = slot_guided_similarity(z, z_pos, slots, temperature, kind)  # (G,)
    neg = slot_guided_similarity(z.unsqueeze(0), z_neg, slots, temperature, kind)  # (N_s, G)
    hinge = torch.relu(pos.unsqueeze(0) - neg + margin)
    if valid is not None:
        hinge = hinge[valid]
    if hinge.numel() == 0:
        return (z.sum() + z_pos.sum() + z_neg.sum()) * 0.0
    return hinge.mean()


def word_negative_probabilities(labels: torch.Tensor | np.ndarray, t: int) -> np.ndarray:
    """Eq. 12: the probability of drawing word ``r`` as the negative of word ``t``.

    ``p_r = q_r / Σ_r' q_r'`` with ``q_r = sin(1 / |r − t|)`` over the words whose label differs
    from ``t``'s (the words of ``t``'s own label, ``t`` included, are masked: ``p_r = 0``).

    Args:
        labels: One label id per word, in word order ``(T,)``.
        t: The anchor word.

    Returns:
        ``(T,)`` float64, summing to 1; all zeros when every word has ``t``'s label.
    """
    labels = np.asarray(labels)
    r = np.arange(len(labels))
    q = np.zeros(len(labels))
    other = labels != labels[t]
    q[other] = np.sin(1.0 / np.abs(r[other] - t))
    total = q.sum()
    return q / total if total > 0 else q


def sample_word_negatives(
    slot_labels: torch.Tensor, n_negatives: int, rng: np.random.Generator, outside_id: int, ignore_index: int = -100
) -> torch.Tensor:
    """Word-level CL's negatives (§3.2, eq. 12) for every slot word of every row.

    A row's words are its labelled positions (first sub-tokens), in order; distances ``|r − t|``
    count words, not sub-tokens. Every word whose label is not ``O`` is an anchor ("each slot
    word as a positive example of its slot label") and gets ``min(N_w, candidates)`` distinct
    negatives drawn by :func:`word_negative_probabilities` (``O`` words are candidates: type 2).

    Args:
        slot_labels: ``(R, L)`` label ids, ``ignore_index`` off the words.
        n_negatives: ``N_w``.
        rng: The generator drawn from.
        outside_id: The id of ``O``.
        ignore_index: The id of positions without a label.

    Returns:
        ``(P, 3)`` long: ``(row, anchor position, negative position)``, one row per pair.
    """
    pairs: list[tuple[int, int, int]] = []
    labels_np = slot_labels.cpu().numpy()
    for row, labels in enumerate(labels_np):
        positions = np.flatnonzero(labels != ignore_index)
        words = labels[positions]
        for t in np.flatnonzero(words != outside_id):
            p = word_negative_probabilities(words, int(t))
            k = min(n_negatives, int((p > 0).sum()))
            if k == 0:
                continue
            for r in rng.choice(len(words), size=k, replace=False, p=p):
                pairs.append((row, int(positions[t]), int(positions[r])))
    return torch.tensor(pairs, dtype=torch.long).reshape(-1, 3)


def word_loss(z_label: torch.Tensor, z_word: torch.Tensor, z_neg: torch.Tensor, margin: float) -> torch.Tensor:
    """Word-level CL (eq. 13) with ``f_w`` the cosine distance: ``mean max(0, cos(z_k, z̄) − cos(z_k, z_t) + r_w)``.

    Args:
        z_label: ``g_w(H_k)`` of each pair's label ``(P, d)``.
        z_word: ``g_w(H_t)`` of its word ``(P, d)``.
        z_neg: ``g_w(H̄)`` of its negative word ``(P, d)``.
        margin: ``r_w``.

    Returns:
        The mean over the pairs; 0 (in the graph) when there is none.
    """
    if z_label.shape[0] == 0:
        return (z_label.sum() + z_word.sum() + z_neg.sum()) * 0.0
    pos = F.cosine_similarity(z_label, z_word, dim=-1)
    neg = F.cosine_similarity(z_label, z_neg, dim=-1)
    return torch.relu(neg - pos + margin).mean()


def pool_values(states: torch.Tensor, value_ids: torch.Tensor, n_values: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean of the states of each value's sub-tokens (§3.2, "mean-pooling to the encoder outputs of the slot value").

    Args:
        states: ``(R, L, D)``.
        value_ids: ``(R, L)``: the value index of each position, ``-1`` outside values.
        n_values: ``G``.

    Returns:
        ``(pooled (G, D), counts (G,))``; a value without a sub-token pools to 0 with count 0.
    """
    d = states.shape[-1]
    flat_ids = value_ids.reshape(-1)
    keep = flat_ids >= 0
    sums = states.new_zeros(n_values, d).index_add(0, flat_ids[keep], states.reshape(-1, d)[keep])
    counts = torch.zeros(n_values, device=states.device, dtype=states.dtype).index_add(
        0, flat_ids[keep], torch.ones(int(keep.sum()), device=states.device, dtype=states.dtype)
    )
    return sums / counts.clamp_min(1).unsqueeze(-1), counts


@dataclass(frozen=True)
class MclConfig:
    """MCL's hyper-parameters (Appendix C searches the margins in {0.1, 0.3, 0.5, 0.7} and gives no
    chosen value: :data:`DEFAULT_MARGIN`).

    Attributes:
        margins: ``r_u``, ``r_s``, ``r_w`` (keys ``utterance``, ``slot_value``, ``word``).
        head_dim: Hidden and output width of ``g_u``, ``g_s``, ``g_w``; ``None``: the encoder's.
        slot_temperature: ``τ_s`` dividing eq. 10's affinities (:func:`slot_affinity`); 1 is the
            paper as printed.
        slot_affinity: ``dot`` (eq. 10 as printed) or ``cosine`` (:func:`slot_affinity`). A
            divergence has no gradient where its two distributions agree, and with ``dot`` they
            come to agree two ways: nearly uniform at the start (this encoder's values differ
            little across the slots), one-hot on the same slot once ``g_s``'s output norms have
            grown (``experiments/lajmcl_slot_level.py``, ``docs/slu.md``).
    """

    margins: Mapping[str, float] | None = None
    head_dim: int | None = None
    slot_temperature: float = 1.0
    slot_affinity: str = "dot"

    def __post_init__(self) -> None:
        margins = {**dict.fromkeys(MARGINS, DEFAULT_MARGIN), **dict(self.margins or {})}
        for k, v in margins.items():
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"margins.{k} must be a number >= 0, got {v!r}")
        object.__setattr__(self, "margins", {k: float(v) for k, v in margins.items()})
        if self.head_dim is not None and self.head_dim < 1:
            raise ValueError(f"head_dim must be >= 1 or null, got {self.head_dim}")
        t = self.slot_temperature
        if not math.isfinite(t) or t <= 0:
            raise ValueError(f"slot_temperature must be a number > 0, got {t!r}")
        object.__setattr__(self, "slot_temperature", float(t))
        if self.slot_affinity not in AFFINITIES:
            raise ValueError(f"slot_affinity must be one of {list(AFFINITIES)}, got {self.slot_affinity!r}")


class LajMcl(LAJoint):
    """LAJoint with MCL's projection heads ``g_u``, ``g_s``, ``g_w`` (eq. 7, 9 and §3.2's word level).

    Predicts exactly as :class:`~language_agnostic.methods.lajoint.LAJoint`; the heads serve
    training only.
    """

    def __init__(
        self,
        encoder: nn.Module,
        dim: int,
        config: LajointConfig,
        mcl: MclConfig | None = None,
        label_init: torch.Tensor | None = None,
    ) -> None:
        super().__init__(encoder, dim, config, label_init)
        self.mcl = mcl or MclConfig()
        h = self.mcl.head_dim
        self.g_u, self.g_s, self.g_w = ProjectionHead(dim, h, h), ProjectionHead(dim, h, h), ProjectionHead(dim, h, h)


def _weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    check_loss_weights(weights, WEIGHTS, "LAJ-MCL")
    w = {"intent": 1.0, "slot": 1.0, "utterance": DEFAULT_LAMBDA, "slot_value": DEFAULT_LAMBDA, "word": DEFAULT_LAMBDA}
    for k, v in dict(weights or {}).items():
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"loss_weights.{k} must be a number >= 0, got {v!r}")
        w[k] = float(v)
    return w


def lajmcl_losses(
    model: LajMcl, batch: Batch, weights: LossWeights | None = None, options: Options | None = None
) -> Losses:
    """``L = L_J + λ1 L_u + λ2 L_s + λ3 L_w`` (eq. 14) on one batch of ``LajBatches``.

    ``L_J`` (eq. 6) is on every row, source and switched. A level whose weight is 0 is not
    computed (the "+ucl", "+scl", "+wcl" ablations) and is reported as 0; a level whose extras
    the batch lacks (no ``value_ids``, ``neg_input_ids`` or ``word_pairs``) needs weight 0.

    Args:
        model: The model.
        batch: ``input_ids``, ``attention_mask``, ``intents``, ``slot_labels`` ``(2N, ...)``, the
            first ``N`` rows the source utterances and the next ``N`` their switched versions,
            and MCL's extras (``training.lajmcl_data``).
        weights: ``intent``, ``slot`` (1), ``utterance`` (λ1), ``slot_value`` (λ2), ``word`` (λ3)
            (:data:`DEFAULT_LAMBDA` each when not given).
        options: Unused.

    Raises:
        ValueError: an unknown or negative weight; a level weighted but its extras missing;
            an odd number of rows with utterance- or slot-level CL on.
    """
    del options
    w = _weights(weights)
    out = model.outputs(batch["input_ids"], batch["attention_mask"])
    parts = joint_losses(out, batch["intents"], batch["slot_labels"], model.config.ignore_index)
    zero = out.intent_logits.sum() * 0.0
    rows = out.states.shape[0]
    n = rows // 2
    if (w["utterance"] > 0 or w["slot_value"] > 0) and rows % 2:
        raise ValueError(f"utterance- and slot-level CL need source and switched rows in pairs, got {rows} rows")
    parts["utterance"] = zero
    if w["utterance"] > 0:  # eq. 7-8 on [CLS]
        z = model.g_u(out.states[:, 0])
        parts["utterance"] = utterance_loss(z[:n], z[n:], model.mcl.margins["utterance"])
    parts["slot_value"] = zero
    if w["slot_value"] > 0:
        parts["slot_value"] = _slot_level(model, out.states, batch, n)
    parts["word"] = zero
    if w["word"] > 0:
        if "word_pairs" not in batch:
            raise ValueError("loss_weights.word > 0 needs word_pairs in the batch (LajBatches word_negatives > 0)")
        pairs = batch["word_pairs"]
        label_ids = batch["slot_labels"][pairs[:, 0], pairs[:, 1]]
        h_k = out.labels[pairs[:, 0], label_ids]  # H_k of the anchor's label, from its own utterance
        parts["word"] = word_loss(
            model.g_w(h_k),
            model.g_w(out.words[pairs[:, 0], pairs[:, 1]]),
            model.g_w(out.words[pairs[:, 0], pairs[:, 2]]),
            model.mcl.margins["word"],
        )
    parts["total"] = (
        w["intent"] * parts["intent"]
        + w["slot"] * parts["slot"]
        + w["utterance"] * parts["utterance"]
        + w["slot_value"] * parts["slot_value"]
        + w["word"] * parts["word"]
    )
    return parts


def _slot_level(model: LajMcl, states: torch.Tensor, batch: Mapping[str, torch.Tensor], n: int) -> torch.Tensor:
    """Eq. 9–11 on a batch: values pooled from the source, switched and negative utterances."""
    missing = [
        k
        for k in ("value_ids", "value_slots", "value_rows", "neg_input_ids", "neg_attention_mask", "neg_value_ids")
        if k not in batch
    ]
    if missing:
        raise ValueError(f"loss_weights.slot_value > 0 needs {missing} in the batch (LajBatches with slot_negatives)")
    g = int(batch["value_slots"].shape[0])
    if g == 0:
        return states.sum() * 0.0
    k = model.config.n_slots
    pooled, counts = pool_values(states[:n], batch["value_ids"][:n], g)
    pooled_pos, counts_pos = pool_values(states[n:], batch["value_ids"][n:], g)
    neg_states = model.dropout(
        model.encode(batch["neg_input_ids"], batch["neg_attention_mask"])
    )  # E only: no heads needed
    n_s = neg_states.shape[0] // n
    neg = [
        pool_values(neg_states[m * n : (m + 1) * n], batch["neg_value_ids"][m * n : (m + 1) * n], g) for m in range(n_s)
    ]
    pooled_neg = torch.stack([p for p, _ in neg])  # (N_s, G, D)
    valid = torch.stack([c > 0 for _, c in neg]) & (counts > 0) & (counts_pos > 0)
    slots = model.g_s(states[batch["value_rows"], 4 : 4 + k])  # Z_K^s = g_s(E^K) of each value's source utterance
    return slot_loss(
        model.g_s(pooled),
        model.g_s(pooled_pos),
        model.g_s(pooled_neg),
        slots,
        model.mcl.margins["slot_value"],
        valid,
        model.mcl.slot_temperature,
        model.mcl.slot_affinity,
    )


# the options of a saved LAJoint / LAJ-MCL model (``methods.registry``'s ``lajoint``): LajointConfig's fields
# and ``mcl``, MclConfig's as a dict (``training.lajmcl.lajmcl_artifact`` writes them)
LAJMCL_OPTIONS = (*(f.name for f in fields(LajointConfig)), "mcl")


def _configs(options: Mapping[str, Any]) -> tuple[LajointConfig, MclConfig]:
    """LAJoint's and MCL's configs from a build spec's options (``encoder_config`` stays in LAJoint's)."""
    options = dict(options)
    mcl = MclConfig(**dict(options.pop("mcl", None) or {}))
    return LajointConfig(**options), mcl  # its __post_init__ makes the saved lists tuples


def build_lajmcl(dim: int, n_languages: int, options: Mapping[str, Any]) -> LajMcl:
    """A LAJoint / LAJ-MCL model from its build spec (``methods.registry``), untrained.

    The encoder is built from ``encoder_config`` (the artifact's state dict holds every weight it
    needs); without it a one-layer BERT of width ``dim`` with 2 intents and one slot unless given
    (the protocol's tests). The label embeddings start random: training initialises them from
    the encoder (:func:`~language_agnostic.methods.lajoint.build_lajoint`), loading from the
    artifact. ``n_languages`` is unused.
    """
    del n_languages
    config, mcl = _configs({"n_intents": 2, "slots": ("slot",), **dict(options)})
    encoder, width = encoder_from_config(config.encoder_config, dim)
    return LajMcl(encoder, width, config, mcl)


def encode_lajmcl(model: LAJoint, inputs: tuple[torch.Tensor, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``{"utterance": the [CLS] state}`` of ``(input_ids, attention_mask)`` whose ids carry the label
    prefix (:func:`~language_agnostic.methods.lajoint.prepend_labels`): what the intent head reads."""
    return {"utterance": model.encode(*inputs)[:, 0]}


def rebuild_lajmcl(encoder: LoadedEncoder, artifact: Mapping[str, Any]) -> LajMcl:
    """The fine-tuned model: a copy of the base encoder with the artifact's tensors loaded over it, in eval mode.

    Raises:
        ValueError: the artifact's tensors do not fit this encoder, or it holds none.
    """
    options = {k: v for k, v in dict(artifact["build"]["options"]).items() if k != "encoder_config"}
    config, mcl = _configs(options)
    model = LajMcl(copy.deepcopy(encoder.model), int(encoder.hidden_size), config, mcl)
    return load_over_base(model, artifact, "LAJ-MCL")
