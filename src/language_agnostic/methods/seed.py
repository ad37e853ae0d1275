"""SEED, the reversible disentanglement (Fukushima, Kajiwara, Ninomiya, MRL 2025, §2).

One single-layer network gives the meaning embedding; the language embedding is the rest,
so the two always add up to the input exactly (eq. 1-2)::

    e_M = MLP(e)        e_L = e − e_M

    L   = L_M + L_L + L_C                                                     (eq. 3)
    L_M = 2(1 − cos(s_M, t_M)) + max(0, cos(s_M, s'_M)) + max(0, cos(t_M, t'_M))   (eq. 4)
    L_L = (1 − cos(s_L, s'_L)) + (1 − cos(t_L, t'_L))                          (eq. 5)
    L_C = max(0, cos(s_M, s_L)) + max(0, cos(t_M, t_L))
          + 2 − cos(s, s_M + s'_L) − cos(t, t_M + t'_L)
          + 2 − cos(s, t_M + s_L) − cos(t, s_M + t_L)                          (eq. 6)
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F
from torch import nn

from language_agnostic.methods.losses import Batch, with_default_weights

DEFAULT_WEIGHTS = {"meaning": 1.0, "language": 1.0, "cross": 1.0}


class Seed(nn.Module):
    """The meaning network; ``forward`` returns ``(meaning, language)`` with ``language = e − meaning``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.meaning = nn.Linear(dim, dim)  # "a single-layer feed-forward neural network" (§3)

    def forward(self, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m = self.meaning(e)
        return m, e - m


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.cosine_similarity(a, b, dim=-1)


def seed_losses(model: Seed, batch: Batch, weights: Mapping[str, float] | None = None) -> dict[str, torch.Tensor]:
    """SEED's three losses (eq. 4-6) and their weighted sum (eq. 3), batch means.

    Args:
        model: The meaning network.
        batch: ``s``, ``t`` (a parallel pair, ``(batch, dim)``) and ``s2``, ``t2`` (random
            sentences in the languages of ``s`` and ``t``).
        weights: ``meaning``, ``language``, ``cross`` (all 1 in the paper).
    """
    w = with_default_weights(weights, DEFAULT_WEIGHTS, "SEED")
    s, t, s2, t2 = (batch[k] for k in ("s", "t", "s2", "t2"))
    (s_m, s_l), (t_m, t_l), (s2_m, s2_l), (t2_m, t2_l) = (model(x) for x in (s, t, s2, t2))
    meaning = 2 * (1 - _cos(s_m, t_m)) + _cos(s_m, s2_m).clamp(min=0) + _cos(t_m, t2_m).clamp(min=0)
    language = (1 - _cos(s_l, s2_l)) + (1 - _cos(t_l, t2_l))
    cross = (
        _cos(s_m, s_l).clamp(min=0)
        + _cos(t_m, t_l).clamp(min=0)
        + 2
        - _cos(s, s_m + s2_l)
        - _cos(t, t_m + t2_l)
        + 2
        - _cos(s, t_m + s_l)
        - _cos(t, s_m + t_l)
    )
    losses = {"meaning": meaning.mean(), "language": language.mean(), "cross": cross.mean()}
    losses["total"] = sum(w[k] * v for k, v in losses.items())
    return losses
