"""A user's own utterances: one per line of a text file, or one column of a CSV file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

TEXT_COLUMNS = ["id", "text"]


def read_utterances(spec: Mapping[str, Any], where: str) -> pd.DataFrame:
    """Read the utterances a parameter names.

    A ``.csv`` file is read with a header; ``column`` names the column of texts and
    ``id_column`` (optional) the column of ids. Any other file is UTF-8 text, one utterance
    per line, whose id is its line number (1-based). Lines and cells that are empty or blank are
    skipped (their ids are not reused, so ids still point into the file); texts are otherwise
    kept as written (the encoder sees exactly them).

    Args:
        spec: ``{"path": ..., "column": ..., "id_column": ...}`` (e.g. ``retrieve.queries``), whose keys and
            types are validated by ``parameters.retrieve.Texts`` when the run starts (another key is ignored).
        where: The parameter's name, for errors.

    Returns:
        Columns :data:`TEXT_COLUMNS` (``id`` as str), in file order.

    Raises:
        ValueError: No ``path``, a missing file, a CSV without ``column`` or lacking it (or
            ``id_column``), a text file given a ``column``, or no utterance in the file; each
            names ``where`` and the file.
    """
    if not spec.get("path"):
        raise ValueError(f"{where}.path: no file given")
    path = Path(str(spec["path"]))
    if not path.is_file():
        raise ValueError(f"{where}.path: file not found: {path}")
    column, id_column = spec.get("column"), spec.get("id_column")
    if path.suffix.lower() == ".csv":
        if not column:
            raise ValueError(f"{where}.column: {path} is a CSV file; name the column that holds the utterances")
        try:
            table = pd.read_csv(path, dtype=str, keep_default_na=False)
        except pd.errors.EmptyDataError:
            raise ValueError(f"{where}: {path} is empty") from None
        for key, name in (("column", column), ("id_column", id_column)):
            if name and name not in table.columns:
                raise ValueError(f"{where}.{key}: {path} has no column {name!r}; its columns: {list(table.columns)}")
        ids = table[id_column] if id_column else pd.Series(range(1, len(table) + 1)).astype(str)
        rows = pd.DataFrame({"id": ids.to_numpy(), "text": table[column].to_numpy()})
    else:
        if column or id_column:
            raise ValueError(
                f"{where}.column: {path} is not a .csv file (one utterance per line); leave column and id_column empty"
            )
        # "\n" only: str.splitlines would also split on characters some scripts' texts hold (U+2028, U+0085, ...)
        lines = [line.removesuffix("\r") for line in path.read_text(encoding="utf-8").split("\n")]
        rows = pd.DataFrame({"id": [str(i) for i in range(1, len(lines) + 1)], "text": lines})
    rows = rows[rows["text"].str.strip() != ""].reset_index(drop=True)
    if rows.empty:
        raise ValueError(f"{where}: {path} holds no utterance" + (f" in column {column!r}" if column else ""))
    return rows[TEXT_COLUMNS]
