"""No function in ``src/language_agnostic`` is longer than 80 lines.

A function's length runs from its ``def`` line to its last line (``end_lineno - lineno + 1``
in :mod:`ast`; decorators not counted, docstring and comments counted): a longer one is split
into helpers that each say what their part does.
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_LINES = 80
PACKAGE = Path(__file__).resolve().parents[1] / "src" / "language_agnostic"


def long_functions_in(source: str, path: str, max_lines: int = MAX_LINES) -> list[tuple[str, int, str, int]]:
    """``(path, line, name, length)`` of every function (methods and nested ones too) in ``source``
    longer than ``max_lines``."""
    found = []
    for fn in ast.walk(ast.parse(source, filename=path)):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            length = fn.end_lineno - fn.lineno + 1
            if length > max_lines:
                found.append((path, fn.lineno, fn.name, length))
    return found


def long_functions(root: Path, max_lines: int = MAX_LINES) -> list[str]:
    """``"path:line function (N lines)"`` for every function under ``root`` longer than ``max_lines``,
    sorted by path and line (``path`` relative to ``root``)."""
    found = []
    for path in root.rglob("*.py"):
        found += long_functions_in(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix(), max_lines)
    return [f"{path}:{line} {name} ({length} lines)" for path, line, name, length in sorted(found)]


def _function(name: str, lines: int, indent: str = "") -> str:
    """A function of exactly ``lines`` lines: its ``def`` line and ``lines - 1`` assignments."""
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))
    return f"{indent}def {name}():\n{body}"


def test_an_81_line_function_is_reported_and_an_80_line_one_is_not() -> None:
    source = "import functools\n\n\n" + _function("at_limit", 80) + "\n\n@functools.cache\n" + _function("over", 81)
    assert long_functions_in(source, "mod.py") == [("mod.py", 87, "over", 81)]


def test_methods_and_nested_functions_are_checked(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "b.py").write_text("class C:\n" + _function("method", 82, indent="    "))
    outer = "def outer():\n" + _function("inner", 81, indent="    ")
    (tmp_path / "a.py").write_text(outer + "\n\n" + _function("ok", 3))
    assert long_functions(tmp_path) == [
        "a.py:1 outer (82 lines)",
        "a.py:2 inner (81 lines)",
        "pkg/b.py:2 method (82 lines)",
    ]


def test_no_function_over_80_lines() -> None:
    """Every function in the package is at most 80 lines long; all offenders are listed at once."""
    too_long = long_functions(PACKAGE)
    assert not too_long, f"functions over {MAX_LINES} lines:\n" + "\n".join(too_long)
