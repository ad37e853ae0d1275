"""MEAT (Kuroda et al., COLING 2022), the adversarial variant of DREAM, as ``../shared/README.md`` describes it.

Meaning and language heads over a frozen sentence embedding ``e``, trained with

- cosine reconstruction: ``1 − cos(e, e_M + e_L)`` for both sentences of the pair;
- cross-reconstruction: ``1 − cos(s, t_M + s_L)`` and ``1 − cos(t, s_M + t_L)`` (the meaning
  of a translation must do as well as one's own);
- the language push-apart term: ``max(0, cos(s_L, t_L))``;
- an adversary: a linear language discriminator on the meaning embedding, trained in
  alternation to identify the language (``adversary``), while the heads are pushed toward
  making its prediction uniform over languages (``uniform``: cross-entropy to the uniform
  distribution).

Reductions follow the authors' released code (EhimeNLP/MEAT, ``script/train.py``): each term is
a batch mean, and the two sides of the pair are *summed*, the adversarial ones included
(``uniform`` = CE(s) + CE(t), minimum ``2 log K``). The training loop steps the discriminator
first, then the heads against the updated discriminator, as that code does (``training.loop``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from language_agnostic.methods.losses import Batch, with_default_weights

DEFAULT_WEIGHTS = {"reconstruction": 1.0, "cross_reconstruction": 1.0, "language_push": 1.0, "uniform": 1.0}


class Meat(nn.Module):
    """Meaning and language heads and the language discriminator."""

    def __init__(self, dim: int, n_languages: int) -> None:
        super().__init__()
        self.meaning = nn.Linear(dim, dim)
        self.language = nn.Linear(dim, dim)
        self.discriminator = nn.Linear(dim, n_languages)

    def forward(self, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.meaning(e), self.language(e)

    def adversary_parameters(self) -> Iterator[nn.Parameter]:
        """Parameters stepped by the adversary's optimiser (the training loop looks for this)."""
        return self.discriminator.parameters()


def uniform_cross_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of ``softmax(logits)`` against the uniform distribution (minimum ``log K``)."""
    return -F.log_softmax(logits, dim=-1).mean(dim=-1).mean()


def meat_losses(model: Meat, batch: Batch, weights: Mapping[str, float] | None = None) -> dict[str, torch.Tensor]:
    """MEAT's losses for a batch of parallel pairs ``s``, ``t`` with language ids ``s_lang``, ``t_lang``.

    Returns:
        The parts, ``total`` (the heads' objective) and ``adversary`` (the discriminator's
        cross-entropy on detached meaning embeddings).
    """
    w = with_default_weights(weights, DEFAULT_WEIGHTS, "MEAT")
    s, t = batch["s"], batch["t"]
    (s_m, s_l), (t_m, t_l) = model(s), model(t)
    cos = F.cosine_similarity
    losses = {
        "reconstruction": ((1 - cos(s, s_m + s_l, dim=-1)) + (1 - cos(t, t_m + t_l, dim=-1))).mean(),
        "cross_reconstruction": ((1 - cos(s, t_m + s_l, dim=-1)) + (1 - cos(t, s_m + t_l, dim=-1))).mean(),
        "language_push": cos(s_l, t_l, dim=-1).clamp(min=0).mean(),
        "uniform": uniform_cross_entropy(model.discriminator(s_m)) + uniform_cross_entropy(model.discriminator(t_m)),
    }
    losses["total"] = sum(w[k] * v for k, v in losses.items())
    losses["adversary"] = F.cross_entropy(model.discriminator(s_m.detach()), batch["s_lang"]) + F.cross_entropy(
        model.discriminator(t_m.detach()), batch["t_lang"]
    )
    return losses
