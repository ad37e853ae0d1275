"""Benchmark: the extraction stage vs a plain loop vs the bare model forward.

On N MASSIVE utterances (default 10,000: the first N en-US then de-DE rows), with the bundled
encoder:

- **plain loop**: unsorted batches of 64, fp32, tokenised per batch, and Python
  post-processing per batch (per-sentence mean pooling in numpy);
- **stage**: ``extract_embeddings`` as the pipelines call it (fresh cache each run, so it
  really encodes; device/dtype ``auto``);
- **bare forward**: only ``model(...)`` calls on the stage's own batches (same sorting,
  batch size and dtype), inputs prepared beforehand: the floor the stage can reach.

Usage (from the project root)::

    .venv/bin/python benchmarks/embedding.py                 # 10,000 texts, 3 repeats
    .venv/bin/python benchmarks/embedding.py --n 2000 --repeats 1
    python3 benchmarks/embedding.py --utterances data/02_intermediate/massive_utterances.parquet \
        --n 66084 --batch-size 512 --skip-plain          # a GPU machine (docs/benchmarks.md)
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from language_agnostic.encoders.extraction import (
    EmbeddingStore,
    ExtractionSettings,
    extract_embeddings,
    padded_batch,
    resolve_device_and_dtype,
    tokenise_all,
)
from language_agnostic.encoders.loading import load_encoder

ROOT = Path(
    os.environ.get("LANGUAGE_AGNOSTIC_DATA_ROOT", Path(__file__).resolve().parents[1].parent / "shared" / "data")
)


LOCALES = ("en-US", "de-DE", "es-ES", "ja-JP")


def massive_texts(n: int, utterances: str | None = None) -> list[str]:
    """The first ``n`` MASSIVE utterances, locale by locale, from the raw archive or ``utterances``
    (the ingested ``massive_utterances.parquet``, same order; for a machine without the raw data).
    """
    if utterances:
        import pandas as pd

        table = pd.read_parquet(utterances, columns=["locale", "utt"])
        return [t for loc in LOCALES for t in table.loc[table["locale"] == loc, "utt"]][:n]
    # the archive reader is a Kedro dataset: imported here so --utterances works without Kedro
    from language_agnostic.corpora.errors import RejectLog
    from language_agnostic.corpora.massive import ParseOptions, iter_massive_rows, massive_member
    from language_agnostic.datasets import TarArchiveDataset

    archive = TarArchiveDataset(
        str(ROOT / "massive" / "amazon-massive-dataset-1.1.tar.gz"), "MASSIVE 1.1 tarball"
    ).load()
    texts: list[str] = []
    for locale in LOCALES:
        rows = iter_massive_rows(
            archive[massive_member(locale)](),
            locale,
            locale,
            ParseOptions(whitespace_insensitive=locale == "ja-JP"),
            RejectLog(),
        )
        texts.extend(r["utt"] for r in rows)
        if len(texts) >= n:
            break
    return texts[:n]


def plain_loop(encoder, texts: list[str], prefix: str) -> float:
    model = copy.deepcopy(encoder.model).float().eval()
    start = time.perf_counter()
    out = []
    with torch.no_grad():
        for i in range(0, len(texts), 64):
            batch = encoder.tokenizer([prefix + t for t in texts[i : i + 64]], padding=True, return_tensors="pt")
            hidden = model(**batch).last_hidden_state.numpy()
            mask = batch["attention_mask"].numpy()
            for h, m in zip(hidden, mask):  # per-sentence Python post-processing
                out.append(h[m.astype(bool)].mean(axis=0))
    return time.perf_counter() - start


def stage(encoder, texts: list[str], settings: ExtractionSettings) -> float:
    with tempfile.TemporaryDirectory() as root:
        start = time.perf_counter()
        extract_embeddings(encoder, texts, settings, EmbeddingStore(root))
        return time.perf_counter() - start


def bare_forward(encoder, texts: list[str], settings: ExtractionSettings) -> float:
    device, dtype = resolve_device_and_dtype(settings.device, settings.dtype)
    model = copy.deepcopy(encoder.model).to(device=device, dtype=dtype).eval()
    tok = tokenise_all(encoder, texts, settings)
    order = np.lexsort((np.arange(len(texts)), tok.lengths))
    batches = [
        padded_batch(tok, order[i : i + settings.batch_size], encoder.tokenizer.pad_token_id)
        for i in range(0, len(order), settings.batch_size)
    ]
    batches = [(ids.to(device), mask.to(device)) for ids, mask in batches]
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    with torch.inference_mode():
        for ids, mask in batches:
            model(input_ids=ids, attention_mask=mask)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--skip-plain", action="store_true")
    parser.add_argument("--utterances", help="read the texts from massive_utterances.parquet instead of the archive")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    encoder = load_encoder("bundled")
    texts = massive_texts(args.n, args.utterances)
    settings = ExtractionSettings(batch_size=args.batch_size, device=args.device, progress=False)
    device, dtype = resolve_device_and_dtype(settings.device, settings.dtype)
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, device {device}, stage dtype {dtype}; {len(texts)} texts"
    )
    results: dict[str, list[float]] = {"plain loop (fp32, unsorted)": [], "stage": [], "bare forward": []}
    for _ in range(args.repeats):
        if not args.skip_plain:
            results["plain loop (fp32, unsorted)"].append(plain_loop(encoder, texts, settings.prefix))
        results["stage"].append(stage(encoder, texts, settings))
        results["bare forward"].append(bare_forward(encoder, texts, settings))
        print({k: [round(x, 1) for x in v] for k, v in results.items()}, flush=True)
    print("| what | median (s) | runs (s) | sentences/s |")
    print("|---|---:|---|---:|")
    for name, runs in results.items():
        if runs:
            med = statistics.median(runs)
            print(f"| {name} | {med:.1f} | {', '.join(f'{r:.1f}' for r in runs)} | {len(texts) / med:.0f} |")
    stage_median = statistics.median(results["stage"])
    if results["plain loop (fp32, unsorted)"]:
        print(
            "stage speed-up over the plain loop: "
            f"{statistics.median(results['plain loop (fp32, unsorted)']) / stage_median:.2f}x"
        )
    print(f"stage time / bare forward time: {stage_median / statistics.median(results['bare forward']):.3f}")


if __name__ == "__main__":
    main()
