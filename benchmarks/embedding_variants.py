"""Where the extraction stage's speed comes from: batching order and precision on this CPU.

On the first N MASSIVE en-US utterances (bundled encoder, "query: " prefix, batch 64), times
the bare forward passes of: unsorted fp32, length-sorted fp32, length-sorted bf16 autocast,
length-sorted bf16 weights (what the stage uses), and int8 dynamic quantisation; and reports
each variant's lowest mean-pooled cosine to sorted fp32.

Usage::

    .venv/bin/python -u benchmarks/embedding_variants.py --n 3000
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import logging
import time
import warnings

import numpy as np
import torch
from embedding import massive_texts

from language_agnostic.encoders.loading import load_encoder


def run(encoder, model, texts: list[str], sort: bool, autocast: bool) -> tuple[float, np.ndarray]:
    order = (
        sorted(range(len(texts)), key=lambda i: len(encoder.tokenizer(texts[i])["input_ids"]))
        if sort
        else list(range(len(texts)))
    )
    out = np.zeros((len(texts), encoder.hidden_size), dtype=np.float32)
    context = torch.autocast("cpu", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    start = time.perf_counter()
    with torch.inference_mode(), context:
        for i in range(0, len(order), 64):
            index = order[i : i + 64]
            batch = encoder.tokenizer([texts[j] for j in index], padding=True, return_tensors="pt")
            hidden = model(**batch).last_hidden_state.float()
            mask = batch["attention_mask"].unsqueeze(-1).float()
            out[index] = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
    return len(texts) / (time.perf_counter() - start), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=3000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    warnings.filterwarnings("ignore")
    encoder = load_encoder("bundled")
    texts = ["query: " + t for t in massive_texts(args.n)]
    fp32 = copy.deepcopy(encoder.model).float().eval()
    bf16 = copy.deepcopy(encoder.model).to(torch.bfloat16).eval()
    int8 = torch.ao.quantization.quantize_dynamic(copy.deepcopy(fp32), {torch.nn.Linear}, dtype=torch.qint8)
    _, reference = run(encoder, fp32, texts, True, False)
    variants = [
        ("unsorted fp32", fp32, False, False),
        ("sorted fp32", fp32, True, False),
        ("sorted bf16 autocast", fp32, True, True),
        ("sorted bf16 weights (the stage)", bf16, True, False),
        ("sorted int8 dynamic", int8, True, False),
    ]
    print(f"{len(texts)} texts, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| variant | sentences/s | lowest cosine to sorted fp32 |")
    print("|---|---:|---:|")
    for name, model, sort, autocast in variants:
        speed, vectors = run(encoder, model, texts, sort, autocast)
        cosine = (vectors * reference).sum(1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(reference, axis=1)
        print(f"| {name} | {speed:.0f} | {cosine.min():.5f} |", flush=True)


if __name__ == "__main__":
    main()
