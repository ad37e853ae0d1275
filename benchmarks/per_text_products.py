"""Benchmark: what per-text matrix products cost float32 extraction on the CPU.

In float32 on the CPU every text gets its own matrix products (``encoders/extraction.py``,
``PerTextLinear``: a batched ``bmm`` instead of one product over the batch's rows), so that a
text's vector does not depend on its batch-mates on MKL's AVX2 path. This script times
``extract_embeddings`` (fresh store each time, so it really encodes) on N MASSIVE utterances
with the per-text products and with plain ``torch.nn.Linear``, alternating, and prints the
median of each and their ratio. bf16 extraction (the default where the CPU computes bf16
natively) keeps ``torch.nn.Linear`` and is not affected.

Usage (from the project root)::

    .venv/bin/python benchmarks/per_text_products.py              # 2,000 texts, 3 repeats
    .venv/bin/python benchmarks/per_text_products.py --n 500 --repeats 1
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from embedding import massive_texts  # noqa: E402

from language_agnostic.encoders import extraction  # noqa: E402
from language_agnostic.encoders.loading import load_encoder  # noqa: E402


def seconds(encoder, texts: list[str], per_text: bool) -> float:
    """Wall time of one float32 extraction of ``texts`` into an empty store."""
    original = extraction.per_text_products
    if not per_text:
        extraction.per_text_products = lambda model: model
    settings = extraction.ExtractionSettings(dtype="float32", device="cpu", progress=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            extraction.extract_embeddings(encoder, texts, settings, extraction.EmbeddingStore(tmp))
            return time.perf_counter() - start
    finally:
        extraction.per_text_products = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    encoder = load_encoder("bundled")
    texts = massive_texts(args.n)
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.repeats):
        for per_text in (False, True):
            times[per_text].append(seconds(encoder, texts, per_text))
    plain, per_text = statistics.median(times[False]), statistics.median(times[True])
    print(f"{platform.processor() or platform.machine()}, {len(texts)} texts, float32, median of {args.repeats}")
    print(f"plain Linear: {plain:.1f} s; per-text products: {per_text:.1f} s; ratio {per_text / plain:.2f}x")


if __name__ == "__main__":
    main()
