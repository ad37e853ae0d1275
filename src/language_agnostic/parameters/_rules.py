"""Small pieces the section models share: a non-empty string, a string of a given form, and an error
that a model's own check (one that reads two keys) places at the key it is about."""

from __future__ import annotations

import dataclasses
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    Tag,
    ValidationError,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError

NonEmpty = Annotated[str, Field(min_length=1)]
"""A string that must not be empty (a path, a name)."""


@dataclasses.dataclass(frozen=True)
class _Matching:
    """A string of the form ``pattern`` (in full), else ``must be <what>``; the JSON Schema gets the pattern."""

    pattern: str
    what: str

    def _check(self, value: str) -> str:
        if not re.fullmatch(self.pattern, value):
            raise ValueError(f"must be {self.what}")
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return AfterValidator(self._check).__get_pydantic_core_schema__(source, handler)

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        json_schema = handler(schema)
        json_schema["pattern"] = f"^(?:{self.pattern})$"
        return json_schema


def matching(pattern: str | re.Pattern[str], what: str) -> Any:
    """``Annotated[str, matching(pattern, what)]``: a string matching ``pattern`` in full, else ``must be <what>``."""
    text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    return _Matching(text.removeprefix("^").removesuffix("$"), what)


def error_at(loc: tuple[str | int, ...], message: str, value: Any) -> ValidationError:
    """A validation error at ``loc`` (relative to the model that raises it) saying ``message`` about ``value``.

    A model's check of two keys together raises it so that the one-line message names the key it
    is about (``embeddings.extraction.prefix: ...``), not the whole block.
    """
    error = InitErrorDetails(type=PydanticCustomError("parameter_rule", message), loc=loc, input=value)
    return ValidationError.from_exception_data("parameters", [error])


def word_or_list(word: str, item: Any) -> Any:
    """The type of a key that takes ``word`` or a non-empty list of ``item`` (``languages: all | [deu, afr]``).

    A string is checked as the word, anything else as the list, so that a wrong entry of a list is named as such
    (the tags hold ``[``: :func:`~language_agnostic.parameters.base.describe` leaves them out of the path).
    """
    word_tag, list_tag = f"literal[{word!r}]", "list[...]"
    return Annotated[
        Annotated[Literal[word], Tag(word_tag)] | Annotated[list[item], Field(min_length=1), Tag(list_tag)],
        Discriminator(lambda value: word_tag if isinstance(value, str) else list_tag),
    ]
