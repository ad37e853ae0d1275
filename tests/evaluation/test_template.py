"""Template retrieval: MAP and accuracy@1 on hand-built vectors."""

from __future__ import annotations

import numpy as np
import pytest

from language_agnostic.evaluation.template import mean_average_precision, template_accuracy_at_1


def test_map_by_hand():
    sources = np.array([[1.0, 0.0], [0.0, 1.0]])
    # source 0's targets are rows 0-1, source 1's rows 2-3
    targets = np.array([[1.0, 0.1], [0.0, 1.0], [0.1, 1.0], [1.0, 0.0]])
    # source 0 ranks: row3 (1.0), row0 (.995), row2 (.0995), row1 (0) -> relevant at ranks 2, 4
    ap0 = (1 / 2 + 2 / 4) / 2
    # source 1 ranks: row1 (1.0), row2 (.995), row0 (.0995), row3 (0) -> relevant at ranks 2, 4
    ap1 = (1 / 2 + 2 / 4) / 2
    assert mean_average_precision(sources, targets, k=2) == pytest.approx((ap0 + ap1) / 2)
    assert mean_average_precision(sources, targets, k=2, block=1) == pytest.approx((ap0 + ap1) / 2)


def test_perfect_and_single_target():
    sources = np.eye(3)
    targets = np.repeat(np.eye(3), 5, axis=0) + 0.01
    assert mean_average_precision(sources, targets, k=5) == pytest.approx(1.0)
    # k = 1: MAP is the mean reciprocal rank
    swapped = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert mean_average_precision(sources, swapped, k=1) == pytest.approx((1 / 2 + 1 / 2 + 1) / 3)
    assert template_accuracy_at_1(sources, swapped) == pytest.approx(1 / 3)


def test_sizes_must_match():
    with pytest.raises(ValueError, match="5 targets for 2 sources and k=3: expected 6"):
        mean_average_precision(np.ones((2, 2)), np.ones((5, 2)), k=3)


def test_map_breaks_ties_by_position_as_a_stable_sort():
    # s0 ties t0 with t2 and t1 with t3; s1 ties t1 with t3 and t0 with t2 (targets 2i, 2i+1 belong to source i)
    sources = np.array([[1.0, 0.0], [0.0, 1.0]])
    targets = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    # s0: order t0, t2, t1, t3 -> its t0, t1 at ranks 1, 3: AP (1/1 + 2/3) / 2 = 5/6
    # s1: order t1, t3, t0, t2 -> its t2, t3 at ranks 4, 2: AP (1/2 + 2/4) / 2 = 1/2
    assert mean_average_precision(sources, targets, k=2) == pytest.approx((5 / 6 + 1 / 2) / 2)
