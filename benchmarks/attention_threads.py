"""Whether torch's CPU attention gives a text's rows the same bits whichever thread computes them.

The embedding store's namespace holds no thread count (``encoders/store.py``): extraction workers run
one thread each, a run reads their vectors with all of its threads, and a text's place in its batch
decides which thread computes its attention. So a row's bits must be the same whatever the thread
count and whatever the batch position. For each attention shape (heads x head size) and thread count,
this script computes ``scaled_dot_product_attention`` for one text alone at one thread, then for the
same text at every position of batches of 1, 2, 3, 5 and 8 at the given thread count, and counts the lengths
at which any row differs by a bit. Float32, the extraction's precision on a CPU without native bf16.

The bundled encoder (multilingual-e5-small) has 12 heads of 32; the test encoder
(``tests/conftest.py``) one head of 16.

Usage (from the project root)::

    .venv/bin/python benchmarks/attention_threads.py
    .venv/bin/python benchmarks/attention_threads.py --shapes 12x32 --threads 2 4 --max-length 512
"""

from __future__ import annotations

import argparse
import platform

import torch

from language_agnostic.encoders.extraction import cpu_has_native_bf16


def lengths_differing(heads: int, size: int, threads: int, lengths: list[int]) -> list[int]:
    """The lengths at which some batch position's rows differ from the text's rows alone at one thread.

    Each tensor is allocated on its own, as a model's projections are: MKL's results may depend on where
    its operands sit in memory, so views into one allocation would hide differences."""
    generator = torch.Generator().manual_seed(0)
    differing = []
    for length in lengths:
        alone = [torch.randn(1, heads, length, size, generator=generator) for _ in range(3)]
        torch.set_num_threads(1)
        reference = torch.nn.functional.scaled_dot_product_attention(*alone)[0]
        torch.set_num_threads(threads)
        moved = False
        for batch in (1, 2, 3, 5, 8):
            q, k, v = (torch.randn(batch, heads, length, size, generator=generator) for _ in range(3))
            for position in range(batch):
                q[position], k[position], v[position] = alone[0][0], alone[1][0], alone[2][0]
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            moved = moved or any(not torch.equal(out[p], reference) for p in range(batch))
        if moved:
            differing.append(length)
    return differing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["2x8", "1x16", "12x32", "12x64"], help="HEADSxSIZE")
    parser.add_argument("--threads", nargs="+", type=int, default=[2, 3, 4])
    parser.add_argument("--max-length", type=int, default=130, help="lengths 2 .. this - 1")
    args = parser.parse_args()
    lengths = list(range(2, args.max_length))
    print(f"torch {torch.__version__}, {platform.processor() or platform.machine()}, ", end="")
    print(f"CPU capability {torch.backends.cpu.get_cpu_capability()}, native bf16 {cpu_has_native_bf16()}")
    print(f"lengths 2..{args.max_length - 1}: rows differing from the text alone at one thread\n")
    print("| heads x size | threads | lengths that differ | of | first |")
    print("|---|---:|---:|---:|---|")
    for shape in args.shapes:
        heads, size = (int(x) for x in shape.split("x"))
        for threads in args.threads:
            differing = lengths_differing(heads, size, threads, lengths)
            first = ", ".join(str(n) for n in differing[:6]) or "-"
            print(f"| {heads} x {size} | {threads} | {len(differing)} | {len(lengths)} | {first} |", flush=True)


if __name__ == "__main__":
    main()
