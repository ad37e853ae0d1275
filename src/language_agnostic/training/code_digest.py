"""The code a training step runs, as it was loaded: digests taken once per session, changes detected.

A trained model's fingerprint (``training/reuse.py``) holds the code that trained it. A process
runs the code it imported when it started; a file edited (or a ``git checkout``) during a long run
changes the disk, not the process. So the package's sources are read once, when a session starts
(:func:`snapshot`), every digest is computed from that reading, and before a model is stored the
files behind its digest are compared with the disk again (:meth:`CodeSnapshot.changed`): a model
trained while its code changed is used by its run but never stored under a digest it was not
trained with.

What a step's code is (:meth:`CodeSnapshot.function_code`): the training function's own
definition and every top-level definition of its module it reaches by name (helpers, constants,
classes), then every module of this package those reach through their imports, followed
transitively, each module whole (with the packages' own ``__init__`` files on the way). A module's
imports that only *other* functions of the training function's module use are left out, so an
edit to a report, a parameter check or a log message elsewhere retrains nothing; an import used by
no name (a registration by import) is kept. Comments, docstrings and layout are not code
(``ast.dump`` without docstrings). A function outside this package is keyed by its file's code.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PACKAGE = "language_agnostic"

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def normalised_code(source: str, filename: str = "<source>") -> str:
    """A module's code without its comments, docstrings and layout (``ast.dump``)."""
    tree = ast.parse(source, filename)
    _strip_docstrings(tree)
    return ast.dump(tree)


def _strip_docstrings(tree: ast.AST) -> None:
    for item in ast.walk(tree):
        body = getattr(item, "body", None)
        if (
            isinstance(item, (ast.Module, *_DEFINITIONS))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            item.body = body[1:] or [ast.Pass()]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class _Source:
    """One source file as read when the snapshot was taken."""

    path: Path
    text: str
    stat: tuple[int, int]  # (mtime_ns, size): a cheap first look for a change

    def changed(self) -> bool:
        """Whether the file on disk now holds other code than when it was read."""
        try:
            stat = self.path.stat()
        except OSError:
            return True
        if (stat.st_mtime_ns, stat.st_size) == self.stat:
            return False
        try:
            now = self.path.read_text()
        except OSError:
            return True
        return now != self.text and normalised_code(now) != normalised_code(self.text)


def _read(path: Path) -> _Source:
    stat = path.stat()
    return _Source(path, path.read_text(), (stat.st_mtime_ns, stat.st_size))


@dataclass
class CodeSnapshot:
    """The package's sources as read once (see the module docstring)."""

    root: Path
    sources: dict[str, _Source] = field(default_factory=dict)
    _outside: dict[str, _Source] = field(default_factory=dict)  # by function name
    _normalised: dict[str, str] = field(default_factory=dict)
    _trees: dict[str, ast.Module] = field(default_factory=dict)

    @classmethod
    def take(cls, root: Path) -> CodeSnapshot:
        """Read every ``.py`` file under ``root`` (the package) now."""
        snap = cls(root)
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            snap.sources[".".join((PACKAGE, *parts))] = _read(path)
        return snap

    # ------------------------------------------------------------------ modules

    def tree(self, module: str) -> ast.Module:
        if module not in self._trees:
            source = self.sources[module]
            tree = ast.parse(source.text, str(source.path))
            _strip_docstrings(tree)
            self._trees[module] = tree
        return self._trees[module]

    def normalised(self, module: str) -> str:
        if module not in self._normalised:
            self._normalised[module] = _sha256(ast.dump(self.tree(module)))
        return self._normalised[module]

    def _bindings(self, module: str, statements: Iterable[ast.AST]) -> list[tuple[str | None, set[str]]]:
        """``(bound name, package modules)`` of the imports among ``statements`` (None: ``import a.b``)."""
        is_package = self.sources[module].path.name == "__init__.py"
        package = module if is_package else module.rpartition(".")[0]
        found: list[tuple[str | None, set[str]]] = []
        for item in statements:
            if isinstance(item, ast.Import):
                for alias in item.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    found.append((bound, {alias.name}))
            elif isinstance(item, ast.ImportFrom):
                base = item.module or ""
                if item.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (item.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in item.names:
                    found.append((alias.asname or alias.name, {base, f"{base}.{alias.name}"}))
        return [(b, {m for m in mods if m in self.sources}) for b, mods in found]

    def imports(self, module: str) -> set[str]:
        """The package's modules ``module`` imports anywhere (top level and inside functions)."""
        return {m for _, mods in self._bindings(module, ast.walk(self.tree(module))) for m in mods}

    def closure(self, modules: Iterable[str]) -> set[str]:
        """``modules`` and every package module they import, transitively, with their parent packages.

        A parent package's ``__init__`` is keyed by its own code; its imports are not followed: this
        package's ``__init__`` files only re-export (``pipelines/emu/__init__.py`` imports the pipeline
        builder, which trains nothing), and following them would key every training on every report.
        """
        seen: set[str] = set()
        pending = list(modules)
        while pending:
            name = pending.pop()
            if name in seen or name not in self.sources:
                continue
            seen.add(name)
            pending += self.imports(name)
        parents = {".".join(m.split(".")[:i]) for m in seen for i in range(1, m.count(".") + 1)}
        return seen | {p for p in parents if p in self.sources}

    def module_digest(self, module: str) -> str:
        """SHA-256 over ``module``'s code and its whole import closure."""
        return _sha256("".join(f"{m}\0{self.normalised(m)}\0" for m in sorted(self.closure([module]))))

    # ------------------------------------------------------------------ functions

    def function_code(self, func: Callable[..., Any]) -> dict[str, Any]:
        """What a training function's code is: ``{"function", "local", "modules": {module: digest}}``.

        ``local`` digests the definitions of its module it reaches; ``modules`` the code of every
        package module those reach (each one's own code; the set is the transitive closure).
        """
        module, qualname = func.__module__, func.__qualname__
        if module not in self.sources:
            return self._outside_code(func)
        tree = self.tree(module)
        top: dict[str, ast.AST] = {}
        always: list[ast.AST] = []
        for item in tree.body:
            if isinstance(item, _DEFINITIONS):
                top[item.name] = item
            elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            top[name.id] = item
            elif not isinstance(item, (ast.Import, ast.ImportFrom)):
                always.append(item)  # module-level code that runs on import (if-blocks, calls)
        head = qualname.split(".")[0]
        if "<locals>" in qualname or head not in top:
            return {"function": f"{module}.{qualname}", "modules": self._digests(self.closure([module]))}
        reached = self._reached(module, [top[head], *always], top)
        local = [ast.dump(item) for item in reached["nodes"]]
        return {
            "function": f"{module}.{qualname}",
            "local": _sha256("\0".join(local)),
            "modules": self._digests(self.closure(reached["modules"]) | self._parents(module)),
        }

    def _parents(self, module: str) -> set[str]:
        return {p for i in range(1, module.count(".") + 1) if (p := ".".join(module.split(".")[:i])) in self.sources}

    def _reached(self, module: str, start: list[ast.AST], top: dict[str, ast.AST]) -> dict[str, Any]:
        """The top-level definitions of ``module`` reachable by name from ``start``, and the modules they import."""
        bindings = self._bindings(module, self.tree(module).body)
        by_name: dict[str, set[str]] = {}
        for bound, mods in bindings:
            by_name.setdefault(str(bound), set()).update(mods)
        used_anywhere = {n.id for n in ast.walk(self.tree(module)) if isinstance(n, ast.Name)}
        # an import no name uses is there for its effect (a registration): always part of the code
        modules = {m for bound, mods in bindings if bound not in used_anywhere for m in mods}
        nodes: list[ast.AST] = []
        pending, seen = list(start), set()
        while pending:
            item = pending.pop()
            if id(item) in seen:
                continue
            seen.add(id(item))
            nodes.append(item)
            for _, mods in self._bindings(module, ast.walk(item)):  # imports inside functions
                modules |= mods
            for name in ast.walk(item):
                if isinstance(name, ast.Name):
                    if name.id in top:
                        pending.append(top[name.id])
                    modules |= by_name.get(name.id, set())
        nodes.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
        return {"nodes": nodes, "modules": modules}

    def _digests(self, modules: Iterable[str]) -> dict[str, str]:
        return {m: self.normalised(m)[:16] for m in sorted(modules)}

    def _outside_code(self, func: Callable[..., Any]) -> dict[str, Any]:
        """A function outside this package: its source file's code (read once, like the package's)."""
        name = f"{func.__module__}.{func.__qualname__}"
        module = sys.modules.get(func.__module__)
        try:  # the module's file (the function's own file when the module is not loaded)
            path = Path(getattr(module, "__file__", None) or inspect.getsourcefile(func) or "")
        except TypeError:
            path = Path()
        if not path.is_file():
            return {"function": name, "file": None}
        if name not in self._outside:
            self._outside[name] = _read(path)
        return {"function": name, "file": _sha256(normalised_code(self._outside[name].text, str(path)))[:16]}

    def changed(self, code: dict[str, Any]) -> list[Path]:
        """The files behind ``code`` (from :meth:`function_code`) that hold other code on disk now."""
        sources = [self.sources[m] for m in code.get("modules", {}) if m in self.sources]
        module = code["function"].rpartition(".")[0]
        while module and module not in self.sources and "." in module:  # Class.method → module
            module = module.rpartition(".")[0]
        if module in self.sources:
            sources.append(self.sources[module])
        if code["function"] in self._outside:
            sources.append(self._outside[code["function"]])
        return sorted({s.path for s in sources if s.changed()})
