"""How fast the bundled encoder's bare forward pass can go on Tatoeba sentences: the floor under ``tatoeba``'s cold run.

On the distinct sentences of ``--languages`` (default six, of different scripts; the first ``--n``), tokenised
as the extraction stage tokenises them (``query:`` prefix) and sorted by length as it sorts them, times only
the ``model(...)`` calls, in the extraction's precision (``dtype: auto``: bf16 on a CPU with AVX512-BF16),
for:

- each ``--batch-sizes`` value with PyTorch's SDPA attention (the default);
- the default batch size with the eager attention implementation;
- the default batch size under ``torch.compile(dynamic=True)`` (its first, compiling pass reported apart).

Median of ``--repeats`` passes. The last column extrapolates to the 158,078 distinct sentences of the 112
pairs, for one encoder; the pipeline encodes them twice cold (the bundled encoder, EMU's fine-tuned one).

Usage (from the project root)::

    .venv/bin/python -u benchmarks/encoder_floor.py
    .venv/bin/python -u benchmarks/encoder_floor.py --n 2000 --batch-sizes 64 --repeats 1 --no-compile
    .venv/bin/python -u benchmarks/encoder_floor.py --languages all --n 0 --batch-sizes 64 --repeats 1 --sdpa-only
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from language_agnostic.encoders.extraction import (
    ExtractionSettings,
    _inference_copy,
    padded_batch,
    resolve_device_and_dtype,
    tokenise_all,
)
from language_agnostic.encoders.loading import load_encoder

PROJECT = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("LANGUAGE_AGNOSTIC_DATA_ROOT", PROJECT.parent / "shared" / "data"))
ALL_TEXTS = 158_078  # distinct sentences of the 112 LASER Tatoeba pairs


def sentences(languages: list[str], n: int, root: Path = ROOT) -> list[str]:
    """The first ``n`` (``0``: all) distinct non-empty sentences of the languages' Tatoeba files, in file order.

    ``["all"]`` reads both sides of every pair, so the set is the one the pipeline encodes (158,078 with
    the LASER files): its mean length, not a sample's, sets the floor.
    """
    folder = root / "tatoeba" / "v1"
    if languages == ["all"]:
        files = sorted(folder.glob("tatoeba.*-eng.*"))
    else:
        files = [folder / f"tatoeba.{lang}-eng.{lang}" for lang in languages]
    texts: list[str] = []
    for path in files:
        texts += path.read_text(encoding="utf-8").splitlines()
    distinct = list(dict.fromkeys(t for t in texts if t.strip()))
    return distinct[:n] if n > 0 else distinct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--languages", default="deu,fra,jpn,rus,ara,hin", help="ISO 639-3 codes, or all")
    parser.add_argument("--n", type=int, default=6000, help="the first N distinct sentences; 0 = all")
    parser.add_argument("--batch-sizes", default="32,64,256")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--sdpa-only", action="store_true", help="only the --batch-sizes passes (no eager, no compile)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    texts = sentences(args.languages.split(","), args.n)
    encoder = load_encoder("bundled")
    settings = ExtractionSettings()
    tok = tokenise_all(encoder, texts, settings)
    device, dtype = resolve_device_and_dtype(settings.device, settings.dtype)
    model = _inference_copy(encoder.model, device, dtype)
    order = np.lexsort((np.arange(len(texts)), tok.lengths))
    pad = int(encoder.tokenizer.pad_token_id or 0)
    print(
        f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"threads {torch.get_num_threads()}, "
        f"{dtype}; {len(texts)} sentences of {args.languages}, {tok.lengths.mean():.1f} tokens on average\n"
    )

    def one_pass(forward: Callable[..., object], batch: int) -> float:
        start = time.perf_counter()
        with torch.inference_mode():
            for i in range(0, len(order), batch):
                ids, mask = padded_batch(tok, order[i : i + batch], pad)
                forward(input_ids=ids.to(device), attention_mask=mask.to(device))
        return time.perf_counter() - start

    def report(label: str, seconds: float) -> None:
        rate = len(texts) / seconds
        print(f"| {label} | {seconds:.1f} | {rate:.0f} | {ALL_TEXTS / rate / 60:.1f} |", flush=True)

    print(f"| forward | seconds (median of {args.repeats}) | sentences/s | minutes for 158,078 |\n|---|---:|---:|---:|")
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    for batch in sizes:
        report(f"SDPA attention, batch {batch}", statistics.median(one_pass(model, batch) for _ in range(args.repeats)))
    if args.sdpa_only:
        return
    default = settings.batch_size
    implementation = model.config._attn_implementation  # noqa: SLF001
    model.config._attn_implementation = "eager"  # noqa: SLF001  # BERT reads it on every forward
    report(
        f"eager attention, batch {default}", statistics.median(one_pass(model, default) for _ in range(args.repeats))
    )
    model.config._attn_implementation = implementation  # noqa: SLF001
    if not args.no_compile:
        compiled = torch.compile(model, dynamic=True)
        report(f"torch.compile, batch {default}: first pass (compiling)", one_pass(compiled, default))
        report(
            f"torch.compile, batch {default}",
            statistics.median(one_pass(compiled, default) for _ in range(args.repeats)),
        )


if __name__ == "__main__":
    main()
