"""Language-leakage probe: how well a linear classifier recovers the language from embeddings.

Trained on one set of embeddings and scored on another: low accuracy on meaning embeddings
means little language information left in them; high accuracy on language embeddings means
the language went where it should.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler


def language_probe_accuracy(
    train_vectors: np.ndarray,
    train_languages: Sequence[str],
    test_vectors: np.ndarray,
    test_languages: Sequence[str],
    seed: int = 0,
    max_iter: int = 2000,
) -> float:
    """Accuracy of a logistic-regression language classifier (features standardised on train).

    Raises:
        ValueError: when the training set has fewer than two languages, or the test set has a
            language the classifier never saw.
    """
    train_languages, test_languages = np.asarray(train_languages), np.asarray(test_languages)
    seen = {str(x) for x in np.unique(train_languages)}
    if len(seen) < 2:
        raise ValueError(f"the probe needs at least two languages in training, got {sorted(seen)}")
    unseen = sorted({str(x) for x in np.unique(test_languages)} - seen)
    if unseen:
        raise ValueError(f"test language(s) {unseen} not in the probe's training data {sorted(seen)}")
    scaler = StandardScaler().fit(train_vectors)
    probe = LogisticRegression(max_iter=max_iter, random_state=seed)
    probe.fit(scaler.transform(train_vectors), train_languages)
    return float((probe.predict(scaler.transform(test_vectors)) == test_languages).mean())
