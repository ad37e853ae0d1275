"""Parameters checked when a Kedro run starts, before its first node: a wrong type, an out-of-range
value, an unknown key or an empty value stops the run with one message naming its ``conf/`` path and
what is allowed (no traceback).

What a parameter may be is stated once, by the typed models of ``language_agnostic/parameters/`` (one
pydantic model per section: every key's type, range and choices, unknown keys refused, also inside a
variant or a method). This module is the wiring: :func:`check_parameters` validates a run's parameters
against them, so the code below ``pipelines/`` builds its settings from values that already passed.

:func:`validate_command` checks a whole ``kedro run ...`` command line in-process (its pipelines, its
``--env`` and its ``--params``) without running a node; ``LANGUAGE_AGNOSTIC_VALIDATE_ONLY=1 kedro run
...`` does the same through the run's own session (``project_config.RunConfigHook``).
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from language_agnostic.config import ParameterError
from language_agnostic.parameters.root import check as check_models
from language_agnostic.parameters.root import env_parameters


def check_parameters(params: Mapping[str, Any]) -> None:
    """A run's parameters (``conf/base``, its env and ``--params`` merged) against the typed models.

    Raises:
        ParameterError: the first wrong value, naming its parameter and what is allowed.
    """
    check_models(params)


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
    params = env_parameters(conf_source, env, options.get("params") or {})
    check_parameters(params)
    return params


__all__ = ["CommandError", "ParameterError", "check_parameters", "validate_command"]
