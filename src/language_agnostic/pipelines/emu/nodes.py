"""Nodes of the ``emu`` pipeline: thin adapters over ``training/emu.py``, ``evaluation/emu.py`` and
``reporting/emu.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.emu import (
    LocaleSet,
    classifier_predictions,
    classifier_rows,
    intent_nn_correct,
    intent_nn_rows,
    outcome_rows,
    selection_rows,
)
from language_agnostic.methods.emu import PooledEncoder
from language_agnostic.methods.registry import build_spec, load_trained
from language_agnostic.reporting.emu import emu_tables
from language_agnostic.reporting.figures import plot_intent_tsne
from language_agnostic.tracking import log_child_metrics, log_child_run, metric_key
from language_agnostic.training.emu import EmuData, encode_tokenised, method_settings, train_emu, trained_state
from language_agnostic.training.emu_data import tokenise
from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.loop import history_metrics

logger = logging.getLogger(__name__)


def train_emu_variant(
    utterances: pd.DataFrame,
    encoder: LoadedEncoder,
    spec: Mapping[str, Any],
    data: Mapping[str, Any],
    training: Mapping[str, Any],
    extraction: Mapping[str, Any],
    name: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fine-tune the encoder with one ``emu.methods`` entry; the artifact holds what changed."""
    config, training_overrides, data_overrides = method_settings(name, spec)
    variant = FineTuning(
        name, config, {**dict(data), **data_overrides}, {**dict(training), **training_overrides}, extraction
    )
    model, result, info = train_emu(utterances, encoder, variant)
    options = {**{k: v for k, v in model.config.__dict__.items()}, "encoder_config": model.encoder.config.to_dict()}
    options["training_languages"] = list(options["training_languages"])
    run_id = log_child_run(
        f"emu/{name}",
        {"name": name, **config, **training, **training_overrides, **data, **data_overrides},
        result.history,
    )
    artifact = {
        "build": build_spec("emu", int(encoder.hidden_size), 1, options),
        "state_dict": trained_state(model),
        "method": name,
        "base_encoder": dict(encoder.identity),
        "mlflow_run_id": run_id,
        **info,
    }
    logger.info(
        "emu %s: kept epoch %d of %d, en-US dev NN accuracy %.4f",
        name,
        info["best_epoch"],
        info["epochs_run"],
        info["dev_accuracy"],
    )
    return artifact, history_metrics(result.history, f"emu.{name}")


def _test_sets(utterances: pd.DataFrame, locales: list[str]) -> dict[str, pd.DataFrame]:
    out = {}
    for locale in locales:
        rows = utterances[(utterances["locale"] == locale) & (utterances["partition"] == "test")]
        out[locale] = rows.sort_values("id", key=lambda c: c.astype(int)).reset_index(drop=True)
    return out


def evaluation_locales(
    utterances: pd.DataFrame, data: Mapping[str, Any], evaluation: Mapping[str, Any] | None = None
) -> list[str]:
    """The training locale first, then ``emu.evaluation.locales``
    ([]: every locale of the data, ``massive.locales``).
    """
    training = str(data.get("training_locale", EmuData.training_locale))
    present = set(utterances["locale"])
    wanted = list((evaluation or {}).get("locales") or sorted(present))
    missing = sorted(set(wanted) - present)
    if missing:
        raise ValueError(
            f"emu.evaluation.locales: {missing} are not in the MASSIVE data read (massive.locales: {sorted(present)})"
        )
    return [training] + [loc for loc in wanted if loc != training]


def _which(evaluation: Mapping[str, Any] | None) -> str:
    return str((evaluation or {}).get("directions", "training"))


def _embed(
    model: torch.nn.Module,
    encoder: LoadedEncoder,
    tests: Mapping[str, pd.DataFrame],
    extraction: Mapping[str, Any],
    precision: str = "no",
) -> dict[str, LocaleSet]:
    pad_id = int(encoder.tokenizer.pad_token_id)
    return {
        loc: LocaleSet(
            encode_tokenised(model, tokenise(encoder, rows["utt"].tolist(), extraction), pad_id, precision=precision),
            rows["id"].tolist(),
            rows["intent"].tolist(),
        )
        for loc, rows in tests.items()
    }


def _figure_sets(sets: Mapping[str, LocaleSet], name: str, figure: Mapping[str, Any]) -> dict[str, LocaleSet]:
    """The test sets Figure 2 needs of this method (its locales), or nothing when it is not in
    ``emu.figure.methods``.
    """
    if name not in list(figure.get("methods") or []):
        return {}
    missing = [loc for loc in figure.get("locales") or [] if loc not in sets]
    if missing:
        raise ValueError(f"emu.figure.locales: {missing} not among the evaluated locales {sorted(sets)}")
    return {loc: sets[loc] for loc in figure.get("locales") or []}


def evaluate_raw(
    utterances: pd.DataFrame,
    encoder: LoadedEncoder,
    data: Mapping[str, Any],
    extraction: Mapping[str, Any],
    identity: Mapping[str, Any],
    evaluation: Mapping[str, Any] | None = None,
    figure: Mapping[str, Any] | None = None,
    training: Mapping[str, Any] | None = None,
    pooling: str = "mean",
) -> tuple[pd.DataFrame, dict[str, np.ndarray], dict[str, LocaleSet], pd.DataFrame]:
    """The raw encoder's nearest-neighbour intent accuracy, its per-query results for the paired tests, Figure 2's
    sets and its per-query outcomes (the claims' paired tests).

    Encoded under ``emu.training``'s ``mixed_precision``, as every fine-tuned encoder's test is
    (:func:`evaluate_emu_variant`): a method and raw then differ by their training alone, and a method
    that kept epoch 0 (no epoch beat the raw encoder on dev) gives raw's rows exactly.
    """
    locales = evaluation_locales(utterances, data, evaluation)
    precision = str((training or {}).get("mixed_precision", "no"))
    tests = _test_sets(utterances, locales)
    sets = _embed(PooledEncoder(encoder.model, pooling), encoder, tests, extraction, precision)
    correct = intent_nn_correct(sets, locales[0], _which(evaluation))
    return (
        intent_nn_rows(correct, "raw", str(identity.get("name")), pooling),
        {k: v.astype(bool) for k, v in correct.items()},
        _figure_sets(sets, "raw", figure or {}),
        outcome_rows(correct, sets, "raw"),
    )


def evaluate_emu_variant(
    utterances: pd.DataFrame,
    encoder: LoadedEncoder,
    artifact: Mapping[str, Any],
    data: Mapping[str, Any],
    extraction: Mapping[str, Any],
    raw: Mapping[str, np.ndarray],
    identity: Mapping[str, Any],
    evaluation: Mapping[str, Any] | None = None,
    figure: Mapping[str, Any] | None = None,
) -> tuple[pd.DataFrame, dict[str, LocaleSet], pd.DataFrame]:
    """A fine-tuned encoder on every direction (with McNemar against raw), its classifier's own accuracy, Figure 2's
    sets and its per-query outcomes.

    Test sentences are encoded under the artifact's ``mixed_precision`` (the training's), as dev was.
    """
    _, model = load_trained(artifact, encoder)
    locales = evaluation_locales(utterances, data, evaluation)
    tests = _test_sets(utterances, locales)
    # as the kept epoch's dev score was computed: under the training's autocast (bf16 on a CPU with native bf16)
    sets = _embed(model, encoder, tests, extraction, str(artifact.get("mixed_precision", "no")))
    name, encoder_name = str(artifact["method"]), str(identity.get("name"))
    correct = intent_nn_correct(sets, locales[0], _which(evaluation))
    rows = [
        intent_nn_rows(correct, name, encoder_name, model.config.pooling, raw),
        selection_rows(artifact, locales[0], encoder_name, model.config.pooling),
    ]
    if model.config.loss in ("emu", "softmax"):  # the baselines with a trained classifier
        predicted = classifier_predictions(
            model, {loc: s.vectors for loc, s in sets.items()}, list(artifact["intents"])
        )
        rows.append(
            classifier_rows(predicted, {loc: t["intent"].tolist() for loc, t in tests.items()}, name, encoder_name)
        )
    table = pd.concat(rows, ignore_index=True)
    log_child_metrics(artifact.get("mlflow_run_id"), table[table["metric"] == "accuracy@1"])
    return table, _figure_sets(sets, name, figure or {}), outcome_rows(correct, sets, name)


def plot_emu_figure(figure: Mapping[str, Any], *sets: Mapping[str, LocaleSet], names: list[str]) -> Any:
    """Figure 2: one panel per method of ``names`` (those of ``emu.figure.methods`` that were trained),
    in that order.
    """
    return plot_intent_tsne(dict(zip(names, sets, strict=True)), figure)


def report_emu(
    data: Mapping[str, Any], earlier: pd.DataFrame, *parts: pd.DataFrame
) -> tuple[pd.DataFrame, dict[str, Any], str, pd.DataFrame]:
    """All rows: the metrics table, MLflow metrics, the markdown tables and this run's per-query outcomes.

    Args:
        data: ``emu.data``.
        earlier: The per-query outcomes stored before this run (``emu_outcomes_before``): the claims pair
            a method this run did not train with its stored outcomes.
        parts: Every method's metric rows (raw first), then every method's outcomes, in the same order.
    """
    if len(parts) % 2:
        raise ValueError(f"report_emu: {len(parts)} inputs; expected each method's rows, then each method's outcomes")
    tables, outcomes = parts[: len(parts) // 2], parts[len(parts) // 2 :]
    rows = pd.concat(tables, ignore_index=True)
    mine = pd.concat(outcomes, ignore_index=True)
    metrics = {
        metric_key(r): {"value": float(r.value), "step": 0} for r in rows.itertuples() if r.metric == "accuracy@1"
    }
    pool = (
        pd.concat(
            [mine, earlier[(earlier["pipeline"] == "emu") & ~earlier["method"].isin(set(mine["method"]))]],
            ignore_index=True,
        )
        if len(earlier)
        else mine
    )
    return rows, metrics, emu_tables(rows, str(data.get("training_locale", EmuData.training_locale)), pool), mine


def tuned_encoder(encoder: LoadedEncoder, artifact: Mapping[str, Any]) -> LoadedEncoder:
    """The fine-tuned encoder with the base tokenizer, for a ``save_pretrained`` directory."""
    _, model = load_trained(artifact, encoder)
    identity = {
        "name": f"emu/{artifact['method']}",
        "base": dict(encoder.identity),
        "dev_accuracy": artifact.get("dev_accuracy"),
    }
    return LoadedEncoder(name=identity["name"], model=model.encoder, tokenizer=encoder.tokenizer, identity=identity)
