"""The verdict rule, the paired comparison and the claims table row, by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from language_agnostic.evaluation.claims import Paired, outcomes_of, paired, verdict
from language_agnostic.reporting.claims import ClaimSpec, claim_row


def test_a_verdict_needs_the_sign_and_p_in_every_seed():
    assert verdict([0.02], [0.01]) == "holds"
    assert verdict([-0.02], [0.01]) == "fails"
    assert verdict([0.02], [0.2]) == "tie"                        # p > 0.05
    assert verdict([0.02, -0.01, 0.03], [0.01, 0.01, 0.01]) == "tie"  # a seed flips the sign
    assert verdict([0.02, 0.01], [0.01, 0.08]) == "tie"           # a seed's p > 0.05
    assert verdict([0.02], [None]) == "not comparable"
    # "no better": only a significant gain in every seed refutes it
    assert verdict([0.02], [0.01], "not >") == "fails"
    assert verdict([0.02], [0.3], "not >") == "holds" and verdict([-0.05], [0.001], "not >") == "holds"
    with pytest.raises(ValueError, match=r"claim direction must be one of \['>', 'not >'\], got '<'"):
        verdict([0.1], [0.01], "<")
    with pytest.raises(ValueError, match="2 differences but 1 p-values"):
        verdict([0.1, 0.2], [0.01])


def _outcomes(method: str, correct: list[bool], queries: list[str] | None = None) -> pd.DataFrame:
    queries = queries or [str(i) for i in range(len(correct))]
    return pd.DataFrame({"pipeline": "emu", "method": method, "task": "intent_nn", "source": "en-US", "target": "en-US",
                         "query": queries, "correct": correct})


def test_paired_uses_the_shared_queries_only():
    rows = pd.concat([_outcomes("a", [True] * 8 + [False] * 2), _outcomes("b", [False] * 8 + [True], list(map(str, range(9))))])
    result = paired(outcomes_of(rows, "a"), outcomes_of(rows, "b"))
    # 9 shared queries: a right on 8, b on 1 (query 8: a wrong, b right); discordant 8 vs 1: exact binomial p
    assert result.n == 9 and result.method == pytest.approx(8 / 9) and result.baseline == pytest.approx(1 / 9)
    assert result.pvalue == pytest.approx(2 * (1 + 9) / 2**9)
    assert paired(outcomes_of(rows, "a"), outcomes_of(rows, "zzz")) is None


def test_a_claim_row_reports_the_mean_the_spread_the_worst_p_and_the_seeds():
    spec = ClaimSpec("A above B (Table 1)", "a", "b", "mBERT", "40.9 vs 38.0")
    row = claim_row(spec, "en-en", [Paired(0.60, 0.50, 0.001, 100), Paired(0.58, 0.50, 0.02, 100)])
    assert row == ["A above B (Table 1)", "mBERT", "40.9 vs 38.0", "`a`", "`b`", "en-en", "59.00", "50.00",
                   "+9.00 ± 1.41", "0.02", "2", "holds"]
    assert claim_row(spec, "en-en", [None])[-2:] == ["1", "not comparable"]
