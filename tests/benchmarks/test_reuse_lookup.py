"""benchmarks/reuse_lookup.py: the nearest-model lookup before and now agree, on records kept the old way."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from language_agnostic.training import reuse

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("reuse_lookup", ROOT / "benchmarks" / "reuse_lookup.py")
reuse_lookup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reuse_lookup)


def _record(store: Path, name: str, seed: int, created: float) -> None:
    key = {
        "function": "m.train",
        "args": [{"mapping": [["de", {f"w{i:05d}": [f"haus{i}"] for i in range(2000)}], ["seed", seed]]}],
        "machine": {"cuda": None},
    }
    (store / name).mkdir()
    record = {"fingerprint": name, "function": "m.train", "created_unix": created, "key": key}
    (store / name / reuse.RECORD_FILE).write_text(json.dumps(record, indent=2))


def test_both_lookups_name_the_same_nearest_model_and_the_store_is_left_alone(tmp_path: Path, capsys, monkeypatch):
    store = tmp_path / "store"
    store.mkdir()
    _record(store, "a" * 64, 1, 1.0)
    _record(store, "b" * 64, 2, 2.0)
    before = {p: p.read_bytes() for p in store.glob("*/record.json")}
    monkeypatch.setattr("sys.argv", ["reuse_lookup.py", "--store", str(store), "--repeats", "1"])
    reuse_lookup.main()
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "median" not in line]
    assert [row.split(" | ")[0] for row in rows] == ["| before", "| first lookup now", "| later lookups"]
    # the largest record is the newest (ties broken by creation): itself, one part changed
    assert all(row.endswith("| bbbbbbbbbbbb | machine.benchmark: <absent> → another step |") for row in rows)
    assert {p: p.read_bytes() for p in store.glob("*/record.json")} == before


def test_the_old_lookup_restated_here_matches_reuse_nearest_on_whole_keys():
    records = [
        {
            "fingerprint": "x",
            "function": "f",
            "created_unix": 1.0,
            "key": {"function": "f", "a": {"b": [1, 2]}, "c": 1},
        },
        {
            "fingerprint": "y",
            "function": "f",
            "created_unix": 2.0,
            "key": {"function": "f", "a": {"b": [1, 3]}, "c": 2},
        },
    ]
    parts = {"function": "f", "a": {"b": [1, 2]}, "c": 3}
    record, differences = reuse.nearest(parts, records)
    assert reuse_lookup.nearest_before(parts, records) == (record["fingerprint"], differences) == ("x", ["c: 1 → 3"])
    with pytest.raises(ValueError):  # nothing of the function: the old lookup had no answer either
        reuse_lookup.nearest_before({"function": "g"}, records)
