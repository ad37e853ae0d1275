"""What the config loader's typing changes in each environment's parameters: every value whose type or
value differs between the YAML as merged and what the nodes get (``parameters.root.normalised``).

A key listed here is a key whose training fingerprint moves (its models train once more); every other
parameter reaches the nodes exactly as written::

    .venv/bin/python benchmarks/equivalence/normalised_parameters.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kedro.config import OmegaConfigLoader
from kedro.framework.startup import bootstrap_project

from language_agnostic.parameters.root import normalised
from language_agnostic.pipelines.config_loader import expand_budgets


def differences(written: Any, read: Any, path: str = "") -> list[str]:
    """``path: written (type) -> read (type)`` for every leaf that differs, and keys only one side has."""
    if isinstance(written, dict) and isinstance(read, dict):
        out = []
        for key in sorted(set(written) | set(read), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in read or key not in written:
                out.append(f"{where}: only {'written' if key in written else 'read'}")
            else:
                out.extend(differences(written[key], read[key], where))
        return out
    if written != read or type(written) is not type(read):
        return [f"{path}: {written!r} ({type(written).__name__}) -> {read!r} ({type(read).__name__})"]
    return []


def main() -> None:
    root = Path.cwd()
    bootstrap_project(root)
    from kedro.framework.project import settings

    args = {k: v for k, v in dict(settings.CONFIG_LOADER_ARGS).items() if k != "default_run_env"}
    for env in sorted(p.name for p in (root / "conf").iterdir() if p.is_dir()):
        loader = settings.CONFIG_LOADER_CLASS(conf_source=str(root / "conf"), env=env, **args)
        written = expand_budgets(dict(OmegaConfigLoader.__getitem__(loader, "parameters")))
        changed = differences(written, normalised(written))
        print(f"{env}: {len(changed)} value(s) typed differently")
        for line in changed:
            print(f"  {line}")


if __name__ == "__main__":
    main()
