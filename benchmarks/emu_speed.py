"""EMU training throughput against the encoder's bare forward.

The critic steps of Algorithm 1 need encoder forwards of two batches each (``k`` = 5 per
main step), so EMU trains far fewer sentences per second than a loss without a critic. This
prints, in labelled training sentences per second (median of ``--repeats``):

* ``forward``: the encoder's forward alone on batches of ``emu.data.batch_size`` sentences
  (train mode, no gradients: what a critic step costs per sentence);
* one training epoch of each ``--methods`` entry through the pipeline's own setup
  (``training/emu.py:prepare_emu``) and loop (``training/loop.py:train``), on a seeded sample of
  ``--per-intent`` sentences per intent; the dev loss of the epoch (256 sentences) is included,
  the dev accuracy is not computed.

Needs ``data/02_intermediate/massive_utterances.parquet`` (any ``kedro run`` of ``massive``).

Usage::

    .venv/bin/python -u benchmarks/emu_speed.py --methods emu emu-no_ld softmax --repeats 3
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import time

import numpy as np
import pandas as pd
import torch
import yaml

from language_agnostic.encoders.extraction import padded_batch
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.emu import PooledEncoder, emu_losses
from language_agnostic.training.emu import method_settings, prepare_emu
from language_agnostic.training.emu_data import tokenise
from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.loop import train


def forward_rate(encoder: torch.nn.Module, tok, pad_id: int, batch_size: int, n_batches: int, seed: int) -> float:
    """Sentences per second of the bare forward (train mode, no gradients) on random batches."""
    model = PooledEncoder(encoder, "mean")
    model.train()
    rng = np.random.default_rng(seed)
    batches = [padded_batch(tok, rng.integers(0, len(tok.lengths), batch_size), pad_id) for _ in range(n_batches)]
    start = time.perf_counter()
    with torch.no_grad():
        for ids, mask in batches:
            model(ids, mask)
    return batch_size * n_batches / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", nargs="*", default=["emu", "emu-no_ld", "softmax"])
    parser.add_argument("--per-intent", type=int, default=4, help="labelled sentences per intent in the timed epoch")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--mixed-precision", default=None, help="override emu.training.mixed_precision (no | bf16 | fp16)"
    )
    parser.add_argument(
        "--forward-batches",
        type=int,
        nargs="*",
        default=[],
        help="also the fp32 bare forward at these batch sizes (one forward of the k critic batches together?)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    params = yaml.safe_load(open("conf/base/parameters_emu.yml"))["emu"]
    extraction = yaml.safe_load(open("conf/base/parameters_embeddings.yml"))["embeddings"]["extraction"]
    utterances = pd.read_parquet("data/02_intermediate/massive_utterances.parquet")
    encoder = load_encoder("bundled")
    pad_id = int(encoder.tokenizer.pad_token_id)
    batch_size = int(params["data"]["batch_size"])
    train_en = utterances[
        (utterances["locale"] == params["data"]["training_locale"]) & (utterances["partition"] == "train")
    ]
    tok = tokenise(encoder, train_en["utt"].tolist(), extraction)
    print(
        f"machine: {platform.processor() or platform.machine()}, torch threads {torch.get_num_threads()}, "
        f"batch {batch_size}, {args.per_intent} sentences per intent, median of {args.repeats}"
    )
    print("| what | sentences/s (median) | runs |\n|---|---:|---|")
    for precision in ("no", "bf16"):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            rates = [forward_rate(encoder.model, tok, pad_id, batch_size, 40, seed) for seed in range(args.repeats)]
        print(
            f"| forward, no gradients, {'fp32' if precision == 'no' else 'bf16 autocast'} | "
            f"{statistics.median(rates):.1f} | "
            f"{[round(r, 1) for r in rates]} |",
            flush=True,
        )
    for size in args.forward_batches:
        n = max(1, 640 // size)  # the same 640 sentences at every size
        rates = [forward_rate(encoder.model, tok, pad_id, size, n, seed) for seed in range(args.repeats)]
        print(
            f"| forward, no gradients, fp32, batches of {size} | {statistics.median(rates):.1f} | "
            f"{[round(r, 1) for r in rates]} |",
            flush=True,
        )
    for name in args.methods:
        config, training_overrides, data_overrides = method_settings(name, params["methods"][name])
        training = {**params["training"], **training_overrides, "max_epochs": 1, "progress": False}
        if args.mixed_precision is not None:
            training["mixed_precision"] = args.mixed_precision
        data = {**params["data"], **data_overrides, "per_intent": args.per_intent}
        rates = []
        for _ in range(args.repeats):
            run = prepare_emu(utterances, encoder, FineTuning(name, config, data, training, extraction))
            start = time.perf_counter()
            train(run.model, lambda m, b: emu_losses(m, b), run.train_data, run.dev_data, run.settings, None)
            rates.append(len(run.train_data.labels) / (time.perf_counter() - start))
        precision = training.get("mixed_precision", "no")
        print(
            f"| {name} (mixed_precision {precision}): one epoch, labelled sentences | {statistics.median(rates):.1f} | "
            f"{[round(r, 1) for r in rates]} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
