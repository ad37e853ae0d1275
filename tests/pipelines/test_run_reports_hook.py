"""A run's MLflow name from its overrides; each method's rows carry the configuration of the parameters
upstream of them, so an edit on one pair never leaves two settings under one method name."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mlflow
import pandas as pd
import pytest
from kedro.framework.hooks.manager import _create_hook_manager
from kedro.io import DataCatalog, MemoryDataset
from kedro.pipeline import Pipeline, node
from kedro.runner import SequentialRunner

from language_agnostic.datasets.metrics import MetricsTableDataset
from language_agnostic.evaluation.rows import metric_row
from language_agnostic.pipelines.run_reports_hook import (
    OVERRIDES_TAG,
    RunReportsHook,
    config_hash,
    run_name,
    run_overrides,
)

TEMPERATURE = {"fmda": {"variants": {"infonce": {"loss": {"temperature": 0.1}}}}}


def test_the_run_name_says_what_differs_from_the_defaults():
    assert run_name(["fmda"], run_overrides(None, TEMPERATURE)) == "fmda · fmda.variants.infonce.loss.temperature=0.1"
    assert (
        run_name(["fmda"], run_overrides("fmda_en_de", {"fmda": {"training": {"lr": 3e-4}}, "processes": 2}))
        == "fmda · env=fmda_en_de · fmda.training.lr=0.0003 · processes=2"
    )
    assert run_name(["fmda"], run_overrides("local", {})) == "fmda"  # conf/local is no experiment
    assert (
        run_name(["qe", "sts"], run_overrides(None, {"qe": {"methods": ["dream"]}})) == 'qe+sts · qe.methods=["dream"]'
    )
    assert len(run_name(["fmda"], [f"k{i}=1" for i in range(100)])) == 250


def test_the_parent_run_is_renamed_and_tagged(tmp_path: Path):
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    try:
        mlflow.set_experiment("names")
        ids = []
        for extra in (None, TEMPERATURE):
            hook = RunReportsHook()
            params = {"pipeline_names": ["fmda"], "env": None, "runtime_params": extra, "project_path": str(tmp_path)}
            hook.before_pipeline_run(run_params=params, pipeline=None, catalog=None)
            with mlflow.start_run(run_name="fmda") as run:  # as kedro-mlflow starts it
                hook.before_node_run(node=SimpleNamespace(name="first"), inputs={})
                ids.append(run.info.run_id)
        client = mlflow.MlflowClient()
        got = [(client.get_run(i).info.run_name, client.get_run(i).data.tags[OVERRIDES_TAG]) for i in ids]
        assert got == [
            ("fmda", "defaults"),
            ("fmda · fmda.variants.infonce.loss.temperature=0.1", "fmda.variants.infonce.loss.temperature=0.1"),
        ]
    finally:
        mlflow.set_tracking_uri(previous)


def _rows(method: str, pair: dict[str, str], value: float) -> pd.DataFrame:
    row = metric_row(
        "fmda",
        method,
        "m",
        "cross_lingual_retrieval",
        "massive_test",
        pair["source"],
        pair["target"],
        "accuracy@1",
        value,
        "e5",
    )
    return pd.DataFrame([row])


def _train_and_score(variant: dict[str, Any], loss: dict[str, Any], pair: dict[str, str]) -> pd.DataFrame:
    # a "model" whose score follows its temperature, as a trained model's would
    return _rows("fmda-infonce", pair, 0.8 - (variant.get("loss") or {}).get("temperature", loss["temperature"]))


def _baseline(pair: dict[str, str], extraction: dict[str, Any]) -> pd.DataFrame:
    del extraction
    return _rows("raw", pair, 0.5)


def _report(*tables: pd.DataFrame) -> pd.DataFrame:
    return pd.concat(tables, ignore_index=True)


def _pipeline(pairs: list[str]) -> Pipeline:
    nodes = []
    for pair in pairs:
        nodes += [
            node(
                _train_and_score,
                ["params:fmda.variants.infonce", "params:fmda.loss", f"params:massive.pairs.{pair}"],
                f"{pair}.fmda_rows_infonce",
                name=f"{pair}.infonce",
            ),
            node(
                _baseline,
                [f"params:massive.pairs.{pair}", "params:embeddings.extraction"],
                f"{pair}.baseline_rows",
                name=f"{pair}.baseline",
            ),
        ]
    rows = [f"{p}.{kind}" for p in pairs for kind in ("baseline_rows", "fmda_rows_infonce")]
    return Pipeline([*nodes, node(_report, rows, "fmda_metrics_table", name="report")])


PARAMS: dict[str, Any] = {
    "massive": {"pairs": {p: {"source": "en-US", "target": t} for p, t in (("en_de", "de-DE"), ("en_ja", "ja-JP"))}},
    "fmda": {"variants": {"infonce": {"loss": {"contrastive": "infonce"}}}, "loss": {"temperature": 0.05}},
    "embeddings": {"extraction": {"batch_size": 8, "progress": True}},
}


def _run(tmp_path: Path, pairs: list[str], params: dict[str, Any], extra: dict[str, Any] | None = None) -> None:
    hook = RunReportsHook()
    manager = _create_hook_manager()
    manager.register(hook)
    flat = {"massive.pairs." + k: v for k, v in params["massive"]["pairs"].items()}
    flat |= {"fmda.variants.infonce": params["fmda"]["variants"]["infonce"], "fmda.loss": params["fmda"]["loss"]}
    flat |= {"embeddings.extraction": params["embeddings"]["extraction"]}
    catalog = DataCatalog(
        {
            "fmda_metrics_table": MetricsTableDataset(str(tmp_path / "data" / "08_reporting" / "metrics.csv")),
            **{f"params:{k}": MemoryDataset(v) for k, v in flat.items()},
        }
    )
    pipeline = _pipeline(pairs)
    run_params = {"pipeline_names": ["fmda"], "env": None, "runtime_params": extra, "project_path": str(tmp_path)}
    hook.after_context_created(context=SimpleNamespace(params=params))
    manager.hook.before_pipeline_run(run_params=run_params, pipeline=pipeline, catalog=catalog)
    SequentialRunner().run(pipeline, catalog, manager)
    manager.hook.after_pipeline_run(run_params=run_params, run_result={}, pipeline=pipeline, catalog=catalog)


def test_an_edit_on_one_pair_leaves_no_method_with_rows_of_two_settings(tmp_path: Path):
    _run(tmp_path, ["en_de", "en_ja"], PARAMS)
    edited = {
        **PARAMS,
        "fmda": {**PARAMS["fmda"], "variants": {"infonce": {"loss": {"contrastive": "infonce", "temperature": 0.1}}}},
    }
    # only en_de; the progress bar off (a display option: the baseline keeps its configuration)
    edited["embeddings"] = {"extraction": {"batch_size": 8, "progress": False}}
    _run(tmp_path, ["en_de"], edited, extra={"fmda": {"variants": {"infonce": {"loss": {"temperature": 0.1}}}}})
    table = MetricsTableDataset(str(tmp_path / "data" / "08_reporting" / "metrics.csv")).load()
    assert table[["method", "target", "value"]].values.tolist() == [
        ["fmda-infonce", "de-DE", 0.7],  # the edited setting only: the default's ja-JP row is gone
        ["raw", "de-DE", 0.5],
        ["raw", "ja-JP", 0.5],  # the baseline's parameters did not change: both runs' rows stay
    ]
    assert table.groupby("method")["config"].nunique().to_dict() == {"fmda-infonce": 1, "raw": 1}
    # the configuration hashes what the rows were computed from: the variant, fmda.loss (not the pair)
    infonce = {"fmda.variants.infonce.loss.contrastive": "infonce", "fmda.variants.infonce.loss.temperature": 0.1}
    assert table.loc[table["method"] == "fmda-infonce", "config"].tolist() == [
        config_hash({**infonce, "fmda.loss.temperature": 0.05})
    ]
    # each run's reports are kept per run: the second one's metrics.csv holds its own rows only
    runs = sorted((tmp_path / "data" / "08_reporting" / "runs").iterdir())
    assert len(runs) == 2
    last = pd.read_csv(runs[-1] / "metrics.csv", keep_default_na=False)
    assert sorted(last["method"] + "/" + last["target"]) == ["fmda-infonce/de-DE", "raw/de-DE"]


@pytest.mark.parametrize("pair", ["en_de", "en_ja"])
def test_which_pair_does_not_change_a_configuration(tmp_path: Path, pair: str):
    _run(tmp_path, [pair], PARAMS)
    table = MetricsTableDataset(str(tmp_path / "data" / "08_reporting" / "metrics.csv")).load()
    infonce = {"fmda.variants.infonce.loss.contrastive": "infonce", "fmda.loss.temperature": 0.05}
    assert table.set_index("method")["config"].to_dict() == {
        "fmda-infonce": config_hash(infonce),
        "raw": config_hash({"embeddings.extraction.batch_size": 8}),
    }
