"""Benchmark: does a text's stored vector depend on the list it was extracted in, and what does the
extraction cost?

The first ``--n`` MASSIVE utterances (locale by locale, as ``benchmarks/embedding.py`` reads them) are
extracted twice into fresh stores with the pipelines' settings (device and dtype ``auto``): alone,
and after ``--others`` further utterances, so that each text meets other batch-mates, other positions
and, at a length's end, another partial batch. Printed: how many of the ``--n`` texts' vectors differ
between the two (per pooling; 0 is what the store's reuse needs), and the median seconds of each
extraction. ``--unfilled`` extracts as the store did before bf16 batches were filled to the batch
size (``extraction.filled_batches`` false: a length's last batch as short as it comes), for the
before/after pair of docs/benchmarks.md ("The store's exactness"). ``--stores A B`` instead compares
two stores that runs filled (e.g. two pipelines' ``data/04_feature/embeddings``): of the texts both
hold in a namespace of the same name, how many have other bits::

    .venv/bin/python benchmarks/store_context.py --utterances data/02_intermediate/massive_utterances.parquet --unfilled
    .venv/bin/python benchmarks/store_context.py --utterances data/02_intermediate/massive_utterances.parquet
    .venv/bin/python benchmarks/store_context.py --stores A/data/04_feature/embeddings B/data/04_feature/embeddings
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from embedding import massive_texts  # noqa: E402  (a sibling script)

from language_agnostic.encoders import extraction  # noqa: E402
from language_agnostic.encoders.extraction import (  # noqa: E402
    EmbeddingStore,
    ExtractionSettings,
    extract_embeddings,
    resolve_device_and_dtype,
)
from language_agnostic.encoders.loading import load_encoder  # noqa: E402
from language_agnostic.encoders.store import Namespace  # noqa: E402


def extract(encoder, texts: list[str], settings: ExtractionSettings) -> tuple[dict[str, np.ndarray], float]:
    """Both poolings of ``texts`` from a fresh store, and the seconds the extraction took."""
    with tempfile.TemporaryDirectory() as root:
        start = time.perf_counter()
        found = extract_embeddings(encoder, texts, settings, EmbeddingStore(root))
        seconds = time.perf_counter() - start
        return {p: np.array(found.vectors(p)) for p in ("cls", "mean")}, seconds


def _vectors(space: Namespace, keys: np.ndarray, pooling: str) -> np.ndarray:
    """The stored vectors of ``keys`` (all stored), through the store's own index."""
    names, shard_of, rows = space.locate(keys, token_states=False)
    return np.stack([space.shard(names[s]).array(pooling)[r] for s, r in zip(shard_of, rows)])


def compare_stores(a: Path, b: Path) -> None:
    """Per namespace both stores have: texts both hold, and how many differ per pooling."""
    print("| namespace | texts in both | cls differ | mean differ |")
    print("|---|---:|---:|---:|")
    for directory in sorted(p for p in a.glob("v*-*") if (b / p.name).is_dir()):
        left, right = Namespace(directory, {}), Namespace(b / directory.name, {})
        left.refresh()
        right.refresh()
        # the finished shards, by the store's own rule (Namespace.refresh): a meta.json, no leading dot
        finished = [s for s in sorted(left.shard_dir.iterdir()) if s.name[0] != "." and (s / "meta.json").is_file()]
        keys = np.unique(np.concatenate([np.load(s / "keys.npy") for s in finished]), axis=0)
        keys = np.delete(keys, right.missing(keys, token_states=False), axis=0)
        moved = {
            p: int((_vectors(left, keys, p) != _vectors(right, keys, p)).any(axis=1).sum()) for p in ("cls", "mean")
        }
        print(f"| {directory.name} | {len(keys):,} | {moved['cls']:,} | {moved['mean']:,} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="the texts whose vectors are compared")
    parser.add_argument("--others", type=int, default=3000, help="texts extracted before them the second time")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--utterances", help="read the texts from massive_utterances.parquet instead of the archive")
    parser.add_argument("--unfilled", action="store_true", help="no batch filled to the batch size (the store before)")
    parser.add_argument("--stores", nargs=2, type=Path, metavar=("A", "B"), help="compare two filled stores instead")
    args = parser.parse_args()
    if args.stores:
        compare_stores(*args.stores)
        return
    if args.unfilled:
        extraction.filled_batches = lambda *_: False
    logging.basicConfig(level=logging.WARNING)
    encoder = load_encoder("bundled")
    pool = list(dict.fromkeys(massive_texts(2 * (args.n + args.others), args.utterances)))
    texts, others = pool[: args.n], pool[args.n : args.n + args.others]
    settings = ExtractionSettings(progress=False)
    device, dtype = resolve_device_and_dtype(settings.device, settings.dtype)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, device {device}, dtype {dtype}; {len(texts)} texts, {len(others)} others; "
        f"batches {'unfilled' if args.unfilled else 'filled'}"
    )
    alone_s, mixed_s, moved = [], [], {}
    for _ in range(args.repeats):
        alone, seconds = extract(encoder, texts, settings)
        alone_s.append(seconds)
        mixed, seconds = extract(encoder, others + texts, settings)
        mixed_s.append(seconds)
        moved = {p: int((alone[p] != mixed[p][len(others) :]).any(axis=1).sum()) for p in alone}
    print("| texts moved, cls | texts moved, mean | alone (s, median) | after the others (s, median) |")
    print("|---:|---:|---:|---:|")
    print(
        f"| {moved['cls']} of {len(texts)} | {moved['mean']} of {len(texts)} | "
        f"{statistics.median(alone_s):.1f} | {statistics.median(mixed_s):.1f} |"
    )


if __name__ == "__main__":
    main()
