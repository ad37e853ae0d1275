"""The ``slu`` report's LAJ-MCL layouts (Tables 2, 4, 15, 5, 6, 10) on hand-made rows, and Figure 3's sample."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from language_agnostic.reporting.figures import parallel_intent_sample, plot_parallel_tsne
from language_agnostic.reporting.slu import budget_rows, ordered_methods, slu_tables

LOCALES = ("en-US", "de-DE", "ja-JP")


def _rows(values: dict[str, dict[str, tuple[float, float, float]]]) -> pd.DataFrame:
    """``{method: {metric: (en, de, ja)}}`` as metric rows."""
    return pd.DataFrame(
        [
            {"method": m, "task": "slu", "target": loc, "metric": metric, "value": v}
            for m, metrics in values.items()
            for metric, per in metrics.items()
            for loc, v in zip(LOCALES, per)
        ]
    )


def _three(em: tuple[float, float, float]) -> dict[str, tuple[float, float, float]]:
    return {"exact_match": em, "intent_accuracy": (0.9, 0.6, 0.3), "slot_f1": (0.8, 0.5, 0.2)}


def test_only_the_tables_of_methods_run_are_written():
    markdown = slu_tables(_rows({"zsjoint": _three((0.9, 0.5, 0.2)), "cosda": _three((0.8, 0.6, 0.4))}), "en-US")
    # Table 2: the paper's Avg. over every locale, en included: (0.9 + 0.5 + 0.2) / 3; EN rows before EN+CS
    assert "| EN | ZSJoint (`zsjoint`) | 60.00 | 50.00 | 53.33 |" in markdown
    assert markdown.index("ZSJoint (`zsjoint`)") < markdown.index("CoSDA-ML (`cosda`)")
    for absent in ("Table 4", "Table 15", "Table 5", "Table 6", "Table 10"):
        assert f"## {absent} layout" not in markdown


def test_the_ablation_tables_follow_the_papers_rows():
    rows = _rows(
        {
            "lajmcl-laj_budget": _three((0.9, 0.6, 0.3)),
            "lajmcl": _three((0.1, 0.1, 0.1)),  # the default run's budget: not an ablation reference
            "lajoint-cs+scl+wcl": _three((0.9, 0.3, 0.3)),
            "lajoint-cs+ucl": _three((0.6, 0.6, 0.6)),
            "lajoint-no_projector": _three((0.3, 0.3, 0.3)),
        }
    )
    markdown = slu_tables(rows, "en-US")
    table4 = markdown.split("## Table 4 layout")[1].split("##")[0]
    labels = [
        line.split("|")[1].strip() for line in table4.splitlines() if line.startswith("| ") and "run as" not in line
    ]
    assert labels == ["− Projector", "+ UCL", "+ SCL&WCL", "+ MCL"]
    assert "| + SCL&WCL | `lajoint-cs+scl+wcl` | 60.00 | 50.00 | 50.00 |" in table4
    assert "| + MCL | `lajmcl-laj_budget` |" in table4 and "`lajmcl` " not in table4
    table15 = markdown.split("## Table 15 layout")[1]
    assert "| + UCL | 60.00 | 60.00 | 60.00 | 60.00 |" in table15 and "| method | en | de | ja | avg (all) |" in table15
    assert ordered_methods(["zz", "lajmcl", "lajoint-cs+ucl", "zsjoint-laj_budget", "zsjoint"]) == [
        "zsjoint",
        "lajmcl",
        "zsjoint-laj_budget",
        "lajoint-cs+ucl",
        "zz",
    ]


def test_slot_errors_grid_and_runtime():
    errors = {
        loc: {"utterance": n, "slot_num": 1, "slot_type": 2, "slot_bound": 0, "slot_both": 3}
        for loc, n in zip(LOCALES, (4, 5, 8))
    }
    details = [
        {
            "method": "lajmcl",
            "slot_errors": errors,
            "train_seconds_per_epoch": 123.44,
            "epochs_run": 2,
            "inference_seconds": {"en-US": 1.0, "de-DE": 2.0, "ja-JP": 3.0},
            "n_test": dict.fromkeys(LOCALES, 10),
        },
        {"method": "zsjoint", "slot_errors": {}, "train_seconds_per_epoch": None, "inference_seconds": {}},
    ]
    grid = {"a": (5, 0), "b": (5, 20), "c": (10, 20), "d": (10, 10)}
    rows = _rows(
        {
            "lajmcl": _three((0.9, 0.6, 0.3)),
            "a": _three((0.3, 0.3, 0.3)),
            "b": _three((0.6, 0.6, 0.3)),
            "c": _three((0.9, 0.9, 0.9)),
            "d": _three((0.0, 0.3, 0.6)),
        }
    )
    markdown = slu_tables(rows, "en-US", details=details, grid=grid)
    table5 = markdown.split("## Table 5 layout")[1].split("## Table")[0]
    # avg over the non-en locales, as the paper's Table 5 averages its target languages
    assert "| #utterance | 4 | 5 | 8 | 6.5 |" in table5 and "| †slot_both | 3 | 3 | 3 | 3.0 |" in table5
    assert "### `zsjoint`" not in table5
    table6 = markdown.split("## Table 6 layout")[1].split("## Table")[0]
    assert "|  | p_v = 0 | p_v = 10 | p_v = 20 |" in table6
    assert "| p_s = 5 | 30.00 | — | 50.00 |" in table6 and "| p_s = 10 | — | 30.00 | 90.00 |" in table6
    table10 = markdown.split("## Table 10 layout")[1]
    assert "| `lajmcl` | 123.4 | 2 | 2.0 | 10 |" in table10 and "`zsjoint`" not in table10


def test_figure_3_takes_the_same_ids_of_one_intent_in_every_locale():
    rows = pd.DataFrame(
        [
            {"locale": loc, "id": str(i), "partition": "test", "intent": "play_music" if i % 2 else "alarm_set"}
            for loc in LOCALES
            for i in range(20)
        ]
        + [
            {"locale": "en-US", "id": "99", "partition": "test", "intent": "play_music"},  # en only: never taken
            {"locale": "de-DE", "id": "1", "partition": "train", "intent": "play_music"},
        ]
    )
    ids = parallel_intent_sample(rows, list(LOCALES), "play_music", 4, seed=0, source="en-US")
    assert len(ids) == 4 and all(int(i) % 2 for i in ids) and ids == sorted(ids, key=int)
    assert ids == parallel_intent_sample(rows, list(LOCALES), "play_music", 4, seed=0, source="en-US")
    assert len(parallel_intent_sample(rows, list(LOCALES), "play_music", 100, seed=0, source="en-US")) == 10
    with pytest.raises(ValueError, match="slu.figure.intent 'nope'"):
        parallel_intent_sample(rows, list(LOCALES), "nope", 4, seed=0, source="en-US")
    with pytest.raises(ValueError, match="slu.figure.locales: 'fr-FR' has no test utterances"):
        parallel_intent_sample(rows, ["fr-FR"], "play_music", 4, seed=0, source="en-US")
    rng = np.random.default_rng(0)
    fig = plot_parallel_tsne(
        {
            "zsjoint": {loc: rng.normal(size=(10, 8)) for loc in LOCALES},
            "lajmcl": {loc: rng.normal(size=(10, 8)) for loc in LOCALES},
        },
        {"intent": "play_music"},
    )
    assert len(fig.axes) == 2


def _claims(markdown: str) -> list[list[str]]:
    """Claim, method, baseline, method %, baseline %, Δ, p, seeds, verdict of each claims row."""
    section = markdown.split("## Claims (LAJ-MCL), as measured")[1]
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("| claim |")
    ]
    return [[r[0], r[3], r[4], *r[6:]] for r in rows]


def _backbones(markdown: str) -> dict[str, str]:
    section = markdown.split("## Claims (LAJ-MCL), as measured")[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| ")]
    return {r[0]: r[1] for r in rows[1:]}


ZS = "ZSJoint above LAJoint on XLM-R (Tables 2, 3; the text's mBERT claim is the reverse, §4.3)"


def test_the_claims_compare_average_em_over_the_non_training_locales():
    # EM over de, ja: lajoint (0.5 + 0.3) / 2 = 0.40, zsjoint 0.45; at the laj budget lajoint 0.20, zsjoint 0.30;
    # lajoint-cs+ucl 0.20 vs lajoint-cs at the laj budget 0.25
    rows = _rows(
        {
            "lajoint": _three((0.9, 0.5, 0.3)),
            "lajoint-laj_budget": _three((0.9, 0.2, 0.2)),
            "zsjoint-laj_budget": _three((0.1, 0.4, 0.2)),
            "zsjoint": _three((0.9, 0.6, 0.3)),
            "lajoint-cs-laj_budget": _three((0.9, 0.3, 0.2)),
            "lajoint-cs+ucl": _three((0.9, 0.2, 0.2)),
        }
    )
    markdown = slu_tables(rows, "en-US")
    # no per-utterance outcomes: the metrics table's averages, no test, not comparable; a main comparison
    # at each budget, never across
    assert _claims(markdown) == [
        [ZS, "`zsjoint` (this run)", "`lajoint` (this run)", "45.00", "40.00", "+5.00", "—", "1", "not comparable"],
        [
            ZS,
            "`zsjoint-laj_budget` (this run)",
            "`lajoint-laj_budget` (this run)",
            "30.00",
            "20.00",
            "+10.00",
            "—",
            "1",
            "not comparable",
        ],
        [
            "UCL > LAJoint+CS (§4.5, Table 4)",
            "`lajoint-cs+ucl` (this run)",
            "`lajoint-cs-laj_budget` (this run)",
            "20.00",
            "25.00",
            "-5.00",
            "—",
            "1",
            "not comparable",
        ],
    ]
    # each claim names the backbone the paper made it on: the XLM-R rows for ZSJoint vs LAJoint, mBERT for Table 4
    assert _backbones(markdown) == {ZS: "XLM-R base (Tables 2, 3)", "UCL > LAJoint+CS (§4.5, Table 4)": "mBERT only"}
    # no pair present: no section
    assert "## Claims" not in slu_tables(_rows({"lajoint": _three((0.9, 0.5, 0.3))}), "en-US")


def _outcomes(method: str, de: list[bool], ja: list[bool]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "pipeline": "slu",
                "method": method,
                "task": "slu_exact_match",
                "source": "",
                "target": loc,
                "query": str(i),
                "correct": c,
            }
            for loc, hits in (("de-DE", de), ("ja-JP", ja))
            for i, c in enumerate(hits)
        ]
    )


def test_the_claims_are_paired_on_the_utterances_with_mcnemar():
    rows = _rows({"lajmcl": _three((0.9, 0.9, 0.9)), "lajoint-cs": _three((0.9, 0.1, 0.1))})
    # lajmcl right on all 20 de + ja utterances, lajoint-cs on 2: 18 discordant, all one way: p = 2 / 2^18
    outcomes = pd.concat(
        [
            _outcomes("lajmcl", [True] * 10, [True] * 10),
            _outcomes("lajoint-cs", [True] + [False] * 9, [True] + [False] * 9),
            _outcomes("lajoint-cs", [True] * 10, [True] * 10).assign(task="other"),
        ]
    )  # another task: ignored
    assert _claims(slu_tables(rows, "en-US", outcomes=outcomes)) == [
        [
            "MCL > w/o MCL (§4.3, Tables 2, 3)",
            "`lajmcl` (this run)",
            "`lajoint-cs` (this run)",
            "100.00",
            "10.00",
            "+90.00",
            f"{2 / 2**18:.2g}",
            "1",
            "holds",
        ]
    ]
    # a few utterances apart: a tie
    close = pd.concat(
        [
            _outcomes("lajmcl", [True] * 6 + [False] * 4, [True] * 5 + [False] * 5),
            _outcomes("lajoint-cs", [True] * 5 + [False] * 5, [True] * 5 + [False] * 5),
        ]
    )
    assert _claims(slu_tables(rows, "en-US", outcomes=close))[0][3:] == ["55.00", "50.00", "+5.00", "1", "1", "tie"]


def test_the_ablation_claims_compare_each_method_with_what_it_adds_to():
    # the ablations' references are at their budget (laj). EM over de, ja: lajoint 0.40 vs − Comp&Proj 0.45;
    # lajmcl 0.35 vs lajoint-cs 0.25 and vs +UCL&WCL 0.40
    rows = _rows(
        {
            "lajoint-laj_budget": _three((0.9, 0.5, 0.3)),
            "lajoint-no_comp_proj": _three((0.9, 0.6, 0.3)),
            "lajoint-cs-laj_budget": _three((0.9, 0.3, 0.2)),
            "lajmcl-laj_budget": _three((0.9, 0.4, 0.3)),
            "lajoint-cs+ucl+wcl": _three((0.9, 0.4, 0.4)),
        }
    )
    assert [r[:6] for r in _claims(slu_tables(rows, "en-US"))] == [
        [
            "MCL > w/o MCL (§4.3, Tables 2, 3)",
            "`lajmcl-laj_budget` (this run)",
            "`lajoint-cs-laj_budget` (this run)",
            "35.00",
            "25.00",
            "+10.00",
        ],
        [
            "LAJoint > − Comp&Proj (§4.5, Table 4)",
            "`lajoint-laj_budget` (this run)",
            "`lajoint-no_comp_proj` (this run)",
            "40.00",
            "45.00",
            "-5.00",
        ],
        [
            "UCL&WCL > LAJoint+CS (§4.5, Table 4)",
            "`lajoint-cs+ucl+wcl` (this run)",
            "`lajoint-cs-laj_budget` (this run)",
            "40.00",
            "25.00",
            "+15.00",
        ],
        [
            "MCL > any two levels (§4.5, Table 4)",
            "`lajmcl-laj_budget` (this run)",
            "`lajoint-cs+ucl+wcl` (this run)",
            "35.00",
            "40.00",
            "-5.00",
        ],
    ]


def test_a_claims_baseline_not_trained_in_this_run_comes_from_the_earlier_metrics_table():
    rows = _rows({"lajoint-cs+scl": _three((0.9, 0.5, 0.5))}).assign(encoder="e5", source="en-US")
    earlier = pd.concat(
        [
            _rows({"lajoint-cs-laj_budget": _three((0.9, 0.4, 0.2))}).assign(
                encoder="e5", source="en-US", run_id="abcdef0123456789"
            ),
            # another encoder, and a method this run trained: neither is taken
            _rows({"lajoint-cs-laj_budget": _three((0.0, 0.0, 0.0))}).assign(
                encoder="other", source="en-US", run_id="x" * 16
            ),
            _rows({"lajoint-cs+scl": _three((0.0, 0.0, 0.0))}).assign(encoder="e5", source="en-US", run_id="y" * 16),
        ],
        ignore_index=True,
    )
    claims = _claims(slu_tables(rows, "en-US", earlier=earlier))
    assert claims == [
        [
            "SCL > LAJoint+CS (§4.5, Table 4)",
            "`lajoint-cs+scl` (this run)",
            "`lajoint-cs-laj_budget` (run `abcdef01`)",
            "50.00",
            "30.00",
            "+20.00",
            "—",
            "1",
            "not comparable",
        ]
    ]
    # a baseline evaluated on fewer locales than this run is not compared
    partial = earlier[(earlier["target"] != "ja-JP")]
    assert "## Claims" not in slu_tables(rows, "en-US", earlier=partial)


def test_the_slot_level_readings_are_claimed_against_laj_cs_and_cosda():
    # EM over de, ja: lajoint-cs (laj budget) 0.25, lajoint-cs+scl-cos 0.30, lajmcl-cos 0.35, cosda-laj_budget 0.40
    rows = _rows(
        {
            "lajoint-cs-laj_budget": _three((0.9, 0.3, 0.2)),
            "lajoint-cs+scl-cos": _three((0.9, 0.4, 0.2)),
            "lajmcl-cos": _three((0.9, 0.4, 0.3)),
            "cosda-laj_budget": _three((0.9, 0.5, 0.3)),
        }
    )
    assert [r[:3] + r[5:6] for r in _claims(slu_tables(rows, "en-US"))] == [
        [
            "LAJoint+CS > CoSDA-ML (§4.3, Tables 2, 3)",
            "`lajoint-cs-laj_budget` (this run)",
            "`cosda-laj_budget` (this run)",
            "-15.00",
        ],
        [
            "SCL, cosine affinity > LAJoint+CS (this project's reading)",
            "`lajoint-cs+scl-cos` (this run)",
            "`lajoint-cs-laj_budget` (this run)",
            "+5.00",
        ],
        [
            "MCL, cosine SCL > w/o MCL (this project's reading)",
            "`lajmcl-cos` (this run)",
            "`lajoint-cs-laj_budget` (this run)",
            "+10.00",
        ],
        [
            "LAJ-MCL, cosine SCL > CoSDA-ML (this project's reading)",
            "`lajmcl-cos` (this run)",
            "`cosda-laj_budget` (this run)",
            "-5.00",
        ],
    ]


def test_a_claim_is_tested_once_per_seed_both_methods_hold():
    # the configured seed from an earlier run, seed 2023 from this one; seed 2024 of the baseline alone is left out
    rows = _rows(
        {
            "lajoint-laj_budget-seed2023": _three((0.9, 0.5, 0.5)),
            "lajoint-no_compressor-seed2023": _three((0.9, 0.5, 0.5)),
            "lajoint-no_compressor-seed2024": _three((0.9, 0.0, 0.0)),
        }
    ).assign(encoder="e5", source="en-US")
    earlier = _rows(
        {"lajoint-laj_budget": _three((0.9, 0.5, 0.5)), "lajoint-no_compressor": _three((0.9, 0.5, 0.5))}
    ).assign(encoder="e5", source="en-US", run_id="abcdef0123456789")
    outcomes = pd.concat(
        [
            # configured seed: 20 of 20 vs 2 of 20, all discordant one way (p = 2 / 2^18)
            _outcomes("lajoint-laj_budget", [True] * 10, [True] * 10),
            _outcomes("lajoint-no_compressor", [True] + [False] * 9, [True] + [False] * 9),
            # seed 2023: 11 of 20 vs 10 of 20, one discordant (p = 1)
            _outcomes("lajoint-laj_budget-seed2023", [True] * 6 + [False] * 4, [True] * 5 + [False] * 5),
            _outcomes("lajoint-no_compressor-seed2023", [True] * 5 + [False] * 5, [True] * 5 + [False] * 5),
        ]
    )
    claims = _claims(slu_tables(rows, "en-US", earlier=earlier, outcomes=outcomes))
    # means over the two seeds: (100 + 55) / 2 = 77.5 vs (10 + 50) / 2 = 30; Δ 90 and 5: sd 60.10;
    # the largest p is seed 2023's 1, so the sign holds on both seeds but the verdict is a tie
    assert claims == [
        [
            "LAJoint > − Compressor (§4.5, Table 4)",
            "`lajoint-laj_budget` (run `abcdef01`, this run)",
            "`lajoint-no_compressor` (run `abcdef01`, this run)",
            "77.50",
            "30.00",
            "+47.50 ± 60.10",
            "1",
            "2",
            "tie",
        ]
    ]


def test_the_budget_rows_give_each_main_method_at_each_budget_it_was_run():
    # EM over de, ja: lajmcl 0.35 on all the data, 0.20 on the sample; zsjoint on the sample only, 0.40;
    # an ablation and an unknown method are not main methods
    rows = _rows(
        {
            "lajmcl": _three((0.9, 0.4, 0.3)),
            "lajmcl-laj_budget": _three((0.9, 0.3, 0.1)),
            "zsjoint-laj_budget": _three((0.9, 0.5, 0.3)),
            "lajoint-cs+ucl": _three((0.9, 0.9, 0.9)),
            "zz": _three((0.9, 0.9, 0.9)),
        }
    )
    points = budget_rows(rows, {"": 11514, "-laj_budget": 2000}, "en-US")
    assert points[["method", "budget", "utterances_seen"]].values.tolist() == [
        ["zsjoint", "zsjoint-laj_budget", 2000],
        ["lajmcl", "lajmcl-laj_budget", 2000],
        ["lajmcl", "lajmcl", 11514],
    ]
    assert points["exact_match"].tolist() == pytest.approx([40.0, 20.0, 35.0])
