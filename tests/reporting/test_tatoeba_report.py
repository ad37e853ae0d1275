"""Tatoeba reports on hand-made scores: averages (all, seen, unseen, own), the widest spreads,
metric rows, markdown, figure.
"""

from __future__ import annotations

import pandas as pd
import pytest

from language_agnostic.datasets.metrics import METRIC_COLUMNS
from language_agnostic.reporting.tatoeba import (
    auto_figure_methods,
    metric_rows,
    mlflow_metrics,
    plot_tatoeba,
    summary,
    tatoeba_markdown,
    widest_spread,
)

# (method, embedding, language): (xxx → eng, eng → xxx), cosine; margin adds 0.1
ACCURACY = {
    ("raw", "mean", "afr"): (0.8, 0.6),
    ("raw", "mean", "deu"): (0.9, 0.9),
    ("raw", "mean", "xho"): (0.2, 0.4),
    ("dream@qe", "meaning", "afr"): (0.6, 0.6),
    ("dream@qe", "meaning", "deu"): (1.0, 0.8),
    ("dream@qe", "meaning", "xho"): (0.1, 0.1),
    ("centering@qe", "mean", "deu"): (0.5, 0.5),
}
LANGUAGES = pd.DataFrame(
    {
        "language": ["afr", "deu", "xho"],
        "iso639_1": ["af", "de", "xh"],
        "script": ["Latn"] * 3,
        "name": ["Afrikaans", "German", "Xhosa"],
        "pairs": [10, 20, 10],
        "seen": [False, True, False],
        "seen_by": ["", "qe", ""],
    }
)
MODELS = [
    {"name": "dream@qe", "kind": "head", "source": "qe", "languages": ["deu", "eng"]},
    {"name": "centering@qe", "kind": "centering", "source": "qe", "languages": ["deu", "eng"]},
]


def _scores() -> pd.DataFrame:
    rows = []
    for (method, embedding, language), pair in ACCURACY.items():
        for scoring, bonus in (("cosine", 0.0), ("margin", 0.1)):
            for (source, target), value in zip(((language, "eng"), ("eng", language)), pair, strict=True):
                rows.append(
                    [
                        method,
                        embedding,
                        language,
                        source,
                        target,
                        scoring,
                        10,
                        round(10 * (value + bonus)),
                        value + bonus,
                    ]
                )
    return pd.DataFrame(
        rows, columns=["method", "embedding", "language", "source", "target", "scoring", "n", "correct", "accuracy"]
    )


def test_averages_over_all_seen_unseen_and_own_languages_by_hand():
    table = summary(_scores(), LANGUAGES, {m["name"]: m["languages"] for m in MODELS})
    cosine = table[table["scoring"] == "cosine"].set_index("method")
    # raw: per language 0.7, 0.9, 0.3 → all 19/30; seen (deu) 0.9; unseen (afr, xho) 0.5; no own languages
    assert cosine.loc["raw", ["all", "xxx_to_eng", "eng_to_xxx", "seen", "unseen"]].tolist() == pytest.approx(
        [1.9 / 3, 1.9 / 3, 1.9 / 3, 0.9, 0.5]
    )
    assert pd.isna(cosine.loc["raw", "own_seen"]) and cosine.loc["raw", "trained_on"] == ""
    # dream: 0.6, 0.9, 0.1; own seen = deu (eng is the pivot, not a language here)
    assert cosine.loc[
        "dream@qe", ["all", "seen", "unseen", "own_seen", "own_unseen", "n_own_seen", "n_own_unseen"]
    ].tolist() == pytest.approx([1.6 / 3, 0.9, 0.35, 0.9, 0.35, 1, 2])
    assert cosine.loc["centering@qe", "n_languages"] == 1 and pd.isna(cosine.loc["centering@qe", "unseen"])
    margin = table[table["scoring"] == "margin"].set_index("method")
    assert margin.loc["raw", "all"] == pytest.approx(1.9 / 3 + 0.1)


def test_the_languages_where_methods_differ_most():
    spread = widest_spread(_scores(), LANGUAGES, n=2)
    # centering (one language) does not count; afr: 0.7 vs 0.6, deu: 0.9 vs 0.9, xho: 0.3 vs 0.1
    assert spread[["language", "best", "worst"]].values.tolist() == [
        ["xho", "raw/mean", "dream@qe/meaning"],
        ["afr", "raw/mean", "dream@qe/meaning"],
    ]
    assert spread["spread"].tolist() == pytest.approx([0.2, 0.1]) and spread["raw_mean"].tolist() == pytest.approx(
        [0.3, 0.7]
    )


def test_metric_rows_one_per_direction_and_scoring():
    rows = metric_rows(_scores(), "tiny")
    assert set(METRIC_COLUMNS) - {"run_id"} == set(rows.columns)
    assert set(rows["task"]) == {"bitext_retrieval"} and set(rows["dataset"]) == {"tatoeba"}
    assert set(rows["metric"]) == {"accuracy@1", "margin_accuracy@1"} and set(rows["pipeline"]) == {"tatoeba"}
    deu = rows[
        (rows["method"] == "dream@qe")
        & (rows["metric"] == "accuracy@1")
        & rows["source"].isin(["deu", "eng"])
        & rows["target"].isin(["deu", "eng"])
    ]
    assert sorted(zip(deu["source"], deu["target"], deu["value"], strict=True)) == [
        ("deu", "eng", 1.0),
        ("eng", "deu", 0.8),
    ]


def test_the_markdown_report_and_mlflow_metrics():
    skipped = [
        {
            "method": "seed@qe",
            "path": "data/06_models/qe/seed.safetensors",
            "reason": "data/06_models/qe/seed.safetensors not found; `kedro run --pipelines=qe` makes it",
        }
    ]
    counts = {"afr": {"pairs": 10}, "total": {"languages": 3, "pairs": 40, "rejected": 0}}
    text = tatoeba_markdown(
        _scores(), LANGUAGES, counts, MODELS, skipped, {"name": "tiny"}, {"spread_languages": 2, "margin_k": 4}
    )
    assert "## Averages, cosine similarity" in text and "## Averages, ratio margin, k = 4" in text
    assert "| raw | mean | 3 | 63.3 | 36.7 | 63.3 | 63.3 | 90.0 | 50.0 | +0.0 | — | — |" in text
    assert "| dream@qe | meaning | 3 | 53.3 | 46.7 | 56.7 | 50.0 | 90.0 | 35.0 | -15.0 | 90.0 (1) | 35.0 (2) |" in text
    assert "*Seen*: the 1 language some configured training set holds (deu (qe))" in text
    assert "- `seed@qe`: data/06_models/qe/seed.safetensors not found; `kedro run --pipelines=qe` makes it" in text
    assert "- `centering@qe`: 1 of 3 languages." in text and "not applicable to unseen languages" in text
    assert "| xho | Xhosa | Latn | no | 10 | 20.0 | 30.0 | raw/mean 30.0 | dream@qe/meaning 10.0 |" in text
    metrics = mlflow_metrics(_scores(), LANGUAGES, counts, MODELS)
    assert metrics["tatoeba.ingest.total.pairs"] == {"value": 40.0, "step": 0}
    assert metrics["tatoeba.dream_at_qe.meaning.cosine.own_unseen"]["value"] == pytest.approx(0.35)
    assert "tatoeba.raw.mean.cosine.own_seen" not in metrics


def test_the_per_language_figure():
    assert auto_figure_methods(_scores(), MODELS) == ["raw/mean", "dream@qe/meaning"]
    figure = plot_tatoeba(_scores(), LANGUAGES, ["raw/mean", "dream@qe/meaning", "absent/x"])
    top, bottom = figure.axes
    assert [line.get_label() for line in top.get_lines()] == ["raw/mean", "dream@qe/meaning"]
    # languages by raw accuracy, seen ones starred
    assert [t.get_text() for t in bottom.get_xticklabels()] == ["deu*", "afr", "xho"]
    import matplotlib.pyplot as plt

    plt.close(figure)
