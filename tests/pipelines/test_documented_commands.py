"""Every ``kedro run`` command the docs print runs: its pipelines, its ``--env`` and its ``--params`` pass the
checks a run makes when it starts (``pipelines/parameter_checks.py:validate_command``), in-process.

The commands are read from README.md, docs/**/*.md and conf/ (its README and the comments of its yml files)
when the tests are collected, so a command added or changed in the docs is checked by the next run.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from kedro.framework.startup import bootstrap_project

from language_agnostic.config import ParameterError
from language_agnostic.pipelines.parameter_checks import validate_command
from tests.conftest import PROJECT_ROOT

# a command: ``kedro run`` (after a path such as .venv/bin/ and the words before it on its line), up to
# the end of its code span or line; the rest of a shell line (a comment, a redirection, a pipe, another
# command) and of a sentence (a closing bracket, an aside in brackets) is not part of it
COMMAND = re.compile(r"(?:[\w./-]*/)?kedro run\b(?P<rest>[^`\n]*)")
END_OF_COMMAND = re.compile(r"\s#|\s\d?>|\s\||&&|;|\)|\s\(")
# words that stand for a value the reader chooses: the command is a template, not one to run
TEMPLATE = re.compile(r"<[^>]*>|\.\.\.|\$\w+")
PLACEHOLDER = re.compile(r"^(NAME|ENV)$")


def documentation_files(root: Path) -> list[Path]:
    """README.md, docs/**/*.md, conf/**/*.md and conf/**/*.yml, in a stable order."""
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md")), *sorted((root / "conf").rglob("*.md"))]
    return [f for f in files if f.is_file()] + sorted((root / "conf").rglob("*.yml"))


def documented_commands(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, command)`` for every ``kedro run`` command in ``path`` (a shell line ending in a
    backslash continues on the next)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        for found in COMMAND.finditer(line):
            rest, following = found["rest"], number
            while rest.rstrip().endswith("\\") and following < len(lines):
                rest = rest.rstrip()[:-1] + " " + lines[following].strip()
                following += 1
            cut = END_OF_COMMAND.search(rest)
            rest = rest[: cut.start()] if cut else rest
            yield number, " ".join(["kedro", "run", *rest.split()]).rstrip(".,:")


def runnable(command: str) -> str | None:
    """``command``'s options alone (prose after them dropped; ``--pipelines=NAME`` means any pipeline),
    or ``None`` for a template whose values the reader fills in."""
    if TEMPLATE.search(command):
        return None
    words = shlex.split(command)[2:]
    options = []
    for word in words:
        if not word.startswith("-"):
            break  # the sentence goes on after the command
        value = word.partition("=")[2]
        if any(PLACEHOLDER.search(part) for part in [value, *value.split(",")]):
            if word.startswith("--pipelines="):
                continue
            return None
        options.append(word)
    return shlex.join(["kedro", "run", *options])


def _collect() -> dict[str, list[str]]:
    """Every runnable documented command, with the ``file:line`` places that print it."""
    commands: dict[str, list[str]] = {}
    for path in documentation_files(PROJECT_ROOT):
        for number, command in documented_commands(path):
            where = f"{path.relative_to(PROJECT_ROOT)}:{number}"
            try:
                checked = runnable(command)
            except ValueError as exc:  # an unbalanced quote
                checked = f"{command}  (cannot be split into words: {exc})"
            if checked is not None:
                commands.setdefault(checked, []).append(where)
    return commands


COMMANDS = _collect()


@pytest.fixture(scope="module")
def pipeline_names() -> set[str]:
    bootstrap_project(PROJECT_ROOT)
    from kedro.framework.project import pipelines

    return set(pipelines)


def test_the_docs_print_commands():
    # the extraction finds the commands of every pipeline's guide (a broken pattern would find none)
    pipelines = {m for command in COMMANDS for m in re.findall(r"--pipelines=(\w+)", command)}
    assert {"fmda", "qe", "sts", "emu", "slu", "tatoeba", "retrieve", "headline", "export", "massive"} <= pipelines
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_documented_command_passes_the_checks_of_a_run(command: str, pipeline_names: set[str]):
    try:
        validate_command(command, PROJECT_ROOT, pipeline_names)
    except ParameterError as exc:  # CommandError too
        pytest.fail(f"{', '.join(COMMANDS[command])}: {command}: {exc}", pytrace=False)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Run `kedro run --pipelines=qe --env=similarity_seeds`.", ["kedro run --pipelines=qe --env=similarity_seeds"]),
        (
            "time .venv/bin/kedro run --pipelines=fmda > fmda.log 2>&1   # warm",
            ["kedro run --pipelines=fmda"],
        ),
        ("# the headline (kedro run --pipelines=headline)", ["kedro run --pipelines=headline"]),
        (
            "#   kedro run --params=raw_data_root=/path/to/data   (one run)",
            ["kedro run --params=raw_data_root=/path/to/data"],
        ),
        (
            "kedro run --pipelines=retrieve \\\n  --params=retrieve.top_k=3\n",
            ["kedro run --pipelines=retrieve --params=retrieve.top_k=3"],
        ),
    ],
)
def test_commands_are_read_as_a_reader_copies_them(tmp_path: Path, text: str, found: list[str]):
    doc = tmp_path / "doc.md"
    doc.write_text(text, encoding="utf-8")
    assert [command for _, command in documented_commands(doc)] == found


def test_templates_and_prose_around_a_command():
    assert runnable("kedro run --pipelines=NAME --params=trained_models.reuse=false") == (
        "kedro run --params=trained_models.reuse=false"
    )
    assert runnable("kedro run --pipelines=NAME --env=ENV") is None
    assert runnable("kedro run --pipelines=fmda --from-nodes=<the 24 evaluate_* nodes>") is None
    assert runnable("kedro run --params=raw_data_root=...") is None
    assert runnable("kedro run --pipelines=fmda --env=paper runs them") == "kedro run --pipelines=fmda --env=paper"
    assert runnable('kedro run --params="a.b=1,c=2"') == "kedro run --params=a.b=1,c=2"
