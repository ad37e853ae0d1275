"""The package's layers only point down: a module imports only from its own layer or the layers below.

The order (docs/architecture.md), bottom first. Every ``import`` counts, also one inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "language_agnostic"

# bottom first; a module may import from its own layer and every layer before it
LAYERS: list[set[str]] = [
    {"config", "launch"},  # settings parsing, worker processes: no project imports
    {"corpora"},  # readers and parsers of the upstream formats
    {"text"},  # masking, code-switching, negative pools, slot texts
    {"encoders"},  # the encoder, pooling, extraction and the embedding store
    {"methods"},  # models, losses, the registry, applying a trained model
    {"tracking"},  # MLflow child runs and logged models
    {"evaluation"},  # metrics and the scoring of trained models
    {"training"},  # the loop and each method family's trainer (dev scoring uses evaluation)
    {"reporting"},  # tables, claims, figures
    {"parameters"},  # the typed models of conf/ (pydantic): what every parameter may be
    {"datasets", "pipelines", "settings", "pipeline_registry", "__main__"},  # Kedro
]
RANK = {part: rank for rank, layer in enumerate(LAYERS) for part in layer}


def _part(module: str) -> str | None:
    """``language_agnostic.<part>...`` -> ``<part>``; None for another package."""
    names = module.split(".")
    return names[1] if names[0] == "language_agnostic" and len(names) > 1 else None


def imports_of(path: Path, root: Path = PACKAGE) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of the package in ``path``, relative ones resolved."""
    # the package a relative import starts from (for __init__.py too: its directory)
    package = ["language_agnostic", *path.relative_to(root).parts[:-1]]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out.append((node.lineno, module))
    return [(line, m) for line, m in out if _part(m)]


def upward_imports(root: Path = PACKAGE) -> list[str]:
    """``file:line: a -> b`` for every import of a higher layer."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        part = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        if part == "__init__":
            continue
        for line, module in imports_of(path, root):
            target = _part(module)
            if RANK.get(target, -1) > RANK[part]:
                found.append(f"{rel}:{line}: {part} -> {target}")
    return found


def test_every_part_of_the_package_has_a_layer():
    parts = {p.name if p.is_dir() else p.stem for p in PACKAGE.iterdir() if not p.name.startswith(("_", "."))}
    parts -= {"__pycache__"}
    assert parts - set(RANK) == set(), "a new package or module needs its place in LAYERS"


def test_no_import_points_up():
    assert upward_imports() == []


def test_the_check_finds_an_upward_import(tmp_path: Path):
    (tmp_path / "methods").mkdir()
    (tmp_path / "methods" / "bad.py").write_text(
        "def f():\n    from language_agnostic.training.loop import train\n    return train\n"
    )
    (tmp_path / "methods" / "good.py").write_text("from language_agnostic.encoders import pooling\n")
    assert upward_imports(tmp_path) == ["methods/bad.py:2: methods -> training"]


@pytest.mark.parametrize("part", ["config", "launch"])
def test_the_bottom_layer_imports_nothing_of_the_project(part: str):
    assert imports_of(PACKAGE / f"{part}.py") == []


def test_evaluation_returns_numbers_and_logs_nothing():
    """``evaluation/`` computes metrics; the pipelines' nodes log them to MLflow, never the package."""
    package = Path(__file__).resolve().parents[1] / "src" / "language_agnostic" / "evaluation"
    logging = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                logging += [
                    f"{path.name}: {n}" for n in names if n.startswith(("mlflow", "language_agnostic.tracking"))
                ]
    assert not logging, f"evaluation/ imports MLflow or the tracking module: {logging}"
