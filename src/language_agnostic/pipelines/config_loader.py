"""The project's config loader: an environment's parameters files hold only what differs from ``base``.

Kedro's default merge replaces a top-level key of ``conf/base`` wholesale with an environment's,
so every experiment set used to restate whole sections and could drift from ``base``. Here the
parameters merge *softly* (mappings key by key, Kedro's ``soft`` strategy), with two markers for
the two things a soft merge cannot say:

- ``key: ~`` (null) where ``base`` holds a mapping removes that key: ``pairs: {en_es: ~}``
  drops a language pair, ``lajoint: {training: ~}`` drops a method's override. A null over a
  scalar or list stays a null value (``max_train: ~`` means "all").
- ``_replace: true`` inside a mapping makes that mapping replace ``base``'s instead of merging
  into it: an experiment set that trains *other* methods lists ``methods: {_replace: true, ...}``,
  so a method added to ``base`` later does not join it silently.

Lists are replaced, as in any soft merge. The catalog and the other config groups keep Kedro's
default (destructive) merge.
"""

from __future__ import annotations

import copy
from typing import Any

from kedro.config import OmegaConfigLoader

REPLACE = "_replace"


def merge_delta(base: dict[str, Any], delta: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``base`` with ``delta`` merged in (the module's rules); neither argument is changed.

    Args:
        base: The configuration merged so far.
        delta: An environment's configuration.
        where: The dotted key of ``delta`` (for error messages).

    Returns:
        The merged configuration.

    Raises:
        ValueError: ``_replace`` is not a boolean.
    """
    out = copy.deepcopy(base)
    _merge_into(out, delta, where)
    return out


def _merge_into(out: dict[str, Any], delta: dict[str, Any], where: str) -> None:
    """:func:`merge_delta`'s rules applied to ``out`` in place (``delta`` is not changed)."""
    for key, value in delta.items():
        name = f"{where}.{key}" if where else str(key)
        if isinstance(value, dict):
            value = dict(value)
            replace = value.pop(REPLACE, False)
            if not isinstance(replace, bool):
                raise ValueError(f"{name}.{REPLACE}: expected true or false, got {replace!r}")
            if replace or not isinstance(out.get(key), dict):
                out[key] = {}
            _merge_into(out[key], value, name)
        elif value is None and isinstance(out.get(key), dict):
            del out[key]
        else:
            out[key] = copy.deepcopy(value)


class ProjectConfigLoader(OmegaConfigLoader):
    """Kedro's ``OmegaConfigLoader`` whose ``soft`` merge follows :func:`merge_delta`."""

    @staticmethod
    def _soft_merge(config: dict[str, Any], env_config: dict[str, Any], env_path: str | None = None) -> Any:
        try:
            return merge_delta(config, env_config)
        except ValueError as exc:
            raise ValueError(f"{env_path}: {exc}") from None
