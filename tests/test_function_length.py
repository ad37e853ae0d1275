"""No function in ``src/language_agnostic`` is longer than 80 lines.

A function's length runs from its ``def`` line to its last line (``end_lineno - lineno + 1``
in :mod:`ast`), docstring and comments included: a longer one is split into helpers that each
say what their part does.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MAX_LINES = 80
PACKAGE = Path(__file__).resolve().parents[1] / "src" / "language_agnostic"


def long_functions(root: Path, max_lines: int = MAX_LINES) -> list[str]:
    """``"file:function (N lines)"`` for every function under ``root`` longer than ``max_lines``.

    Args:
        root: The folder whose ``.py`` files are read.
        max_lines: The longest a function may be.

    Returns:
        One entry a function over the limit, in file and line order.
    """
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                length = fn.end_lineno - fn.lineno + 1
                if length > max_lines:
                    found.append((str(path.relative_to(root)), fn.lineno, fn.name, length))
    return [f"{file}:{name} ({length} lines)" for file, _, name, length in sorted(found)]


def test_long_functions_reports_file_name_and_length(tmp_path: Path) -> None:
    """The check names the file, the function and its length, and only for those over the limit."""
    body = "\n".join(f"    x{i} = {i}" for i in range(3))
    (tmp_path / "pkg").mkdir()
    # 1 ``def`` line + 3 body lines = 4 lines; the nested one is 2 lines
    (tmp_path / "pkg" / "mod.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    def inner():\n        pass\n")
    assert long_functions(tmp_path, max_lines=3) == ["pkg/mod.py:long (4 lines)"]
    assert long_functions(tmp_path, max_lines=4) == []


@pytest.mark.parametrize("root", [PACKAGE], ids=["src/language_agnostic"])
def test_no_function_over_80_lines(root: Path) -> None:
    """Every function in the package is at most 80 lines long."""
    too_long = long_functions(root)
    assert not too_long, f"functions over {MAX_LINES} lines:\n" + "\n".join(too_long)
