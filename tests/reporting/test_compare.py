"""``python -m language_agnostic.reporting.compare``: two parent runs' main table side by side, what differs,
what each trained or reused."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import mlflow
import pandas as pd
import pytest
from kedro.io import DataCatalog

from language_agnostic.datasets.metrics import MetricsTableDataset
from language_agnostic.evaluation.rows import metric_row
from language_agnostic.pipelines.run_reports_hook import RunReportsHook
from language_agnostic.reporting.compare import main
from language_agnostic.tracking import log_child_run

DIRECTIONS = [("en-US", "de-DE"), ("de-DE", "en-US")]


def _rows(infonce: float) -> pd.DataFrame:
    rows = []
    for (method, embedding), values in {
        ("centering", "mean"): (0.7, 0.68),
        ("fmda-infonce", "m"): (infonce, 0.83),
    }.items():
        for (s, t), v in zip(DIRECTIONS, values, strict=True):
            rows.append(
                metric_row(
                    "fmda", method, embedding, "cross_lingual_retrieval", "massive_test", s, t, "accuracy@1", v, "e5"
                )
            )
    rows.append(
        metric_row(
            "fmda",
            "fmda-infonce",
            "m",
            "template_retrieval",
            "massive_template_single:en-US>de-DE",
            "de-DE",
            "de-DE",
            "map",
            infonce - 0.1,
            "e5",
        )
    )
    return pd.DataFrame(rows)


def _parent_run(project: Path, extra: dict | None, infonce: float, reused: list[str], trained: list[str]) -> str:
    """A parent run as ``kedro run --pipelines=fmda`` leaves it: named by the hook, its child runs, its rows."""
    hook = RunReportsHook()
    table = MetricsTableDataset(str(project / "data" / "08_reporting" / "metrics.csv"))
    catalog = DataCatalog({"fmda_metrics_table": table})
    params = {"pipeline_names": ["fmda"], "env": None, "runtime_params": extra, "project_path": str(project)}
    hook.before_pipeline_run(run_params=params, pipeline=None, catalog=catalog)
    with mlflow.start_run(run_name="fmda") as run:
        report = SimpleNamespace(name="report_fmda_node")
        hook.before_node_run(node=report, inputs={})
        for name in trained:
            log_child_run(name, {"lr": 0.001}, [{"epoch": 0, "dev_total": 1.0}])
        for name in reused:
            log_child_run(name, {"lr": 0.001}, [], tags={"language_agnostic.trained_by": "earlier"})
        rows = _rows(infonce)
        table.save(rows)
        hook.after_dataset_saved(dataset_name="fmda_metrics_table", data=rows, node=report)
        hook.after_pipeline_run(run_params=params)
        return run.info.run_id


def test_two_runs_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    try:
        mlflow.set_experiment("compare")
        models = ["dream/en-US-de-DE", "fmda/infonce/en-US-de-DE"]
        a = _parent_run(tmp_path, None, 0.84, reused=[], trained=models)
        edit = {"fmda": {"variants": {"infonce": {"loss": {"temperature": 0.1}}}}}
        b = _parent_run(tmp_path, edit, 0.8, reused=models[:1], trained=models[1:])
    finally:
        mlflow.set_tracking_uri(previous)
    assert main([a, b, "--tracking-uri", uri]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"A: {a[:8]}  fmda  (defaults; 2 trained, 0 reused)",
        f"B: {b[:8]}  fmda · fmda.variants.infonce.loss.temperature=0.1  "
        "(fmda.variants.infonce.loss.temperature=0.1; 1 trained, 1 reused: fmda/infonce/en-US-de-DE)",
        "",
        "## fmda: cross_lingual_retrieval accuracy@1, A → B where they differ",
        "",
        "| method/embedding | de-DE→en-US | en-US→de-DE |",
        "|---|---:|---:|",
        "| centering/mean | 0.680 | 0.700 |",
        "| fmda-infonce/m | 0.830 | 0.840 → 0.800 |",
        "",
        "2 of 5 rows of fmda differ (a row in one run only counts as differing):",
        "",
        "| method/embedding | task | metric | direction | A | B | B − A |",
        "|---|---|---|---|---:|---:|---:|",
        "| fmda-infonce/m | cross_lingual_retrieval | accuracy@1 | en-US→de-DE | 0.840 | 0.800 | -0.040 |",
        "| fmda-infonce/m | template_retrieval | map | de-DE→de-DE (en-US>de-DE) | 0.740 | 0.700 | -0.040 |",
    ]
    # each run's reports are kept locally too, under its run id
    assert (tmp_path / "data" / "08_reporting" / "runs" / b / "metrics.csv").is_file()


def test_a_run_without_its_rows_is_named_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("old", artifact_location=str(tmp_path / "artifacts"))
    old = client.create_run(experiment, run_name="fmda").info.run_id
    assert main([old, old, "--tracking-uri", uri]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"run {old} has no reports/metrics.csv artifact (it ran before each run kept its own rows); "
        "compare two runs made since"
    ]
