"""The one markdown table writer every report uses, and its reader (:func:`parse_tables`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


def separator(n_columns: int, left: int = 1) -> str:
    """``|---|---:|…``: the first ``left`` columns left-aligned (labels), the rest right-aligned (numbers)."""
    return "|" + "---|" * left + "---:|" * (n_columns - left)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]] = (), left: int = 1) -> list[str]:
    """A markdown table as lines: header, separator, one line per row (cells as given, ``str()``-ed).

    Args:
        header: Column titles.
        rows: Cells per row; each row must have ``len(header)`` cells.
        left: How many leading columns are labels (left-aligned).

    Raises:
        ValueError: A row with the wrong number of cells (names the row).
    """
    lines = ["| " + " | ".join(header) + " |", separator(len(header), left)]
    for i, row in enumerate(rows):
        cells = [str(c) for c in row]
        if len(cells) != len(header):
            raise ValueError(f"table row {i} has {len(cells)} cells for {len(header)} columns: {cells}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_SEPARATOR_CELL = re.compile(r"^\s*:?-+:?\s*$")


@dataclass(frozen=True)
class ParsedTable:
    """A pipe table read back from markdown: the headings above it, its cells as written, where it is."""

    headings: tuple[str, ...]  # the headings it sits under, outermost first (the last is the nearest)
    header: tuple[str, ...]  # column titles, stripped
    left: tuple[bool, ...]  # per column: left-aligned (a label column, as :func:`separator` writes it)
    rows: tuple[tuple[str, ...], ...]  # body cells, stripped, padded or cut to the header's width
    lines: tuple[int, ...]  # each body row's line number (0-based, in the text split on "\n")


def cell_spans(line: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each cell of a table line: the text between its pipes, spaces included.

    An escaped ``\\|`` does not split; the empty text outside a leading or trailing pipe is no cell.
    """
    pipes = [i for i, ch in enumerate(line) if ch == "|" and (i == 0 or line[i - 1] != "\\")]
    bounds = [-1, *pipes, len(line)]
    spans = [(a + 1, b) for a, b in zip(bounds, bounds[1:])]
    if pipes and not line[: pipes[0]].strip():
        spans = spans[1:]
    if pipes and not line[pipes[-1] + 1 :].strip():
        spans = spans[:-1]
    return spans


def _cells(line: str) -> list[str]:
    return [line[a:b].strip() for a, b in cell_spans(line)]


def parse_tables(markdown: str) -> list[ParsedTable]:
    """Every pipe table of ``markdown`` (header line, ``|---|---:|`` separator, ``|``-lines after),
    with the headings above it; tables and headings inside fenced code blocks are skipped."""
    lines = markdown.split("\n")
    tables: list[ParsedTable] = []
    trail: list[tuple[int, str]] = []  # (level, text) of the headings in scope
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (heading := _HEADING.match(line)):
            level = len(heading.group(1))
            trail = [h for h in trail if h[0] < level] + [(level, heading.group(2))]
        elif not fenced and line.lstrip().startswith("|") and i + 1 < len(lines):
            header, separator = _cells(line), _cells(lines[i + 1])
            if len(header) == len(separator) and all(_SEPARATOR_CELL.match(c) for c in separator):
                end = i + 2
                while end < len(lines) and lines[end].lstrip().startswith("|"):
                    end += 1
                width = len(header)
                rows = tuple(tuple((_cells(lines[j]) + [""] * width)[:width]) for j in range(i + 2, end))
                tables.append(
                    ParsedTable(
                        headings=tuple(text for _, text in trail),
                        header=tuple(header),
                        left=tuple(not c.endswith(":") for c in separator),
                        rows=rows,
                        lines=tuple(range(i + 2, end)),
                    )
                )
                i = end
                continue
        i += 1
    return tables


def section_text(markdown: str, heading: str) -> str:
    """The part of ``markdown`` under the heading whose text is ``heading`` (any level): from that
    heading's line to the next heading of the same or a higher level, outside fenced code blocks.

    Raises:
        ValueError: No heading has that text (a typo would otherwise select nothing).
    """
    lines = markdown.split("\n")
    fenced, start, level = False, None, 0
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and (match := _HEADING.match(line)):
            if start is not None and len(match.group(1)) <= level:
                return "\n".join(lines[start:i]) + "\n"
            if start is None and match.group(2).strip() == heading.strip():
                start, level = i, len(match.group(1))
    if start is None:
        raise ValueError(f"no heading {heading!r} in the markdown")
    return "\n".join(lines[start:]) + ("" if markdown.endswith("\n") else "\n")
