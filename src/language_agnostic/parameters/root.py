"""The whole of ``conf/``'s parameters as one model, and what is generated from it: the editors' JSON Schema
(``conf/parameters.schema.json``) and the docs' parameter reference (``docs/parameters.md``).

``python -m language_agnostic.parameters write`` (``make parameters``) regenerates both; a test checks they match
the models.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
import re
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo

from language_agnostic.parameters.base import OVERRIDDEN, Section, validated

# the modules of the sections, in the order the docs list them
MODULES = (
    "project",
    "embeddings",
    "massive",
    "fmda",
    "similarity",
    "emu",
    "slu",
    "tatoeba",
    "retrieve",
    "headline",
    "export",
)
SCHEMA_FILE = "parameters.schema.json"  # under conf/
DOCS_FILE = "parameters.md"  # under docs/


@functools.cache
def sections() -> dict[str, type[Section]]:
    """``{top-level key: model}`` of every section, from each module's ``SECTIONS``."""
    out: dict[str, type[Section]] = {}
    for name in MODULES:
        out.update(importlib.import_module(f"language_agnostic.parameters.{name}").SECTIONS)
    return out


def scalars() -> dict[str, tuple[Any, str, Any]]:
    """``{top-level key: (type, description, value when absent)}`` of the parameters that are a value, not a section."""
    project = importlib.import_module("language_agnostic.parameters.project")
    return {key: (hint, text, project.SCALAR_DEFAULTS.get(key)) for key, (hint, text) in project.SCALARS.items()}


@functools.cache
def root_model() -> type[Section]:
    """Every top-level key of ``conf/``: a section (absent = not configured) or a scalar."""
    fields: dict[str, Any] = {
        key: (model | None, Field(default=None, description=(model.__doc__ or "").strip().split("\n")[0]))
        for key, model in sections().items()
    }
    for key, (hint, description, default) in scalars().items():
        # null only where absent means null (raw_data_root: the catalog's own root)
        fields[key] = (hint if default is not None else hint | None, Field(default=default, description=description))
    return create_model("Parameters", __base__=Section, __doc__="The parameters of a run.", **fields)


def env_parameters(
    conf_source: str | Path, env: str, runtime_params: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The parameters a run of ``--env=env`` sees: ``conf/base`` with ``env`` and ``runtime_params`` merged over it,
    read by the project's config loader (``bootstrap_project`` must have run)."""
    from kedro.framework.project import settings

    args = {k: v for k, v in dict(settings.CONFIG_LOADER_ARGS).items() if k != "default_run_env"}
    loader = settings.CONFIG_LOADER_CLASS(
        conf_source=str(conf_source), env=env, runtime_params=dict(runtime_params or {}), **args
    )
    return dict(loader["parameters"])


def check(params: Mapping[str, Any]) -> Section:
    """``params`` (a run's, ``conf/base`` with its env and ``--params`` over it) as the root model.

    Raises:
        ParameterError: one line naming the first wrong parameter's path and what it may be.
    """
    return validated(root_model(), dict(params), "")


def normalised(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as the models read them: the values every node gets (``pipelines/config_loader.py``).

    Only the keys given are kept (an unset key stays the code's default), with each value as its model
    types it: YAML's words back as words (``mixed_precision: no`` is ``"no"``, not false) and an integer
    given for a float as that float, so ``adversarial: 0`` and ``adversarial: 0.0`` are one setting, one
    fingerprint and one trained model.

    Raises:
        ParameterError: as :func:`check`.
    """
    return check(params).model_dump(exclude_unset=True)


# ---------------------------------------------------------------------------- the editors' JSON Schema


def json_schema() -> dict[str, Any]:
    """The JSON Schema of every ``parameters*.yml`` of ``conf/`` (any env's: each holds part of the whole).

    Two things an env file may write that a run never sees are allowed too: ``_replace: true`` in a mapping
    and a null where a mapping is (it removes the key; ``pipelines/config_loader.py``).
    """
    schema = root_model().model_json_schema()
    replace = {"type": "boolean", "description": "Replace conf/base's mapping instead of merging into it"}
    for sub in _schemas(schema):
        if sub.get("type") != "object":
            continue
        sub.pop("required", None)  # an env's file holds only what differs from conf/base
        if "properties" in sub or isinstance(sub.get("additionalProperties"), dict):
            sub.setdefault("properties", {}).setdefault("_replace", replace)
        for key, prop in list(sub.get("properties", {}).items()):
            if _is_mapping(prop):
                sub["properties"][key] = {"anyOf": [prop, {"type": "null"}], **_describing(prop)}
        if isinstance(sub.get("additionalProperties"), dict) and _is_mapping(sub["additionalProperties"]):
            sub["additionalProperties"] = {"anyOf": [sub["additionalProperties"], {"type": "null"}]}
        for pattern, prop in list(sub.get("patternProperties", {}).items()):
            # `_replace` matches a key pattern such as ^\w+$ too, and must then pass its schema
            sub["patternProperties"][pattern] = {"anyOf": [prop, {"type": "null"}, {"const": True}]}
        if "patternProperties" in sub:
            sub.setdefault("properties", {}).setdefault("_replace", replace)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def _schemas(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in list(node.values()):
            yield from _schemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schemas(value)


def _is_mapping(prop: Mapping[str, Any]) -> bool:
    return "$ref" in prop or prop.get("type") == "object"


def _describing(prop: Mapping[str, Any]) -> dict[str, Any]:
    return {k: prop[k] for k in ("description", "title") if k in prop}


# ---------------------------------------------------------------------------- the docs' tables

TRAINING_LINK = "training-keys"  # the page.listed entry of the training keys' section
LONG_VALUE = 100  # a conf/base value longer than this (as JSON) is left to its file
SEED_MAX = 2**32 - 1  # a seed's upper bound, left out of the page


def _inner(hint: Any) -> tuple[Any, list[Any]]:
    """``(type, constraints)`` of a hint without its ``Annotated`` layers."""
    metadata: list[Any] = []
    while typing.get_origin(hint) is Annotated:
        hint, *more = typing.get_args(hint)
        metadata += more
    return hint, metadata


def _options(hint: Any) -> list[Any]:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return list(typing.get_args(hint))
    return [hint]


def _type_name(hint: Any) -> str:
    """The type as the docs say it, a choice as its words: ``int or null``, ``list of `cls`, `mean```."""
    hint, _ = _inner(hint)
    names = []
    for option in _options(hint):
        option, _ = _inner(option)
        origin = typing.get_origin(option)
        if option is type(None):
            names.append("null")
        elif origin is Literal:
            names.append(", ".join(f"`{a}`" for a in typing.get_args(option)))
        elif origin in (list, tuple):
            args = [a for a in typing.get_args(option) if a is not Ellipsis]
            names.append(f"list of {_type_name(args[0])}" if args else "list")
        elif origin in (dict, Mapping):
            names.append(f"mapping of {_type_name(typing.get_args(option)[1])}")
        elif isinstance(option, type) and issubclass(option, BaseModel):
            names.append("mapping")
        else:
            names.append(getattr(option, "__name__", str(option)))
    return " or ".join(dict.fromkeys(names))


def _bounds(metadata: list[Any]) -> str:
    """``≥ 1``, ``> 0, < 1``: the bounds in ``metadata`` (a ``Field(...)`` unpacked)."""
    items = [*metadata, *(more for item in metadata if isinstance(item, FieldInfo) for more in item.metadata)]
    bounds = []
    for item in items:
        for attr, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            value = getattr(item, attr, None)
            if value is not None and value != SEED_MAX:
                bounds.append(f"{sign} {value}")
    return ", ".join(dict.fromkeys(bounds))


def _non_empty(metadata: list[Any]) -> bool:
    items = [*metadata, *(more for item in metadata if isinstance(item, FieldInfo) for more in item.metadata)]
    return any(getattr(item, "min_length", None) == 1 for item in items)


def _kind(field: FieldInfo) -> str:
    """The type and its constraints: ``int ≥ 1``, ``float ≥ 0 or null``, ``non-empty list of str``."""
    hint, metadata = _inner(field.annotation)
    options = []
    for option in _options(hint):
        option, more = _inner(option)
        options.append(
            ("non-empty " if _non_empty(more) else "") + " ".join(filter(None, [_type_name(option), _bounds(more)]))
        )
    metadata = [*field.metadata, *metadata]
    kind = " ".join(filter(None, [" or ".join(dict.fromkeys(options)), _bounds(metadata)]))
    return ("non-empty " if _non_empty(metadata) else "") + kind


def _models_in(hint: Any) -> list[type[BaseModel]]:
    hint, _ = _inner(hint)
    found = []
    for option in _options(hint):
        option, _ = _inner(option)
        if isinstance(option, type) and issubclass(option, BaseModel):
            found.append(option)
    return found


def _entries_in(hint: Any) -> list[type[BaseModel]]:
    """The models of a ``dict[str, Model]`` (a named entry: a variant, a method)."""
    hint, _ = _inner(hint)
    for option in _options(hint):
        option, _ = _inner(option)
        if typing.get_origin(option) in (dict, Mapping):
            return [m for o in _options(_inner(typing.get_args(option)[1])[0]) for m in _models_in(o)]
    return []


def _items_in(hint: Any) -> list[type[BaseModel]]:
    """The models of a ``list[Model]`` (e.g. a report's claims)."""
    hint, _ = _inner(hint)
    for option in _options(hint):
        option, _ = _inner(option)
        if typing.get_origin(option) in (list, tuple):
            return [m for o in _options(_inner(typing.get_args(option)[0])[0]) for m in _models_in(o)]
    return []


def _lookup(base: Any, path: list[str]) -> Any:
    for key in path:
        if not isinstance(base, Mapping) or key not in base:
            return _MISSING
        base = base[key]
    return base


_MISSING = object()


class _Page:
    """What the tables are written from: ``conf/base``'s values, the file each section is in, and the blocks
    already listed (``(link, the signatures of its keys)``) that a later block with the same keys points at."""

    def __init__(self, base: Mapping[str, Any], files: Mapping[str, str]) -> None:
        self.base, self.files = base, files
        self.listed: list[tuple[str, frozenset[tuple[Any, ...]], list[str]]] = []

    def value(self, path: list[str]) -> str:
        """``conf/base``'s value at ``path`` as JSON ("" when unset or a mapping; a long one: its file)."""
        if "<name>" in path or "[]" in path:
            return ""
        value = _lookup(self.base, path)
        if value is _MISSING or isinstance(value, Mapping):
            return ""
        text = json.dumps(value, ensure_ascii=False)
        return f"in {self.files.get(path[0], 'conf/base')}" if len(text) > LONG_VALUE else text


def _markdown(text: str) -> str:
    """A docstring as one line of Markdown (reST's double backticks as single ones; a ``<`` outside code
    escaped, so that ``<pipeline>`` is not read as an HTML tag)."""
    parts = " ".join(text.split()).replace("``", "`").split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


def _signatures(model: type[BaseModel]) -> dict[str, tuple[Any, ...]]:
    """``{key: what makes two keys the same}`` (name, description, type and nested models) of ``model``."""
    return {
        name: (name, field.description, _kind(field), tuple(_models_in(field.annotation)))
        for name, field in model.model_fields.items()
    }


def _blocks(field: FieldInfo, here: list[str]) -> list[tuple[type[BaseModel], list[str]]]:
    """The models listed under a key: a nested block, a named entry (``<name>``), a list's item (``[]``)."""
    nested = [(sub, here) for sub in _models_in(field.annotation) if sub not in OVERRIDDEN]
    entries = [(sub, [*here, "<name>"]) for sub in dict.fromkeys(_entries_in(field.annotation))]
    items = [(sub, [*here, "[]"]) for sub in dict.fromkeys(_items_in(field.annotation))]
    return nested + entries + items


class _Row(typing.NamedTuple):
    """One key of the page: its depth under the section, path, type, ``conf/base``'s value, what it does."""

    depth: int
    key: str
    kind: str
    value: str
    description: str

    def markdown(self) -> str:
        """``- `key` (type; `value`): what it does``, indented by depth (a block's type, mapping, left out)."""
        about = "; ".join(filter(None, ["" if self.kind == "mapping" else self.kind, self.value]))
        return f"{'  ' * self.depth}- `{self.key}`{f' ({about})' if about else ''}: {self.description}"


def _unfold(model: type[BaseModel], path: list[str], page: _Page) -> tuple[str, list[str], list[_Row]]:
    """``model``'s keys under ``path``, as ``(note, values, rows)``: where an earlier block has two or more of
    the same keys, the note points at it, ``values`` are ``conf/base``'s values of those keys here and ``rows``
    the other keys'."""
    signatures = _signatures(model)
    mine = set(signatures.values())
    earlier = [found for found in page.listed if len(found[1] & mine) >= min(2, len(found[1]))]
    if len(signatures) > 1:
        page.listed.append((f"[`{'.'.join(path)}`](#{path[0]})", frozenset(mine), path))
    if not earlier:
        return "", [], list(rows(model, path, page))
    link, keys, where = max(earlier, key=lambda found: len(found[1] & mine))
    same = [name for name, signature in signatures.items() if signature in keys]
    values = {
        row.key[len(".".join(path)) + 1 :]: row.value.strip("`")
        for row in rows(model, path, _Page(page.base, page.files), only=set(same))
        if row.value.startswith("`") and "=" not in row.value
    }
    # values all equal to the earlier block's are not repeated
    shared = all(page.value([*where, *key.split(".")]) == value for key, value in values.items())
    new = [] if shared else [f"`{key}={value}`" for key, value in values.items()]
    rest = list(rows(model, path, page, only=set(signatures) - set(same)))
    which = "the keys" if keys <= mine else ", ".join(f"`{name}`" for name in same)
    of = "the [training keys](#training-keys)" if link == TRAINING_LINK else f"{which} of {link}"
    of += " (same values)" if values and not new else ""
    return f" Takes {of}{', and:' if rest else '.'}", new, rest


def rows(model: type[BaseModel], path: list[str], page: _Page, only: set[str] | None = None) -> Iterator[_Row]:
    """One row per key under ``model``, ``path`` its prefix; nested blocks and named entries unfolded once, a
    block with the keys of an earlier one pointing at it."""
    for name, field in model.model_fields.items():
        if only is not None and name not in only:
            continue
        here = [*path, name]
        description = _markdown(field.description or "")
        if description.startswith("The "):  # a reference line: "Locales drawn", not "The locales drawn"
            description = description[4:5].upper() + description[5:]
        if any(sub in OVERRIDDEN for sub in _models_in(field.annotation)):
            # a variant's `training` takes the keys of the block it overrides: listed there, not again
            description += " Any of its keys."
        value, below = page.value(here), []
        for sub, where in _blocks(field, here):
            note, values, sub_rows = _unfold(sub, where, page)
            description += note
            value = value or ", ".join(values)
            below += sub_rows
        value = value if not value or value.startswith(("in ", "`")) else f"`{value}`"
        depth = len([part for part in here if part not in ("<name>", "[]")]) - 2
        yield _Row(depth, ".".join(here), _kind(field), value, description)
        yield from below


def _first_sentence(text: str) -> str:
    """``text`` up to its first full stop before a capital or a code span ("et al. 2022" is not one)."""
    return re.split(r"\.\s(?=[A-Z`])", text, maxsplit=1)[0].rstrip(".") + "."


def _training_keys() -> list[str]:
    """The section of the keys every ``training`` block takes (``training/loop.py:TrainSettings``)."""
    training = importlib.import_module("language_agnostic.parameters.emu").Training
    return [
        "## Training keys",
        "",
        "Every `training` block and its overrides take these keys; the default applies where `conf/` sets none.",
        "",
        *(
            _Row(
                0, name, _kind(field), f"default `{json.dumps(field.default)}`", _markdown(field.description or "")
            ).markdown()
            for name, field in training.model_fields.items()
        ),
        "",
    ]


def docs(base: Mapping[str, Any], files: Mapping[str, str] | None = None) -> str:
    """``docs/parameters.md``: every key of a section as ``- `key` (type; conf/base's value): what it does``."""
    page = _Page(base, files or {})
    training = importlib.import_module("language_agnostic.parameters.emu").Training
    page.listed.append((TRAINING_LINK, frozenset(_signatures(training).values()), []))
    lines = [
        "# Parameters",
        "",
        "Every key of `conf/`, generated from `src/language_agnostic/parameters/` by `make parameters`, as",
        "``- `key` (type; its value in `conf/base`): what it does``; `--env` or `--params` changes the value.",
        "A run stops on a wrong value with one line naming the key. `<name>` is a key you choose. Editors:",
        "every `parameters*.yml` points at the JSON Schema `conf/parameters.schema.json`.",
        "",
        *_training_keys(),
    ]
    for key, model in sections().items():
        lines += [f"## `{key}`", "", _first_sentence(_markdown(model.__doc__ or "")), ""]
        lines += [*(row.markdown() for row in rows(model, [key], page)), ""]
    lines += ["## Top-level values", ""]
    for key, (hint, description, _) in scalars().items():
        value = f"`{page.value([key])}`" if page.value([key]) else ""
        lines.append(_Row(0, key, _type_name(hint), value, description).markdown())
    return "\n".join(lines) + "\n"


def write(project: Path) -> list[Path]:
    """Write the JSON Schema and the docs page from the models; return the paths written."""
    import yaml

    base: dict[str, Any] = {}
    files: dict[str, str] = {}
    for path in sorted((project / "conf" / "base").glob("parameters*.yml")):
        found = yaml.safe_load(path.read_text()) or {}
        base.update(found)
        files.update(dict.fromkeys(found, f"conf/base/{path.name}"))
    schema_path, docs_path = project / "conf" / SCHEMA_FILE, project / "docs" / DOCS_FILE
    schema_path.write_text(json.dumps(json_schema(), indent=1, ensure_ascii=False) + "\n")
    docs_path.write_text(docs(copy.deepcopy(base), files))
    return [schema_path, docs_path]
