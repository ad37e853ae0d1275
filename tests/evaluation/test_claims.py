"""The verdict rule, the paired comparison and the claims table row, by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from language_agnostic.evaluation.claims import Paired, outcomes_of, paired, paired_correlation, verdict
from language_agnostic.reporting.claims import ClaimSpec, claim_row, claims_section, columns
from language_agnostic.reporting.similarity import claims_rows, seed_runs


def test_a_verdict_needs_the_sign_and_p_in_every_seed():
    assert verdict([0.02], [0.01]) == "holds"
    assert verdict([-0.02], [0.01]) == "fails"
    assert verdict([0.02], [0.2]) == "tie"  # p > 0.05
    assert verdict([0.02, -0.01, 0.03], [0.01, 0.01, 0.01]) == "tie"  # a seed flips the sign
    assert verdict([0.02, 0.01], [0.01, 0.08]) == "tie"  # a seed's p > 0.05
    assert verdict([0.02], [None]) == "not comparable"
    # "no better": only a significant gain in every seed refutes it
    assert verdict([0.02], [0.01], "not >") == "fails"
    assert verdict([0.02], [0.3], "not >") == "holds" and verdict([-0.05], [0.001], "not >") == "holds"
    # "no worse" (a paper's "similar"): only a significant loss fails it
    assert verdict([-0.02], [0.01], "not <") == "fails"
    assert verdict([-0.02], [0.3], "not <") == "holds" and verdict([0.05], [0.001], "not <") == "holds"
    assert verdict([-0.02, -0.01], [0.01, 0.2], "not <") == "holds"  # one seed without a significant loss
    with pytest.raises(ValueError, match=r"claim direction must be one of \['>', 'not >', 'not <'\], got '<'"):
        verdict([0.1], [0.01], "<")
    with pytest.raises(ValueError, match="2 differences but 1 p-values"):
        verdict([0.1, 0.2], [0.01])


def _outcomes(method: str, correct: list[bool], queries: list[str] | None = None) -> pd.DataFrame:
    queries = queries or [str(i) for i in range(len(correct))]
    return pd.DataFrame(
        {
            "pipeline": "emu",
            "method": method,
            "task": "intent_nn",
            "source": "en-US",
            "target": "en-US",
            "query": queries,
            "correct": correct,
        }
    )


def test_paired_uses_the_shared_queries_only():
    rows = pd.concat(
        [_outcomes("a", [True] * 8 + [False] * 2), _outcomes("b", [False] * 8 + [True], list(map(str, range(9))))]
    )
    result = paired(outcomes_of(rows, "a"), outcomes_of(rows, "b"))
    # 9 shared queries: a right on 8, b on 1 (query 8: a wrong, b right); discordant 8 vs 1: exact binomial p
    assert result.n == 9 and result.method == pytest.approx(8 / 9) and result.baseline == pytest.approx(1 / 9)
    assert result.pvalue == pytest.approx(2 * (1 + 9) / 2**9)
    assert paired(outcomes_of(rows, "a"), outcomes_of(rows, "zzz")) is None


def test_a_claim_row_reports_the_mean_the_spread_the_worst_p_and_the_seeds():
    spec = ClaimSpec("A above B (Table 1)", "a", "b", "mBERT", "40.9 vs 38.0")
    row = claim_row(spec, "en-en", [Paired(0.60, 0.50, 0.001, 100), Paired(0.58, 0.50, 0.02, 100)])
    assert row == [
        "A above B (Table 1)",
        "mBERT",
        "40.9 vs 38.0",
        "`a`",
        "`b`",
        "en-en",
        "59.00",
        "50.00",
        "+9.00 ± 1.41",
        "0.02",
        "2",
        "holds",
    ]
    assert claim_row(spec, "en-en", [None])[-2:] == ["1", "not comparable"]


def test_paired_correlation_averages_each_groups_pearson_and_bootstraps_the_difference():
    rng = np.random.default_rng(0)
    gold = rng.normal(size=60)
    groups = np.repeat(["a-b", "c-d"], 30)
    good, noise = gold + rng.normal(scale=0.5, size=60), rng.normal(size=60)
    result = paired_correlation(good, noise, gold, groups, resamples=2000, seed=1)
    expected = [
        np.mean([stats.pearsonr(s[groups == g], gold[groups == g]).statistic for g in ("a-b", "c-d")])
        for s in (good, noise)
    ]
    assert (result.method, result.baseline) == pytest.approx(expected) and result.n == 60
    assert result.pvalue == pytest.approx(1 / 2000)  # every resample keeps r ≈ 0.9 above r ≈ 0
    # a perfect scorer against its mirror image: every resample's difference is exactly 2
    assert paired_correlation(gold, -gold, gold, groups, resamples=100).pvalue == pytest.approx(0.01)
    # a scorer against itself: no resample is on the other side of zero... every one is zero: p = 1
    assert paired_correlation(good, good, gold, groups, resamples=100).pvalue == 1.0
    # the same seed, the same p; a near tie gets a large p
    close = good + rng.normal(scale=0.05, size=60)
    first = paired_correlation(good, close, gold, groups, resamples=500, seed=3)
    assert first == paired_correlation(good, close, gold, groups, resamples=500, seed=3) and first.pvalue > 0.05
    with pytest.raises(ValueError, match="aligned arrays, got lengths 60, 59, 60 and 60"):
        paired_correlation(good, noise[:-1], gold, groups)
    with pytest.raises(ValueError, match="at least 3 items in every group"):
        paired_correlation(good[:32], noise[:32], gold[:32], groups[:32])


def test_correlation_claims_name_the_test_and_show_r_with_three_decimals():
    assert columns(percent=False, test="bootstrap")[6:10] == ["method r", "baseline r", "Δ r", "bootstrap p"]
    spec = ClaimSpec("A above B", "a/meaning", "b/mean", "mE5", "0.438 vs 0.357")
    row = claim_row(spec, "avg Pearson", [Paired(0.4004, 0.2701, 0.0001, 6000)], percent=False)
    assert row[6:] == ["0.400", "0.270", "+0.130", "0.0001", "1", "holds"]
    section = claims_section("Claims", "intro", [row], percent=False, test="bootstrap")
    assert "paired-bootstrap p ≤ 0.05" in section[4] and "McNemar" not in "\n".join(section)


def test_similarity_claims_are_judged_on_a_tables_average_and_skip_untrained_heads():
    rng = np.random.default_rng(0)
    gold = rng.normal(size=40)
    pairs = np.repeat(["ro-en", "et-en"], 20)

    def scores(method: str, embedding: str, cosine: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "method": method,
                "embedding": embedding,
                "pair": pairs,
                "item": np.arange(40),
                "cosine": cosine,
                "gold": gold,
            }
        )

    table = pd.concat(
        [scores("seed", "meaning", gold + rng.normal(scale=0.3, size=40)), scores("raw", "mean", rng.normal(size=40))]
    ).sample(frac=1, random_state=0)  # order must not matter
    claims = [
        {"claim": "SEED above raw", "method": "seed/meaning", "baseline": "raw/mean", "backbone": "mE5", "paper": "p"},
        {
            "claim": "raw not above SEED",
            "method": "raw/mean",
            "baseline": "seed/meaning",
            "backbone": "mE5",
            "paper": "p",
            "direction": "not >",
            "table": "only ro-en",
        },
        {"claim": "absent", "method": "meat/meaning", "baseline": "raw/mean", "backbone": "mE5", "paper": "p"},
    ]
    views = {"both": ["ro-en", "et-en"], "only ro-en": ["ro-en"]}
    rows = claims_rows(table, claims, views, {"resamples": 300, "seed": 0})
    assert [r[0] for r in rows] == ["SEED above raw", "raw not above SEED"]
    assert rows[0][5] == "avg Pearson, ro-en, et-en" and rows[0][-1] == "holds"
    assert rows[1][5] == "avg Pearson, ro-en" and rows[1][-1] == "holds"
    # seed runs among the ablations: seed N of the method against seed N of a trained baseline, or the same raw baseline
    table = pd.concat(
        [
            table,
            scores("seed_seed1", "meaning", gold + rng.normal(scale=0.3, size=40)),
            scores("meat", "meaning", rng.normal(size=40)),
        ]
    )
    ablations = {
        "seed_seed1": {"method": "seed", "loss_weights": {}, "seed": 1},
        "seed_without_lc": {"method": "seed", "loss_weights": {"cross": 0.0}, "seed": None},
    }
    seeded = claims_rows(
        table,
        claims[:1] + [{**claims[0], "claim": "SEED above MEAT", "baseline": "meat/meaning"}],
        views,
        {"resamples": 300, "seed": 0},
        ablations,
    )
    assert [r[-2] for r in seeded] == ["2", "1"]  # MEAT has no seed-1 run: only the configured seeds are paired
    assert " ± " in seeded[0][8] and " ± " not in seeded[1][8]
    # a loss ablation's seed runs pair with the base's seed runs (DREAM Table 6 with seeds)
    ablations = {
        "seed_seed1": {"method": "seed", "loss_weights": {}, "seed": 1},
        "seed_without_lc": {"method": "seed", "loss_weights": {"cross": 0.0}, "seed": None},
        "seed_without_lc_seed1": {"method": "seed", "loss_weights": {"cross": 0.0}, "seed": 1},
        "seed_without_ll_seed1": {"method": "seed", "loss_weights": {"language": 0.0}, "seed": 1},  # no unseeded twin
    }
    assert seed_runs(ablations) == {"seed": {"1": "seed_seed1"}, "seed_without_lc": {"1": "seed_without_lc_seed1"}}
    table = pd.concat(
        [
            table,
            scores("seed_without_lc", "meaning", gold + rng.normal(scale=0.6, size=40)),
            scores("seed_without_lc_seed1", "meaning", gold + rng.normal(scale=0.6, size=40)),
        ]
    )
    ablated = claims_rows(
        table,
        [{**claims[0], "claim": "L_C helps", "baseline": "seed_without_lc/meaning"}],
        views,
        {"resamples": 300, "seed": 0},
        ablations,
    )
    assert ablated[0][4] == "`seed_without_lc/meaning`" and ablated[0][-2] == "2"
    with pytest.raises(ValueError, match=r"report.claims\[0\].method: write it as method/embedding"):
        claims_rows(table, [{**claims[0], "method": "seed"}], views, {})
    with pytest.raises(ValueError, match=r"report.claims\[0\].table: 'nope' is not one of"):
        claims_rows(table, [{**claims[0], "table": "nope"}], views, {})
    with pytest.raises(ValueError, match=r"report.claims\[0\]: missing \['paper'\]"):
        claims_rows(table, [{k: v for k, v in claims[0].items() if k != "paper"}], views, {})
