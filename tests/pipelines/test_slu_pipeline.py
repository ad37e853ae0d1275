"""The ``slu`` pipeline end to end on tiny data with a tiny local encoder and a tiny MUSE dictionary."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from language_agnostic.corpora.errors import CorpusFormatError
from language_agnostic.datasets import TarArchiveDataset
from language_agnostic.datasets.metrics import METRIC_COLUMNS
from language_agnostic.datasets.muse import MuseDictionariesDataset
from language_agnostic.datasets.outcomes import OutcomesDataset
from language_agnostic.datasets.torch_state import TrainedHeadDataset
from language_agnostic.pipelines.slu.nodes import parse_slu_locales
from language_agnostic.pipelines.slu.pipeline import create_pipeline
from language_agnostic.reporting.slu import slu_tables
from tests.conftest import jsonl, massive_row, write_massive_archive

EN = [
    "wake me up at [time : nine]",
    "set an alarm for [time : six]",
    "play [genre : jazz]",
    "play music",
    "what is the weather [date : today]",
    "weather [date : tomorrow]",
    "wake me up at [time : six]",
    "play [genre : rock]",
    "weather [date : today]",
    "set an alarm",
    "play [genre : pop] music",
    "weather [date : tomorrow] please",
]
DE = [
    "weck mich um [time : neun]",
    "stelle einen wecker für [time : sechs]",
    "spiel [genre : jazz]",
    "spiel musik",
    "wie ist das wetter [date : heute]",
    "wetter [date : morgen]",
    "weck mich um [time : sechs]",
    "spiel [genre : rock]",
    "wetter [date : heute]",
    "wecker",
    "spiel [genre : pop] musik",
    "wetter [date : morgen] bitte",
]
INTENTS = [
    "alarm",
    "alarm",
    "music",
    "music",
    "weather",
    "weather",
    "alarm",
    "music",
    "weather",
    "alarm",
    "music",
    "weather",
]
PARTITIONS = ["train"] * 6 + ["dev"] * 3 + ["test"] * 3
METHODS = {"zsjoint": {"method": "slu"}, "cosda": {"method": "slu", "code_switch": True}}


def _utterances() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "locale": loc,
                "id": str(i),
                "partition": p,
                "intent": intent,
                "annot_utt": t,
                "utt": t.replace("[", "").replace("]", ""),
            }
            for loc, texts in (("en-US", EN), ("de-DE", DE))
            for i, (t, p, intent) in enumerate(zip(texts, PARTITIONS, INTENTS))
        ]
    )


def _archive(path: Path) -> Path:
    """The tiny corpus as a MASSIVE 1.1 tarball (en-US and de-DE)."""
    rows = _utterances().drop(columns=["utt"]).rename(columns={"annot_utt": "annot"})
    return write_massive_archive(
        path / "massive.tar.gz",
        {
            loc: jsonl(
                [
                    massive_row(
                        r.id, loc, r.partition, re.sub(r"\[\w+ : ([^\]]*)\]", r"\1", r.annot), r.annot, r.intent
                    )
                    for r in rows[rows["locale"] == loc].itertuples()
                ]
            )
            for loc in ("en-US", "de-DE")
        },
    )


def _catalog(
    model_dir: Path, muse_dir: Path, methods: dict[str, Any] | None = None, keep_source: bool = False
) -> DataCatalog:
    methods = METHODS if methods is None else methods
    params: dict[str, Any] = {
        "params:embeddings.encoder": {"name": str(model_dir)},
        "params:embeddings.extraction": {"prefix": ""},
        "params:massive.ingest": {"on_bad_row": "error"},
        "params:slu.locales": ["en-US", "de-DE"],
        "params:slu.data": {"training_locale": "en-US", "batch_size": 4, "seed": 0},
        "params:slu.code_switch": {"ratio": 0.9, "languages": [], "seed": 0, "keep_source": keep_source},
        "params:slu.training": {
            "lr": 1e-3,
            "encoder_lr": 1e-4,
            "max_epochs": 2,
            "patience": 2,
            "seed": 0,
            "progress": False,
            "schedule": "linear",
            "warmup_ratio": 0.1,
        },
        **{f"params:slu.methods.{name}": spec for name, spec in methods.items()},
    }
    return DataCatalog(
        {
            "massive_archive": TarArchiveDataset(filepath=str(_archive(muse_dir))),
            "encoder": MemoryDataset(copy_mode="assign"),
            "muse_dictionaries": MuseDictionariesDataset(str(muse_dir)),
            "slu_metrics_before": MemoryDataset(pd.DataFrame(columns=METRIC_COLUMNS)),
            "slu_outcomes_before": OutcomesDataset(str(muse_dir / "outcomes.parquet")),
            "slu_outcomes": OutcomesDataset(str(muse_dir / "outcomes.parquet")),
            **{k: MemoryDataset(v) for k, v in params.items()},
        }
    )


def test_slu_pipeline_end_to_end_on_tiny_data(tiny_hub_model: Path, tmp_path: Path):
    (tmp_path / "en-de.txt").write_text("play spiel\nweather wetter\nalarm wecker\nset stelle\n", encoding="utf-8")
    (tmp_path / "en-fr.txt").write_text("play jouer\n", encoding="utf-8")  # fr is not a configured locale: not used
    catalog = _catalog(tiny_hub_model, tmp_path)
    SequentialRunner().run(create_pipeline(methods=METHODS), catalog)
    table = catalog["slu_metrics_table"].load()
    assert set(table["task"]) == {"slu"} and set(table["source"]) == {"en-US"}
    for method in METHODS:
        mine = table[table["method"] == method]
        assert {(t, m) for t, m in zip(mine["target"], mine["metric"])} == {
            (loc, m) for loc in ("en-US", "de-DE") for m in ("intent_accuracy", "slot_f1", "exact_match")
        }
        assert mine["value"].between(0, 1).all()
    # only the configured locales' dictionaries are read; counts go to MLflow
    counts = catalog["slu_dictionary_counts"].load()
    assert set(counts) == {"slu.muse.de.lines", "slu.muse.de.pairs", "slu.muse.de.duplicates", "slu.muse.de.sources"}
    assert counts["slu.muse.de.pairs"]["value"] == 4.0
    markdown = catalog["slu_tables_markdown"].load()
    assert "## Semantic exact match" in markdown and "| method | en | de | avg |" in markdown
    # slu.locales are read from the archive by the pipeline itself: 12 lines a locale, none rejected
    ingest = catalog["slu_ingest_counts"].load()
    assert ingest["slu.massive.en_US.rows_in"]["value"] == 12.0 and ingest["slu.massive.de_DE.rejected"]["value"] == 0.0


@pytest.mark.parametrize(
    ("locales", "message"),
    [
        ([], r"slu.locales: the list of test locales is empty"),
        (["de-DE"], r"slu.data.training_locale 'en-US' is not in slu.locales \['de-DE'\]"),
        (
            ["en-US", "fr-FR"],
            r"slu.locales\[1\]: the archive has no file '1.1/data/fr-FR.jsonl' \(locales in it: \['de-DE', 'en-US'\]\)",
        ),
    ],
)
def test_bad_slu_locales_are_named(tmp_path: Path, locales: list[str], message: str):
    archive = TarArchiveDataset(filepath=str(_archive(tmp_path))).load()
    with pytest.raises(CorpusFormatError, match=message):
        parse_slu_locales(archive, locales, {"training_locale": "en-US"}, {"on_bad_row": "error"})


NO_MCL = {"utterance": 0, "slot_value": 0, "word": 0}
LAJ_METHODS = {
    "lajoint": {"method": "lajoint", "loss_weights": NO_MCL, "options": {"mcl": {"init_layers": 1}}},
    "lajmcl": {"method": "lajoint", "code_switch": True, "options": {"mcl": {"init_layers": 1, "p_v": 2, "p_s": 1}}},
}


def test_lajoint_and_lajmcl_run_through_the_pipeline(tiny_hub_model: Path, tmp_path: Path):
    (tmp_path / "en-de.txt").write_text("play spiel\nweather wetter\nalarm wecker\nset stelle\n", encoding="utf-8")
    catalog = _catalog(tiny_hub_model, tmp_path, LAJ_METHODS, keep_source=True)
    for name in LAJ_METHODS:  # saved as the project's catalog saves them (safetensors + JSON metadata)
        catalog[f"slu_model_{name}"] = TrainedHeadDataset(filepath=str(tmp_path / f"{name}.safetensors"))
    SequentialRunner().run(create_pipeline(methods=LAJ_METHODS), catalog)
    table = catalog["slu_metrics_table"].load()
    for method in LAJ_METHODS:
        mine = table[table["method"] == method]
        assert {(t, m) for t, m in zip(mine["target"], mine["metric"])} == {
            (loc, m) for loc in ("en-US", "de-DE") for m in ("intent_accuracy", "slot_f1", "exact_match")
        }
        assert mine["value"].between(0, 1).all()
    # the saved model is LAJ-MCL's: its slot set, MCL levels and label embeddings travel with it
    saved = catalog["slu_model_lajmcl"].load()
    assert saved["build"]["method"] == "lajoint" and saved["slots"] == ["date", "genre", "time"]
    assert saved["mcl_levels"] == ["utterance", "slot_value", "word"] and "label_embeddings" in saved["state_dict"]
    assert catalog["slu_model_lajoint"].load()["mcl_levels"] == []


def test_slu_rows_with_counts():
    from language_agnostic.pipelines.slu.nodes import build_slu_rows

    rows, rejects, metrics = build_slu_rows(_utterances(), {"on_bad_row": "error"})
    assert len(rows) == 24 and rejects.empty and metrics["slu.rows.all.rows_out"]["value"] == 24.0
    assert rows.iloc[0]["words"] == ["wake", "me", "up", "at", "nine"] and rows.iloc[0]["labels"] == [
        "O",
        "O",
        "O",
        "O",
        "B-time",
    ]


def test_the_tables_average_the_non_training_locales():
    rows = pd.DataFrame(
        [
            {"method": "zsjoint", "task": "slu", "target": loc, "metric": "exact_match", "value": v}
            for loc, v in (("en-US", 0.9), ("de-DE", 0.5), ("ja-JP", 0.2))
        ]
    )
    markdown = slu_tables(rows, "en-US")
    assert "| method | en | de | ja | avg |" in markdown
    assert "| zsjoint | 90.00 | 50.00 | 20.00 | 35.00 |" in markdown


ABLATION_METHODS = {
    "zsjoint": {"method": "slu"},
    "lajoint-cs+ucl": {
        "method": "lajoint",
        "code_switch": True,
        "loss_weights": {"slot_value": 0, "word": 0},
        "options": {"mcl": {"init_layers": 1}},
        "training": {"max_epochs": 1, "train_layers": 1},
    },
}


class _Kept(MemoryDataset):
    """A memory dataset the runner does not empty once its readers have run."""

    def _release(self) -> None:
        pass


FIGURE = {
    "methods": ["zsjoint", "lajoint-cs+ucl", "lajmcl"],
    "intent": "music",
    "n_utterances": 100,
    "locales": [],
    "seed": 0,
}


def test_a_method_named_with_plus_runs_under_a_node_safe_key_and_keeps_its_name_in_the_rows(
    tiny_hub_model: Path, tmp_path: Path
):
    (tmp_path / "en-de.txt").write_text("play spiel\nweather wetter\nalarm wecker\nset stelle\n", encoding="utf-8")
    catalog = _catalog(tiny_hub_model, tmp_path, ABLATION_METHODS, keep_source=True)
    catalog["params:slu.figure"] = MemoryDataset(FIGURE)
    catalog["slu_details_lajoint_cs_plus_ucl"] = _Kept()  # an intermediate output, read after the run
    pipeline = create_pipeline(methods=ABLATION_METHODS, figure=FIGURE)
    names = {n.name for n in pipeline.nodes}
    assert {"train_lajoint_cs_plus_ucl_node", "evaluate_lajoint_cs_plus_ucl_node", "plot_slu_figure_node"} <= names
    SequentialRunner().run(pipeline, catalog)
    table = catalog["slu_metrics_table"].load()
    assert set(table["method"]) == {"zsjoint", "lajoint-cs+ucl"}
    # every MLflow metric name is one MLflow takes (no '+')
    metrics = {**catalog["slu_metrics"].load(), **catalog["slu_history_lajoint_cs_plus_ucl"].load()}
    assert all(re.fullmatch(r"[/\w.\- :]+", k) for k in metrics), [k for k in metrics if "+" in k]
    assert {
        "slu.lajoint-cs_plus_ucl.train_seconds_per_epoch",
        "slu.lajoint-cs_plus_ucl.kept.dev_exact_match",
        "slu.lajoint-cs_plus_ucl.de-DE.inference_seconds",
        "slu.zsjoint.de-DE.slot_errors.slot_num",
    } <= set(metrics)
    details = catalog["slu_details_lajoint_cs_plus_ucl"].load()
    assert details["train_seconds_per_epoch"] > 0 and details["epochs_run"] == 1
    assert set(details["slot_errors"]) == {"en-US", "de-DE"} and details["n_test"] == {"en-US": 3, "de-DE": 3}
    # per-utterance exact match, stored for the claims' paired tests: its mean is the exact-match row
    outcomes = catalog["slu_outcomes"].load()
    assert set(outcomes["method"]) == {"zsjoint", "lajoint-cs+ucl"} and len(outcomes) == 2 * 2 * 3
    de = outcomes[(outcomes["method"] == "zsjoint") & (outcomes["target"] == "de-DE")]["correct"].mean()
    assert de == pytest.approx(
        table[(table["method"] == "zsjoint") & (table["target"] == "de-DE") & (table["metric"] == "exact_match")][
            "value"
        ].item(),
        abs=1e-6,
    )
    # Figure 3: the same test utterance of the intent in both locales, a [CLS] vector each, for the methods run
    assert details["figure"]["ids"] == ["10"] and {k: v.shape for k, v in details["figure"]["vectors"].items()} == {
        "en-US": (1, 16),
        "de-DE": (1, 16),
    }
    assert catalog["slu_figure"].load() is not None
    markdown = catalog["slu_tables_markdown"].load()
    for title in (
        "## Table 2 layout",
        "## Table 4 layout",
        "## Table 15 layout",
        "## Table 5 layout",
        "## Table 10 layout",
    ):
        assert title in markdown
    assert "| + UCL | `lajoint-cs+ucl` |" in markdown and "### `lajoint-cs+ucl`" in markdown
    assert "## Table 6 layout" not in markdown  # no grid configured


def test_method_names_map_to_distinct_node_names():
    from language_agnostic.pipelines.slu.nodes import grid_methods, method_key

    assert (
        method_key("lajoint-cs+ucl+scl") == "lajoint_cs_plus_ucl_plus_scl"
        and method_key("cosda-cs_only") == "cosda_cs_only"
    )
    with pytest.raises(ValueError, match=r"slu.methods: 'a.b' is not a method name"):
        method_key("a.b")
    with pytest.raises(ValueError, match=r"'x-y' and 'x_y' both become the node name 'x_y'"):
        create_pipeline(methods={"x-y": {"method": "slu"}, "x_y": {"method": "slu"}})
    spec = lambda **mcl: {"method": "lajoint", "options": {"mcl": mcl}}  # noqa: E731
    assert grid_methods({"a": spec(p_s=10), "b": spec(p_v=0), "c": {"method": "lajoint"}}) == {
        "a": (10, 20),
        "b": (5, 0),
    }
    assert grid_methods({"a": spec(p_s=10)}) == {}
