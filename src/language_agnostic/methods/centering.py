"""Per-language mean centering: subtract each language's mean embedding (a training-free baseline).

The means are estimated on training data only and then applied to evaluation data, so no
test statistics leak into the baseline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def fit_language_means(vectors: np.ndarray, languages: Sequence[str]) -> dict[str, np.ndarray]:
    """Mean vector of each language.

    Args:
        vectors: ``(n, d)`` training embeddings.
        languages: The language of each row.

    Returns:
        ``{language: (d,) mean}``.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    languages = np.asarray(languages)
    if len(vectors) != len(languages):
        raise ValueError(f"{len(vectors)} vectors but {len(languages)} language labels")
    return {str(lang): vectors[languages == lang].mean(axis=0) for lang in np.unique(languages)}


def center(vectors: np.ndarray, languages: Sequence[str], means: Mapping[str, np.ndarray]) -> np.ndarray:
    """Subtract each row's language mean.

    Raises:
        KeyError: for a language without a fitted mean (named in the message).
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    languages = np.asarray(languages)
    missing = sorted(set(map(str, np.unique(languages))) - set(means))
    if missing:
        raise KeyError(f"no training mean for language(s) {missing}; fitted: {sorted(means)}")
    out = vectors.copy()
    for lang in np.unique(languages):
        out[languages == lang] -= means[str(lang)]
    return out.astype(np.float32)
