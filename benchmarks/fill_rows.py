"""Benchmark: what filling every batch of one length to one shape costs the extraction, in rows.

Extraction batches texts of one token count and fills the last batch of each length with repeats
of its own rows up to ``batch_size`` (``encoders/extraction.py``, ``MIN_FORWARD_TOKENS``), so a
text's vector never depends on how many texts of its length a list holds. The cost is the
repeated rows: this script counts the rows (and token rows, what the matmuls scale with) of the
forward passes with and without the fill, on MASSIVE utterances tokenised by the bundled encoder.
A count, not a timing: the ratio is the same on any machine.

Usage (from the project root)::

    .venv/bin/python benchmarks/fill_rows.py                       # 4 locales x train+dev+test, batch 64
    .venv/bin/python benchmarks/fill_rows.py --n 2000 --batch-size 16
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from embedding import massive_texts  # noqa: E402

from language_agnostic.encoders.extraction import ExtractionSettings, _forward_groups, tokenise_all  # noqa: E402
from language_agnostic.encoders.loading import load_encoder  # noqa: E402


def count(lengths: np.ndarray, batch_size: int, fill: bool) -> tuple[int, int]:
    """``(rows, token rows)`` of the forward passes over texts of these token counts."""
    batches = _forward_groups(lengths, batch_size, fill)
    return sum(len(b) for b in batches), sum(len(b) * int(lengths[b[0]]) for b in batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=66084, help="MASSIVE utterances (default: 4 locales, all splits)")
    parser.add_argument("--batch-size", type=int, default=64, help="embeddings.extraction.batch_size")
    args = parser.parse_args()
    encoder = load_encoder("bundled")
    texts = list(dict.fromkeys(massive_texts(args.n)))  # the store encodes each distinct text once
    lengths = tokenise_all(encoder, texts, ExtractionSettings()).lengths
    plain, filled = count(lengths, args.batch_size, False), count(lengths, args.batch_size, True)
    print(f"{len(texts)} distinct texts, {len(set(lengths.tolist()))} lengths, batch {args.batch_size}")
    print(f"rows:       {plain[0]} without the fill, {filled[0]} with it ({filled[0] / plain[0]:.4f}x)")
    print(f"token rows: {plain[1]} without the fill, {filled[1]} with it ({filled[1] / plain[1]:.4f}x)")


if __name__ == "__main__":
    main()
