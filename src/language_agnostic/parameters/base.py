"""What every parameter model shares: strict types, unknown keys forbidden, one-line errors naming the path.

Each section of ``conf/`` (``fmda``, ``qe``, ``embeddings`` ...) is a :class:`Section`: a pydantic model
whose fields are the section's keys, each with its type, its range or choices as constraints, and its
one-line description as the docstring under it (the docs' parameter tables and the editors' JSON Schema
read these). Mappings whose keys the user chooses (variants, methods, pairs) are ``dict[str, Model]``.

Why strict: a fraction where a count is meant (``n_pairs: 800.5``) or a word where a number is meant is
refused instead of coerced; an integer is still accepted for a float (``lr: 1``).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from language_agnostic.config import ParameterError

# YAML and ``--params`` read ``no`` / ``off`` as false: a setting that takes a word gets the word back
# (``mixed_precision: no`` is ``"no"``), and the nodes get the word (root.normalised)
_YAML_WORDS = {False: "no", True: "yes"}


class Section(BaseModel):
    """A block of ``conf/``: every key typed and described, unknown keys an error."""

    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True, frozen=True)


OVERRIDDEN: dict[type[BaseModel], type[BaseModel]] = {}
"""``{overrides model: the block it overrides}`` (the docs list the block's keys once, not under every entry)."""


def overrides(model: type[Section], name: str, doc: str) -> type[Section]:
    """``model`` with every field optional (unset: the overridden block's value), for a block that overrides
    another key by key (a variant's ``training``); a null is still refused where ``model`` refuses it."""
    fields: dict[str, Any] = {
        key: (field.annotation, FieldInfo.merge_field_infos(field, default=None))
        for key, field in model.model_fields.items()
    }
    made = create_model(name, __base__=Section, __doc__=doc, __module__=model.__module__, **fields)
    OVERRIDDEN[made] = model
    return made


def given(override: Section, key: str, block: Section) -> Any:
    """``override``'s ``key`` where it sets it, else ``block``'s (what the code merges: ``{**block, **override}``)."""
    return getattr(override, key) if key in override.model_fields_set else getattr(block, key)


def _word(value: Any) -> Any:
    return _YAML_WORDS[value] if isinstance(value, bool) else value


def _blank(value: Any) -> Any:
    return "" if value is None else value


Word = Annotated[str, BeforeValidator(_word)]
"""A string that YAML may have read as a boolean (``no`` → false): the word is given back."""

Blank = Annotated[str, BeforeValidator(_blank)]
"""A string for which an empty value (YAML's null, ``--params=key=``) means ``""``."""


# pydantic's error types, said as this project's messages say them
_MESSAGES = {
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "missing": "is missing (required)",
    "none_required": "must be null",
}
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}


def _fields_at(model: Any, loc: tuple[Any, ...]) -> list[str] | None:
    """The keys the model (or the mapping of models) at ``loc`` under ``model`` takes, or None if unknown."""
    current: Any = model
    for part in loc:
        current = _inner(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return None
            current = field.annotation
        elif typing.get_origin(current) in (dict, Mapping):
            current = typing.get_args(current)[1]
        elif typing.get_origin(current) in (list, tuple) and isinstance(part, int):
            current = typing.get_args(current)[0]
        else:
            return None
    current = _inner(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(current.model_fields)
    return None


def _inner(hint: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` and of ``X | None``."""
    while True:
        origin = typing.get_origin(hint)
        if origin is Annotated:
            hint = typing.get_args(hint)[0]
        elif origin in (typing.Union, types.UnionType):
            options = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(options) != 1:
                return hint
            hint = options[0]
        else:
            return hint


def describe(exc: ValidationError, where: str, model: Any = None) -> str:
    """The first error of ``exc`` as one line: ``fmda.training.lr: must be > 0, got -1``.

    Args:
        exc: pydantic's error.
        where: The path in ``conf/`` of what was validated (``""``: the top level).
        model: What was validated (to list the known keys when a key is unknown).
    """
    error = exc.errors()[0]
    # a discriminated union or a wrapped validator adds its tag to the location: not a key
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
    path = ".".join([*([where] if where else []), *(str(p) for p in loc)])
    kind, context = error["type"], error.get("ctx") or {}
    got = error.get("input")
    if kind == "extra_forbidden":
        parent = ".".join([*([where] if where else []), *(str(p) for p in loc[:-1])]) or "the top level"
        known = _fields_at(model, loc[:-1]) if model is not None else None
        return f"{parent}: unknown key {str(loc[-1])!r}" + (f"; known: {known}" if known else "")
    if kind in _BOUNDS:
        bound = next(iter(context.values()))
        bound = int(bound) if isinstance(bound, float) and bound.is_integer() else bound
        message = f"must be {_BOUNDS[kind]} {bound}"
    elif kind == "literal_error":
        # pydantic says "'a', 'b' or 'c'"
        message = f"must be one of [{str(context.get('expected', '')).replace(' or ', ', ')}]"
    elif kind in _MESSAGES:
        message = _MESSAGES[kind]
    else:
        text = str(error["msg"]).removeprefix("Value error, ")
        message = text[:1].lower() + text[1:]
    if kind == "missing":
        return f"{path}: {message}"
    return f"{path or 'the parameters'}: {message}, got {got!r}"


def validated(model: type[Section], value: Any, where: str) -> Section:
    """``value`` as ``model``, or a :class:`ParameterError` of one line naming the first wrong key's path."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ParameterError(describe(exc, where, model)) from None
