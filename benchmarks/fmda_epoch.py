"""Benchmark: what one FMDA epoch costs on real MASSIVE data (planning the `fmda` pipeline).

Needs the `massive` pipeline's outputs (`make run`). For one language pair (default en-de):
extracts token states of the train and dev utterances and the first-token states of their
template/residual-masked texts (cached in data/04_feature/embeddings, so a rerun skips it),
then trains FMDA for a few epochs with the shared loop and reports seconds per epoch.

Usage::

    .venv/bin/python -u benchmarks/fmda_epoch.py --target de-DE --epochs 2
    .venv/bin/python -u benchmarks/fmda_epoch.py --epochs 2 --no-bucket --tokenwise   # as before both
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.fmda import Fmda, FmdaConfig, fmda_losses
from language_agnostic.training.fmda import pool_rows
from language_agnostic.training.fmda_data import FmdaBatches
from language_agnostic.training.loop import TrainSettings, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default="en-US")
    parser.add_argument("--target", default="de-DE")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--no-bucket", action="store_true", help="random batches instead of length buckets")
    parser.add_argument(
        "--floor",
        type=int,
        default=0,
        metavar="REPEATS",
        help="also time the floor: one epoch's batches made beforehand, then only forward, "
        "backward and the AdamW step over them (no data loading, no dev), median of REPEATS",
    )
    parser.add_argument(
        "--tokenwise",
        action="store_true",
        help="FFNs on every token (the literal form) instead of the affine fast path",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    masked = pd.read_parquet("data/03_primary/massive_masked_texts.parquet")
    pools = pd.read_parquet("data/03_primary/massive_negative_pools.parquet")
    encoder = load_encoder("bundled")
    store = EmbeddingStore("data/04_feature/embeddings")
    tokens = ExtractionSettings(token_states=True, progress=False)
    sentence = ExtractionSettings(progress=False)
    sets = {}
    timings = {}
    start = time.perf_counter()
    for split in ("train", "dev"):
        sides = {}
        for locale in (args.source, args.target):
            rows = masked[(masked["locale"] == locale) & (masked["partition"] == split)].sort_values(
                "id", key=lambda s: s.astype(int)
            )
            sides[locale] = {
                "ids": rows["id"].tolist(),
                "states": extract_embeddings(encoder, rows["utt"].tolist(), tokens, store),
                "tp": np.asarray(
                    extract_embeddings(encoder, rows["template_text"].tolist(), sentence, store).vectors("cls")
                ),
                "rs": np.asarray(
                    extract_embeddings(encoder, rows["residual_text"].tolist(), sentence, store).vectors("cls")
                ),
            }
        assert sides[args.source]["ids"] == sides[args.target]["ids"], "MASSIVE ids must align across locales"
        sets[split] = sides
    timings["extraction (s)"] = time.perf_counter() - start

    def batches(split: str, shuffle: bool) -> FmdaBatches:
        s, t = sets[split][args.source], sets[split][args.target]
        ids = np.array(s["ids"])
        # train negatives from the train pool, dev negatives from the dev pool (the pipeline's rule)
        pool = {loc: pool_rows(ids, pools, loc, split) for loc in (args.source, args.target)}
        targets = {"s_tp": s["tp"], "s_rs": s["rs"], "t_tp": t["tp"], "t_rs": t["rs"]}
        return FmdaBatches(
            s["states"],
            t["states"],
            targets,
            0,
            1,
            pool[args.source],
            pool[args.target],
            args.batch_size,
            shuffle=shuffle,
            bucket=not args.no_bucket,
        )

    torch.manual_seed(0)
    model = Fmda(FmdaConfig(dim=encoder.hidden_size, n_languages=2))
    if args.tokenwise:
        model.affine_fast_path = False
    start = time.perf_counter()
    result = train(
        model,
        fmda_losses,
        batches("train", True),
        batches("dev", False),
        TrainSettings(lr=1e-4, max_epochs=args.epochs, patience=args.epochs, seed=0, progress=False),
    )
    per_epoch = (time.perf_counter() - start) / args.epochs
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads"
    )
    print(
        f"pair {args.source}-{args.target}: {len(sets['train'][args.source]['ids'])} train / "
        f"{len(sets['dev'][args.source]['ids'])} dev pairs"
    )
    print(f"extraction (cached after the first run): {timings['extraction (s)']:.1f} s")
    lengths = sets["train"][args.source]["states"].lengths
    rng = np.random.default_rng(0)
    batch_max = np.mean([lengths[rng.permutation(len(lengths))[: args.batch_size]].max() for _ in range(50)])
    print(
        f"source-side tokens per utterance: mean {lengths.mean():.1f}; longest in a random batch of "
        f"{args.batch_size}: {batch_max:.1f} on average (50 draws)"
    )
    print(
        f"training: {per_epoch:.1f} s per epoch (incl. dev loss), batch {args.batch_size}, fp32, "
        f"{'random' if args.no_bucket else 'length-bucketed'} batches, "
        f"{'token-wise' if args.tokenwise else 'affine fast path'}"
    )
    for record in result.history:
        print({k: round(v, 4) for k, v in record.items() if k in ("epoch", "train_total", "dev_total")})
    if args.floor:
        # the floor: the same arithmetic as one training epoch, nothing around it
        data = batches("train", True)
        ready = list(data.batches(1, torch.Generator().manual_seed(1)))
        floor_model = Fmda(FmdaConfig(dim=encoder.hidden_size, n_languages=2))
        optimiser = torch.optim.AdamW(floor_model.parameters(), lr=1e-4)
        times = []
        for _ in range(args.floor):
            start = time.perf_counter()
            for batch in ready:
                optimiser.zero_grad()
                fmda_losses(floor_model, batch)["total"].backward()
                optimiser.step()
            times.append(time.perf_counter() - start)
        floor = float(np.median(times))
        print(
            f"floor: {floor:.1f} s per epoch ({len(ready)} batches, forward + backward + AdamW step only, median of "
            f"{args.floor}); the loop's epoch is {per_epoch / floor:.2f}x the floor"
        )


if __name__ == "__main__":
    main()
