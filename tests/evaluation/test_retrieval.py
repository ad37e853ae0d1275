"""Retrieval accuracy@1 on hand-built vectors."""

from __future__ import annotations

import numpy as np
import pytest

from language_agnostic.evaluation.retrieval import normalise_rows, retrieval_accuracy_at_1, retrieval_hits


def test_hand_computed_accuracy():
    queries = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.2]])
    keys = np.array([[2.0, 0.1], [1.0, 0.0], [1.0, 0.9], [-1.0, 0.0]])
    # q0 → k1 (exactly parallel) is wrong; q1 → k2 (cos .67) beats k0 (.05): wrong;
    # q2 → k2 (cos .9986) right; q3 → k3 (cos .98) right
    assert retrieval_accuracy_at_1(queries, keys) == 0.5
    # the other way: k0 → q0 right, k1 → q0 wrong, k2 → q2 right, k3 → q3 right
    assert retrieval_accuracy_at_1(keys, queries) == 0.75
    # the block size does not change the result
    assert retrieval_accuracy_at_1(queries, keys, block=1) == 0.5
    # per query, as the comments above say (what a paired test reads)
    assert retrieval_hits(queries, keys).tolist() == [False, False, True, True]
    assert retrieval_hits(keys, queries, block=3).tolist() == [True, False, True, True]


def test_cosine_not_dot_product():
    queries = np.array([[1.0, 0.0], [0.0, 1.0]])
    keys = np.array([[0.1, 0.0], [10.0, 9.0]])  # a long key would win a dot product
    assert retrieval_accuracy_at_1(queries, keys) == 1.0


def test_ties_go_to_the_first_key():
    queries = np.array([[1.0, 0.0], [1.0, 0.0]])
    keys = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert retrieval_accuracy_at_1(queries, keys) == 0.5


def test_shapes_and_zero_rows():
    with pytest.raises(ValueError, match=r"queries \(2, 2\) and keys \(3, 2\) must be aligned pairs"):
        retrieval_accuracy_at_1(np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="no pairs to evaluate"):
        retrieval_accuracy_at_1(np.ones((0, 2)), np.ones((0, 2)))
    np.testing.assert_allclose(normalise_rows(np.array([[0.0, 0.0], [3.0, 4.0]])), [[0.0, 0.0], [0.6, 0.8]], rtol=1e-6)
