"""``python -m language_agnostic.parameters write``: regenerate ``conf/parameters.schema.json`` and
``docs/parameters.md`` from the models; ``check [--env ENV]``: check ``conf/``'s parameters as a run would."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from language_agnostic.config import ParameterError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m language_agnostic.parameters", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("write", help="regenerate conf/parameters.schema.json and docs/parameters.md")
    check = sub.add_parser("check", help="check conf/base with an env merged over it")
    check.add_argument("--env", default="local")
    parser.add_argument("--project", default=".", help="the project root (default: here)")
    args = parser.parse_args(argv)
    project = Path(args.project).resolve()
    from language_agnostic.parameters import root

    if args.command == "write":
        for path in root.write(project):
            print(f"wrote {path.relative_to(project)}")
        return 0
    from kedro.framework.startup import bootstrap_project

    bootstrap_project(project)
    try:
        root.check(root.env_parameters(project / "conf", args.env))
    except ParameterError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"conf/base with conf/{args.env} over it: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
