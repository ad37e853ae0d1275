"""The trained-model store's key is complete and its entries are safe (training/reuse.py): package
versions, encoder files, the code as loaded, only the parameters read; verified entries; one
training per fingerprint across processes; pruning that never removes a live write; the why-command."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from language_agnostic.encoders import extraction, versions
from language_agnostic.encoders.extraction import ExtractionSettings, namespace_inputs
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.pipelines.node_factories import train_and_evaluate
from language_agnostic.training import reuse

STEP = """
import time
from pathlib import Path

import torch


def step(x, settings=None, log=None):
    if log:
        with open(log, "a") as handle:
            handle.write("trained\\n")
        time.sleep(float((settings or {}).get("sleep", 0)))
    return {"state_dict": {"w": torch.ones(3) * x}, "settings": dict(settings or {})}, {"loss": 1.0}
"""


@pytest.fixture
def step_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A training step in a module of its own (keyed by its file's code), importable here and in children."""
    # its own module name, and gone afterwards: test_reuse.py imports another `step_module`
    (tmp_path / "reuse_key_step.py").write_text(STEP)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("reuse_key_step", None)
    import reuse_key_step

    reuse.snapshot_code()
    yield reuse_key_step
    sys.modules.pop("reuse_key_step", None)


def test_a_new_version_of_a_package_the_training_imports_retrains(step_module, monkeypatch):
    train = reuse.reusable(step_module.step)
    reuse.USAGE.reset()
    train(1.0)
    train(1.0)
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (1, 1)
    real = versions.distribution_version
    monkeypatch.setattr(versions, "distribution_version", lambda n: "99.0" if n == "transformers" else real(n))
    train(1.0)
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (2, 1)
    assert reuse.why("step")[1:] == ["  packages.transformers: " + f"{real('transformers')} → 99.0"]


def test_a_model_trained_on_another_cpus_kernels_is_not_reused(step_module, monkeypatch):
    train = reuse.reusable(step_module.step)
    reuse.USAGE.reset()
    train(1.0)
    here = reuse.machine_kind()["cpu_kernels"]
    with monkeypatch.context() as other:
        other.setattr(torch.cpu, "_is_amx_tile_supported", lambda: not here["amx"])  # the other CPU's kernels
        train(1.0)
        other.setattr(extraction, "cpu_vendor", lambda: here["vendor"] + "X")
        train(1.0)
    train(1.0)  # this CPU again: its model
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (3, 1)
    # the newest model (the other vendor's) against its nearest: only the vendor differs
    assert reuse.why("step")[1:] == [f"  machine.cpu_kernels.vendor: {here['vendor']} → {here['vendor']}X"]


def _encoder_copy(tiny_hub_model: Path, where: Path) -> Path:
    shutil.copytree(tiny_hub_model, where)
    return where


def test_an_edited_config_or_tokenizer_file_is_another_encoder_for_both_stores(tiny_hub_model: Path, tmp_path: Path):
    settings = ExtractionSettings(prefix="", dtype="float32", device="cpu")
    directory = _encoder_copy(tiny_hub_model, tmp_path / "encoder")
    first = load_encoder(str(directory))
    identities, namespaces = [first.reuse_identity()], [namespace_inputs(first, settings)]
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "hidden_dropout_prob": 0.3}))
    tokenizer = json.loads((directory / "tokenizer_config.json").read_text())
    for edit in ("config", "tokenizer"):
        if edit == "tokenizer":
            (directory / "tokenizer_config.json").write_text(json.dumps({**tokenizer, "do_lower_case": False}))
        encoder = load_encoder(str(directory))
        assert encoder.identity["weights_sha256"] == first.identity["weights_sha256"]  # the weights are the same
        identities.append(encoder.reuse_identity())
        namespaces.append(namespace_inputs(encoder, settings))
    assert len({json.dumps(i, sort_keys=True) for i in identities}) == 3  # three trained-model keys
    assert len({json.dumps(n, sort_keys=True) for n in namespaces}) == 3  # three embedding-store namespaces
    # a README beside the weights changes neither
    (directory / "README.md").write_text("notes")
    assert load_encoder(str(directory)).reuse_identity() == identities[-1]


def test_an_extraction_option_the_fine_tuning_does_not_read_retrains_nothing(step_module):
    nodes = train_and_evaluate(
        "x",
        reads=[],
        train=step_module.step,
        train_inputs=["params:x", "params:embeddings.extraction"],
        trained=["model", "history"],
        evaluate=lambda *a: None,
        evaluate_inputs=[],
        rows="rows",
    )
    train = nodes[0].func
    extraction = {"prefix": "query: ", "max_length": 64, "on_too_long": "truncate", "progress": True, "batch_size": 8}
    reuse.USAGE.reset()
    model, _ = train(1.0, extraction)
    assert model["settings"] == {"prefix": "query: ", "max_length": 64, "on_too_long": "truncate"}  # all it sees
    train(1.0, {**extraction, "progress": False, "batch_size": 32, "processes": 2})
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (1, 1)
    train(1.0, {**extraction, "prefix": "passage: "})  # what it does read retrains
    assert len(reuse.USAGE.trained) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_entry_is_set_aside_with_one_warning_and_retrained(step_module, damage, caplog):
    train = reuse.reusable(step_module.step)
    model, _ = train(2.0)
    (entry,) = [p for p in reuse.SETTINGS.store.iterdir() if not p.name.startswith(".")]
    stored = entry / reuse.MODEL_FILE
    data = bytearray(stored.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[-3] ^= 0x01  # one bit of the last weight
    stored.write_bytes(bytes(data))
    reuse.USAGE.reset()
    with caplog.at_level(logging.WARNING, logger="language_agnostic.training.reuse"):
        again, _ = train(2.0)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "is damaged" in warnings[0] and "training it again" in warnings[0]
    expected = "bytes, the record says" if damage == "truncate" else "SHA-256 differs"
    assert expected in warnings[0]
    assert reuse.USAGE.trained == ["step"] and torch.equal(again["state_dict"]["w"], model["state_dict"]["w"])
    reuse.USAGE.reset()
    train(2.0)  # the retrained entry is sound again
    assert reuse.USAGE.reused == ["step"]


CHILD = textwrap.dedent("""
    import sys
    from language_agnostic.training import reuse
    from reuse_key_step import step
    reuse.configure({"store": sys.argv[1]})
    model, _ = reuse.reusable(step)(3.0, {"sleep": 2}, sys.argv[2])
    print("trained" if reuse.USAGE.trained else "reused", float(model["state_dict"]["w"][0]), flush=True)
""")


def _child(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def test_two_processes_asking_for_one_fingerprint_train_it_once(step_module, tmp_path: Path):
    store, log = tmp_path / "shared-store", tmp_path / "trainings.log"
    children = [_child(tmp_path, str(store), str(log)) for _ in range(2)]
    outputs = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err[-2000:]
        outputs.append(out.strip())
    assert sorted(outputs) == ["reused 3.0", "trained 3.0"]
    assert log.read_text() == "trained\n"


def test_prune_never_removes_a_live_write(step_module, tmp_path: Path):
    fp = "f" * 64
    work = reuse.SETTINGS.store / f".tmp-{fp}-123-abcd"
    work.mkdir(parents=True)
    (work / "model.safetensors").write_bytes(b"being written")
    with reuse.entry_lock(fp):  # a live run writing this entry holds its lock
        assert reuse.prune() == 0
        assert (work / "model.safetensors").read_bytes() == b"being written"
    assert reuse.prune() == 1 and not work.exists()  # once the writer is gone (killed), it is removed


def test_prune_by_age_and_size_removes_the_least_recently_used(step_module):
    train = reuse.reusable(step_module.step)
    for x in (1.0, 2.0, 3.0):
        train(x)
    entries = {p.name: p for p in reuse.SETTINGS.store.iterdir() if not p.name.startswith(".")}
    assert len(entries) == 3
    old = time.time() - 40 * 86400
    oldest = sorted(entries)[0]
    os.utime(entries[oldest] / reuse.USED_FILE, (old, old))
    assert reuse.prune(older_than_days=30) == 1 and not entries[oldest].exists()
    size = sum(f.stat().st_size for f in next(e for e in entries.values() if e.exists()).iterdir())
    assert reuse.prune(max_bytes=size + 10) == 1  # of two, the less recently used goes
    assert len([p for p in reuse.SETTINGS.store.iterdir() if not p.name.startswith(".")]) == 1


def test_a_source_file_changed_while_training_publishes_nothing(step_module, tmp_path: Path, caplog):
    source = Path(step_module.__file__)

    def edit_during_training(x, settings=None, log=None):
        source.write_text(source.read_text() + "\n\ndef added():\n    return 1\n")
        return step_module.step(x)

    edit_during_training.__module__, edit_during_training.__qualname__ = "reuse_key_step", "step"
    with caplog.at_level(logging.WARNING, logger="language_agnostic.training.reuse"):
        model, _ = reuse.reusable(edit_during_training)(4.0)
    assert float(model["state_dict"]["w"][0]) == 4.0  # the run gets its model
    assert [p for p in reuse.SETTINGS.store.iterdir() if not p.name.startswith(".")] == []  # nothing stored
    (message,) = [r.getMessage() for r in caplog.records if "changed on disk" in r.getMessage()]
    assert str(source) in message and "not stored for reuse" in message


def test_the_why_command_names_the_changed_part(step_module, tmp_path: Path):
    train = reuse.reusable(step_module.step, label="train_x")
    train(1.0, {"lr": 0.1})
    time.sleep(1.1)  # a later creation time: the newest entry is the one explained
    train(1.0, {"lr": 0.2})
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "language_agnostic.training.reuse",
            "why",
            "train_x",
            "--root",
            str(reuse.SETTINGS.store),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0].startswith("train_x ") and "differs from" in out[0]
    assert out[1:] == ["  args[1].lr.float: 0.1 → 0.2"]
    failed = subprocess.run(
        [
            sys.executable,
            "-m",
            "language_agnostic.training.reuse",
            "why",
            "nothing",
            "--root",
            str(reuse.SETTINGS.store),
        ],
        capture_output=True,
        text=True,
    )
    assert failed.returncode == 1 and failed.stderr.startswith("error: no stored model has the step or fingerprint")


def _dictionary(n: int, word: str = "haus") -> dict[str, list[str]]:
    """A bilingual dictionary of ``n`` entries: a key part far over ``RECORDED_PART_CHARS`` characters of JSON."""
    return {f"w{i:05d}": [f"{word}{i}"] for i in range(n)}


def _hashed(value: object) -> dict[str, object]:
    text = json.dumps(reuse.digest(value), sort_keys=True)
    return {"json_sha256": hashlib.sha256(text.encode()).hexdigest(), "json_chars": len(text)}


def test_a_long_key_part_is_recorded_by_its_hash_and_the_fingerprint_is_the_whole_keys(step_module, caplog):
    train = reuse.reusable(step_module.step, label="train_x")
    # "layers": over the characters but few items, kept part by part (as the code's modules are)
    layers = {f"layer{i:02d}": "x" * 100 for i in range(60)}
    settings = {"lr": 0.1, "dictionaries": {"de": _dictionary(2000), "fr": {"chat": ["cat"]}}, "layers": layers}
    reuse.USAGE.reset()
    train(1.0, settings)
    (entry,) = [p for p in reuse.SETTINGS.store.iterdir() if not p.name.startswith(".")]
    assert entry.name == reuse.fingerprint_of(reuse.key(step_module.step, (1.0, settings)))
    record = json.loads((entry / "record.json").read_text())
    assert record["key"]["args"][1] == {
        "mapping": [
            [
                "dictionaries",
                {
                    "mapping": [
                        ["de", _hashed(settings["dictionaries"]["de"])],
                        ["fr", {"mapping": [["chat", ["cat"]]]}],
                    ]
                },
            ],
            ["layers", reuse.digest(layers)],
            ["lr", {"float": "0.1"}],
        ]
    }
    assert (entry / "record.json").stat().st_size < 20_000
    train(1.0, settings)
    assert (len(reuse.USAGE.trained), len(reuse.USAGE.reused)) == (1, 1)
    # one word changed in the long part: another fingerprint, and the log names the part by its hash
    changed = {**settings, "dictionaries": {**settings["dictionaries"], "de": {**_dictionary(2000), "w00007": ["hof"]}}}
    old, new = _hashed(settings["dictionaries"]["de"]), _hashed(changed["dictionaries"]["de"])
    with caplog.at_level(logging.INFO, logger="language_agnostic.training.reuse"):
        train(1.0, changed)
    assert len(reuse.USAGE.trained) == 2
    (line,) = [r.getMessage() for r in caplog.records if "nearest stored model" in r.getMessage()]
    assert line.endswith(
        f"differs in args[1].dictionaries.de.json_chars: {old['json_chars']} → {new['json_chars']}; "
        f"args[1].dictionaries.de.json_sha256: {old['json_sha256'][:16]}… → {new['json_sha256'][:16]}…"
    )


def test_a_record_holding_a_whole_key_is_rewritten_shortened_when_first_read_unless_busy(step_module):
    train = reuse.reusable(step_module.step, label="train_x")
    settings = {"dictionaries": {"de": _dictionary(50_000)}}
    train(1.0, settings)
    (entry,) = [p for p in reuse.SETTINGS.store.iterdir() if not p.name.startswith(".")]
    path = entry / "record.json"
    full = reuse.key(step_module.step, (1.0, settings))
    path.write_text(
        json.dumps({**json.loads(path.read_text()), "key": full}, indent=2)
    )  # as records were written before
    assert path.stat().st_size > reuse.RECORDED_REWRITE_BYTES
    left = entry / ".record.json.4242-0badcafe"  # a rewrite killed before its replace
    left.write_text(path.read_text()[:1000])
    with reuse.entry_lock(entry.name) as held:  # another run loading or training it: read, left alone
        assert held
        (record,) = reuse._records(reuse.SETTINGS.store)
        assert record["key"] == reuse.recorded_key(full) and path.stat().st_size > reuse.RECORDED_REWRITE_BYTES
        assert left.exists()
    (record,) = reuse._records(reuse.SETTINGS.store)
    assert path.stat().st_size < 20_000 and json.loads(path.read_text()) == record
    assert record["key"]["args"][1] == {
        "mapping": [["dictionaries", {"mapping": [["de", _hashed(settings["dictionaries"]["de"])]]}]]
    }
    assert sorted(p.name for p in entry.iterdir()) == ["last_used", "metrics.json", "model.safetensors", "record.json"]
    reuse.USAGE.reset()
    model, _ = train(1.0, settings)  # still verified and loaded
    assert reuse.USAGE.reused == ["train_x"] and torch.equal(model["state_dict"]["w"], torch.ones(3))


def test_the_command_root_follows_trained_models_store(tmp_path: Path):
    (tmp_path / "conf" / "base").mkdir(parents=True)
    (tmp_path / "conf" / "base" / "parameters.yml").write_text("trained_models:\n  store: somewhere/models\n")
    assert reuse.configured_store(tmp_path) == tmp_path / "somewhere" / "models"
    (tmp_path / "conf" / "big").mkdir()
    (tmp_path / "conf" / "big" / "parameters.yml").write_text("trained_models:\n  store: /mnt/models\n")
    assert reuse.configured_store(tmp_path, "big") == Path("/mnt/models")
