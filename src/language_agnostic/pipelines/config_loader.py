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

A training budget is stated once: a block's ``budgets`` name settings (``slu.budgets.laj:
{data: {...}, training: {...}}``) and a method takes one by ``budget: laj``; its own keys merge over
the budget's (:func:`expand_budgets`), so ``{budget: laj, training: {seed: 2023}}`` is the budget on
another seed. The expansion happens here, before any node or check reads ``params:``, so a method
reads (and is fingerprinted by ``training.reuse``) exactly as if the budget were written out in it.
"""

from __future__ import annotations

import copy
from typing import Any

from kedro.config import OmegaConfigLoader

from language_agnostic.config import ParameterError
from language_agnostic.parameters.root import normalised

REPLACE = "_replace"
BUDGET = "budget"


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


def expand_budgets(parameters: dict[str, Any]) -> dict[str, Any]:
    """``parameters`` with every ``<block>.methods.<name>.budget: <b>`` replaced by ``<block>.budgets.<b>``
    with the method's own keys merged over it (:func:`merge_delta`); ``parameters`` is not changed.

    Raises:
        ParameterError: a budget the block's ``budgets`` does not name (naming the parameter and the allowed names).
    """
    out = copy.deepcopy(parameters)
    for block_name, block in out.items():
        if not isinstance(block, dict) or not isinstance(block.get("methods"), dict):
            continue
        budgets = block.get("budgets") or {}
        for name, spec in block["methods"].items():
            if not isinstance(spec, dict) or BUDGET not in spec:
                continue
            where = f"{block_name}.methods.{name}.{BUDGET}"
            chosen = spec.pop(BUDGET)
            if chosen not in budgets or not isinstance(budgets[chosen], dict):
                raise ParameterError(f"{where}: {chosen!r} is not one of {block_name}.budgets {sorted(budgets)}")
            block["methods"][name] = merge_delta(budgets[chosen], spec, f"{block_name}.methods.{name}")
    return out


class ProjectConfigLoader(OmegaConfigLoader):
    """Kedro's ``OmegaConfigLoader`` whose ``soft`` merge follows :func:`merge_delta` and whose
    parameters have their budgets expanded (:func:`expand_budgets`), then typed by the parameter models
    (``parameters.root.normalised``): every node reads values the models have checked."""

    def __getitem__(self, key: str) -> Any:
        config = super().__getitem__(key)
        if key != "parameters":
            return config
        parameters = expand_budgets(dict(config))
        try:
            # what the nodes get is what the typed models read: the code below the pipelines parses
            # no parameter itself (language_agnostic/parameters, root.normalised)
            return normalised(parameters)
        except ParameterError:
            # reported by the run's start-up check (pipelines/parameter_checks.py) before any node, with
            # its one line; returned as written so that check, not a config read, is where a run stops
            return parameters

    @staticmethod
    def _soft_merge(config: dict[str, Any], env_config: dict[str, Any], env_path: str | None = None) -> Any:
        try:
            return merge_delta(config, env_config)
        except ValueError as exc:
            raise ValueError(f"{env_path}: {exc}") from None
