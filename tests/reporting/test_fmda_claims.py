"""FMDA's Table 2 claims over seeds (``--env=fmda_seeds``), from hand-made cells."""

from __future__ import annotations

from language_agnostic.reporting.claims import seed_runs
from language_agnostic.reporting.fmda import claims_rows

EN, DE = "en-US", "de-DE"


def _cell(method: str, metric: str = "accuracy@1", emb: str = "m") -> tuple[str, ...]:
    return (method, emb, "cross_lingual_retrieval", "", EN, DE, metric)


def _cells(runs: dict[str, tuple[float, float]]) -> dict[tuple[str, ...], float]:
    cells = {_cell("centering", emb="mean"): 0.70}
    for method, (accuracy, p) in runs.items():
        cells[_cell(method)] = accuracy
        cells[_cell(method, "mcnemar_p_vs_centering")] = p
    return cells


def test_seed_runs_of_fmda_variants_and_emu_methods():
    names = ["fmda", "fmda-seed1", "fmda-seed2", "fmda-infonce", "fmda-infonce_seed1", "emu-no_ld-seed2021", "seed"]
    assert seed_runs(names) == {
        "fmda": {"": "fmda", "1": "fmda-seed1", "2": "fmda-seed2"},
        "fmda-infonce": {"": "fmda-infonce", "1": "fmda-infonce_seed1"},
        "emu-no_ld": {"2021": "emu-no_ld-seed2021"},
        "seed": {"": "seed"},  # SEED the method, not a seed run
    }


def test_three_seeds_one_not_significant_is_a_tie_with_mean_sd_and_largest_p():
    cells = _cells({"fmda": (0.75, 0.001), "fmda-seed1": (0.74, 0.01), "fmda-seed2": (0.71, 0.3)})
    (row,) = claims_rows(cells, [(EN, DE)])
    # Δ per seed 5, 4, 1 points: mean 3.33, sd sqrt(((5-3.33)² + (4-3.33)² + (1-3.33)²) / 2) = 2.08
    assert row[3:] == ["`fmda/m`", "`centering/mean`", "EN→DE", "73.33", "70.00", "+3.33 ± 2.08", "0.3", "3", "tie"]


def test_every_seed_above_with_p_at_most_005_holds_and_one_seed_is_its_own_row():
    cells = _cells({"fmda": (0.75, 0.001), "fmda-seed1": (0.74, 0.01), "fmda-seed2": (0.72, 0.05)})
    cells.update(_cells({"fmda-infonce": (0.68, 0.02)}))
    rows = {r[3]: r for r in claims_rows(cells, [(EN, DE)])}
    assert rows["`fmda/m`"][-2:] == ["3", "holds"]
    assert rows["`fmda-infonce/m`"][-4:] == ["-2.00", "0.02", "1", "fails"]
