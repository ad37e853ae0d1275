"""Typed settings from parameter mappings: unknown keys are an error that names the parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
