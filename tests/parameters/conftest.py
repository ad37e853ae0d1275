"""The parameters of every Kedro environment of ``conf/``, as a run of it would see them."""

from __future__ import annotations

import copy
import functools
from typing import Any

from kedro.framework.startup import bootstrap_project

from language_agnostic.parameters import root
from tests.conftest import PROJECT_ROOT

ENVS = sorted(p.name for p in (PROJECT_ROOT / "conf").iterdir() if p.is_dir())


@functools.cache
def _env(env: str) -> dict[str, Any]:
    bootstrap_project(PROJECT_ROOT)  # the project's config loader and its resolvers
    return root.env_parameters(PROJECT_ROOT / "conf", env)


def env_parameters(env: str = "base") -> dict[str, Any]:
    """A copy of the parameters of ``conf/base`` with ``conf/<env>`` merged over them."""
    return copy.deepcopy(_env(env))


def with_value(params: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``params`` with the dotted ``path`` set to ``value`` (a copy)."""
    changed = copy.deepcopy(params)
    *parents, last = path.split(".")
    node = changed
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return changed
