"""Two runs of the ``fmda`` pipeline on the tests' tiny data (a tiny BERT, 16 EN-DE utterances) into a
fresh MLflow store: the defaults, then ``fmda.variants.infonce.loss.temperature=0.1``, with the
project's hooks. Made for the screenshot of the runs table in docs/fmda.md and to try
``reporting/compare.py`` in seconds; the numbers mean nothing beyond that.

Usage::

    .venv/bin/python scripts/compare_demo_runs.py /tmp/compare-demo
    .venv/bin/python -m language_agnostic.reporting.compare RUN_A RUN_B \\
        --tracking-uri sqlite:////tmp/compare-demo/mlflow.db
    .venv/bin/mlflow ui --backend-store-uri sqlite:////tmp/compare-demo/mlflow.db --host 127.0.0.1 --port 5055
"""

from __future__ import annotations

import argparse
import copy
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' tiny data and encoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path, help="a new folder: the MLflow store, data/ and the tiny encoder")
    args = parser.parse_args()
    folder = args.folder.resolve()
    folder.mkdir(parents=True, exist_ok=False)

    import mlflow
    from kedro.framework.hooks.manager import _create_hook_manager
    from kedro.runner import SequentialRunner
    from kedro_datasets.text import TextDataset

    from language_agnostic.datasets.metrics import MetricsTableDataset
    from language_agnostic.pipelines.fmda.pipeline import create_pipeline
    from language_agnostic.pipelines.run_reports_hook import RunReportsHook, flatten
    from language_agnostic.pipelines.tracking_hook import TrainedModelsHook, TrainingExperimentHook
    from language_agnostic.training import reuse
    from tests.conftest import write_tiny_hub_model
    from tests.pipelines.test_fmda_pipeline import METHODS, VARIANTS, _catalog

    warnings.filterwarnings("ignore", category=UserWarning)
    reuse.SETTINGS.store = folder / "data" / "06_models" / "trained"
    model = write_tiny_hub_model(folder / "tiny-bert")
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    mlflow.set_experiment("language_agnostic")
    variants = {k: VARIANTS[k] for k in ("all_together", "infonce")}
    edit = {"fmda": {"variants": {"infonce": {"loss": {"temperature": 0.1}}}}}
    ids = []
    for extra in (None, edit):
        catalog = _catalog(model, folder / "data" / "04_feature" / "embeddings")
        if extra:
            spec = copy.deepcopy(variants["infonce"])
            spec["loss"]["temperature"] = 0.1
            catalog["params:fmda.variants.infonce"] = spec
        reporting = folder / "data" / "08_reporting"
        catalog["fmda_metrics_table"] = MetricsTableDataset(str(reporting / "metrics.csv"))
        catalog["fmda_tables_markdown"] = TextDataset(filepath=str(reporting / "fmda_tables.md"))
        params: dict[str, Any] = {
            name[len("params:") :]: catalog.load(name) for name in catalog.keys() if name.startswith("params:")
        }
        pipeline = create_pipeline(pairs=["en_de"], variants=variants, unified=[], figure_pair="", methods=METHODS)
        hooks = [RunReportsHook(), TrainedModelsHook(), TrainingExperimentHook()]
        manager = _create_hook_manager()
        for hook in hooks:
            manager.register(hook)
        hooks[0].after_context_created(context=SimpleNamespace(params=params))
        run_params = {"pipeline_names": ["fmda"], "env": None, "runtime_params": extra, "project_path": str(folder)}
        with mlflow.start_run(run_name="fmda") as run:  # as kedro-mlflow starts it
            manager.hook.before_pipeline_run(run_params=run_params, pipeline=pipeline, catalog=catalog)
            # the parameters, flattened and cut at 250 characters, as kedro-mlflow logs each node's
            mlflow.log_params({k: str(v)[:250] for k, v in flatten(params).items()})
            SequentialRunner().run(pipeline, catalog, manager)
            metrics = catalog.load("fmda_metrics")
            mlflow.log_metrics({f"fmda_metrics.{k}": v["value"] for k, v in metrics.items()})
            manager.hook.after_pipeline_run(run_params=run_params, run_result={}, pipeline=pipeline, catalog=catalog)
            ids.append(run.info.run_id)
    print(" ".join(ids))


if __name__ == "__main__":
    main()
