"""Check that every figure in the docs keeps its command: a measured number needs the run that reproduces it.

A *figure* is a markdown table with a number in a body cell, or a prose line stating a measured number
(seconds, minutes, a percentage, a ratio ``×``, a p-value ``p =``). A parameter table (a header cell
``default``: the numbers are settings, not measurements) is not a figure. Each must share its section (the lines
under the same heading, down to the next heading of any level) with a *command*: ``kedro run …``,
``python benchmarks/…``, ``python experiments/…``, ``python scripts/…`` or ``make …``, in prose or a code block.

Prints ``file:line: …`` for each figure without a command and exits 1 if there is any::

    .venv/bin/python scripts/check_doc_commands.py docs README.md
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path

HEADING = re.compile(r"^#{1,6}\s")
FENCE = re.compile(r"^\s*(```|~~~)")
# the commands a figure may cite; "python" also as ".venv/bin/python", with flags such as -u before the path
COMMAND = re.compile(
    r"\bkedro run\b|\bpython3?(?:\s+-\S+)*\s+(?:benchmarks|experiments|scripts)/\S+\.py|(?:^|[\s`(])make\s+[a-z]"
)
# a measured number in prose: 1.5 s, 12 seconds, 55 min, 3.2%, 4.1×, p = 0.03 (a digit right before the unit)
MEASURED = re.compile(
    r"\d(?:[\d,.]*\d)?\s?(?:s|sec|seconds?|min|minutes?|ms|h|hours?)\b(?!-)"
    r"|\d(?:[\d.]*\d)?\s?%"
    r"|\d(?:[\d.]*\d)?\s?×"
    r"|\bp\s?[=<≈]\s?\d(?:[\d.]*\d)?(?:e-?\d+)?"
)
TABLE_ROW = re.compile(r"^\s*\|")
SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}")
# a body cell that is a number (bold, a sign or a unit after it allowed): 0.8109, **−1.654**, 12.7 s, 1,248×
NUMBER_CELL = re.compile(r"\|\s*\**[-−+~]?\d")
# the header of a parameter reference: its numbers are defaults
PARAMETER_HEADER = re.compile(r"\|\s*default\s*\|", re.IGNORECASE)


def sections(lines: list[str]) -> Iterator[list[tuple[int, str, bool]]]:
    """Split a page at its headings (outside code blocks); yield each section's (line number, text, in code)."""
    section: list[tuple[int, str, bool]] = []
    in_code = False
    for number, line in enumerate(lines, start=1):
        if FENCE.match(line):
            in_code = not in_code
            section.append((number, line, True))
            continue
        if not in_code and HEADING.match(line):
            yield section
            section = []
        section.append((number, line, in_code))
    yield section


def figures(section: list[tuple[int, str, bool]]) -> Iterator[tuple[int, str]]:
    """The section's figures: (line, what) for each table with a number and each prose line with a measured one."""
    in_table = False
    header = 0
    reported = False
    for number, line, in_code in section:
        if in_code:
            in_table = False
            continue
        if TABLE_ROW.match(line):
            if not in_table:
                # a parameter table is marked reported from its header on: it holds no figure
                in_table, header, reported = True, number, bool(PARAMETER_HEADER.search(line))
            elif not SEPARATOR.match(line) and not reported and NUMBER_CELL.search(line):
                reported = True
                yield header, "table with numbers"
            continue
        in_table = False
        if MEASURED.search(line):
            yield number, "measured number: " + MEASURED.search(line).group(0)


def check_text(text: str, name: str) -> list[str]:
    """Every figure of one markdown text whose section has no command, as ``name:line: what``."""
    problems = []
    for section in sections(text.splitlines()):
        if any(COMMAND.search(line) for _, line, _ in section):
            continue
        problems += [f"{name}:{number}: {what} without a command in its section" for number, what in figures(section)]
    return problems


def markdown_files(paths: list[str]) -> list[Path]:
    """The markdown files named, directories searched recursively, in a stable order."""
    files: list[Path] = []
    for path in map(Path, paths):
        files += sorted(path.rglob("*.md")) if path.is_dir() else [path]
    return files


def main(argv: list[str] | None = None) -> int:
    """Print every figure without a command; 1 if there is any, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="markdown files or directories")
    args = parser.parse_args(argv)
    problems = [p for file in markdown_files(args.paths) for p in check_text(file.read_text(), str(file))]
    for problem in problems:
        print(problem)
    print(f"{len(problems)} figure(s) without a command", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
