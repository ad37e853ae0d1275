"""Bit-for-bit check of an FMDA training refactor: ``train_fmda`` (pairwise, InfoNCE, an ablation, dev-retrieval
selection), ``train_fmda_two_stage`` (three settings) and ``train_fmda_unified`` on the tiny data of
``tests/pipelines/test_fmda_pipeline.py``, with the tiny encoder of ``slu_trainer_equivalence.py``.

Run it under two trees (each a checkout with ``src/`` and ``tests/``) and compare::

    PYTHONPATH=/path/to/old/src python benchmarks/equivalence/fmda_trainer_equivalence.py save /path/to/old /tmp/old.pt
    PYTHONPATH=src python benchmarks/equivalence/fmda_trainer_equivalence.py save . /tmp/new.pt
    python benchmarks/equivalence/fmda_trainer_equivalence.py compare /tmp/old.pt /tmp/new.pt

``compare`` checks every state_dict tensor with ``torch.equal`` and the rest of each artifact and its
metrics exactly (MLflow run ids and timings left out), and exits 1 naming each difference.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slu_trainer_equivalence import ENCODER, write_tiny_hub_model  # noqa: E402  (the same tiny encoder, written once)

SKIP = ("mlflow_run_id", "seconds", "time")


def clean(value: Any) -> Any:
    """An artifact or metrics as plain values, the weights, run ids and timings left out."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items() if k not in SKIP and k != "state_dict"}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def runs(tree: Path) -> dict[str, Any]:
    sys.path.insert(0, str(tree.resolve()))
    from language_agnostic.training.fmda import train_fmda, train_fmda_two_stage, train_fmda_unified
    from tests.pipelines import test_fmda_pipeline as t

    torch.set_num_threads(1)
    if not (ENCODER / "config.json").is_file():
        write_tiny_hub_model(ENCODER)
    catalog = t._two_stage_catalog(ENCODER, Path(tempfile.mkdtemp()))
    manifest, pools = catalog["en_de.fmda_inputs"].load(), catalog["massive_negative_pools"].load()
    pairs = catalog["en_de.fmda_template_pairs"].load()
    tr, loss = t.TRAINING, t.LOSS
    cases = {
        "all_together": lambda: train_fmda(manifest, pools, {}, {}, tr, loss),
        "infonce": lambda: train_fmda(manifest, pools, {}, t.VARIANTS["infonce"], tr, loss, variant="infonce"),
        "no_contrastive": lambda: train_fmda(manifest, pools, {}, t.VARIANTS["no_contrastive"], tr, loss, "nc"),
        "select_retrieval": lambda: train_fmda(manifest, pools, {}, {}, {**tr, "select_on": "dev_retrieval"}, loss),
        "two_stage": lambda: train_fmda_two_stage(manifest, pairs, pools, {}, {}, tr, loss),
        "two_stage_retrieval": lambda: train_fmda_two_stage(
            manifest, pairs, pools, {}, {}, {**tr, "select_on": "dev_retrieval"}, loss
        ),
        "two_stage_infonce": lambda: train_fmda_two_stage(manifest, pairs, pools, {}, t.VARIANTS["infonce"], tr, loss),
        "unified": lambda: train_fmda_unified(pools, {}, {}, tr, loss, manifest),
    }
    out = {}
    for name, run in cases.items():
        trained, metrics = run()
        out[name] = {"state": dict(trained["state_dict"]), "trained": clean(trained), "metrics": clean(metrics)}
        print(name, "done", flush=True)
    return out


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    problems = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None or b is None:
            problems.append(f"{name}: only in one run")
            continue
        if a["state"].keys() != b["state"].keys():
            problems.append(f"{name}: state_dict keys differ")
        problems += [f"{name}: tensor {k} differs" for k in a["state"] if not torch.equal(a["state"][k], b["state"][k])]
        problems += [f"{name}: {part} differs" for part in ("trained", "metrics") if repr(a[part]) != repr(b[part])]
    return problems


if __name__ == "__main__":
    if sys.argv[1] == "save":
        torch.save(runs(Path(sys.argv[2])), sys.argv[3])
    else:
        found = compare(torch.load(sys.argv[2], weights_only=False), torch.load(sys.argv[3], weights_only=False))
        print("\n".join(found) or "identical: every tensor torch.equal, every artifact and metrics value the same")
        sys.exit(1 if found else 0)
