"""Parameters checked when a Kedro run starts, before its first node: a wrong type, an out-of-range
value, an unknown key or an empty value stops the run with one message naming its ``conf/`` path and
what is allowed (no traceback).

Two layers of checks:

- Each training block is parsed by the function its nodes parse it with (so the check and the
  training never disagree): ``fmda`` (model, loss, training, every variant and head), the ``qe`` and
  ``sts`` heads, ``emu.data`` / ``emu.training``, ``slu.data`` / ``slu.training``,
  ``embeddings.extraction`` and ``trained_models``. Typed settings (``config.py:settings_from_params``)
  check every field's type and the settings' own ranges and choices.
- Every other block of every pipeline (fmda, qe, sts, emu, slu, tatoeba, retrieve, headline, export,
  massive, embeddings) is checked against ``conf/base``: its keys must be keys ``conf/base`` holds
  there (or fields of the settings dataclass that parses it, :data:`PARSED_BLOCKS`), a number stays a
  number, a true/false stays one, and a value ``conf/base`` sets to a word cannot be emptied
  (``--params=key=`` reads as null) unless :data:`MAY_BE_EMPTY` says what empty means. Mappings whose
  keys are names the user chooses (variants, methods, pairs, tables: :data:`NAMED_ENTRIES`) are not
  key-checked here; the parsers above check the entries they read.

Why not Kedro's own typed-parameter validation ("No typed parameter requirements found" in the log):
it checks parameters that a node declares with a pydantic model or a dataclass type hint, and this
project's nodes take parameter mappings whose shape follows the run's ``--env`` (variants, methods and
pairs are keys), parsed inside the node by the settings dataclasses used here.

:func:`validate_command` checks a whole ``kedro run ...`` command line in-process (its pipelines, its
``--env`` and its ``--params``) without running a node; ``LANGUAGE_AGNOSTIC_VALIDATE_ONLY=1 kedro run
...`` does the same through the run's own session (``project_config.RunConfigHook``).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import shlex
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from language_agnostic.config import ParameterError, settings_from_params
from language_agnostic.encoders.extraction import ExtractionSettings, extraction_settings
from language_agnostic.encoders.loading import BUNDLED_ALIASES
from language_agnostic.methods.contrastive import ContrastiveSettings
from language_agnostic.methods.fmda import FmdaConfig
from language_agnostic.training import fmda, heads
from language_agnostic.training.emu import EmuData
from language_agnostic.training.loop import TrainSettings
from language_agnostic.training.slu import SluData

# keys a pipeline's training block holds besides TrainSettings' fields (read by its own code)
EXTRA_TRAINING_KEYS = {"emu": (), "slu": ("train_layers",)}


def _fields(cls: type, *extra: str) -> frozenset[str]:
    return frozenset({f.name for f in dataclasses.fields(cls)} | set(extra))


# blocks parsed into a settings dataclass: their known keys are its fields (and what the parsing
# code pops before building it), whether conf/base sets them or not
PARSED_BLOCKS: dict[str, frozenset[str]] = {
    "embeddings.extraction": _fields(ExtractionSettings) - {"token_states"},
    "fmda.model": _fields(FmdaConfig) - {"dim", "n_languages"},
    "fmda.loss": _fields(ContrastiveSettings),
    "fmda.training": _fields(TrainSettings, "batch_size", "length_buckets", "select_on"),
    "qe.training": _fields(TrainSettings, "batch_size"),
    "sts.training": _fields(TrainSettings, "batch_size"),
    "emu.data": _fields(EmuData),
    "emu.training": _fields(TrainSettings, *EXTRA_TRAINING_KEYS["emu"]),
    "slu.data": _fields(SluData) - {"code_switch"},
    "slu.training": _fields(TrainSettings, *EXTRA_TRAINING_KEYS["slu"]),
}

# mappings whose keys are names the user chooses (a variant, a method, a language pair, a table's
# title): any key is allowed; what is under a name is checked by the parser that reads it
NAMED_ENTRIES = frozenset(
    {
        "fmda.variants",
        "fmda.methods",
        "fmda_paper.variants",
        "qe.methods",
        "qe.ablations",
        "qe.report.tables",
        "qe.report.ablation_tables",
        "qe.report.paper_corpus_sizes",
        "sts.methods",
        "sts.ablations",
        "sts.corpus.languages",
        "sts.corpus.keep_labels",
        "sts.report.tables",
        "sts.report.ablation_tables",
        "sts.report.paper_corpus_sizes",
        "emu.methods",
        "slu.methods",
        "massive.pairs",
        "massive.template_retrieval.n_targets",
        "massive.negative_pool.tokenize",
    }
)

# values conf/base sets to a word that may be emptied, and what empty means there
MAY_BE_EMPTY = {
    "embeddings.extraction.prefix": "no prefix (encoders other than e5)",
    "fmda.figure.pair": "no figure",
    "retrieve.model.path": "the model comes from retrieve.model.run_id",
    "retrieve.model.artifact": "with retrieve.model.path",
}


def check_parameters(params: Mapping[str, Any], base: Mapping[str, Any] | None = None) -> None:
    """Every section this module knows, parsed as the pipelines parse it; with ``base`` (the parameters
    of ``conf/base`` alone), every other key checked against it too.

    Raises:
        ParameterError: the first wrong value, naming its parameter and what is allowed.
    """
    if base is not None:
        # keys first, so that an unknown key is named with every key its block takes (a parser's own
        # message lists only its dataclass's fields, not the keys its caller pops before it)
        check_against_base(params, base, values=False)
    embeddings = params.get("embeddings") or {}
    extraction = embeddings.get("extraction")
    if extraction is not None:
        settings = extraction_settings(dict(extraction))
        _check_prefix(settings.prefix, embeddings.get("encoder") or {})
    fmda.check_parameters(params)
    for pipeline in ("qe", "sts"):
        if params.get(pipeline):
            heads.check_parameters(params[pipeline], pipeline)
    for pipeline, extra in EXTRA_TRAINING_KEYS.items():
        training = dict((params.get(pipeline) or {}).get("training") or {})
        if training:
            settings_from_params(
                TrainSettings, {k: v for k, v in training.items() if k not in extra}, f"{pipeline}.training"
            )
    emu_data = (params.get("emu") or {}).get("data")
    if emu_data:
        data = dict(emu_data)
        for key in ("adversarial_locales", "labelled_locales"):
            data[key] = tuple(data.get(key) or ())
        settings_from_params(EmuData, data, "emu.data")
    slu_data = (params.get("slu") or {}).get("data")
    if slu_data:
        # code_switch comes from slu.code_switch and the method (training/slu_methods.py), not slu.data
        settings_from_params(SluData, dict(slu_data), "slu.data", code_switch=None)
    if base is not None:
        # values last, so that a parser names a wrong value with its range or choices first
        check_against_base(params, base, keys=False)


def _check_prefix(prefix: str, encoder: Mapping[str, Any]) -> None:
    """An e5 encoder reads every text after its "query: " / "passage: " prefix: an empty one is an error."""
    name = str(encoder.get("name") or "")
    if prefix == "" and (name in BUNDLED_ALIASES or "e5" in name.lower()):
        raise ParameterError(
            f"embeddings.extraction.prefix is empty, but embeddings.encoder.name {name!r} is an e5 model, which "
            "expects 'query: ' or 'passage: '; an empty prefix is for other encoders"
        )


def check_against_base(
    params: Mapping[str, Any], base: Mapping[str, Any], where: str = "", keys: bool = True, values: bool = True
) -> None:
    """``params`` checked key by key against ``base`` (module docstring: keys, types, empty values).

    Args:
        params: The parameters (of the block at ``where``).
        base: ``conf/base``'s (of the same block).
        where: The block's path (``""``: the top level).
        keys: Check for unknown keys.
        values: Check the values' types and emptied words.

    Raises:
        ParameterError: an unknown key (with the known ones), a wrong type or an emptied word.
    """
    if where in NAMED_ENTRIES:
        return  # an entry's keys are its parser's: a variant's `loss` may set what conf/base's leaves out
    known = set(base) | PARSED_BLOCKS.get(where, frozenset())
    unknown = sorted(str(k) for k in set(params) - known)
    if keys and unknown:
        block = where or "the top level of the parameters"
        raise ParameterError(f"{block}: unknown key(s) {unknown}; known: {sorted(str(k) for k in known)}")
    for key, value in params.items():
        if key not in base:
            continue
        path = f"{where}.{key}" if where else str(key)
        if isinstance(base[key], Mapping) and isinstance(value, Mapping):
            check_against_base(value, base[key], path, keys, values)
        elif values:
            _check_value(value, base[key], path)


def _check_value(value: Any, default: Any, path: str) -> None:
    if isinstance(default, Mapping):
        if value is not None:  # null removes a block (pipelines/config_loader.py)
            raise ParameterError(f"{path} must be a mapping of {sorted(str(k) for k in default)}, got {value!r}")
    elif isinstance(default, bool):
        if not isinstance(value, bool):
            raise ParameterError(f"{path} must be true or false, got {value!r}")
    elif isinstance(default, (int, float)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ParameterError(f"{path} must be a number (conf/base: {default!r}), got {value!r}")
    elif isinstance(default, str) and default and value in (None, "") and path not in MAY_BE_EMPTY:
        raise ParameterError(f"{path} must not be empty (conf/base: {default!r})")


# a parameter the catalog reads from ``--params`` alone: ``${runtime_params:raw_data_root,...}``
RUNTIME_PARAMS = re.compile(r"\$\{runtime_params:\s*([\w.]+)")


@functools.lru_cache(maxsize=4)
def base_parameters(conf_source: Path) -> dict[str, Any]:
    """The parameters of ``conf/base`` alone (what :func:`check_against_base` checks against), plus
    the keys the catalog reads from ``--params`` alone (``${runtime_params:raw_data_root,...}``), as null.
    """
    from kedro.framework.project import settings

    args = {k: v for k, v in dict(settings.CONFIG_LOADER_ARGS).items() if k != "default_run_env"}
    loader = settings.CONFIG_LOADER_CLASS(conf_source=str(conf_source), env="base", **args)
    runtime_only = {
        key.split(".")[0]
        for path in sorted(Path(conf_source).rglob("*.yml"))
        for key in RUNTIME_PARAMS.findall(path.read_text(encoding="utf-8"))
    }
    return {**dict.fromkeys(runtime_only), **dict(loader["parameters"])}


class CommandError(ParameterError):
    """A ``kedro run`` command line that cannot run: an unknown pipeline, env or option."""


def validate_command(command: str, project_path: Path, pipeline_names: Collection[str] | None = None) -> dict[str, Any]:
    """Check a ``kedro run ...`` command line without running a node: its options parsed by Kedro's own
    ``run`` command (``--params`` read as Kedro reads them), its pipelines registered, its ``--env`` a
    folder of ``conf/``, and its parameters (that env's, with ``--params`` over them) passing
    :func:`check_parameters`.

    Args:
        command: The command, e.g. ``"kedro run --pipelines=fmda --env=fmda_seeds"`` (a leading
            ``.venv/bin/`` and environment assignments such as ``KEDRO_ENV=x`` are allowed).
        project_path: The project root (``bootstrap_project`` must have been called for it).
        pipeline_names: The registered pipelines (default: the project's, built once).

    Returns:
        The parameters the run would see.

    Raises:
        CommandError: an unknown option, pipeline or env, naming it and what is known.
        ParameterError: a wrong parameter (:func:`check_parameters`).
    """
    import click
    from kedro.framework.cli.project import run
    from kedro.framework.project import pipelines, settings

    words = shlex.split(command)
    while words and "=" in words[0] and not words[0].startswith("-"):
        words.pop(0)  # VAR=value before the command
    if len(words) < 2 or Path(words[0]).name != "kedro" or words[1] != "run":
        raise CommandError(f"not a kedro run command: {command!r}")
    try:
        options = run.make_context("run", words[2:], resilient_parsing=False).params
    except click.ClickException as exc:
        raise CommandError(f"{command!r}: {exc.format_message()}") from None
    conf_source = Path(options.get("conf_source") or Path(project_path) / settings.CONF_SOURCE)
    known_envs = sorted(p.name for p in conf_source.iterdir() if p.is_dir())
    args = dict(settings.CONFIG_LOADER_ARGS)
    env = options.get("env") or args.get("default_run_env", "local")
    if env not in known_envs:
        raise CommandError(f"--env={env}: no such environment; known: {known_envs}")
    names = set(pipelines) if pipeline_names is None else set(pipeline_names)
    asked = list(options.get("pipelines") or []) + ([options["pipeline"]] if options.get("pipeline") else [])
    unknown = sorted(set(asked) - names)
    if unknown:
        raise CommandError(f"--pipelines: unknown pipeline(s) {unknown}; known: {sorted(names)}")
    runtime = options.get("params") or {}
    loader = settings.CONFIG_LOADER_CLASS(conf_source=str(conf_source), env=env, runtime_params=runtime, **args)
    params = dict(loader["parameters"])
    check_parameters(params, base_parameters(conf_source))
    return params


__all__ = [
    "CommandError",
    "ParameterError",
    "base_parameters",
    "check_against_base",
    "check_parameters",
    "validate_command",
]
