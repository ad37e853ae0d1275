"""Tatoeba bitext retrieval of every method, language by language: the raw encoder, centering,
heads, FMDA, fine-tuned encoders.

Every method's embedding of a language's two sides is computed from the cached encoder
output (sentence vectors; a fine-tuned encoder's own entry; FMDA's meaning of every distinct
sentence, computed once from the token states and cached beside them), then
scored by :func:`evaluation.bitext.bitext_accuracies` in both directions and both scorings.
Languages are the outer loop, so only one language's embeddings are ever held in memory
(every method's embedding of all 158k sentences at once would take gigabytes; the cached FMDA
tables are memory-mapped).

Mean centering subtracts per-language means estimated on a pipeline's training corpus, never
on the test set; a language without such a mean (every language the QE/STS corpora do not
hold) has no centering row: centering is not applicable to unseen languages.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from language_agnostic.corpora.languages import to_iso639_3
from language_agnostic.corpora.tatoeba import text_index
from language_agnostic.encoders.extraction import texts_sha256
from language_agnostic.evaluation.bitext import bitext_accuracies
from language_agnostic.methods.apply import LoadedModel, fmda_meaning_table, head_meaning

logger = logging.getLogger(__name__)

SCORE_COLUMNS = ["method", "embedding", "language", "source", "target", "scoring", "n", "correct", "accuracy"]
PIVOT = "eng"


def check_entry(entry: Any, texts: Sequence[str], name: str) -> None:
    """Stop when a store entry does not hold exactly ``texts`` (a manifest left by a run on other data)."""
    if entry.meta.get("texts_sha256") != texts_sha256(texts):
        raise ValueError(
            f"the {name} embeddings ({entry.directory}) are of other texts than the Tatoeba pairs; "
            "rerun the embedding node (kedro run --pipelines=tatoeba)"
        )


def _centering_means(model: LoadedModel) -> dict[str, np.ndarray]:
    return {code: mean for key, mean in model.module.items() if (code := to_iso639_3(key))}


def language_embeddings(
    finetuned: Mapping[str, Any],
    models: Sequence[LoadedModel],
    poolings: Sequence[str],
    language: str,
    xxx: np.ndarray,
    eng: np.ndarray,
    vectors: Mapping[str, np.ndarray],
    meanings: Mapping[str, np.ndarray],
) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """Every method's ``(xxx side, English side)`` embeddings of one language.

    Args:
        finetuned: ``{model name: store entry}`` of each fine-tuned encoder.
        models: The loaded models (``methods/apply.py:load_models``).
        poolings: The raw encoder's poolings to score.
        language: The ISO 639-3 code of the non-English side.
        xxx: Positions of its sentences in the distinct texts.
        eng: Positions of their English translations.
        vectors: ``{pooling: (n_texts, d)}`` of the configured encoder (opened once by the caller).
        meanings: ``{FMDA model name: (n_texts, d)}`` (``methods/apply.py:fmda_meaning_table``).

    Returns:
        ``{(method, embedding): (X, E)}``; centering only where both languages have a training mean.
    """
    out: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    for pooling in poolings:
        out[("raw", pooling)] = (np.asarray(vectors[pooling][xxx]), np.asarray(vectors[pooling][eng]))
    for model in models:
        key = (model.spec.name, model.spec.embedding)
        if model.spec.kind == "fmda":
            table = meanings[model.spec.name]
            out[key] = (np.asarray(table[xxx], dtype=np.float32), np.asarray(table[eng], dtype=np.float32))
        elif model.spec.kind == "head":
            out[key] = (
                head_meaning(model, vectors[model.pooling][xxx]),
                head_meaning(model, vectors[model.pooling][eng]),
            )
        elif model.spec.kind == "centering":
            means = _centering_means(model)
            if language in means and PIVOT in means:
                out[key] = (
                    np.asarray(vectors[model.pooling][xxx]) - means[language],
                    np.asarray(vectors[model.pooling][eng]) - means[PIVOT],
                )
        elif model.spec.kind == "encoder":
            own = finetuned[model.spec.name].vectors(model.pooling)
            out[key] = (np.asarray(own[xxx]), np.asarray(own[eng]))
    return out


def evaluate_tatoeba(
    pairs: pd.DataFrame,
    raw: Any,
    finetuned: Mapping[str, Any],
    models: Sequence[LoadedModel],
    poolings: Sequence[str],
    k: int = 4,
    progress: bool = True,
) -> pd.DataFrame:
    """Accuracy@1 of every method on every language, both directions, cosine and ratio margin.

    Args:
        pairs: The Tatoeba pairs (``corpora/tatoeba.py:PAIR_COLUMNS``).
        raw: The configured encoder's store entry of the distinct texts (``text_index`` order).
        finetuned: ``{model name: store entry}`` of each fine-tuned encoder, same texts.
        models: The loaded models.
        poolings: The raw encoder's poolings (``cls``, ``mean``).
        k: The ratio margin's neighbourhood.
        progress: Show a progress bar over languages.

    Returns:
        :data:`SCORE_COLUMNS`: one row per method, embedding, language, direction
        (``source`` → ``target``: the query side and the side searched) and scoring.
    """
    texts, xxx_index, eng_index = text_index(pairs)
    check_entry(raw, texts, "raw encoder")
    for name, entry in finetuned.items():
        check_entry(entry, texts, name)
    needed = {*poolings, *(m.pooling for m in models if m.spec.kind in ("head", "centering"))}
    vectors = {pooling: raw.vectors(pooling) for pooling in sorted(needed)}
    fmda = [m for m in models if m.spec.kind == "fmda"]
    # each FMDA over every distinct sentence once (cached): per language, English sentences would repeat
    meanings = {
        m.spec.name: fmda_meaning_table(m, raw)
        for m in tqdm(fmda, desc="FMDA meaning", unit="model", disable=not progress or not fmda)
    }
    rows = []
    languages = list(dict.fromkeys(pairs["language"]))
    for language in tqdm(languages, desc="tatoeba languages", unit="language", disable=not progress):
        mask = (pairs["language"] == language).to_numpy()
        xxx, eng = xxx_index[mask], eng_index[mask]
        for (method, embedding), (x, e) in language_embeddings(
            finetuned, models, poolings, language, xxx, eng, vectors, meanings
        ).items():
            for (direction, scoring), accuracy in bitext_accuracies(x, e, k).items():
                source, target = (language, PIVOT) if direction == "x>y" else (PIVOT, language)
                rows.append(
                    [
                        method,
                        embedding,
                        language,
                        source,
                        target,
                        scoring,
                        len(xxx),
                        int(round(accuracy * len(xxx))),
                        accuracy,
                    ]
                )
    table = pd.DataFrame(rows, columns=SCORE_COLUMNS)
    logger.info(
        "tatoeba: %d scores for %d methods on %d languages",
        len(table),
        table[["method", "embedding"]].drop_duplicates().shape[0],
        len(languages),
    )
    return table
