"""What a run changed, and what it wrote: its MLflow name, its rows' configuration, its reports kept per run.

- **Name**: a parent MLflow run is named by what differs from the defaults, from ``--env`` and
  ``--params`` (``fmda · fmda.variants.infonce.loss.temperature=0.1``), and tagged
  ``language_agnostic.overrides`` (``defaults`` when nothing differs), so two runs of one pipeline
  are told apart in the runs table.
- **Configuration of rows**: before a metrics or outcomes table is saved, each ``(pipeline, method)``
  it holds gets a short hash of the parameters its rows were computed from (every ``params:`` input
  upstream of them, which pair aside), so the table keeps one configuration per method
  (``datasets/metrics.py:drop_other_configs``).
- **Reports per run**: at the end, the reports this run wrote under ``data/08_reporting/`` are copied
  to ``data/08_reporting/runs/<MLflow run id>/`` (``metrics.csv`` there holds this run's rows only,
  ``run.json`` its name, overrides and the models it trained and reused) and logged to the parent
  run as artifacts under ``reports/``; ``reporting/compare.py`` reads them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from kedro.framework.hooks import hook_impl

from language_agnostic.datasets import metrics as metrics_table
from language_agnostic.datasets.outcomes import OutcomesDataset
from language_agnostic.reporting.compare import OVERRIDES_TAG, REPORTS_ARTIFACT_DIR

logger = logging.getLogger(__name__)

DEFAULTS = "defaults"  # the tag of a run with no --env and no --params
DEFAULT_ENV = "local"  # settings.py's default_run_env: conf/local holds a machine's own settings, not an experiment
RUNS_DIR = "runs"  # under the reporting directory
RUN_FILE = "run.json"
SEPARATOR = " · "
MAX_RUN_NAME = 250  # MLflow's limit on a run name
# parameters that do not change a method's rows: which pair (its rows say so in source / target) and
# progress bars
UNHASHED_PREFIXES = ("massive.pairs.",)
UNHASHED_LAST_KEYS = ("progress",)


def flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` → ``{"a.b": 1}``; an empty mapping stays a value (``{}``)."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def run_overrides(env: str | None, extra_params: Mapping[str, Any] | None) -> list[str]:
    """What a run sets beyond the defaults: ``env=<env>`` (unless the default ``local``), then every
    ``--params`` key, flattened, sorted, as ``key=value``."""
    out = [f"env={env}"] if env and env != DEFAULT_ENV else []
    return out + [f"{k}={_shown(v)}" for k, v in sorted(flatten(extra_params or {}).items())]


def run_name(pipelines: Iterable[str], overrides: list[str]) -> str:
    """``fmda · fmda.variants.infonce.loss.temperature=0.1``: the pipelines (as kedro-mlflow names a run),
    then the overrides; cut to MLflow's limit with ``…``."""
    name = SEPARATOR.join(["+".join(pipelines) or "__default__", *overrides])
    return name if len(name) <= MAX_RUN_NAME else name[: MAX_RUN_NAME - 1] + "…"


def config_hash(values: Mapping[str, Any]) -> str:
    """A short, stable hash of flattened parameters (10 hex digits)."""
    text = json.dumps({k: values[k] for k in sorted(values)}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def parameters_read(pipeline: Any, dataset: str, flat: Mapping[str, Any]) -> dict[str, Any]:
    """The flattened parameters that every node upstream of ``dataset`` in ``pipeline`` reads, less
    :data:`UNHASHED_PREFIXES` and :data:`UNHASHED_LAST_KEYS`; ``{}`` when no node of it makes ``dataset``."""
    try:
        names = [n for n in pipeline.to_outputs(dataset).inputs() if n == "parameters" or n.startswith("params:")]
    except ValueError:  # an input of the run, not made by it (e.g. a table read as it stood)
        return {}
    wanted = ["" if n == "parameters" else n[len("params:") :] for n in names]
    return {
        key: value
        for key, value in flat.items()
        if any(not w or key == w or key.startswith(w + ".") for w in wanted)
        and not key.startswith(UNHASHED_PREFIXES)
        and key.rsplit(".", 1)[-1] not in UNHASHED_LAST_KEYS
    }


def _methods(data: Any) -> set[tuple[str, str]]:
    """The ``(pipeline, method)`` pairs of a rows frame; empty for anything else."""
    if not isinstance(data, pd.DataFrame) or not {"pipeline", "method"} <= set(data.columns):
        return set()
    return set(zip(data["pipeline"].astype(str), data["method"].astype(str), strict=True))


class RunReportsHook:
    """Names the parent MLflow run by its overrides, gives each method's rows their configuration,
    and keeps the run's reports per run (locally and in MLflow); see the module's docstring."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._params: dict[str, Any] = {}
        self._pipeline: Any = None
        self._catalog: Any = None
        self._named = False
        self._run_id = ""
        self._name = ""
        self._overrides: list[str] = []
        self._pipelines: list[str] = []
        self._env: str | None = None
        self._started = time.time()
        self._project = Path()
        self._rows_inputs: dict[str, dict[str, set[tuple[str, str]]]] = {}
        self._read: dict[str, dict[str, Any]] = {}
        self._saved_rows: list[pd.DataFrame] = []

    @hook_impl
    def after_context_created(self, context: Any) -> None:
        self._params = flatten(dict(context.params))

    @hook_impl
    def before_pipeline_run(self, run_params: dict[str, Any], pipeline: Any, catalog: Any) -> None:
        params = self._params
        self._reset()
        self._params, self._pipeline, self._catalog = params, pipeline, catalog
        names = run_params.get("pipeline_names") or run_params.get("pipeline_name") or ["__default__"]
        self._pipelines = [names] if isinstance(names, str) else list(names)
        self._env = run_params.get("env")
        # --params: Kedro 1.x records them as runtime_params (earlier versions: extra_params)
        extra = run_params.get("runtime_params") or run_params.get("extra_params")
        self._overrides = run_overrides(self._env, extra)
        self._name = run_name(self._pipelines, self._overrides)
        self._project = Path(run_params.get("project_path") or ".")
        metrics_table.set_method_configs({})

    @hook_impl
    def before_node_run(self, node: Any, inputs: dict[str, Any]) -> None:
        if not self._named:
            self._named = True
            self._name_run()
        rows = {name: m for name, value in inputs.items() if (m := _methods(value))}
        if rows:
            self._rows_inputs[node.name] = rows

    def _name_run(self) -> None:
        """Rename kedro-mlflow's run (started before the first node) unless ``mlflow.yml`` named it."""
        import mlflow

        run = mlflow.active_run()
        if run is None:  # tracking disabled for this pipeline
            return
        self._run_id = run.info.run_id
        try:
            client = mlflow.MlflowClient()
            if run.info.run_name == "+".join(self._pipelines):  # kedro-mlflow's default name
                client.update_run(self._run_id, name=self._name)
            client.set_tag(self._run_id, OVERRIDES_TAG, " ".join(self._overrides) or DEFAULTS)
        except Exception as exc:  # noqa: BLE001 - a run's name must never stop it
            logger.warning("could not name the MLflow run by its overrides: %s", exc)

    @hook_impl
    def before_dataset_saved(self, dataset_name: str, data: Any, node: Any) -> None:
        if not self._is_table(dataset_name):
            return
        metrics_table.set_method_configs(self.method_configs(dataset_name, data, node))

    @hook_impl
    def after_dataset_saved(self, dataset_name: str, data: Any, node: Any) -> None:
        del node
        if self._is_table(dataset_name, outcomes=False):
            cols = metrics_table.STORED_COLUMNS
            dtypes = {c: str for c in cols if c != "value"}
            self._saved_rows.append(metrics_table.rows_to_save(data, cols, "metric", dtypes))

    def _is_table(self, name: str, outcomes: bool = True) -> bool:
        """Whether ``name`` is a metrics table (or, with ``outcomes``, an outcomes table) of the catalog."""
        try:
            dataset = self._catalog.get(name) if self._catalog is not None else None
        except Exception:  # noqa: BLE001 - an unknown name is no table
            return False
        kinds = (metrics_table.MetricsTableDataset, OutcomesDataset) if outcomes else metrics_table.MetricsTableDataset
        return isinstance(dataset, kinds)

    def method_configs(self, dataset_name: str, data: Any, node: Any) -> dict[tuple[str, str], str]:
        """``{(pipeline, method): config}`` for the rows ``node`` saves to ``dataset_name``: the parameters
        upstream of the rows inputs holding the method (a report node's per-model rows), else upstream
        of ``dataset_name`` itself."""
        sources = self._rows_inputs.get(node.name, {})
        configs = {}
        for key in _methods(data):
            read: dict[str, Any] = {}
            for name in [n for n, held in sources.items() if key in held] or [dataset_name]:
                read.update(self._parameters_read(name))
            configs[key] = config_hash(read)
        return configs

    def _parameters_read(self, dataset: str) -> dict[str, Any]:
        if dataset not in self._read:
            self._read[dataset] = parameters_read(self._pipeline, dataset, self._params) if self._pipeline else {}
        return self._read[dataset]

    @hook_impl
    def after_pipeline_run(self, run_params: dict[str, Any]) -> None:
        del run_params
        try:
            directory = self.keep_reports(self._project / "data" / "08_reporting")
        except Exception as exc:  # noqa: BLE001 - copies of reports must never fail a finished run
            logger.warning("could not keep this run's reports: %s", exc)
            return
        metrics_table.set_method_configs({})
        if directory is not None:
            logger.info("this run's reports: %s", directory)

    def keep_reports(self, reporting: Path) -> Path | None:
        """Copy the reports written since the run started to ``reporting/runs/<run id>/``, with this run's
        rows as ``metrics.csv`` and :data:`RUN_FILE`; log the folder to the parent run under ``reports/``.
        None when the run wrote no report."""
        written = [
            p
            for p in (sorted(reporting.rglob("*")) if reporting.is_dir() else [])
            if p.is_file()
            and RUNS_DIR not in p.relative_to(reporting).parts[:1]
            and p.stat().st_mtime >= self._started - 1
        ]
        if not written and not self._saved_rows:
            return None
        directory = reporting / RUNS_DIR / self._run_id
        if not self._run_id:  # no MLflow run: its start time, made unique
            stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self._started))
            names = (stamp if i == 1 else f"{stamp}-{i}" for i in range(1, 10_000))
            directory = next(d for n in names if not (d := reporting / RUNS_DIR / n).exists())
        directory.mkdir(parents=True, exist_ok=True)
        for path in written:
            target = directory / path.relative_to(reporting)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        if self._saved_rows:  # the table spans runs: keep only the rows this run saved
            rows = pd.concat(self._saved_rows, ignore_index=True)
            rows.drop_duplicates(metrics_table.KEY_COLUMNS, keep="last").to_csv(directory / "metrics.csv", index=False)
        (directory / RUN_FILE).write_text(json.dumps(self.summary(), indent=1) + "\n", encoding="utf-8")
        if self._run_id:
            import mlflow

            mlflow.MlflowClient().log_artifacts(self._run_id, str(directory), REPORTS_ARTIFACT_DIR)
        return directory

    def summary(self) -> dict[str, Any]:
        """The run's id, name, pipelines, env, overrides and the models it trained and reused."""
        from language_agnostic.training.reuse import USAGE

        return {
            "run_id": self._run_id,
            "name": self._name,
            "pipelines": self._pipelines,
            "env": self._env,
            "overrides": self._overrides,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self._started)),
            "models": {"trained": list(USAGE.trained), "reused": list(USAGE.reused)},
        }
