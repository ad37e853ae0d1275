"""LAJoint / LAJ-MCL training throughput on real MASSIVE data, before they are in the pipeline (issue #17, item 4).

LAJoint puts the slot set (MASSIVE: 55 slots, so 58 label positions and a separator) in front of
every utterance, and MCL adds the code-switched copy, Algorithm 1's negatives and the word pairs
to every batch. This measures, on a seeded sample of ``--max-train`` en-US train utterances,
through ``training/lajmcl.py:prepare_lajmcl`` and the shared loop, with ``conf/base``'s
``slu.data``, ``slu.code_switch`` and ``slu.training`` (fused AdamW, bf16 where native):

* the setup (label-embedding initialisation; Algorithm 1's slot embeddings for ``lajmcl``);
* one epoch, in English training utterances per second (the 256-utterance dev loss included,
  the dev exact match not), median of ``--repeats``;
* the mean padded batch shape, which is what the label prefix lengthens.

Variants (LAJ-MCL's names): ``lajoint`` (English only, no MCL), ``lajoint-cs`` (English and its
switched copy, no MCL), ``lajmcl`` (all three MCL levels, λ = 0.5 each). Compare with
``benchmarks/slu_speed.py`` (zsjoint 54 and cosda 34 utterances/s on 640 utterances).

Needs ``data/03_primary/massive_slu.parquet`` (any ``kedro run --pipeline=slu``).

Usage::

    .venv/bin/python -u benchmarks/lajmcl_speed.py --max-train 320 --repeats 1
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import time

import torch

from language_agnostic.training.lajmcl import lajmcl_loss_fn, prepare_lajmcl
from language_agnostic.training.loop import train
from slu_speed import slu_inputs  # benchmarks/ is on the path when a script here runs

NO_MCL = {"utterance": 0.0, "slot_value": 0.0, "word": 0.0}
VARIANTS = {"lajoint": ({"loss_weights": NO_MCL}, False), "lajoint-cs": ({"loss_weights": NO_MCL}, True),
            "lajmcl": ({}, True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--max-train", type=int, default=320)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--raw-data-root", default="../shared/data", help="where muse/ is")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    params, extraction, rows, encoder, languages, dictionaries = slu_inputs(args.raw_data_root)
    print(f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, threads "
          f"{torch.get_num_threads()}, {args.max_train} en-US utterances, median of {args.repeats}")
    print("| variant | setup (s) | one epoch (utterances/s) | runs | mean padded batch (rows x sub-tokens) |\n|---|---:|---:|---|---|")
    for name in args.variants:
        method, switched = VARIANTS[name]
        data = {**params["data"], "max_train": args.max_train}
        if switched:
            data["code_switch"] = {**params["code_switch"], "languages": languages}
        training = {**params["training"], "max_epochs": 1, "progress": False}
        rates, setups, shapes = [], [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            run = prepare_lajmcl(rows, encoder, method, data, training, extraction, dictionaries, name)
            setups.append(time.perf_counter() - start)
            batches = list(run.train_data.batches(1, torch.Generator().manual_seed(0)))
            shapes.append((statistics.mean(b["input_ids"].shape[0] for b in batches),
                           statistics.mean(b["input_ids"].shape[1] for b in batches)))
            start = time.perf_counter()
            train(run.model, lajmcl_loss_fn(run.loss_weights), run.train_data, run.dev_data, run.settings, None)
            rates.append(run.train_data.n_utterances / (time.perf_counter() - start))
        rows_, width = shapes[0]
        print(f"| {name} | {statistics.median(setups):.1f} | {statistics.median(rates):.1f} | {[round(r, 1) for r in rates]} | "
              f"{rows_:.0f} x {width:.0f} |", flush=True)


if __name__ == "__main__":
    main()
