"""Nodes of the ``tatoeba`` pipeline: thin adapters over ``corpora``, ``methods``, ``encoders``,
``evaluation`` and ``reporting``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import pandas as pd

from language_agnostic.corpora.tatoeba import ingest_tatoeba, text_index
from language_agnostic.encoders.extraction import EmbeddingStore, extract_embeddings, extraction_settings
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.tatoeba import evaluate_tatoeba
from language_agnostic.methods.apply import (
    SOURCES,
    ModelSpec,
    expected_models,
    load_models,
    model_sections,
    only_models,
    spec_rows,
    training_languages,
)
from language_agnostic.reporting import tatoeba as report

logger = logging.getLogger(__name__)


def plan_tatoeba_models(
    models: Mapping[str, Any],
    *sections: Mapping[str, Any],
) -> dict[str, Any]:
    """The models the configured pipelines train and the languages of each training source, from their parameters.

    Args:
        models: ``tatoeba.models``: ``sources`` (which pipelines' models) and ``only`` (``null``, or
            the ``<method>@<source>`` names to keep); validated by ``parameters.tatoeba.Models`` when the run starts.
        *sections: The parameter sections of ``methods/apply.py:MODEL_SECTIONS`` (qe, sts, massive, fmda,
            fmda_paper, emu), in that order.

    Returns:
        ``{"sources": {source: [ISO 639-3]}, "models": [ModelSpec as dict]}`` (JSON-able).
    """
    models = dict(models or {})
    sources = [str(s) for s in models.get("sources") or SOURCES]
    params = model_sections(sections)
    languages = training_languages(params, sources)
    specs = only_models(expected_models(params, sources), models.get("only"), "tatoeba.models.only")
    logger.info("tatoeba: %d models expected from %s; training languages %s", len(specs), sources, languages)
    return {"sources": languages, "models": [asdict(s) for s in specs]}


def ingest_tatoeba_pairs(
    files: Any, params: Mapping[str, Any], plan: Mapping[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """``tatoeba/v1`` → the pairs, the rejects, the languages (codes, script, seen) and the counts."""
    return ingest_tatoeba(files, params, plan["sources"])


def load_tatoeba_models(shelf: Any, plan: Mapping[str, Any], identity: Mapping[str, Any]) -> dict[str, Any]:
    """The planned models found in ``data/06_models`` (the others skipped with a warning naming the file
    and command).
    """
    specs = [ModelSpec(**spec) for spec in plan["models"]]
    loaded, skipped = load_models(shelf, specs, plan["sources"], identity)
    return {"models": loaded, "skipped": skipped}


def embed_tatoeba_texts(
    pairs: pd.DataFrame,
    encoder: LoadedEncoder,
    store: EmbeddingStore,
    extraction: Mapping[str, Any],
    models: Mapping[str, Any],
) -> dict[str, Any]:
    """The configured encoder's vectors of every distinct Tatoeba sentence, via the cache
    (token states when FMDA is evaluated).
    """
    texts, _, _ = text_index(pairs)
    token_states = any(m.spec.kind == "fmda" for m in models["models"])
    entry = extract_embeddings(encoder, texts, extraction_settings(extraction, token_states=token_states), store)
    logger.info(
        "tatoeba: %d distinct sentences of %d pairs embedded (token states: %s)", len(texts), len(pairs), token_states
    )
    return {"sets": {"raw": entry}, "n_texts": len(texts), "n_pairs": len(pairs)}


def embed_tatoeba_finetuned(
    pairs: pd.DataFrame, shelf: Any, store: EmbeddingStore, extraction: Mapping[str, Any], models: Mapping[str, Any]
) -> dict[str, Any]:
    """Each fine-tuned encoder's vectors of the same sentences, via the same cache (keyed on that encoder's weights)."""
    texts, _, _ = text_index(pairs)
    sets = {}
    for model in models["models"]:
        if model.spec.kind != "encoder":
            continue
        encoder = shelf.encoder(model.spec.path)
        sets[model.spec.name] = extract_embeddings(encoder, texts, extraction_settings(extraction), store)
        del encoder  # a 118M-parameter model: free it before the next one
    return {"sets": sets, "n_texts": len(texts)}


def evaluate_tatoeba_node(
    pairs: pd.DataFrame,
    raw: Mapping[str, Any],
    finetuned: Mapping[str, Any],
    models: Mapping[str, Any],
    evaluation: Mapping[str, Any],
) -> pd.DataFrame:
    """Accuracy@1 of every method on every language, both directions, cosine and ratio margin.

    ``evaluation`` (``tatoeba.evaluation``) is validated by ``parameters.tatoeba.Evaluation`` when the run starts.
    """
    evaluation = dict(evaluation or {})
    return evaluate_tatoeba(
        pairs,
        raw["sets"]["raw"],
        finetuned["sets"],
        models["models"],
        [str(p) for p in evaluation.get("poolings", ["mean", "cls"])],
        int(evaluation.get("margin_k", 4)),
        bool(evaluation.get("progress", True)),
    )


def report_tatoeba(
    scores: pd.DataFrame,
    languages: pd.DataFrame,
    models: Mapping[str, Any],
    counts: Mapping[str, Any],
    identity: Mapping[str, Any],
    evaluation: Mapping[str, Any],
    params: Mapping[str, Any],
) -> tuple[pd.DataFrame, dict[str, Any], str, pd.DataFrame]:
    """The metrics-table rows, MLflow metrics (counts, averages), the markdown report and the per-language table."""
    rows = spec_rows(models["models"])
    markdown = report.tatoeba_markdown(
        scores,
        languages,
        counts,
        rows,
        models["skipped"],
        identity,
        {**dict(params or {}), "margin_k": int(evaluation.get("margin_k", 4))},
    )
    wide = report.per_language(scores).merge(languages, on="language", how="left")
    return (
        report.metric_rows(scores, str(identity.get("name"))),
        report.mlflow_metrics(scores, languages, counts, rows),
        markdown,
        wide,
    )


def plot_tatoeba_node(
    scores: pd.DataFrame, languages: pd.DataFrame, models: Mapping[str, Any], figure: Mapping[str, Any]
) -> Any:
    """The per-language figure of ``tatoeba.figure.methods`` (``auto``: raw/mean and each training source's best).

    ``figure`` (``tatoeba.figure``) is validated by ``parameters.tatoeba.Figure`` when the run starts.
    """
    figure = dict(figure or {})
    methods = figure.get("methods", "auto")
    if methods == "auto":
        methods = report.auto_figure_methods(scores, spec_rows(models["models"]))
    return report.plot_tatoeba(scores, languages, [str(m) for m in methods], str(figure.get("scoring", "cosine")))
