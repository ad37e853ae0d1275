"""The types of the losses protocol (``Method.losses`` in :mod:`~language_agnostic.methods.registry`) and
the loss-weight checks every method shares.

A method's losses function is ``losses(model, batch, weights, options) -> {name: tensor, ..., "total"}``;
the fine-tuning methods (EMU, SLU, LAJoint, LAJ-MCL) are written to it directly; the heads over
sentence vectors (DREAM, MEAT, SEED) take ``(model, batch, weights)`` and the registry adds their options.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import torch

Batch = Mapping[str, torch.Tensor]  # the tensors of one batch by name
LossWeights = Mapping[str, float]  # loss name -> weight, over the method's defaults
Options = Mapping[str, Any]  # the method's options (Method.options)
Losses = dict[str, torch.Tensor]  # every computed loss by name, and "total"


def check_loss_weights(weights: Mapping[str, Any] | None, known: Collection[str], method: str) -> None:
    """Raise on a loss weight that ``method``'s losses do not know.

    Raises:
        ValueError: naming the unknown weights and the known ones (in the order of ``known``).
    """
    unknown = sorted(set(weights or {}) - set(known))
    if unknown:
        raise ValueError(f"unknown {method} loss weight(s) {unknown}; known: {list(known)}")


def with_default_weights(weights: Mapping[str, Any] | None, defaults: Mapping[str, Any], method: str) -> dict[str, Any]:
    """``defaults`` with ``weights`` over them (values as given).

    Raises:
        ValueError: a weight not in ``defaults`` (:func:`check_loss_weights`, the known ones sorted).
    """
    check_loss_weights(weights, sorted(defaults), method)
    return {**defaults, **(weights or {})}
