"""Bit-for-bit check of a training refactor: tiny joint SLU, CoSDA, LAJoint, LAJ-MCL and EMU runs.

Run it under two trees and compare (the tiny encoder, data and settings are written here)::

    PYTHONPATH=/path/to/old/src python benchmarks/equivalence/slu_trainer_equivalence.py save /tmp/old.pt
    PYTHONPATH=src python benchmarks/equivalence/slu_trainer_equivalence.py save /tmp/new.pt
    python benchmarks/equivalence/slu_trainer_equivalence.py compare /tmp/old.pt /tmp/new.pt

``compare`` checks every state_dict tensor with ``torch.equal`` and every info / history value
exactly (seconds left out), and exits 1 naming the first difference. A tree from before the entry
points took a ``training.finetune.FineTuning`` runs its own copy of this script (the same cases).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import torch

# the tests' tiny encoder (tests/conftest.py imports nothing of the project, so either tree can run this)
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.conftest import write_tiny_hub_model  # noqa: E402

# the utterances stay here: a test module imports the project as it is now, not the tree under comparison
EN = [
    ("1", "train", "alarm_set", "wake me up at nine am", "O O O O B-time I-time"),
    ("2", "train", "alarm_set", "set an alarm for six", "O O O O B-time"),
    ("3", "train", "play_music", "play some jazz music", "O O B-genre O"),
    ("4", "train", "play_music", "play music", "O O"),
    ("5", "train", "weather_query", "what is the weather today", "O O O O B-date"),
    ("6", "train", "weather_query", "weather today", "O B-date"),
    ("7", "dev", "alarm_set", "wake me up at six", "O O O O B-time"),
    ("8", "dev", "play_music", "play jazz", "O B-genre"),
    ("9", "dev", "weather_query", "what is the weather", "O O O O"),
]
DICTIONARIES = {"de": {"wake": ["weck"], "me": ["mich"], "play": ["spiel"], "music": ["musik"], "six": ["sechs"]}}
TRAINING = {
    "lr": 1e-2,
    "encoder_lr": 1e-3,
    "max_epochs": 2,
    "patience": 2,
    "seed": 0,
    "progress": False,
    "keep_initial": False,  # the trained weights are compared, not the initial ones kept
}
SWITCH = {"ratio": 0.9, "languages": ["de"], "seed": 0, "keep_source": True}
UNTIMED = ("seconds", "train_seconds", "train_seconds_per_epoch", "time")
# written once and reused by both trees: training the WordPiece vocabulary is not reproducible run to run
ENCODER = Path(tempfile.gettempdir()) / "slu_trainer_equivalence_tiny_hub_model"


def slu_table() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"locale": "en-US", "id": i, "partition": p, "intent": it, "words": w.split(), "labels": lab.split()}
            for i, p, it, w, lab in EN
        ]
    )


def emu_table() -> pd.DataFrame:
    texts = {"en-US": [r[3] for r in EN] + ["set an alarm"], "de-DE": ["weck mich um neun"] * 10}
    parts = ["train"] * 6 + ["dev"] * 3 + ["test"]
    intents = [r[2] for r in EN] + ["alarm_set"]
    return pd.DataFrame(
        [
            {"locale": loc, "id": str(i), "partition": p, "utt": t, "intent": it}
            for loc, ts in texts.items()
            for i, (t, p, it) in enumerate(zip(ts, parts, intents))
        ]
    )


def clean(value: Any) -> Any:
    """Info and history as plain values, the timings left out."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items() if k not in UNTIMED}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def runs() -> dict[str, dict[str, Any]]:
    from language_agnostic.encoders.loading import load_encoder
    from language_agnostic.training.emu import train_emu
    from language_agnostic.training.finetune import FineTuning
    from language_agnostic.training.lajmcl import train_lajmcl
    from language_agnostic.training.slu import train_slu

    torch.set_num_threads(1)
    if not (ENCODER / "config.json").is_file():
        write_tiny_hub_model(ENCODER)
    encoder = load_encoder(str(ENCODER))
    table, out = slu_table(), {}
    lam = {"dropout": 0.0, "mcl": {"init_layers": 2, "p_s": 1}}
    no_mcl = {"utterance": 0, "slot_value": 0, "word": 0}
    cases = {
        "zsjoint": lambda: train_slu(
            table, encoder, FineTuning("zsjoint", {}, {"batch_size": 2}, {**TRAINING, "train_layers": 1})
        ),
        "cosda": lambda: train_slu(
            table, encoder, FineTuning("cosda", {}, {"batch_size": 2, "code_switch": SWITCH}, TRAINING), DICTIONARIES
        ),
        "lajoint": lambda: train_lajmcl(
            table, encoder, FineTuning("lajoint", {**lam, "loss_weights": no_mcl}, {"batch_size": 2}, TRAINING)
        ),
        "lajmcl": lambda: train_lajmcl(
            table, encoder, FineTuning("lajmcl", lam, {"batch_size": 2, "code_switch": SWITCH}, TRAINING), DICTIONARIES
        ),
        "emu": lambda: train_emu(
            emu_table(),
            encoder,
            FineTuning(
                "emu",
                {"loss": "emu", "critic_steps": 2, "critic_hidden": 8},
                {"per_intent": 2, "batch_size": 4, "seed": 0},
                TRAINING,
                {"prefix": ""},
            ),
        ),  # fmt: skip
        "emu_npair": lambda: train_emu(
            emu_table(),
            encoder,
            FineTuning(
                "npair", {"loss": "npair"}, {"per_intent": 2, "batch_size": 4, "seed": 0}, TRAINING, {"prefix": ""}
            ),
        ),  # fmt: skip
    }
    for name, run in cases.items():
        model, result, info = run()
        out[name] = {
            "state": {k: v.detach().clone() for k, v in model.state_dict().items()},
            "info": clean(info),
            "history": clean(list(result.history)),
        }
        print(name, "done", flush=True)
    return out


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    problems = []
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            problems.append(f"{name}: only in one run")
            continue
        a, b = old[name], new[name]
        if a["state"].keys() != b["state"].keys():
            problems.append(f"{name}: state_dict keys differ")
        problems += [f"{name}: tensor {k} differs" for k in a["state"] if not torch.equal(a["state"][k], b["state"][k])]
        for part in ("info", "history"):
            if repr(a[part]) != repr(b[part]):
                problems.append(f"{name}: {part} differs:\n  {a[part]!r}\n  {b[part]!r}")
    return problems


if __name__ == "__main__":
    if sys.argv[1] == "save":
        torch.save(runs(), sys.argv[2])
    else:
        found = compare(torch.load(sys.argv[2], weights_only=False), torch.load(sys.argv[3], weights_only=False))
        print("\n".join(found) or "identical: every tensor torch.equal, every info and history value the same")
        sys.exit(1 if found else 0)
