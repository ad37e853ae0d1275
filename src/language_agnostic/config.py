"""Typed settings from parameter mappings: unknown keys are an error that names the parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
