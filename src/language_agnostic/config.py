"""Typed settings from parameter mappings: unknown keys are an error that names the parameter."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, Literal


class ParameterError(ValueError):
    """A parameter under ``conf/`` that cannot be used; the message names it (its path) and what is allowed.

    A run that stops on one prints the message alone, without a traceback (``pipelines/errors.py``).
    """


def settings_from_params(cls: type, params: Mapping[str, Any], where: str, **overrides: Any) -> Any:
    """Build a settings dataclass from a parameter mapping; an unknown key, or a value its checks reject,
    is a :class:`ParameterError` naming the parameter.

    Args:
        cls: The dataclass (``ExtractionSettings``, ``TrainSettings``, ``FmdaConfig``...).
        params: The parameters.
        where: Their path in ``conf/``, e.g. ``"fmda.training"``.
        **overrides: Values set by the caller rather than the user.
    """
    known = set(cls.__dataclass_fields__) - set(overrides)
    unknown = sorted(set(params) - known)
    if unknown:
        raise ParameterError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
    hints = typing.get_type_hints(cls)
    params = {key: checked_value(value, hints.get(key), f"{where}.{key}") for key, value in params.items()}
    try:
        return cls(**{**params, **overrides})
    except ParameterError:
        raise
    except ValueError as exc:
        # the settings' own checks (``__post_init__``) say what is wrong; the path says where
        message = str(exc)
        raise ParameterError(message if message.startswith(where) else f"{where}: {message}") from exc


def method_spec(spec: Mapping[str, Any] | None, where: str, keys: set[str], method: str, why: str) -> dict[str, Any]:
    """A ``<pipeline>.methods.<name>`` entry as a dict, its keys and its ``method`` checked.

    Args:
        spec: The entry (``None``: empty).
        where: Its parameter path, e.g. ``"emu.methods.emu-no_ld"``.
        keys: The keys the pipeline knows.
        method: The only ``method`` value the pipeline trains (absent means this one).
        why: What makes its variants instead, for the message (e.g. "the loss picks a baseline").

    Raises:
        ValueError: An unknown key or another method, naming ``where``.
    """
    spec = dict(spec or {})
    unknown = sorted(set(spec) - keys)
    if unknown:
        raise ParameterError(f"{where}: unknown key(s) {unknown}; known: {sorted(keys)}")
    if spec.get("method", method) != method:
        raise ParameterError(f"{where}.method must be {method!r} ({why}), got {spec.get('method')!r}")
    return spec


# YAML and ``--params`` read ``no`` / ``off`` as false and an empty value as null; a setting that takes
# a word or a string gets the word back (``mixed_precision: no``, ``prefix:`` for no prefix)
_YAML_WORDS = {False: "no", True: "yes"}


def checked_value(value: Any, hint: Any, where: str) -> Any:
    """``value`` checked against a settings field's type ``hint`` (int, float, bool, str, a Literal, ``X | None``).

    A float field takes an int; a str field takes YAML's ``false`` as ``"no"`` and an empty value
    (null) as ``""`` when it does not allow null. Other hints are not checked.

    Raises:
        ParameterError: a value of another type, naming ``where``, the type wanted and what was given.
    """
    if hint is None or hint is Any:
        return value
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if value is None:
        if type(None) in options:
            return None
        if str in options:
            return ""
    for option in options:
        if option is bool and isinstance(value, bool):
            return value
        if option is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if option is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) if isinstance(value, int) else value
        if option is str and isinstance(value, str):
            return value
        if typing.get_origin(option) is Literal and value in typing.get_args(option):
            return value
    if str in options and isinstance(value, bool):
        return _YAML_WORDS[value]
    known = [o for o in options if o in (bool, int, float, str, type(None)) or typing.get_origin(o) is Literal]
    if len(known) < len(options):
        return value  # a type this check does not know (a tuple, a mapping): the settings' own checks decide
    wanted = " or ".join(
        "null"
        if o is type(None)
        else f"one of {list(typing.get_args(o))}"
        if typing.get_origin(o) is Literal
        else o.__name__
        for o in options
    )
    raise ParameterError(f"{where} must be {wanted}, got {value!r}")


def positive_int(value: Any, where: str) -> int:
    """``value`` as a whole number >= 1 (a batch size), or a ParameterError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"{where} must be a whole number >= 1, got {value!r}")
    return value
