"""The leaderboard: exact tables from hand-built metric rows, every method listed, the best cell marked."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from language_agnostic.datasets.metrics import MetricsTableDataset
from language_agnostic.reporting.leaderboard import LEADERBOARD_COLUMNS, leaderboard_markdown, leaderboard_table


def _row(
    method: str,
    embedding: str,
    task: str,
    dataset: str,
    source: str,
    target: str,
    metric: str,
    value: float,
    pipeline: str = "fmda",
    encoder: str = "tiny",
) -> dict:
    return {
        "pipeline": pipeline,
        "method": method,
        "embedding": embedding,
        "task": task,
        "dataset": dataset,
        "source": source,
        "target": target,
        "metric": metric,
        "value": value,
        "encoder": encoder,
        "run_id": "r",
    }


def _metrics() -> pd.DataFrame:
    xl = "cross_lingual_retrieval"
    rows = [
        # raw and fmda on both pairs (4 directions), the ablation on en-de only
        _row("raw", "mean", xl, "massive_test", "en-US", "de-DE", "accuracy@1", 0.60),
        _row("raw", "mean", xl, "massive_test", "de-DE", "en-US", "accuracy@1", 0.62),
        _row("raw", "mean", xl, "massive_test", "en-US", "ja-JP", "accuracy@1", 0.40),
        _row("raw", "mean", xl, "massive_test", "ja-JP", "en-US", "accuracy@1", 0.42),
        _row("fmda", "m", xl, "massive_test", "en-US", "de-DE", "accuracy@1", 0.70),
        _row("fmda", "m", xl, "massive_test", "de-DE", "en-US", "accuracy@1", 0.72),
        _row("fmda", "m", xl, "massive_test", "en-US", "ja-JP", "accuracy@1", 0.50),
        _row("fmda", "m", xl, "massive_test", "ja-JP", "en-US", "accuracy@1", 0.52),
        _row("fmda-no_x", "m", xl, "massive_test", "en-US", "de-DE", "accuracy@1", 0.80),
        _row("fmda-no_x", "m", xl, "massive_test", "de-DE", "en-US", "accuracy@1", 0.82),
        # confidence bounds and p-values qualify a score: not columns
        _row("fmda", "m", xl, "massive_test", "en-US", "de-DE", "accuracy@1_ci_low", 0.99),
        _row("fmda", "m", xl, "massive_test", "en-US", "de-DE", "mcnemar_p_vs_raw", 0.01),
        # template sets of two training pairs are one family
        _row("raw", "mean", "template_retrieval", "massive_template_multi:en-US>de-DE", "de-DE", "de-DE", "MAP", 0.30),
        _row("raw", "mean", "template_retrieval", "massive_template_multi:en-US>ja-JP", "ja-JP", "ja-JP", "MAP", 0.50),
        _row("fmda", "tp", "template_retrieval", "massive_template_multi:en-US>de-DE", "de-DE", "de-DE", "MAP", 0.50),
        _row("fmda", "tp", "template_retrieval", "massive_template_multi:en-US>ja-JP", "ja-JP", "ja-JP", "MAP", 0.30),
        # a method only in another pipeline, and one whose only row is a leakage probe
        _row("seed", "meaning", "quality_estimation", "wmt20_qe_test:en-de", "en", "de", "pearson", 0.41, "qe"),
        _row("seed", "language", "language_leakage", "qe_corpus:validation", "all", "all", "probe_accuracy", 0.9, "qe"),
        _row(
            "probe_only",
            "meaning",
            "language_leakage",
            "qe_corpus:validation",
            "all",
            "all",
            "probe_accuracy",
            0.5,
            "qe",
        ),
    ]
    return pd.DataFrame(rows)


XL4 = "cross_lingual_retrieval / massive_test / accuracy@1 (de-DE, en-US, ja-JP: 4)"
XL2 = "cross_lingual_retrieval / massive_test / accuracy@1 (de-DE, en-US: 2)"
MAP = "template_retrieval / massive_template_multi / MAP (de-DE, ja-JP: 2)"
QE = "quality_estimation / wmt20_qe_test / pearson (de, en: 1)"


def test_the_leaderboard_table_exactly():
    board = leaderboard_table(_metrics())
    assert list(board.columns) == LEADERBOARD_COLUMNS
    got = [
        [r.method, r.embedding, r.task, r.dataset, r.metric, r.languages, r.n_directions, round(r.value, 6), r.best]
        for r in board.itertuples()
    ]
    assert got == [
        ["fmda", "m", "cross_lingual_retrieval", "massive_test", "accuracy@1", "de-DE, en-US, ja-JP", 4, 0.61, True],
        ["raw", "mean", "cross_lingual_retrieval", "massive_test", "accuracy@1", "de-DE, en-US, ja-JP", 4, 0.51, False],
        # the ablation is compared on the directions it was evaluated on, with the others' means over those
        ["fmda", "m", "cross_lingual_retrieval", "massive_test", "accuracy@1", "de-DE, en-US", 2, 0.71, False],
        ["fmda-no_x", "m", "cross_lingual_retrieval", "massive_test", "accuracy@1", "de-DE, en-US", 2, 0.81, True],
        ["raw", "mean", "cross_lingual_retrieval", "massive_test", "accuracy@1", "de-DE, en-US", 2, 0.61, False],
        # a tie at three decimals: both best
        ["fmda", "tp", "template_retrieval", "massive_template_multi", "MAP", "de-DE, ja-JP", 2, 0.4, True],
        ["raw", "mean", "template_retrieval", "massive_template_multi", "MAP", "de-DE, ja-JP", 2, 0.4, True],
        ["seed", "meaning", "quality_estimation", "wmt20_qe_test", "pearson", "de, en", 1, 0.41, True],
    ]
    assert board["directions"].iloc[0] == "de-DE>en-US en-US>de-DE en-US>ja-JP ja-JP>en-US"
    assert board["directions"].iloc[5] == "en-US>de-DE:de-DE>de-DE en-US>ja-JP:ja-JP>ja-JP"


def test_the_leaderboard_markdown_exactly_with_every_method():
    metrics = _metrics()
    text = leaderboard_markdown(leaderboard_table(metrics), metrics)
    table = text[text.index("| method") :].strip().splitlines()
    assert table == [
        f"| method | embedding | {XL4} | {XL2} | {MAP} | {QE} |",
        "|---|---|---:|---:|---:|---:|",
        "| fmda | m | **0.610** | 0.710 | — | — |",
        "| fmda | tp | — | — | **0.400** | — |",
        "| fmda-no_x | m | — | **0.810** | — | — |",
        "| probe_only | meaning | — | — | — | — |",
        "| raw | mean | 0.510 | 0.610 | **0.400** | — |",
        "| seed | language | — | — | — | — |",
        "| seed | meaning | — | — | — | **0.410** |",
    ]
    assert "## Encoder `tiny`" in text
    assert set(metrics["method"]) <= {line.split(" | ")[0].lstrip("| ") for line in table[2:]}


def test_one_table_per_encoder_and_an_empty_table():
    metrics = pd.concat([_metrics().iloc[:2], _metrics().iloc[:1].assign(encoder="other", value=0.9)])
    text = leaderboard_markdown(leaderboard_table(metrics), metrics)
    assert text.index("## Encoder `other`") < text.index("## Encoder `tiny`")
    assert "| raw | mean | **0.900** |" in text and "| raw | mean | **0.610** |" in text
    assert leaderboard_table(metrics.iloc[:0]).empty
    assert leaderboard_markdown(leaderboard_table(metrics.iloc[:0]), metrics.iloc[:0]).endswith("No metric rows yet.\n")


def test_a_table_without_a_needed_column_is_named():
    with pytest.raises(ValueError, match=r"metrics table lacks column\(s\) \['encoder'\] for the leaderboard"):
        leaderboard_table(_metrics().drop(columns="encoder"))


def test_every_save_of_the_metrics_table_rewrites_the_leaderboard(tmp_path: Path):
    table = MetricsTableDataset(str(tmp_path / "metrics.csv"))
    table.save(_metrics().iloc[:4])  # raw only
    assert "| raw | mean | **0.510** |" in (tmp_path / "leaderboard.md").read_text()
    table.save(_metrics().iloc[4:8])  # another pipeline's rows: the leaderboard is of the whole table
    assert "| fmda | m | **0.610** |" in (tmp_path / "leaderboard.md").read_text()
    assert "| raw | mean | 0.510 |" in (tmp_path / "leaderboard.md").read_text()
    stored = pd.read_csv(tmp_path / "leaderboard.csv")
    assert stored[["method", "value", "best"]].values.tolist() == [["fmda", 0.61, True], ["raw", 0.51, False]]
    MetricsTableDataset(str(tmp_path / "other" / "metrics.csv"), leaderboard=None).save(_metrics())
    assert not (tmp_path / "other" / "leaderboard.md").exists()


def test_bitext_retrieval_follows_cross_lingual_retrieval_and_many_languages_are_counted():
    codes = [f"l{i:02d}" for i in range(13)]
    rows = [
        _row("raw", "mean", "bitext_retrieval", "tatoeba", code, "eng", "accuracy@1", 0.5, "tatoeba") for code in codes
    ]
    rows += [
        _row("raw", "mean", "template_retrieval", "massive_template_multi:en-US>de-DE", "de-DE", "de-DE", "MAP", 0.4),
        _row("raw", "mean", "cross_lingual_retrieval", "massive_test", "en-US", "de-DE", "accuracy@1", 0.6),
    ]
    board = leaderboard_table(pd.DataFrame(rows))
    assert board["task"].tolist() == ["cross_lingual_retrieval", "bitext_retrieval", "template_retrieval"]
    # 14 languages (13 and English) are counted, not listed; two are listed
    assert board["languages"].tolist() == ["de-DE, en-US", "14 languages", "de-DE"]
    assert "bitext_retrieval / tatoeba / accuracy@1 (14 languages: 13)" in leaderboard_markdown(board)
