"""The simplest control for a contrastive head: one linear map over pooled sentence vectors.

``linear-infonce`` trains ``W e + b`` with in-batch InfoNCE between the two sides of each
parallel pair (:func:`~language_agnostic.methods.contrastive.info_nce`) and nothing else. Trained
with the same loss, data, selection and budget as ``fmda-infonce``, it says how much of FMDA's
gain comes from the contrastive objective alone rather than from its token-level attention,
reconstructions and language heads.
"""

from __future__ import annotations

import torch
from torch import nn

from language_agnostic.methods.contrastive import info_nce


class LinearHead(nn.Module):
    """``meaning = W e + b``, ``D × D``, initialised to the identity (training starts from the encoder's space)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.meaning = nn.Linear(dim, dim)
        with torch.no_grad():
            self.meaning.weight.copy_(torch.eye(dim))
            self.meaning.bias.zero_()

    def forward(self, e: torch.Tensor) -> torch.Tensor:
        return self.meaning(e)


def linear_infonce_losses(
    model: LinearHead, s: torch.Tensor, t: torch.Tensor, temperature: float = 0.05
) -> dict[str, torch.Tensor]:
    """``{"infonce", "total"}``: symmetric in-batch InfoNCE of the mapped pair ``(s, t)``."""
    loss = info_nce(model(s), model(t), temperature)
    return {"infonce": loss, "total": loss}
