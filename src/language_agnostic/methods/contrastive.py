"""Contrastive terms shared by the methods: the pairwise cosine loss with one negative per side, and InfoNCE.

FMDA's eq. 3-4 read literally, ``−cos(x¹, x²) + cos(x¹, neg¹) + cos(x², neg²)``, rewards pushing a
negative's cosine all the way to −1: the cheapest way down the loss is to make "is a negative"
separable rather than to align translations (docs/fmda.md). The method family's released code
(DREAM, Tiyajamorn et al. 2021, the hyper-parameters FMDA §4.2 follows) writes the same term
as ``torch.nn.CosineEmbeddingLoss`` with target −1, i.e. ``max(0, cos − margin)``: a negative
that is already orthogonal costs nothing. Both readings are here, chosen by ``negative``.

InfoNCE (van den Oord et al. 2018; symmetric, in-batch, as in CLIP and mE5's training) takes
every other pair of the batch as a negative instead of one drawn from a pool.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

NEGATIVE_TERMS = ("hinge", "linear")
CONTRASTIVE_KINDS = ("pairwise", "infonce")


@dataclass(frozen=True)
class ContrastiveSettings:
    """How a method's contrastive terms are computed (``fmda.loss`` and a variant's ``loss``).

    Attributes:
        contrastive: ``pairwise`` (eq. 3-4: one pool negative per side) or ``infonce``
            (in-batch negatives).
        negative: For ``pairwise``: ``hinge`` (``max(0, cos − margin)``, the released code's
            ``CosineEmbeddingLoss``) or ``linear`` (``cos``, eq. 3-4 as printed).
        margin: The hinge's margin.
        temperature: InfoNCE's temperature ``τ``.
    """

    contrastive: str = "pairwise"
    negative: str = "hinge"
    margin: float = 0.0
    temperature: float = 0.05

    def __post_init__(self) -> None:
        if self.contrastive not in CONTRASTIVE_KINDS:
            raise ValueError(f"contrastive must be one of {list(CONTRASTIVE_KINDS)}, got {self.contrastive!r}")
        if self.negative not in NEGATIVE_TERMS:
            raise ValueError(f"negative must be one of {list(NEGATIVE_TERMS)}, got {self.negative!r}")
        if not -1.0 <= self.margin < 1.0:
            raise ValueError(f"margin must be in [-1, 1), got {self.margin}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")


def negative_term(cos: torch.Tensor, negative: str = "hinge", margin: float = 0.0) -> torch.Tensor:
    """The cost of a negative at cosine ``cos``: ``max(0, cos − margin)`` (hinge) or ``cos`` (linear)."""
    if negative == "hinge":
        return (cos - margin).clamp(min=0)
    if negative == "linear":
        return cos
    raise ValueError(f"negative must be one of {list(NEGATIVE_TERMS)}, got {negative!r}")


def pairwise_contrastive(
    x1: torch.Tensor,
    x2: torch.Tensor,
    neg1: torch.Tensor,
    neg2: torch.Tensor,
    negative: str = "hinge",
    margin: float = 0.0,
) -> torch.Tensor:
    """FMDA eq. 3-4: ``−cos(x¹, x²) + n(cos(x¹, neg¹)) + n(cos(x², neg²))``, batch mean,
    ``n`` = :func:`negative_term`.
    """
    cos = F.cosine_similarity
    return (
        -cos(x1, x2, dim=-1)
        + negative_term(cos(x1, neg1, dim=-1), negative, margin)
        + negative_term(cos(x2, neg2, dim=-1), negative, margin)
    ).mean()


def info_nce(x1: torch.Tensor, x2: torch.Tensor, temperature: float = 0.05) -> torch.Tensor:
    """Symmetric in-batch InfoNCE: row ``i`` of ``x1`` should pick row ``i`` of ``x2`` among all rows, and back.

    ``½ [CE(S, I) + CE(Sᵀ, I)]`` with ``S_ij = cos(x1_i, x2_j) / τ``; the other rows of the batch
    are the negatives.
    """
    if len(x1) != len(x2):
        raise ValueError(f"info_nce needs aligned rows, got {len(x1)} and {len(x2)}")
    logits = F.normalize(x1, dim=-1) @ F.normalize(x2, dim=-1).T / temperature
    labels = torch.arange(len(x1), device=x1.device)
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
