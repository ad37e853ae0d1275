"""Correlation of similarity scores with human judgements."""

from __future__ import annotations

import numpy as np
from scipy import stats

from language_agnostic.evaluation.retrieval import normalise_rows


def pearson(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Pearson's r (scipy) between predictions and gold scores."""
    predicted, gold = np.asarray(predicted, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    if predicted.shape != gold.shape or predicted.ndim != 1 or len(predicted) < 2:
        raise ValueError(f"need two aligned 1-d arrays of at least 2 values, got {predicted.shape} and {gold.shape}")
    return float(stats.pearsonr(predicted, gold).statistic)


def paired_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of row ``i`` of ``a`` with row ``i`` of ``b``."""
    return (normalise_rows(a) * normalise_rows(b)).sum(axis=1)
