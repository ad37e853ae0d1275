"""Read the project's own parameters while *building* pipelines.

Language pairs are namespaces of one modular pipeline, so the set of namespaces must be
known when the pipeline is created. Reading it from ``conf/`` keeps "add a language pair" a
YAML edit.

Which configuration: inside a Kedro session (``kedro run``, ``kedro viz``, a notebook) the
session's own config loader, recorded by :class:`RunConfigHook` when the context is created,
so the pipeline's shape follows ``--env``, ``--conf-source`` and ``--params`` exactly as the
parameters do. Outside one (tests, scripts) ``conf/`` with ``KEDRO_ENV`` or the default env.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import partial, update_wrapper
from pathlib import Path
from typing import Any

from kedro.config import AbstractConfigLoader
from kedro.framework.context import KedroContext
from kedro.framework.hooks import hook_impl
from kedro.framework.project import settings
from kedro.pipeline import Pipeline, node
from kedro.utils import find_kedro_project

from language_agnostic.launch import set_default_processes
from language_agnostic.pipelines.parameter_checks import check_parameters
from language_agnostic.training.reuse import configure as configure_reuse

logger = logging.getLogger(__name__)

# the parameter sections that say which trained models exist (methods/apply.py:expected_models):
# what the tatoeba and export pipelines read to find the models in data/06_models
TRAINED_MODEL_PARAMS = ["params:qe", "params:sts", "params:massive", "params:fmda", "params:fmda_paper", "params:emu"]

# ``LANGUAGE_AGNOSTIC_VALIDATE_ONLY=1 kedro run ...``: check the run's parameters, run no node, exit 0
VALIDATE_ONLY = "LANGUAGE_AGNOSTIC_VALIDATE_ONLY"

# the config loader of the running Kedro session (set by RunConfigHook), if any
_session_config: AbstractConfigLoader | None = None


class RunConfigHook:
    """Records the session's config loader, so pipelines are built from the run's ``--env``.

    Kedro builds the registered pipelines after the context exists (``KedroSession.run``
    asks for them once ``after_context_created`` has fired), so recording the loader here
    is in time for every pipeline the run builds. It runs first among the hooks of that moment:
    another hook reading ``context.params`` makes Kedro build every pipeline (to validate typed
    parameters), and they must be built from this run's ``--env``, not ``conf/base``'s pairs.
    """

    @hook_impl(tryfirst=True)
    def after_context_created(self, context: KedroContext) -> None:
        global _session_config
        _session_config = context.config_loader
        # a wrong parameter stops the run now, naming it, not after minutes of work: the typed models
        # of language_agnostic/parameters (pipelines/parameter_checks.py)
        check_parameters(context.params)
        # the run's worker processes for every training and extraction step that leaves its own
        # ``processes`` unset (``kedro run --params=processes=2``; language_agnostic/launch.py)
        set_default_processes(context.params.get("processes", 1))
        # whether training steps reuse stored models, and where they are kept (training/reuse.py)
        configure_reuse(context.params.get("trained_models"), context.project_path)
        if os.environ.get(VALIDATE_ONLY) == "1":
            # the parameters are checked: stop before the catalog, the pipelines and the run lock
            print(f"{VALIDATE_ONLY}=1: the parameters of this run are valid; no node was run")
            raise SystemExit(0)


def forget_session_config() -> None:
    """Build pipelines from ``conf/`` again (tests that create sessions of other envs call this)."""
    global _session_config
    _session_config = None


def load_parameters(start: Path | None = None) -> dict[str, Any]:
    """The parameters pipelines are built from: the running session's, else ``conf/``'s.

    Args:
        start: Where to look for the project root (default: the working directory); used
            only outside a Kedro session.

    Returns:
        The parameters, or an empty dict when no Kedro project is found from ``start``.
    """
    if _session_config is not None:
        try:
            return dict(_session_config["parameters"])
        except KeyError:
            return {}
    root = find_kedro_project(start or Path.cwd())
    if root is None:
        return {}
    conf_source = Path(root) / settings.CONF_SOURCE
    args = dict(settings.CONFIG_LOADER_ARGS)
    env = os.environ.get("KEDRO_ENV") or args.get("default_run_env", "local")
    loader = settings.CONFIG_LOADER_CLASS(conf_source=str(conf_source), env=env, **args)
    try:
        return dict(loader["parameters"])
    except KeyError:
        return {}


def configured_namespaces(pipeline: str, key: str, default: list[str]) -> list[str]:
    """The namespaces listed under ``<pipeline>.<key>`` in the parameters.

    Args:
        pipeline: Top-level parameter key, e.g. ``"massive"``.
        key: Mapping under it whose keys are namespaces, e.g. ``"pairs"``.
        default: Used when the project's configuration cannot be found.

    Returns:
        The namespace names, in file order.
    """
    params = load_parameters()
    section = params.get(pipeline, {}).get(key) if params else None
    if section is None:
        logger.debug("no %s.%s in conf/; using %s", pipeline, key, default)
        return list(default)
    return [str(name) for name in section]


def bind(func: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    """``func`` with ``kwargs`` bound, keeping its name (Kedro names nodes and logs by it)."""
    return update_wrapper(partial(func, **kwargs), func)


class PipelineConfigurationError(ValueError):
    """A pipeline's parameters do not fit the configured shape (e.g. a variant names an unconfigured pair)."""


def _raise_configuration_error(message: str) -> None:
    raise PipelineConfigurationError(message)


def configuration_error_pipeline(name: str, error: Exception) -> Pipeline:
    """A stand-in for pipeline ``name`` whose configuration is wrong: one node that raises ``error``'s message.

    Kedro builds every registered pipeline for ``kedro run`` and ``kedro viz``; raising while
    building would break every other pipeline too. Deferring the error to this node keeps
    them working, and ``kedro run --pipelines=<name>`` stops at once with the message that
    names the parameter.
    """
    message = f"the {name!r} pipeline cannot be built from this configuration: {error}"
    logger.warning(message)
    return Pipeline(
        [
            node(
                bind(_raise_configuration_error, message=message),
                inputs=None,
                outputs=f"{name}_configuration_error",
                name=f"{name}_configuration_error_node",
            )
        ],
        tags=name,
    )
