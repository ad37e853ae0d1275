"""What a training step pays before it trains, when the store holds other models of it: the lookup of the
nearest stored model (``training/reuse.py:_explain``, the "training; the nearest stored model … differs
in …" log line), as records were kept before and as they are kept now.

A record used to hold its step's key whole: with code-switching, ``slu_dictionaries`` (the MUSE
dictionaries of five languages) is 10 MB of JSON in the key, 47 MB in the indented record, and every
trained step parsed every stored record and compared the keys part by part. Now a key part over
``RECORDED_PART_CHARS`` characters is recorded by its SHA-256 and length (``recorded_key``; the
fingerprint is still the whole key's), and a record written before is rewritten so when first read.

On a copy of ``--store``'s records (``record.json`` files only; the store is not touched), each repeat
on a fresh copy, the new step's key being the largest record's key with one part changed:

* **before**: every record parsed, keys compared whole (the lookup as it was, restated here);
* **first lookup now**: :func:`reuse._records` (rewriting each old record shortened) and :func:`reuse.nearest`;
* **later lookups**: the same on the rewritten copy.

Each row says the nearest fingerprint and its differences, which must agree.

Usage::

    .venv/bin/python benchmarks/reuse_lookup.py --store data/06_models/trained --repeats 3
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from language_agnostic.training import reuse


def records_before(root: Path) -> list[dict[str, Any]]:
    """Every record parsed whole (the lookup before records were shortened)."""
    return [
        json.loads((entry / reuse.RECORD_FILE).read_text())
        for entry in sorted(root.iterdir())
        if not entry.name.startswith(".") and (entry / reuse.RECORD_FILE).is_file()
    ]


def nearest_before(parts: dict[str, Any], records: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """``reuse.nearest`` as it was: keys compared whole."""
    same = [r for r in records if r.get("function") == parts.get("function")]
    scored = [(d, r) for r in same if (d := reuse.key_differences(parts, r["key"]))]
    differences, record = min(scored, key=lambda dr: (len(dr[0]), -reuse._created(dr[1])))
    return str(record["fingerprint"]), differences


def cpu() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def copy_records(store: Path, into: Path) -> None:
    for entry in sorted(store.iterdir()):
        if not entry.name.startswith(".") and (entry / reuse.RECORD_FILE).is_file():
            (into / entry.name).mkdir()
            shutil.copy2(entry / reuse.RECORD_FILE, into / entry.name / reuse.RECORD_FILE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, default=Path(reuse.DEFAULT_STORE))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    files = list(args.store.glob(f"*/{reuse.RECORD_FILE}"))
    n, megabytes = len(files), sum(p.stat().st_size for p in files) / 1e6
    parts = json.loads(max(files, key=lambda p: p.stat().st_size).read_text())["key"]
    parts["machine"] = {**parts["machine"], "benchmark": "another step"}  # one part changed: a step to train
    times: dict[str, list[float]] = {"before": [], "first lookup now": [], "later lookups": []}
    answers: dict[str, tuple[str, list[str]]] = {}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            copy_records(args.store, root)
            start = time.perf_counter()
            answers["before"] = nearest_before(parts, records_before(root))
            times["before"].append(time.perf_counter() - start)
            for name in ("first lookup now", "later lookups"):
                start = time.perf_counter()
                found = reuse.nearest(parts, reuse._records(root))
                times[name].append(time.perf_counter() - start)
                assert found is not None
                answers[name] = (str(found[0]["fingerprint"]), found[1])
            after = sum(p.stat().st_size for p in root.glob(f"*/{reuse.RECORD_FILE}")) / 1e6
    print(f"machine: {cpu()}; {n} records, {megabytes:,.1f} MB -> {after:,.1f} MB")
    print("| lookup | median s | runs | nearest | differences |\n|---|---:|---|---|---|")
    for name, values in times.items():
        fp, differences = answers[name]
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"| {name} | {statistics.median(values):.2f} | {runs} | {fp[:12]} | {'; '.join(differences)} |")
    assert len({json.dumps(a) for a in answers.values()}) == 1, "the lookups disagree"


if __name__ == "__main__":
    main()
