"""benchmarks/gpu_missing_distributions.py: what a Kedro run needs that the GPU machine's image lacks."""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("gpu_missing", ROOT / "benchmarks" / "gpu_missing_distributions.py")
gpu_missing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_missing)


def test_the_image_list_is_read_from_its_packages_line_with_names_as_pip_compares_them():
    text = "| row | x |\n\nnvidia-h200: holds these. Packages: absl-py, PyYAML, typing_extensions, zipp.\n"
    assert gpu_missing.image_packages(text) == {"absl-py", "pyyaml", "typing-extensions", "zipp"}
    with pytest.raises(ValueError, match="no 'Packages: ...' line"):
        gpu_missing.image_packages("nothing here")


def test_missing_walks_the_requirements_and_leaves_out_what_the_image_holds():
    # pydantic needs pydantic-core, annotated-types, typing-inspection and typing-extensions
    everything = gpu_missing.missing(set(), roots=("pydantic",))
    names = {line.split("==")[0] for line in everything}
    assert {"pydantic", "pydantic-core", "annotated-types", "typing-extensions"} <= names
    assert f"pydantic=={metadata.version('pydantic')}" in everything
    held = gpu_missing.missing({"typing-extensions", "annotated-types"}, roots=("pydantic",))
    assert not {line.split("==")[0] for line in held} & {"typing-extensions", "annotated-types"}
    assert "pydantic-core" in {line.split("==")[0] for line in held}
