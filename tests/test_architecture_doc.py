"""docs/architecture.md's layout names every package, module and pipeline folder of the package, and nothing else.

The layout is the fenced block that opens with ``src/language_agnostic/``: one entry a line, indented two
spaces per folder level, a folder ending in ``/``, a module in ``.py``, then its purpose. A line whose first
word is neither (the wrapped rest of a purpose) is not an entry. ``__init__.py`` files need no entry.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "language_agnostic"
DOC = ROOT / "docs" / "architecture.md"
LAYOUT_HEAD = "src/language_agnostic/"
DOC_NAME = "docs/architecture.md"


def layout_entries(text: str) -> list[str]:
    """The paths the layout block names, relative to the package (folders end in ``/``)."""
    lines = text.splitlines()
    try:
        start = next(
            i for i, line in enumerate(lines) if line.strip() == LAYOUT_HEAD and i and lines[i - 1].startswith("```")
        )
    except StopIteration:
        raise AssertionError(f"{DOC_NAME} has no layout block opening with {LAYOUT_HEAD}") from None
    entries: list[str] = []
    folders: list[str] = []  # the folder open at each indentation level below the package
    for line in lines[start + 1 :]:
        if line.startswith("```"):
            break
        match = re.match(r"( *)(\S+)", line)
        if not match:
            continue
        indent, name = len(match.group(1)), match.group(2)
        # an entry sits at an even indentation no deeper than one below the open folder
        if indent % 2 or indent // 2 > len(folders) + 1 or not (name.endswith("/") or name.endswith(".py")):
            continue
        level = indent // 2 - 1
        if level < 0:
            continue
        del folders[level:]
        path = "".join(folders) + name
        entries.append(path)
        if name.endswith("/"):
            folders.append(name)
    return entries


def package_paths(root: Path) -> set[str]:
    """Every folder holding Python (``x/``, ``pipelines/slu/``) and every module but ``__init__.py``, relative."""
    paths: set[str] = set()
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts:
            continue
        for depth in range(1, len(rel.parts)):
            paths.add("/".join(rel.parts[:depth]) + "/")
        if rel.name != "__init__.py":
            paths.add(rel.as_posix())
    return paths


def layout_problems(root: Path, text: str) -> list[str]:
    """One message per package path missing from the layout and per layout entry that does not exist."""
    named = layout_entries(text)
    real = package_paths(root)
    missing = [
        f"{DOC_NAME} does not list {p} (add a line with its purpose to the layout)" for p in sorted(real - set(named))
    ]
    stale = [
        f"{DOC_NAME} lists {p}, which is not in src/language_agnostic (renamed or removed?)"
        for p in named
        if p not in real and not p.endswith("__init__.py")
    ]
    return missing + stale


def test_the_page_lists_every_package_module_and_pipeline_and_nothing_stale():
    assert layout_problems(PACKAGE, DOC.read_text()) == []


def test_the_page_names_the_pipeline_folders():
    # the pipelines the project registers are each a folder of the layout
    folders = {p.name for p in (PACKAGE / "pipelines").iterdir() if p.is_dir() and p.name != "__pycache__"}
    named = set(layout_entries(DOC.read_text()))
    assert {f"pipelines/{f}/" for f in folders} <= named
    assert {"slu", "emu", "tatoeba", "export", "fmda", "qe", "sts"} <= folders


def _fake_tree(root: Path) -> None:
    for rel in ["config.py", "corpora/__init__.py", "corpora/a.py", "corpora/b.py", "pipelines/__init__.py"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    (root / "pipelines" / "x").mkdir()
    (root / "pipelines" / "x" / "nodes.py").write_text("")


FAKE_DOC = """# Architecture

```
src/language_agnostic/
  config.py        typed settings
  corpora/         readers
    a.py           the first reader, whose purpose
                   wraps.py onto a second line
{b}
  pipelines/
    x/             a pipeline
      nodes.py     its nodes
{stale}
```
"""


def test_the_check_passes_a_complete_fake_layout(tmp_path: Path):
    _fake_tree(tmp_path)
    doc = FAKE_DOC.format(b="    b.py           the second", stale="")
    assert layout_entries(doc) == [
        "config.py",
        "corpora/",
        "corpora/a.py",
        "corpora/b.py",
        "pipelines/",
        "pipelines/x/",
        "pipelines/x/nodes.py",
    ]
    assert layout_problems(tmp_path, doc) == []


def test_the_check_names_a_missing_module(tmp_path: Path):
    _fake_tree(tmp_path)
    doc = FAKE_DOC.format(b="", stale="")
    assert layout_problems(tmp_path, doc) == [
        "docs/architecture.md does not list corpora/b.py (add a line with its purpose to the layout)"
    ]


def test_the_check_names_a_missing_pipeline_folder(tmp_path: Path):
    _fake_tree(tmp_path)
    (tmp_path / "pipelines" / "y").mkdir()
    (tmp_path / "pipelines" / "y" / "pipeline.py").write_text("")
    doc = FAKE_DOC.format(b="    b.py           the second", stale="")
    assert layout_problems(tmp_path, doc) == [
        "docs/architecture.md does not list pipelines/y/ (add a line with its purpose to the layout)",
        "docs/architecture.md does not list pipelines/y/pipeline.py (add a line with its purpose to the layout)",
    ]


def test_the_check_names_a_stale_entry(tmp_path: Path):
    _fake_tree(tmp_path)
    doc = FAKE_DOC.format(b="    b.py           the second", stale="  old.py         removed long ago")
    assert layout_problems(tmp_path, doc) == [
        "docs/architecture.md lists old.py, which is not in src/language_agnostic (renamed or removed?)"
    ]
