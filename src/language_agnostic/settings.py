"""Kedro settings: kept near-empty on purpose (see docs/architecture.md)."""

from omegaconf.resolvers import oc

from language_agnostic.pipelines import errors
from language_agnostic.pipelines.config_loader import ProjectConfigLoader
from language_agnostic.pipelines.project_config import RunConfigHook
from language_agnostic.pipelines.run_lock import RunLockHook
from language_agnostic.pipelines.run_reports_hook import RunReportsHook
from language_agnostic.pipelines.tracking_hook import (
    EmbeddingStoreHook,
    RunStatusHook,
    TrainedModelsHook,
    TrainingExperimentHook,
)

# the pipelines' shape (language pairs, variants) follows the run's --env / --params;
# the MLflow experiment opens on its training runs, not on the GenAI overview; the embedding
# store's counts (texts requested, encoded, reused) and the models trained and reused go to every
# run; one run at a time uses the project's data/ (pipelines/run_lock.py); the run is named by its
# --env / --params, each method's rows carry their configuration, its reports are kept per run
# (pipelines/run_reports_hook.py). Order across plugins is set by the hooks themselves, whatever the
# registration order: the lock is taken before kedro-mlflow starts the MLflow run (tryfirst), and the
# run's pid and host are recorded after it (trylast), so its status ends true (pipelines/tracking_hook.py)
HOOKS = (
    RunLockHook(),
    RunConfigHook(),
    TrainingExperimentHook(),
    EmbeddingStoreHook(),
    TrainedModelsHook(),
    RunReportsHook(),
    RunStatusHook(),
)

# a data or configuration error ends a run with its one message (file and line, or parameter), not a
# framework traceback; LANGUAGE_AGNOSTIC_TRACEBACK=1 shows it (pipelines/errors.py)
errors.install()

# an environment's parameters hold only what differs from conf/base (pipelines/config_loader.py)
CONFIG_LOADER_CLASS = ProjectConfigLoader
CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    # environment variables in conf/ (Kedro allows them only in credentials by default);
    # used for LANGUAGE_AGNOSTIC_DATA_ROOT in globals.yml
    "custom_resolvers": {"oc.env": oc.env},
    "merge_strategy": {"parameters": "soft"},
}
