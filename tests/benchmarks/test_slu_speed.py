"""benchmarks/slu_speed.py: what its SLU inputs need, said before anything loads."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("slu_speed", ROOT / "benchmarks" / "slu_speed.py")
slu_speed = importlib.util.module_from_spec(spec)
sys.modules["slu_speed"] = slu_speed
spec.loader.exec_module(slu_speed)


def test_missing_slu_rows_name_the_file_and_the_command_that_makes_them(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a fresh clone: no data/03_primary/massive_slu.parquet
    with pytest.raises(SystemExit) as stop:
        slu_speed.slu_inputs(str(tmp_path))
    assert str(stop.value) == (
        "data/03_primary/massive_slu.parquet not found (run from the project root): make it first with "
        "`kedro run --pipelines=slu --to-nodes=build_slu_rows_node` (about 10 s)"
    )
