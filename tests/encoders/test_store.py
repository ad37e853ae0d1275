"""The per-text embedding store: exact reuse across lists and batch sizes, resume after SIGKILL,
concurrent writers, usage counts, reports and pruning."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.encoders.extraction import (
    EmbeddingStore,
    ExtractionSettings,
    StoreBusyError,
    extract_embedding_sets,
    extract_embeddings,
)
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.encoders.store import USAGE

# the probe benchmarks/attention_threads.py prints, loaded as tests/benchmarks/ load the scripts they check
_spec = importlib.util.spec_from_file_location(
    "attention_threads", Path(__file__).resolve().parents[2] / "benchmarks" / "attention_threads.py"
)
attention_threads = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(attention_threads)

WORDS = (
    "wake me up at nine am set an alarm for six play some jazz music what is the weather today weck mich um neun"
).split()
SETTINGS = ExtractionSettings(
    prefix="", dtype="float32", device="cpu", batch_size=4, chunk_size=8, progress=False, token_states=True
)


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 9)))) for _ in range(n)]


def _outputs(entry) -> dict[str, np.ndarray]:
    states, mask = entry.token_states(np.arange(len(entry)))
    return {"cls": np.asarray(entry.vectors("cls")), "mean": np.asarray(entry.vectors("mean")), "tokens": states[mask]}


@pytest.fixture
def set_threads():
    """``torch.set_num_threads`` for one test, torch's thread count restored after it."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


def test_a_text_gets_the_same_bits_in_any_list_and_batch_size(wide_model: Path, tmp_path: Path):
    encoder = load_encoder(str(wide_model))
    texts = _texts(60, 0)
    first = extract_embeddings(encoder, texts, SETTINGS, EmbeddingStore(tmp_path / "a"))
    # other companions, another order, other batch and shard sizes, in a store of its own
    others = _texts(40, 1) + texts[::-1]
    other_settings = ExtractionSettings(**{**SETTINGS.__dict__, "batch_size": 7, "chunk_size": 1000})
    second = extract_embeddings(encoder, others, other_settings, EmbeddingStore(tmp_path / "b"))
    a, b = _outputs(first), _outputs(second)
    for name in ("cls", "mean"):
        assert np.array_equal(a[name], b[name][40:][::-1])
    single = extract_embeddings(
        encoder,
        [texts[5]],
        ExtractionSettings(**{**SETTINGS.__dict__, "batch_size": 1}),
        EmbeddingStore(tmp_path / "c"),
    )
    assert np.array_equal(single.vectors("mean")[0], a["mean"][5])
    states, mask = first.token_states([5])
    again, _ = single.token_states([0])
    assert np.array_equal(states[0][mask[0]], again[0])


@pytest.mark.parametrize("threads", [1, 2])
def test_a_text_gets_the_same_bits_in_any_list_in_bfloat16(
    e5_wide_model: Path, tmp_path: Path, threads: int, set_threads
):
    """bf16 on the CPU keeps ``torch.nn.Linear`` (oneDNN), whose rows depend on how many rows a product
    has: a length's last, partial batch gave other bits than a full one (this test failed on an AMX
    Xeon with 2 threads before batches were filled). Every batch is filled to the batch size."""
    set_threads(threads)
    encoder = load_encoder(str(e5_wide_model))
    settings = ExtractionSettings(prefix="", dtype="bfloat16", device="cpu", batch_size=16, progress=False)
    rng = np.random.default_rng(3)
    sentences = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 25)))) for _ in range(800)]
    texts, others = sentences[:200], sentences[200:]
    others = [t for t in dict.fromkeys(others) if t not in set(texts)]
    first = extract_embeddings(encoder, texts, settings, EmbeddingStore(tmp_path / "a"))
    # the same texts after others: other batch-mates, other positions, full batches where they had partial ones
    second = extract_embeddings(encoder, others + texts, settings, EmbeddingStore(tmp_path / "b"))
    assert first.meta["dtype"] == "bfloat16"
    for pooling in ("cls", "mean"):
        moved = (first.vectors(pooling) != second.vectors(pooling)[len(others) :]).any(axis=1)
        assert int(moved.sum()) == 0, pooling


def test_a_text_gets_the_same_bits_at_one_and_two_threads(tiny_hub_model: Path, tmp_path: Path, set_threads):
    """The namespace holds no thread count, so a text's outputs must not depend on it: extraction
    workers store with one thread each, a run reads with all. torch's CPU attention broke this for a
    head size of 8 (with two threads, rows of odd lengths 9 to 31 that the second thread computed came
    out with other bits, so a text's vector depended on its place in its batch); the test encoder has
    one head of 16, which keeps every bit at two threads. Lengths here run from 3 to 22 tokens."""
    encoder = load_encoder(str(tiny_hub_model))
    rng = np.random.default_rng(11)
    texts = list(dict.fromkeys(" ".join(rng.choice(WORDS, size=int(rng.integers(1, 21)))) for _ in range(150)))
    outputs = {}
    for threads in (1, 2):
        set_threads(threads)
        for order, listed in (("as listed", texts), ("reversed", texts[::-1])):
            store = EmbeddingStore(tmp_path / f"{threads}{order}")
            got = _outputs(extract_embeddings(encoder, listed, SETTINGS, store))
            if order == "reversed":  # back to the listed order (token rows compared in the listed lists)
                got = {"cls": got["cls"][::-1], "mean": got["mean"][::-1]}
            outputs[threads, order] = got
    reference = outputs[1, "as listed"]
    for (threads, order), got in outputs.items():
        for name, values in got.items():
            assert np.array_equal(values, reference[name]), (threads, order, name)


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_attention_of_the_bundled_encoders_shape_does_not_depend_on_threads_or_position(set_threads, threads: int):
    """multilingual-e5-small's attention (12 heads of 32): torch's CPU kernel gives a text's rows the
    same bits whichever thread computes them and wherever the text sits in its batch, so the store's
    exactness holds at any thread count (heads of 8 do not, nor heads of 16 from 3 threads), measured
    by ``benchmarks/attention_threads.py``'s probe."""
    lengths = [*range(2, 40), 63, 64, 65, 127, 129, 255, 511]
    assert attention_threads.lengths_differing(12, 32, threads, lengths) == []


def test_the_batch_size_is_in_the_namespace_only_where_batches_are_filled_to_it(e5_wide_model: Path):
    from language_agnostic.encoders.extraction import namespace_inputs

    encoder = load_encoder(str(e5_wide_model))

    def inputs(**kwargs):
        return namespace_inputs(encoder, ExtractionSettings(device="cpu", **kwargs))

    assert inputs(dtype="bfloat16", batch_size=16)["batch_size"] == 16
    assert inputs(dtype="bfloat16", batch_size=16) != inputs(dtype="bfloat16", batch_size=32)
    # float32: each text's own products, any batch size the same bits, so the same namespace
    assert "batch_size" not in inputs(dtype="float32", batch_size=16)
    assert inputs(dtype="float32", batch_size=16) == inputs(dtype="float32", batch_size=32)


_POSITIONS = textwrap.dedent("""
    import sys
    import numpy as np
    from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
    from language_agnostic.encoders.loading import load_encoder
    model, where, texts_file = sys.argv[1], sys.argv[2], sys.argv[3]
    encoder = load_encoder(model)
    texts = open(texts_file).read().split("\\n")
    settings = ExtractionSettings(prefix="", dtype="float32", device="cpu", batch_size=8, progress=False)
    alone = extract_embeddings(encoder, texts[:40], settings, EmbeddingStore(where + "/a"))
    # the same texts after 23 others: in other batches, at other positions
    mixed = extract_embeddings(encoder, texts[40:] + texts[:40], settings, EmbeddingStore(where + "/b"))
    for pooling in ("cls", "mean"):
        moved = int((alone.vectors(pooling) != mixed.vectors(pooling)[23:]).any(axis=1).sum())
        print(pooling, moved, flush=True)
""")


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_text_gets_the_same_bits_at_any_position_on_mkls_avx2_path(wide_model: Path, tmp_path: Path, threads: str):
    """MKL's float32 products on their AVX2 path (AMD CPUs; forced here) place rows by position: each
    text's own products (extraction.PerTextLinear) keep its vector its own. 2-4 of 80 rows moved without."""
    texts = list(dict.fromkeys(_texts(90, 7)))[:63]
    (tmp_path / "texts.txt").write_text("\n".join(texts))
    env = {**os.environ, "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OMP_NUM_THREADS": threads, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", _POSITIONS, str(wide_model), str(tmp_path), str(tmp_path / "texts.txt")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["cls", "0", "mean", "0"]


def test_subsets_supersets_and_repeats_encode_only_new_texts(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path)
    texts = _texts(20, 2)
    USAGE.reset()
    full = extract_embeddings(encoder, texts, SETTINGS, store)
    assert USAGE.encoded == len(set(texts)) and USAGE.requested == 20
    calls: list[int] = []
    hook = encoder.model.register_forward_hook(lambda _m, inputs, _o: calls.append(inputs[0].shape[0] if inputs else 0))
    subset = extract_embeddings(encoder, texts[3:9][::-1], SETTINGS, store)  # subset, reordered: nothing encoded
    assert calls == []
    assert np.array_equal(subset.vectors("cls"), full.vectors("cls")[3:9][::-1])
    # a superset with repeats and the pooled-only kind: only the two new texts are encoded
    pooled = ExtractionSettings(**{**SETTINGS.__dict__, "token_states": False})
    sets = extract_embedding_sets(
        encoder, {"x": texts + ["music music", "music music"], "y": ["play jazz jazz", texts[0]]}, pooled, store
    )
    assert USAGE.encoded == len(set(texts)) + 2
    assert np.array_equal(sets["x"].vectors("mean")[:20], full.vectors("mean"))
    assert np.array_equal(sets["x"].vectors("mean")[20], sets["x"].vectors("mean")[21])
    assert USAGE.metrics()["embedding_store.texts_requested"] == 20 + 6 + 22 + 2
    assert USAGE.metrics()["embedding_store.texts_distinct"] == len(set(texts)) + 2
    hook.remove()


def test_a_store_made_on_another_cpus_kernels_is_not_reused(tiny_hub_model: Path, tmp_path: Path, monkeypatch):
    from language_agnostic.encoders import extraction

    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path)
    texts = _texts(6, 3)
    here = extraction.cpu_kernels()
    USAGE.reset()
    extract_embeddings(encoder, texts, SETTINGS, store)
    with monkeypatch.context() as other:
        other.setattr(torch.cpu, "_is_amx_tile_supported", lambda: not here["amx"])  # another CPU's kernels
        extract_embeddings(encoder, texts, SETTINGS, store)
        other.setattr(extraction, "cpu_vendor", lambda: here["vendor"] + "X")
        extract_embeddings(encoder, texts, SETTINGS, store)
    extract_embeddings(encoder, texts, SETTINGS, store)  # this CPU again: its vectors
    assert USAGE.encoded == 3 * len(set(texts))
    assert len(list(tmp_path.glob("v*-*"))) == 3


def test_the_cpu_vendor_is_read_from_cpuinfo(monkeypatch, tmp_path: Path):
    from language_agnostic.encoders.extraction import cpu_vendor

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n")
    real_open = open
    monkeypatch.setattr(
        "builtins.open", lambda path, *a, **k: real_open(info if path == "/proc/cpuinfo" else path, *a, **k)
    )
    assert cpu_vendor() == "AuthenticAMD"
    monkeypatch.setattr("builtins.open", lambda *a, **k: (_ for _ in ()).throw(FileNotFoundError("no /proc")))
    assert cpu_vendor() == ""


def test_token_states_need_a_token_shard(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path)
    pooled = ExtractionSettings(**{**SETTINGS.__dict__, "token_states": False})
    only = extract_embeddings(encoder, ["play jazz", "music"], pooled, store)
    with pytest.raises(ValueError, match="was extracted without token states"):
        only.token_states([0])
    USAGE.reset()
    with_tokens = extract_embeddings(encoder, ["play jazz", "music"], SETTINGS, store)
    assert USAGE.encoded == 2  # the same forward pass now keeps the token states too
    assert np.array_equal(with_tokens.vectors("cls"), only.vectors("cls"))


_WORKER = textwrap.dedent("""
    import sys, time
    from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
    from language_agnostic.encoders.loading import load_encoder
    model, store, texts_file, delay = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    encoder = load_encoder(model)
    if delay:
        encoder.model.register_forward_hook(lambda *a: time.sleep(delay))
    texts = open(texts_file).read().split("\\n")
    settings = ExtractionSettings(prefix="", dtype="float32", device="cpu", batch_size=4, chunk_size=8,
                                  progress=False, token_states=True)
    extract_embeddings(encoder, texts, settings, EmbeddingStore(store))
    print("done", flush=True)
""")


def _worker(model: Path, store: Path, texts: list[str], tmp_path: Path, delay: float, tag: str) -> subprocess.Popen:
    script, texts_file = tmp_path / "worker.py", tmp_path / f"texts-{tag}.txt"
    script.write_text(_WORKER)
    texts_file.write_text("\n".join(texts))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(
        [sys.executable, str(script), str(model), str(store), str(texts_file), str(delay)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _finished_shards(store: Path) -> list[Path]:
    return [p for p in store.glob("v2-*/shards/*") if not p.name.startswith(".") and (p / "meta.json").is_file()]


def test_a_run_killed_during_extraction_resumes_to_the_same_store(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    texts = list(dict.fromkeys(_texts(80, 3)))
    clean = _outputs(extract_embeddings(encoder, texts, SETTINGS, EmbeddingStore(tmp_path / "clean")))
    killed_store = tmp_path / "killed"
    process = _worker(tiny_hub_model, killed_store, texts, tmp_path, 0.05, "kill")
    deadline = time.monotonic() + 120
    while not _finished_shards(killed_store) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    done = len(_finished_shards(killed_store))
    assert 0 < done < -(-len(texts) // SETTINGS.chunk_size), "the kill should land between the first and last shard"
    USAGE.reset()
    resumed = extract_embeddings(encoder, texts, SETTINGS, EmbeddingStore(killed_store))
    assert 0 < USAGE.encoded <= len(texts) - done * SETTINGS.chunk_size  # the finished shards are not encoded again
    for name, values in _outputs(resumed).items():
        assert np.array_equal(values, clean[name]), name
    removed = EmbeddingStore(killed_store).prune()
    assert removed["namespaces"] == 0  # only an unfinished temporary shard, if the kill left one


def test_two_concurrent_extractions_into_one_store_are_both_correct(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    a, b = _texts(50, 4), _texts(50, 4)[25:] + _texts(30, 5)
    store = tmp_path / "shared"
    workers = [_worker(tiny_hub_model, store, texts, tmp_path, 0.002, tag) for tag, texts in (("a", a), ("b", b))]
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err[-2000:]
        assert "done" in out
    USAGE.reset()
    shared = EmbeddingStore(store)
    got = {tag: extract_embeddings(encoder, texts, SETTINGS, shared) for tag, texts in (("a", a), ("b", b))}
    assert USAGE.encoded == 0  # everything was stored by the two workers
    for tag, texts in (("a", a), ("b", b)):
        clean = _outputs(extract_embeddings(encoder, texts, SETTINGS, EmbeddingStore(tmp_path / f"clean-{tag}")))
        for name, values in _outputs(got[tag]).items():
            assert np.array_equal(values, clean[name]), (tag, name)
    (row,) = shared.report()
    assert row["texts_stored"] == len(set(a) | set(b)) and row["texts_with_token_states"] == row["texts_stored"]


def test_pruning_waits_for_no_run_and_reports(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path)
    extract_embeddings(encoder, ["play jazz", "music"], SETTINGS, store)
    (row,) = store.report()
    assert row["texts_stored"] == 2 and row["encoder"] == encoder.identity["name"] and row["bytes"] > 0
    with store.lock():  # a run is extracting
        with pytest.raises(StoreBusyError, match="is in use by another run"):
            store.prune(everything=True)
    legacy = tmp_path / "0123abcd"  # an entry of the earlier per-list cache
    (legacy / "chunks").mkdir(parents=True)
    removed = store.prune(encoder=encoder.identity["name"])
    assert removed["namespaces"] == 1 and removed["legacy"] == 1 and not legacy.exists()
    assert store.report() == []


def test_cli_report(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    extract_embeddings(encoder, ["play jazz"], SETTINGS, EmbeddingStore(tmp_path))
    out = subprocess.run(
        [sys.executable, "-m", "language_agnostic.encoders.store", "report", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "texts_stored" in out and json.loads(out)[0]["texts_stored"] == 1


def test_dry_run_says_how_much_would_be_encoded(tiny_hub_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from language_agnostic.encoders.extraction import StoreDryRunStop

    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path)
    extract_embeddings(encoder, ["play jazz", "music"], SETTINGS, store)
    monkeypatch.setenv("LANGUAGE_AGNOSTIC_STORE_DRY_RUN", "1")
    assert len(extract_embeddings(encoder, ["music"], SETTINGS, store)) == 1  # nothing to encode: goes on
    with pytest.raises(
        StoreDryRunStop,
        match=r"would encode 1 of the 3 distinct texts its 1 list\(s\) ask for "
        r"\(2 are stored already, 4 requested with repeats\)",
    ):
        extract_embeddings(encoder, ["music", "play jazz", "set an alarm", "music"], SETTINGS, store)
