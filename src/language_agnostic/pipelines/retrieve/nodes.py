"""Nodes of the ``retrieve`` pipeline: thin adapters over ``corpora``, ``methods``, ``encoders`` and ``evaluation``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.corpora.user_text import read_utterances
from language_agnostic.encoders.extraction import EmbeddingStore, extract_embeddings, extraction_settings
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.neighbours import check_mode, embed, needs_token_states, neighbours_table, search
from language_agnostic.methods.trained import ModelLookupError, check_encoder, load_from_run, read_artifact

logger = logging.getLogger(__name__)


def read_texts(spec: Mapping[str, Any], where: str) -> pd.DataFrame:
    """``retrieve.queries`` / ``retrieve.corpus``: the utterances (``id``, ``text``)."""
    rows = read_utterances(spec, where)
    logger.info("%s: %d utterances from %s", where, len(rows), spec["path"])
    return rows


def load_model(model: Mapping[str, Any], mode: str, identity: Mapping[str, Any]) -> dict[str, Any]:
    """The trained model ``retrieve.model`` names (a file, or an MLflow run's artifact), checked against the encoder.

    ``model``'s keys and types are validated by ``parameters.retrieve.Model`` when the run starts.

    Returns:
        ``{"mode", "source", "saved"}``; ``saved`` is ``None`` in raw mode (no model is read).

    Raises:
        ModelLookupError: Both or neither of ``path`` and ``run_id`` in a trained mode,
            a missing or unreadable file, an unknown run or one without the model, a model of another
            encoder or one without the mode's embedding (named; a run prints the message alone).
    """
    if mode == "raw":
        check_mode(mode, None, "retrieve")
        return {"mode": mode, "source": f"the raw encoder {identity.get('name')}", "saved": None}
    path, run_id = model.get("path"), model.get("run_id")
    if bool(path) == bool(run_id):
        raise ModelLookupError(
            "retrieve.model: give exactly one of path (a trained model file) and run_id (an MLflow run)"
        )
    if run_id:
        source = f"MLflow run {run_id} ({model.get('artifact')})"
        saved = load_from_run(str(run_id), str(model.get("artifact") or ""), "retrieve.model")
    else:
        source, saved = str(path), _read_file(str(path))
    try:
        check_mode(mode, saved, "retrieve")
    except ValueError as exc:  # the mode the model cannot give: a parameter, not a bug
        raise ModelLookupError(str(exc)) from None
    check_encoder(saved, identity, source, "retrieve.model")
    logger.info("retrieve: %s embeddings of %s", mode, source)
    return {"mode": mode, "source": source, "saved": saved}


def _read_file(path: str) -> dict[str, Any]:
    """``retrieve.model.path``'s model; a missing or unreadable file is one line."""
    from pathlib import Path

    from safetensors import SafetensorError

    if not Path(path).is_file():
        raise ModelLookupError(f"retrieve.model.path: file not found: {path}")
    try:
        return read_artifact(path)
    except (OSError, ValueError, SafetensorError) as exc:
        raise ModelLookupError(
            f"retrieve.model.path: {path} cannot be read: {(str(exc).strip().splitlines() or [''])[0]}"
        ) from None


def embed_texts(
    texts: pd.DataFrame,
    model: Mapping[str, Any],
    encoder: LoadedEncoder,
    store: EmbeddingStore,
    extraction: Mapping[str, Any],
    raw_pooling: str,
) -> np.ndarray:
    """The texts' embeddings in the model's mode (encoder states cached in the embedding store)."""
    settings = extraction_settings(extraction, token_states=needs_token_states(model["mode"], model["saved"]))
    entry = extract_embeddings(encoder, texts["text"].tolist(), settings, store)
    return embed(entry, model["mode"], model["saved"], raw_pooling)


def find_neighbours(
    queries: pd.DataFrame,
    query_vectors: np.ndarray,
    corpus: pd.DataFrame,
    corpus_vectors: np.ndarray,
    top_k: int,
    how: str,
    options: Mapping[str, Any] | None,
) -> pd.DataFrame:
    """The ``top_k`` corpus utterances per query with their cosine scores (``evaluation/neighbours.py``)."""
    indices, scores = search(query_vectors, corpus_vectors, int(top_k), str(how), options, "retrieve.search")
    table = neighbours_table(queries, corpus, indices, scores)
    logger.info(
        "retrieve: %d queries x top-%d of %d utterances (%s search)", len(queries), indices.shape[1], len(corpus), how
    )
    return table
