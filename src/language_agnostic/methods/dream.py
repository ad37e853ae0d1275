"""DREAM (Tiyajamorn et al., EMNLP 2021, §3): meaning and language heads over frozen sentence embeddings.

An autoencoder of two single-layer networks, ``MLP_M`` (meaning) and ``MLP_L`` (language),
whose outputs sum to the input embedding, plus ``MLP_I`` for language identification.
Each training example is four embeddings (Figure 2): a parallel pair ``(s, t)`` and a random
sentence of each language ``(s', t')``. The loss is eq. 1::

    L   = L_R + L_M + L_L
    L_R = ||e - (MLP_M(e) + MLP_L(e))||² / d                      (eq. 2, for every input)
    L_M = [1 - cos(s_M, t_M)] + [max(0, cos(s_M, s'_M)) + max(0, cos(t_M, t'_M))]   (eq. 5-7)
    L_L = [2 - cos(s_L, s'_L) - cos(t_L, t'_L)] + CE(MLP_I(e_L), language)         (eq. 8-11)

The authors' released code also computes a language push-apart term between the language
embeddings of the two sides, ``max(0, cos(s_L, t_L))``, but leaves it out of the total; here it
is ``weights["language_push"]``, 0 by default.

``meaning="infonce"`` replaces ``L_M`` by in-batch InfoNCE between ``s_M`` and ``t_M``
(``dream-infonce``): a control for FMDA's InfoNCE variant, not the paper's method.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from language_agnostic.methods.contrastive import info_nce
from language_agnostic.methods.losses import Batch, with_default_weights

ACTIVATIONS = {"none": nn.Identity, "relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}
DEFAULT_WEIGHTS = {"reconstruction": 1.0, "meaning": 1.0, "language": 1.0, "language_push": 0.0}


def single_layer(dim_in: int, dim_out: int, activation: str) -> nn.Module:
    """One linear layer and an optional activation (the paper's "single-layer feedforward network")."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    return nn.Sequential(nn.Linear(dim_in, dim_out), ACTIVATIONS[activation]())


class Dream(nn.Module):
    """``MLP_M``, ``MLP_L`` and ``MLP_I`` over ``dim``-dimensional sentence embeddings."""

    def __init__(self, dim: int, n_languages: int, activation: str = "none") -> None:
        super().__init__()
        self.meaning = single_layer(dim, dim, activation)
        self.language = single_layer(dim, dim, activation)
        self.identify = nn.Linear(dim, n_languages)

    def forward(self, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(meaning, language)`` embeddings of ``e`` ``(batch, dim)``."""
        return self.meaning(e), self.language(e)


def reconstruction_loss(e: torch.Tensor, meaning: torch.Tensor, language: torch.Tensor) -> torch.Tensor:
    """Eq. 2: ``||e - (e_M + e_L)||² / d``, averaged over the batch."""
    return ((e - (meaning + language)) ** 2).mean(dim=-1).mean()


def meaning_loss(s_m: torch.Tensor, t_m: torch.Tensor, s2_m: torch.Tensor, t2_m: torch.Tensor) -> torch.Tensor:
    """Eq. 5-7: pull parallel meanings together, push random same-language meanings apart."""
    parallel = 1 - F.cosine_similarity(s_m, t_m, dim=-1)
    random = F.cosine_similarity(s_m, s2_m, dim=-1).clamp(min=0) + F.cosine_similarity(t_m, t2_m, dim=-1).clamp(min=0)
    return (parallel + random).mean()


def language_similarity_loss(
    s_l: torch.Tensor, t_l: torch.Tensor, s2_l: torch.Tensor, t2_l: torch.Tensor
) -> torch.Tensor:
    """Eq. 9 (L_L^m): language embeddings of the same language come together."""
    return (2 - F.cosine_similarity(s_l, s2_l, dim=-1) - F.cosine_similarity(t_l, t2_l, dim=-1)).mean()


def language_push_loss(s_l: torch.Tensor, t_l: torch.Tensor) -> torch.Tensor:
    """The released code's extra term: language embeddings of the two sides apart, ``max(0, cos)``."""
    return F.cosine_similarity(s_l, t_l, dim=-1).clamp(min=0).mean()


def dream_losses(
    model: Dream,
    batch: Batch,
    weights: Mapping[str, float] | None = None,
    meaning: str = "pairwise",
    temperature: float = 0.05,
) -> dict[str, torch.Tensor]:
    """Every DREAM loss for one batch of quadruplets, and their weighted total.

    Args:
        model: The DREAM heads.
        batch: ``s``, ``t`` (a parallel pair, ``(batch, dim)`` each), ``s2``, ``t2`` (random
            sentences in the languages of ``s`` and ``t``), ``s_lang``, ``t_lang`` (language ids,
            ``(batch,)`` long, of ``s`` and ``t``).
        weights: ``reconstruction``, ``meaning``, ``language``, ``language_push``.
        meaning: ``pairwise`` (eq. 5-7) or ``infonce`` (in-batch InfoNCE at ``temperature``;
            ``s2``/``t2`` then serve only the language loss).

    Returns:
        ``{"reconstruction", "meaning", "language_similarity", "language_id", "language_push",
        "total"}``.
    """
    w = with_default_weights(weights, DEFAULT_WEIGHTS, "DREAM")
    if meaning not in ("pairwise", "infonce"):
        raise ValueError(f"meaning must be 'pairwise' or 'infonce', got {meaning!r}")
    s, t, s2, t2 = (batch[k] for k in ("s", "t", "s2", "t2"))
    (s_m, s_l), (t_m, t_l), (s2_m, s2_l), (t2_m, t2_l) = (model(x) for x in (s, t, s2, t2))
    reconstruction = (
        sum(
            reconstruction_loss(e, m, l)
            for e, m, l in ((s, s_m, s_l), (t, t_m, t_l), (s2, s2_m, s2_l), (t2, t2_m, t2_l))
        )
        / 4
    )
    losses = {
        "reconstruction": reconstruction,
        "meaning": meaning_loss(s_m, t_m, s2_m, t2_m) if meaning == "pairwise" else info_nce(s_m, t_m, temperature),
        "language_similarity": language_similarity_loss(s_l, t_l, s2_l, t2_l),
        # eq. 10-11 on both sides of the pair
        "language_id": (
            F.cross_entropy(model.identify(s_l), batch["s_lang"])
            + F.cross_entropy(model.identify(t_l), batch["t_lang"])
        )
        / 2,
        "language_push": language_push_loss(s_l, t_l),
    }
    losses["total"] = (
        w["reconstruction"] * losses["reconstruction"]
        + w["meaning"] * losses["meaning"]
        + w["language"] * (losses["language_similarity"] + losses["language_id"])
        + w["language_push"] * losses["language_push"]
    )
    return losses
