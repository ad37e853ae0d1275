"""FMDA (Wu et al., MMNLU-22, §3): template, residual-semantic and language embeddings over token states.

Inputs are a frozen encoder's token states ``emb_utt`` (``L × D``, with a padding mask) and
their first-token state ``emb_cls``. The model (§3.1, Figure 2):

- ``emb_lang = MLP_lang(emb_cls)``;
- four FFNs on the token states: template value / query / key and residual value;
- template attention ``AttnProb = softmax(Q·Kᵀ · scale)`` over the (unpadded) tokens;
  ``emb_tp`` = the first position of ``AttnProb · V_tp``;
- residual attention ``softmax(1 − AttnProb)``; ``emb_rs`` = the first position of its
  product with ``V_rs``;
- meaning ``emb_m = MLP_m(emb_tp + emb_rs)``.

Only the first position of each attention output is ever used, so only the first query row
is computed: the same numbers as the full ``L × L`` product at ``1/L`` of the cost. With
one-layer (affine) FFNs the keys and values are never materialised per token either (see
:meth:`Fmda.forward`); :meth:`Fmda.tokenwise` is the literal form both are tested against.

Losses (§3.2-3.5), each with a weight (``LOSS_WEIGHTS``):

- ``lang``: cross-entropy of ``MLP_id(emb_lang)`` for both utterances of the pair;
- ``utt_rec``: ``MSE(MLP_rec(emb_lang + emb_tp + emb_rs), emb_utt)`` for both;
- ``tp_rec`` / ``rs_rec``: ``MSE(emb_tp + emb_lang, target)`` against the first-token state of
  the template-masked (residual-masked) text of the same utterance (eq. 1), both utterances;
- ``tp_rec_cl`` / ``rs_rec_cl``: the same with the *other* utterance's ``emb_lang`` and
  target (eq. 2), both directions;
- ``tp_con`` / ``m_con``: ``−cos(x¹, x²) + n(cos(x¹, neg¹)) + n(cos(x², neg²))`` (eq. 3-4), with the
  negative term ``n`` hinged, ``max(0, cos − margin)``, as the method family's released code
  writes it, or linear as printed (:class:`ContrastiveSettings`); or, beyond the paper, in-batch
  InfoNCE between ``x¹`` and ``x²`` (``contrastive="infonce"``, the ``fmda-infonce`` rows).

Eq. 5 sums them all with weight 1; its repeated ``rs…-CL`` line is a typo and is counted once.
Choices the paper leaves open are constructor arguments; ``docs/fmda.md`` argues the defaults.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from language_agnostic.encoders.extraction import EmbeddingSet
from language_agnostic.encoders.pooling import pool
from language_agnostic.methods.contrastive import ContrastiveSettings, info_nce, pairwise_contrastive
from language_agnostic.methods.fmda_meaning import ACTIVATIONS, stack, template_attention  # shared with the export
from language_agnostic.methods.losses import with_default_weights

LOSS_WEIGHTS = {
    "lang": 1.0,
    "utt_rec": 1.0,
    "tp_rec": 1.0,
    "tp_rec_cl": 1.0,
    "rs_rec": 1.0,
    "rs_rec_cl": 1.0,
    "tp_con": 1.0,
    "m_con": 1.0,
}
# Table 4's ablations as weight overrides
ABLATIONS: dict[str, dict[str, float]] = {
    "full": {},
    "no_reconstruction": {k: 0.0 for k in ("utt_rec", "tp_rec", "tp_rec_cl", "rs_rec", "rs_rec_cl")},
    "no_utterance_reconstruction": {"utt_rec": 0.0},
    "no_template_reconstruction": {"tp_rec": 0.0, "tp_rec_cl": 0.0},
    "no_residual_reconstruction": {"rs_rec": 0.0, "rs_rec_cl": 0.0},
    "no_contrastive": {"tp_con": 0.0, "m_con": 0.0},
}
# the template encoder (frozen in the second stage of the two-stage training, §4.6)
TEMPLATE_MODULES = ("query_tp", "key_tp", "value_tp")
# §4.6: stage 1 trains "the template reconstruction loss and the template contrastive loss"
# on monolingual template pairs; stage 2 uses "all other losses except template-related ones"
TEMPLATE_LOSSES = ("tp_rec", "tp_rec_cl", "tp_con")


def two_stage_weights(stage: int) -> dict[str, float]:
    """Loss weights of stage 1 (template losses only) or stage 2 (all but them) of §4.6."""
    if stage not in (1, 2):
        raise ValueError(f"stage must be 1 or 2, got {stage}")
    return {name: float((name in TEMPLATE_LOSSES) == (stage == 1)) for name in LOSS_WEIGHTS}


@dataclass(frozen=True)
class FmdaConfig:
    """The choices §3 leaves open.

    Attributes:
        dim: Encoder hidden size ``D``.
        n_languages: Languages for the identification head.
        ffn_layers: Linear layers in each of the four token FFNs (1 = one ``D × D`` layer).
        mlp_layers: Linear layers in ``MLP_lang``, ``MLP_m`` and ``MLP_rec``.
        activation: Between layers of a multi-layer FFN/MLP.
        attention_scale: ``"sqrt_d"`` multiplies ``Q·Kᵀ`` by ``1/√D`` (as in Transformers);
            ``"none"`` uses it as written in the paper.
        utterance_target: What ``emb_utt`` means in the utterance reconstruction: ``"cls"``
            (the first-token state), ``"mean"`` (mean of the token states) or ``"tokens"``
            (the reconstruction compared with every token state, mask-averaged).
        init: ``"pytorch"`` (``nn.Linear``'s default random initialisation) or ``"identity"``
            (every ``D × D`` layer starts as the identity with zero bias, so training starts from
            the encoder's own space, as the ``linear-infonce`` control does).
    """

    dim: int
    n_languages: int
    ffn_layers: int = 1
    mlp_layers: int = 1
    activation: str = "gelu"
    attention_scale: str = "sqrt_d"
    utterance_target: str = "cls"
    init: str = "pytorch"

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        if self.attention_scale not in ("sqrt_d", "none"):
            raise ValueError(f"attention_scale must be 'sqrt_d' or 'none', got {self.attention_scale!r}")
        if self.utterance_target not in ("cls", "mean", "tokens"):
            raise ValueError(f"utterance_target must be 'cls', 'mean' or 'tokens', got {self.utterance_target!r}")
        if self.init not in ("pytorch", "identity"):
            raise ValueError(f"init must be 'pytorch' or 'identity', got {self.init!r}")
        if self.ffn_layers < 1 or self.mlp_layers < 1:
            raise ValueError("ffn_layers and mlp_layers must be >= 1")


class Fmda(nn.Module):
    """The FMDA heads over frozen token states."""

    def __init__(self, config: FmdaConfig) -> None:
        super().__init__()
        self.config = config
        d = config.dim
        self.lang = stack(d, config.mlp_layers, config.activation)
        self.query_tp = stack(d, config.ffn_layers, config.activation)
        self.key_tp = stack(d, config.ffn_layers, config.activation)
        self.value_tp = stack(d, config.ffn_layers, config.activation)
        self.value_rs = stack(d, config.ffn_layers, config.activation)
        self.meaning = stack(d, config.mlp_layers, config.activation)
        self.reconstruct = stack(d, config.mlp_layers, config.activation)
        self.identify = nn.Linear(d, config.n_languages)
        if config.init == "identity":
            self._identity_init()
        # one-layer FFNs are affine: see forward (switch off only to measure the difference)
        self.affine_fast_path = config.ffn_layers == 1

    def _identity_init(self) -> None:
        """Every ``D × D`` layer of the FFNs and MLPs to the identity, biases to zero (``init: identity``)."""
        with torch.no_grad():
            for module in (
                self.lang,
                self.query_tp,
                self.key_tp,
                self.value_tp,
                self.value_rs,
                self.meaning,
                self.reconstruct,
            ):
                for layer in module:
                    if isinstance(layer, nn.Linear):
                        layer.weight.copy_(torch.eye(self.config.dim))
                        layer.bias.zero_()

    def forward(self, states: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Embeddings of a batch of utterances.

        Args:
            states: Token states ``(B, L, D)``; position 0 is the first token.
            mask: ``(B, L)``, true for real tokens.

        Returns:
            ``{"lang", "tp", "rs", "m", "attn_tp", "attn_rs"}``; embeddings are ``(B, D)``,
            attention rows of the first position ``(B, L)``.
        """
        tp, rs, attn_tp, attn_rs = template_attention(
            self.query_tp,
            self.key_tp,
            self.value_tp,
            self.value_rs,
            states,
            mask,
            sqrt_d=self.config.attention_scale == "sqrt_d",
            affine=self.affine_fast_path,
        )
        cls = states[:, 0]
        return {
            "lang": self.lang(cls),
            "tp": tp,
            "rs": rs,
            "m": self.meaning(tp + rs),
            "attn_tp": attn_tp,
            "attn_rs": attn_rs,
        }

    def tokenwise(self, states: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """:meth:`forward` as the paper writes it: every FFN on every token, full ``L × L`` attention.

        Slow; kept as the reference the fast path is tested against.
        """
        mask = mask.bool()
        scores = torch.einsum("bid,bjd->bij", self.query_tp(states), self.key_tp(states))
        if self.config.attention_scale == "sqrt_d":
            scores = scores / math.sqrt(self.config.dim)
        attn = torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
        residual = torch.softmax((1 - attn).masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
        tp = torch.einsum("bij,bjd->bid", attn, self.value_tp(states))[:, 0]
        rs = torch.einsum("bij,bjd->bid", residual, self.value_rs(states))[:, 0]
        return {
            "lang": self.lang(states[:, 0]),
            "tp": tp,
            "rs": rs,
            "m": self.meaning(tp + rs),
            "attn_tp": attn[:, 0],
            "attn_rs": residual[:, 0],
        }


def freeze_template_encoder(model: Fmda) -> None:
    """Stop gradients to the template query/key/value FFNs (second stage of §4.6)."""
    for name in TEMPLATE_MODULES:
        for parameter in getattr(model, name).parameters():
            parameter.requires_grad_(False)


def contrastive_loss(
    x1: torch.Tensor,
    x2: torch.Tensor,
    neg1: torch.Tensor | None,
    neg2: torch.Tensor | None,
    settings: ContrastiveSettings | None = None,
) -> torch.Tensor:
    """Eq. 3-4 (``tp_con``, ``m_con``) as ``settings`` reads it: pairwise with pool negatives, or in-batch InfoNCE.

    ``ContrastiveSettings(negative="linear")`` is the equation as printed:
    ``−cos(x1, x2) + cos(x1, neg1) + cos(x2, neg2)``.
    """
    settings = settings or ContrastiveSettings()
    if settings.contrastive == "infonce":
        return info_nce(x1, x2, settings.temperature)
    if neg1 is None or neg2 is None:
        raise ValueError("the pairwise contrastive loss needs the negatives neg1, neg2")
    return pairwise_contrastive(x1, x2, neg1, neg2, settings.negative, settings.margin)


def utterance_reconstruction_loss(
    model: Fmda, out: Mapping[str, torch.Tensor], states: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """``MSE(MLP_rec(emb_lang + emb_tp + emb_rs), emb_utt)`` with ``emb_utt`` per the config: every token
    state, or the states pooled (``cls`` or ``mean``, :func:`~language_agnostic.encoders.pooling.pool`)."""
    recon = model.reconstruct(out["lang"] + out["tp"] + out["rs"])
    if model.config.utterance_target == "tokens":
        m = mask.unsqueeze(-1).to(states.dtype)
        squared = ((recon.unsqueeze(1) - states) ** 2 * m).sum(dim=(1, 2)) / (m.sum(dim=(1, 2)) * states.shape[-1])
        return squared.mean()
    return F.mse_loss(recon, pool(states, mask, model.config.utterance_target))


def masked_text_reconstruction_loss(
    s: Mapping[str, torch.Tensor],
    t: Mapping[str, torch.Tensor],
    batch: Mapping[str, torch.Tensor],
    part: str,
    cross: bool,
) -> torch.Tensor:
    """``MSE(emb_part(x) + emb_lang(y), target_part(y))`` summed over the pair's two sides ``x``, where the
    language and the masked text's target are ``x``'s own (``tp_rec``, ``rs_rec``), or with ``cross`` the
    other side's (``tp_rec_cl``, ``rs_rec_cl``)."""
    sides = (("s", s), ("t", t))
    first, second = (
        F.mse_loss(x[part] + y["lang"], batch[f"{name}_{part}_target"])
        for (_, x), (name, y) in zip(sides, sides[::-1] if cross else sides)
    )
    return first + second


def fmda_losses(
    model: Fmda,
    batch: Mapping[str, torch.Tensor],
    weights: Mapping[str, float] | None = None,
    contrastive: ContrastiveSettings | None = None,
) -> dict[str, torch.Tensor]:
    """Every FMDA loss for one batch of quadruplets, and the weighted total (eq. 5).

    Args:
        model: The FMDA heads.
        batch: Token states and masks of the pair and the negatives (``s_states, s_mask,
            t_states, t_mask, s2_states, s2_mask, t2_states, t2_mask``), the first-token states
            of the masked texts of the pair (``s_tp_target, s_rs_target, t_tp_target,
            t_rs_target``) and language ids (``s_lang, t_lang``).
        weights: Overrides of ``LOSS_WEIGHTS``.
        contrastive: How ``tp_con`` and ``m_con`` are computed (default: hinged pairwise,
            margin 0). With InfoNCE the negatives ``s2``/``t2`` are not encoded at all.

    Returns:
        ``{loss name: value}`` for every name in ``LOSS_WEIGHTS`` whose weight is not 0, plus ``"total"``.
    """
    w = with_default_weights(weights, LOSS_WEIGHTS, "FMDA")
    contrastive = contrastive or ContrastiveSettings()
    # a term weighted 0 adds nothing to the total or its gradient and is not computed: stage 1 of
    # two-stage FMDA trains the template terms alone, stage 2 and the ablations leave others out
    wanted = {name for name, weight in w.items() if weight != 0}
    s = model(batch["s_states"], batch["s_mask"])
    t = model(batch["t_states"], batch["t_mask"])
    # in-batch InfoNCE needs no pool negatives: skip half of the forward work (and so does a run
    # without a contrastive term)
    pairwise = contrastive.contrastive == "pairwise" and bool(wanted & {"tp_con", "m_con"})
    s2 = model(batch["s2_states"], batch["s2_mask"]) if pairwise else {"tp": None, "m": None}
    t2 = model(batch["t2_states"], batch["t2_mask"]) if pairwise else {"tp": None, "m": None}  # batches may omit them
    terms = {
        "lang": lambda: (
            F.cross_entropy(model.identify(s["lang"]), batch["s_lang"])
            + F.cross_entropy(model.identify(t["lang"]), batch["t_lang"])
        ),
        "utt_rec": lambda: (
            utterance_reconstruction_loss(model, s, batch["s_states"], batch["s_mask"])
            + utterance_reconstruction_loss(model, t, batch["t_states"], batch["t_mask"])
        ),
        "tp_rec": lambda: masked_text_reconstruction_loss(s, t, batch, "tp", cross=False),
        "tp_rec_cl": lambda: masked_text_reconstruction_loss(s, t, batch, "tp", cross=True),
        "rs_rec": lambda: masked_text_reconstruction_loss(s, t, batch, "rs", cross=False),
        "rs_rec_cl": lambda: masked_text_reconstruction_loss(s, t, batch, "rs", cross=True),
        "tp_con": lambda: contrastive_loss(s["tp"], t["tp"], s2["tp"], t2["tp"], contrastive),
        "m_con": lambda: contrastive_loss(s["m"], t["m"], s2["m"], t2["m"], contrastive),
    }
    losses = {name: term() for name, term in terms.items() if name in wanted}
    if not losses:
        raise ValueError("every FMDA loss weight is 0: nothing to train")
    losses["total"] = sum(w[name] * value for name, value in losses.items())
    return losses


ALL_TOGETHER = "all_together"


def method_name(variant: str) -> str:
    """The metrics-table ``method`` of an FMDA variant: ``fmda`` for all-together training."""
    return "fmda" if variant == ALL_TOGETHER else f"fmda-{variant}"


def encode_with_fmda(model: torch.nn.Module, entry: EmbeddingSet, batch_size: int = 512) -> dict[str, np.ndarray]:
    """FMDA's ``lang``, ``tp``, ``rs`` and ``m`` embeddings of every utterance of a store entry."""
    outputs: dict[str, list[np.ndarray]] = {k: [] for k in ("lang", "tp", "rs", "m")}
    # wherever the model lives (also mid-training on a GPU, for dev-score selection)
    device = next(model.parameters()).device
    model.eval()
    with torch.no_grad():
        for start in range(0, len(entry), batch_size):
            states, mask = entry.token_states(np.arange(start, min(start + batch_size, len(entry))))
            out = model(torch.from_numpy(states).float().to(device), torch.from_numpy(mask).to(device))
            for key in outputs:
                outputs[key].append(out[key].cpu().numpy())
    return {k: np.concatenate(v) for k, v in outputs.items()}
