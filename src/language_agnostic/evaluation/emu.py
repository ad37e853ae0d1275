"""EMU's evaluation on MASSIVE test: nearest-neighbour intent classification across locales, with significance.

Directions (EMU Table 2): the training locale to itself, the training locale to every other
locale (``EN → *``) and every other locale to the training locale (``* → EN``); queries in
the source locale, labelled candidates in the target locale, leave-one-out by MASSIVE ``id``.
Each direction gives ``accuracy@1`` with its Wilson 95 % interval (``accuracy@1_ci_low`` /
``_ci_high``) and, for a fine-tuned encoder, the exact McNemar p-value against the raw encoder
on the same queries (``mcnemar_p_vs_raw``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.evaluation.intent_nn import accuracy_with_interval, mcnemar, nearest_neighbour_correct
from language_agnostic.evaluation.rows import metric_row
from language_agnostic.methods.emu import l2_constrained_logits


@dataclass(frozen=True)
class LocaleSet:
    """A locale's test utterances: embeddings, MASSIVE ids and intents, aligned."""

    vectors: np.ndarray
    ids: Sequence[str]
    intents: Sequence[str]


DIRECTIONS = ("training", "all")


def directions(training_locale: str, locales: Sequence[str], which: str = "training") -> list[tuple[str, str]]:
    """``(query, candidate)`` locales.

    ``training`` (EMU Table 2): the training locale to itself, then to and from every other.
    ``all`` (EMU Table 3): every ordered pair of ``locales``, the monolingual ones included.
    """
    if which not in DIRECTIONS:
        raise ValueError(f"emu.evaluation.directions must be one of {list(DIRECTIONS)}, got {which!r}")
    if which == "all":
        return [(q, c) for q in locales for c in locales]
    others = [loc for loc in locales if loc != training_locale]
    return (
        [(training_locale, training_locale)]
        + [(training_locale, o) for o in others]
        + [(o, training_locale) for o in others]
    )


def intent_nn_correct(
    sets: Mapping[str, LocaleSet], training_locale: str, which: str = "training"
) -> dict[str, np.ndarray]:
    """Per direction ``"<query>><candidate>"`` (:func:`directions`), the per-query correctness of
    nearest-neighbour intent.
    """
    out = {}
    for q, c in directions(training_locale, list(sets), which):
        a, b = sets[q], sets[c]
        out[f"{q}>{c}"] = nearest_neighbour_correct(a.vectors, a.ids, a.intents, b.vectors, b.ids, b.intents)
    return out


def outcome_rows(correct: Mapping[str, np.ndarray], sets: Mapping[str, LocaleSet], method: str) -> pd.DataFrame:
    """Per-query outcomes of :func:`intent_nn_correct` (``datasets/outcomes.py``'s columns): a query is its
    MASSIVE id in the source locale, so two methods pair on the same queries for McNemar's test."""
    frames = []
    for direction, hits in correct.items():
        source, target = direction.split(">")
        frames.append(
            pd.DataFrame(
                {
                    "pipeline": "emu",
                    "method": method,
                    "task": "intent_nn",
                    "source": source,
                    "target": target,
                    "query": [str(i) for i in sets[source].ids],
                    "correct": np.asarray(hits, dtype=bool),
                }
            )
        )
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["pipeline", "method", "task", "source", "target", "query", "correct"])
    )


def _row(
    method: str, embedding: str, task: str, source: str, target: str, metric: str, value: float, encoder: str
) -> dict[str, Any]:
    """An EMU row of the metrics table (MASSIVE's test split)."""
    return metric_row("emu", method, embedding, task, "massive_test", source, target, metric, value, encoder)


def intent_nn_rows(
    correct: Mapping[str, np.ndarray],
    method: str,
    encoder: str,
    embedding: str = "mean",
    raw: Mapping[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """Metric rows of :func:`intent_nn_correct`: accuracy@1, its Wilson interval, McNemar against ``raw``."""
    rows = []
    for direction, hits in correct.items():
        source, target = direction.split(">")
        p = accuracy_with_interval(hits)
        rows += [
            _row(method, embedding, "intent_nn", source, target, "accuracy@1", p.value, encoder),
            _row(method, embedding, "intent_nn", source, target, "accuracy@1_ci_low", p.low, encoder),
            _row(method, embedding, "intent_nn", source, target, "accuracy@1_ci_high", p.high, encoder),
        ]
        if raw is not None and direction in raw:
            rows.append(
                _row(
                    method,
                    embedding,
                    "intent_nn",
                    source,
                    target,
                    "mcnemar_p_vs_raw",
                    mcnemar(hits, raw[direction]).pvalue,
                    encoder,
                )
            )
    return pd.DataFrame(rows)


def classifier_predictions(
    model: Any, vectors: Mapping[str, np.ndarray], intents: Sequence[str]
) -> dict[str, np.ndarray]:
    """The semantic classifier's intent for each sentence embedding ``u``
    (EMU: over ``α u/‖u‖``; softmax: over ``u``).
    """
    import torch

    names = np.asarray(intents, dtype=object)
    out = {}
    with torch.no_grad():
        for locale, u in vectors.items():
            u = torch.from_numpy(np.asarray(u, dtype=np.float32))
            logits = (
                l2_constrained_logits(u, model.classifier, model.config.alpha)
                if model.config.loss == "emu"
                else model.classifier(u)
            )
            out[locale] = names[logits.argmax(1).numpy()]
    return out


def classifier_rows(
    predicted: Mapping[str, np.ndarray], gold: Mapping[str, Sequence[str]], method: str, encoder: str
) -> pd.DataFrame:
    """The semantic classifier's own test accuracy per locale (EMU found it poor and left it out; reported here)."""
    rows = [
        _row(
            method,
            "classifier",
            "intent_classification",
            locale,
            locale,
            "accuracy",
            float(np.mean(np.asarray(predicted[locale], dtype=object) == np.asarray(gold[locale], dtype=object))),
            encoder,
        )
        for locale in predicted
    ]
    return pd.DataFrame(rows)


def selection_rows(artifact: Mapping[str, Any], locale: str, encoder: str, embedding: str = "mean") -> pd.DataFrame:
    """How the fine-tuned model was chosen: the kept epoch (0: no epoch beat the raw encoder on dev, which is
    then what the method's rows measure), its dev accuracy@1 and the raw encoder's (epoch 0's) on ``locale`` dev."""
    method = str(artifact["method"])
    values = {"kept_epoch": artifact["best_epoch"], "dev_accuracy@1": artifact["dev_accuracy"]}
    if artifact.get("dev_accuracy_initial") is not None:
        values["dev_accuracy@1_initial"] = artifact["dev_accuracy_initial"]
    rows = [
        _row(method, embedding, "model_selection", locale, locale, metric, float(value), encoder)
        for metric, value in values.items()
    ]
    for row in rows:
        row["dataset"] = "massive_dev"
    return pd.DataFrame(rows)
