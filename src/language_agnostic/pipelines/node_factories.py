"""Node groups that several pipelines build the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kedro.pipeline import Node, node

from language_agnostic.training.reuse import reusable


def train_and_evaluate(
    key: str,
    *,
    train: Callable[..., Any],
    train_inputs: list[str],
    trained: list[str],
    evaluate: Callable[..., Any],
    evaluate_inputs: list[str],
    rows: str | list[str],
) -> list[Node]:
    """One trained model's two nodes (emu's methods, slu's, fmda's variants and heads).

    ``train_<key>_node`` runs ``train`` on ``train_inputs`` and writes ``trained`` (the model and its
    history); a model stored with the same fingerprint is reused instead (``training/reuse.py``).
    ``evaluate_<key>_node`` runs ``evaluate`` on ``evaluate_inputs`` (the model among them) and
    writes ``rows``.
    """
    return [
        node(reusable(train), inputs=train_inputs, outputs=trained, name=f"train_{key}_node"),
        node(evaluate, inputs=evaluate_inputs, outputs=rows, name=f"evaluate_{key}_node"),
    ]
