"""The whole of ``conf/``'s parameters as one model, and what is generated from it: the editors' JSON Schema
(``conf/parameters.schema.json``) and the docs' parameter tables (``docs/parameters.md``).

``python -m language_agnostic.parameters schema`` / ``docs`` regenerate them; a test checks both match the models.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
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
    hint, _ = _inner(hint)
    names = []
    for option in _options(hint):
        option, _ = _inner(option)
        origin = typing.get_origin(option)
        if option is type(None):
            names.append("null")
        elif origin is Literal:
            names.append("choice")
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


def _allowed(field: FieldInfo) -> str:
    parts = []
    hint, metadata = _inner(field.annotation)
    for option in _options(hint):
        option, more = _inner(option)
        metadata += more
        if typing.get_origin(option) is Literal:
            parts.append(", ".join(f"`{a}`" for a in typing.get_args(option)))
    for item in [*field.metadata, *metadata]:
        for attr, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            if getattr(item, attr, None) is not None:
                parts.append(f"{sign} {getattr(item, attr)}")
        if getattr(item, "min_length", None) == 1:
            parts.append("not empty")
    return "; ".join(parts)


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


def _default(base: Mapping[str, Any], path: list[str]) -> str:
    if "<name>" in path or "[]" in path:
        return ""
    value = _lookup(base, path)
    if value is _MISSING or isinstance(value, Mapping):
        return ""
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _markdown(text: str) -> str:
    """A docstring as one line of Markdown (reST's double backticks as single ones)."""
    return " ".join(text.split()).replace("``", "`")


def rows(model: type[BaseModel], path: list[str], base: Mapping[str, Any]) -> Iterator[list[str]]:
    """One table row per key under ``model`` (nested blocks and named entries unfolded), ``path`` its prefix."""
    for name, field in model.model_fields.items():
        here = [*path, name]
        description = _markdown(field.description or "")
        nested, entries = _models_in(field.annotation), _entries_in(field.annotation)
        if any(sub in OVERRIDDEN for sub in nested):
            # a variant's `training` takes the keys of the block it overrides: listed there, not again
            description += " Any of that block's keys, each optional (unset: the block's value)."
            nested = [sub for sub in nested if sub not in OVERRIDDEN]
        yield [
            "`" + ".".join(here) + "`",
            _type_name(field.annotation),
            _default(base, here),
            _allowed(field),
            description,
        ]
        for sub in nested:
            yield from rows(sub, here, base)
        for sub in dict.fromkeys(entries):
            yield from rows(sub, [*here, "<name>"], base)
        for sub in dict.fromkeys(_items_in(field.annotation)):
            yield from rows(sub, [*here, "[]"], base)


def docs(base: Mapping[str, Any]) -> str:
    """``docs/parameters.md``: a table per section (key, type, ``conf/base``'s value, allowed values, what it does)."""
    lines = [
        "# Parameters",
        "",
        "Every key of `conf/`'s parameters, generated from the typed models in `src/language_agnostic/parameters/`",
        "by `make parameters` (a test checks this page matches them). A run checks its",
        "parameters against these models when it starts: a wrong value stops it with one line naming the key.",
        "`<name>` stands for a key you choose (a variant, a method, a language pair). The value column is",
        "`conf/base`'s; an experiment set (`--env`) or `--params` changes it.",
        "",
        "Editors: `conf/parameters.schema.json` is the JSON Schema of every `parameters*.yml` (each file's first",
        "line points at it for editors with the YAML language server, e.g. VS Code's YAML extension). A stock",
        "validator reads it as an editor does; this is its verdict on a fraction where a count is meant and on",
        "an unknown key inside a variant (computed when this page was generated):",
        "",
        "```python",
        *_validator_example(),
        "```",
        "",
    ]
    for key, model in sections().items():
        lines += [f"## `{key}`", "", _markdown(model.__doc__ or ""), ""]
        lines += ["| key | type | conf/base | allowed | what it does |", "|---|---|---|---|---|"]
        lines += [
            "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows(model, [key], base)
        ]
        lines.append("")
    lines += ["## Top-level values", "", "| key | type | conf/base | what it does |", "|---|---|---|---|"]
    for key, (hint, description, _) in scalars().items():
        lines.append(f"| `{key}` | {_type_name(hint)} | {_default(base, [key])} | {description} |")
    return "\n".join(lines) + "\n"


def _validator_example() -> list[str]:
    """A stock JSON-Schema validator (``jsonschema``) run on two wrong values, as code and its output."""
    import jsonschema

    wrong = {"fmda": {"figure": {"n_pairs": 800.5}, "variants": {"infonce": {"lrr": 1}}}}
    validator = jsonschema.Draft202012Validator(json_schema())
    lines = [
        ">>> import json, jsonschema",
        '>>> schema = json.load(open("conf/parameters.schema.json"))',
        ">>> validator = jsonschema.Draft202012Validator(schema)",
        f">>> wrong = {wrong!r}",
        ">>> def reasons(errors):  # an env's file may also null a block: the reasons are under anyOf",
        "...     for error in errors:",
        "...         yield from reasons(error.context) if error.context else [error]",
        ">>> for reason in reasons(validator.iter_errors(wrong)):",
        '...     if reason.validator_value != "null":',
        '...         print(reason.json_path, "→", reason.message)',
    ]
    found = _reasons(validator.iter_errors(wrong))
    lines += [f"{r.json_path} → {r.message}" for r in found if r.validator_value != "null"]
    return lines


def _reasons(errors: Any) -> Iterator[Any]:
    for error in errors:
        yield from _reasons(error.context) if error.context else [error]


def write(project: Path) -> list[Path]:
    """Write the JSON Schema and the docs page from the models; return the paths written."""
    import yaml

    base: dict[str, Any] = {}
    for path in sorted((project / "conf" / "base").glob("parameters*.yml")):
        base.update(yaml.safe_load(path.read_text()) or {})
    schema_path, docs_path = project / "conf" / SCHEMA_FILE, project / "docs" / DOCS_FILE
    schema_path.write_text(json.dumps(json_schema(), indent=1, ensure_ascii=False) + "\n")
    docs_path.write_text(docs(copy.deepcopy(base)))
    return [schema_path, docs_path]
