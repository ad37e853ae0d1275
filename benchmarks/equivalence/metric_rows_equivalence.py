"""Metrics-table rows from synthetic inputs (FMDA's scoring with twin and residual tests, EMU's
intent-NN and selection rows, the SLU report's rows), for an old/new tree comparison::

    PYTHONPATH=/path/to/old/src python benchmarks/equivalence/metric_rows_equivalence.py save /tmp/old.pkl
    PYTHONPATH=src python benchmarks/equivalence/metric_rows_equivalence.py save /tmp/new.pkl
    python benchmarks/equivalence/metric_rows_equivalence.py compare /tmp/old.pkl /tmp/new.pkl
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

import numpy as np


def rows() -> dict[str, Any]:
    from language_agnostic.evaluation import emu, fmda
    from language_agnostic.reporting.slu import slu_rows

    rng = np.random.default_rng(0)
    n, d = 12, 5
    sets: dict[str, list[int]] = {f"test.{s}.utt": list(range(n)) for s in ("source", "target")}
    for side in ("source", "target"):
        for kind, sizes in (("single", (6, 6)), ("multi", (4, 8))):
            sets[f"template.{kind}.{side}.source"] = list(range(sizes[0]))
            sets[f"template.{kind}.{side}.target"] = list(range(sizes[1]))
    manifest = {"sets": sets, "source_locale": "en-US", "target_locale": "de-DE"}
    cache: dict[Any, Any] = {}

    def embed(s: list[int], loc: str) -> dict[tuple[str, str], np.ndarray]:
        if (id(s), loc) not in cache:
            cache[(id(s), loc)] = {(m, e): rng.normal(size=(len(s), d)) for m in ("fmda", "base") for e in ("m", "rs")}
        return cache[(id(s), loc)]

    def twin(s: list[int]) -> dict[str, np.ndarray]:
        if id(s) not in cache:
            cache[id(s)] = {e: rng.normal(size=(len(s), d)) for e in ("m", "rs")}
        return cache[id(s)]

    hits = {"en-US>de-DE": rng.random(30) > 0.4, "en-US>ja-JP": rng.random(30) > 0.5}
    artifacts = [
        {"method": "emu", "best_epoch": 2, "dev_accuracy": 0.81234567, "dev_accuracy_initial": 0.5},
        {"method": "emu", "best_epoch": 0, "dev_accuracy": 0.7},
    ]
    return {
        "fmda": fmda._score(manifest, embed, "enc", None, twin).to_dict("records"),
        "slu": slu_rows({"de-DE": {"exact_match": 1 / 3, "intent_accuracy": 0.5}}, "zsjoint", "enc", "en-US").to_dict(
            "records"
        ),
        "emu": emu.intent_nn_rows(hits, "emu", "enc", "mean", {"en-US>de-DE": rng.random(30) > 0.5}).to_dict("records"),
        "selection": [emu.selection_rows(a, "en-US", "enc").to_dict("records") for a in artifacts],
    }


if __name__ == "__main__":
    if sys.argv[1] == "save":
        with open(sys.argv[2], "wb") as f:
            pickle.dump(rows(), f)
    else:
        with open(sys.argv[2], "rb") as f, open(sys.argv[3], "rb") as g:
            old, new = pickle.load(f), pickle.load(g)
        differ = [k for k in sorted(set(old) | set(new)) if repr(old.get(k)) != repr(new.get(k))]
        print(f"differ: {differ}" if differ else f"identical: { ({k: len(v) for k, v in new.items()}) }")
        sys.exit(1 if differ else 0)
