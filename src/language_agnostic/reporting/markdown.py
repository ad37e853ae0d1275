"""The one markdown table writer every report uses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
