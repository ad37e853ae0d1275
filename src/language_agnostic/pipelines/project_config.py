"""Read the project's own parameters while *building* pipelines.

Language pairs are namespaces of one modular pipeline, so the set of namespaces must be
known when the pipeline is created. Reading it from ``conf/`` keeps "add a language pair" a
YAML edit. (``kedro run --params`` overrides values, not the shape of the pipeline.)
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from collections.abc import Callable, Mapping
from functools import partial, update_wrapper
from typing import Any

from kedro.framework.project import settings
from kedro.utils import find_kedro_project

logger = logging.getLogger(__name__)


def load_parameters(start: Path | None = None) -> dict[str, Any]:
    """The merged parameters of the project's ``conf/`` (base + ``KEDRO_ENV`` or local).

    Args:
        start: Where to look for the project root (default: the working directory).

    Returns:
        The parameters, or an empty dict when no Kedro project is found from ``start``.
    """
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


def settings_from_params(cls: type, params: Mapping[str, Any], where: str, **overrides: Any) -> Any:
    """Build a settings dataclass from a parameter mapping, naming the parameter on unknown keys.

    Args:
        cls: The dataclass (``ExtractionSettings``, ``TrainSettings``, ``FmdaConfig``...).
        params: The parameters.
        where: Their path in ``conf/``, e.g. ``"fmda.training"``.
        **overrides: Values set by the caller rather than the user.
    """
    known = set(cls.__dataclass_fields__) - set(overrides)
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
    return cls(**{**params, **overrides})


def bind(func: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    """``func`` with ``kwargs`` bound, keeping its name (Kedro names nodes and logs by it)."""
    return update_wrapper(partial(func, **kwargs), func)
