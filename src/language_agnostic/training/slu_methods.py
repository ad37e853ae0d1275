"""``slu.methods.<name>``: which kind of SLU model a variant trains, its settings, and the trainer of each kind.

The kinds are the registry's methods with the ``SLU_MODEL`` role (``methods.registry``): ``slu``, the
joint baseline (``training.slu``), and ``lajoint``, LAJoint / LAJ-MCL (``training.lajmcl``).
:data:`TRAINERS` is how the ``slu`` pipeline trains, saves and predicts with each, so its nodes do
not branch on the kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.training.lajmcl import lajmcl_artifact, lajmcl_intent_vectors, predict_lajmcl, train_lajmcl
from language_agnostic.training.loop import TrainResult
from language_agnostic.training.slu import slu_artifact, train_slu
from language_agnostic.training.slu_predict import intent_vectors, predict_slu

Rows = pd.DataFrame | Sequence[Sequence[str]]


@dataclass(frozen=True)
class SluTrainer:
    """How one kind of SLU model is trained, saved and used.

    Attributes:
        train: ``(table, encoder, variant, dictionaries) -> (model, result, info)``, ``variant`` a
            :class:`~language_agnostic.training.finetune.FineTuning`
            (:func:`~language_agnostic.training.slu.train_slu`).
        artifact: ``(model, encoder, **extra) -> artifact`` (the registry's build spec, the tensors
            fine-tuning changed and ``extra``).
        predict: ``(model, rows, encoder, artifact, extraction, precision) -> (intents, labels)``:
            one intent per utterance and one BIO label per word, named as the artifact names them.
        intent_vectors: ``(model, rows, encoder, artifact, extraction) -> (N, D)``: the ``[CLS]``
            state the intent head reads (LAJ-MCL Figure 3).
    """

    train: Callable[..., tuple[torch.nn.Module, TrainResult, dict[str, Any]]]
    artifact: Callable[..., dict[str, Any]]
    predict: Callable[..., tuple[list[str], list[list[str]]]]
    intent_vectors: Callable[..., np.ndarray]


def _predict_from(
    predict: Callable[..., tuple[list[str], list[list[str]]]], with_slots: bool
) -> Callable[..., tuple[list[str], list[list[str]]]]:
    """``predict`` (``predict_slu`` or ``predict_lajmcl``) given the artifact's intent and label names (and,
    ``with_slots``, its slot count: LAJoint's label prefix) as :attr:`SluTrainer.predict` takes them."""

    def run(
        model: torch.nn.Module,
        rows: Rows,
        encoder: LoadedEncoder,
        artifact: Mapping[str, Any],
        extraction: Mapping[str, Any] | None,
        precision: str = "no",
    ) -> tuple[list[str], list[list[str]]]:
        names = [list(artifact["intents"]), list(artifact["labels"])]
        slots = [len(artifact["slots"])] if with_slots else []
        return predict(model, rows, encoder, *names, *slots, extraction, precision=precision)

    return run


TRAINERS: dict[str, SluTrainer] = {
    "slu": SluTrainer(
        train_slu,
        slu_artifact,
        _predict_from(predict_slu, with_slots=False),
        lambda model, rows, encoder, artifact, extraction: intent_vectors(model, rows, encoder, extraction),
    ),
    "lajoint": SluTrainer(
        train_lajmcl,
        lajmcl_artifact,
        _predict_from(predict_lajmcl, with_slots=True),
        lambda model, rows, encoder, artifact, extraction: lajmcl_intent_vectors(
            model, rows, encoder, len(artifact["slots"]), extraction
        ),
    ),
}


def method_kind(spec: Mapping[str, Any] | None) -> str:
    """A ``slu.methods`` entry's ``method``: one of the registry's SLU models (``slu``, the default, or ``lajoint``;
    ``parameters/slu.py:SluMethod`` refuses another when the run starts)."""
    return str(dict(spec or {}).get("method", "slu"))


def trainer(kind: str) -> SluTrainer:
    """The trainer of an SLU model kind (a registry method with the ``SLU_MODEL`` role).

    Raises:
        ValueError: a kind without one (a registry entry added without its trainer here).
    """
    if kind not in TRAINERS:
        raise ValueError(f"no SLU trainer for method {kind!r}; known: {sorted(TRAINERS)}")
    return TRAINERS[kind]


def method_settings(name: str, spec: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``slu.methods.<name>``: ``{method: slu, loss_weights, options, training, data}`` as
    ``(method settings for train_slu, training overrides, data overrides)``.

    zsjoint is ``{method: slu}``; cosda is ``{method: slu, data: {code_switch: {...}}}``; LAJ-MCL's
    variants are ``{method: lajoint, options: {...}, loss_weights: {...}}``
    (:func:`~language_agnostic.training.lajmcl.method_config` reads them). Its keys and values are checked by
    ``parameters/slu.py:SluMethod`` when the run starts.
    """
    spec = dict(spec or {})
    method = dict(spec.get("options") or {})
    if spec.get("loss_weights"):
        method["loss_weights"] = dict(spec["loss_weights"])
    return method, dict(spec.get("training") or {}), dict(spec.get("data") or {})
