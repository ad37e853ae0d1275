"""Sentence vectors from token states: first token (``cls``) and masked mean (``mean``)."""

from __future__ import annotations

from typing import Literal

import torch

Pooling = Literal["cls", "mean"]
POOLINGS: tuple[str, ...] = ("cls", "mean")


def cls_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The first position's state (``[CLS]`` / ``<s>``), shape ``(batch, dim)``."""
    del attention_mask  # the first token is never padding
    return hidden[:, 0]


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean over the non-padding positions (special tokens included, as e5 does)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.device, hidden.dtype)  # a CPU mask with CUDA states
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Apply the named pooling.

    Args:
        hidden: Token states ``(batch, length, dim)``.
        attention_mask: ``(batch, length)``, 1 for real tokens.
        pooling: ``"cls"`` or ``"mean"``.
    """
    if pooling == "cls":
        return cls_pool(hidden, attention_mask)
    if pooling == "mean":
        return mean_pool(hidden, attention_mask)
    raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
