"""What N worker processes cost and give: the start-up of a launch, and extraction on 1 process against N.

- **Start-up:** :func:`language_agnostic.launch.run_in_processes` on a function that does nothing,
  N workers (torchrun, importing torch and the project): the fixed price of every training or
  extraction step run with ``processes: N``.
- **Extraction:** ``--texts`` distinct MASSIVE utterances (default 2,000 of en-US and de-DE test)
  encoded by the configured encoder into an empty store, with ``processes: 1`` then ``processes: N``,
  and the two stores' vectors compared bit for bit.

Median of ``--repeats`` runs of each. On 2 shared cores, N = 2 gives each worker one thread: expect
little or no speed-up; the point of the figures is what several processes cost, and that the result
does not change.

Usage (from the project root)::

    .venv/bin/python -u benchmarks/processes.py
    .venv/bin/python -u benchmarks/processes.py --processes 2 --texts 500 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from language_agnostic.encoders.extraction import ExtractionSettings, extract_embedding_sets
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.encoders.store import EmbeddingStore
from language_agnostic.launch import run_in_processes


def _nothing() -> int:
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--utterances", default="data/02_intermediate/massive_utterances.parquet")
    parser.add_argument("--encoder", default="data/06_models/encoders/multilingual-e5-small-q4")
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; processes {args.processes}")

    startup = []
    for _ in range(args.repeats):
        tick = time.perf_counter()
        run_in_processes(_nothing, (), args.processes, "benchmark")
        startup.append(time.perf_counter() - tick)
    print(
        f"start-up of {args.processes} workers: median {statistics.median(startup):.1f} s "
        f"({', '.join(f'{s:.1f}' for s in startup)})"
    )

    frame = pd.read_parquet(args.utterances)
    texts = frame[frame["locale"].isin(["en-US", "de-DE"]) & (frame["partition"] == "test")]["utt"].drop_duplicates()
    texts = texts.head(args.texts).tolist()
    encoder = load_encoder(args.encoder)
    times: dict[int, list[float]] = {1: [], args.processes: []}
    vectors: dict[int, np.ndarray] = {}
    for _ in range(args.repeats):
        for processes in times:
            with tempfile.TemporaryDirectory() as root:
                settings = ExtractionSettings(progress=False, processes=processes)
                tick = time.perf_counter()
                found = extract_embedding_sets(encoder, {"texts": texts}, settings, EmbeddingStore(Path(root)))["texts"]
                times[processes].append(time.perf_counter() - tick)
                vectors[processes] = found.vectors("mean").copy()
    one, many = statistics.median(times[1]), statistics.median(times[args.processes])
    print(
        f"extraction of {len(texts)} texts: 1 process {one:.1f} s ({len(texts) / one:.0f} texts/s), "
        f"{args.processes} processes {many:.1f} s ({len(texts) / many:.0f} texts/s): speed-up {one / many:.2f}x"
    )
    print("vectors identical:", bool(np.array_equal(vectors[1], vectors[args.processes])))


if __name__ == "__main__":
    main()
