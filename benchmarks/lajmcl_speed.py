"""LAJoint / LAJ-MCL training throughput on real MASSIVE data: what the label prefix and MCL cost.

LAJoint puts the slot set (MASSIVE: 55 slots, so 58 label positions and a separator) in front of
every utterance, and MCL adds the code-switched copy, Algorithm 1's negatives and the word pairs
to every batch. This measures, on a seeded sample of ``--max-train`` en-US train utterances,
through ``training/lajmcl.py:prepare_lajmcl`` and the shared loop, with ``conf/base``'s
``slu.data``, ``slu.code_switch`` and ``slu.training`` (fused AdamW, bf16 where native):

* the setup (label-embedding initialisation; Algorithm 1's slot embeddings for ``lajmcl``);
* one epoch, in English training utterances per second (the 256-utterance dev loss included,
  the dev exact match not), median of ``--repeats``;
* the mean padded batch shape, which is what the label prefix lengthens.

Variants: the ``method: lajoint`` entries of ``conf/base``'s ``slu.methods`` (``lajoint``: English
only, no MCL; ``lajoint-cs``: English and its switched copy, no MCL; ``lajmcl``: the three MCL levels,
λ = 0.5 each) with their own ``training`` / ``data`` overrides, ``max_epochs`` set to 1. ``--train-layers``
times each at other ``slu.training.train_layers`` values (``conf``: the method's configured one,
``none``: every layer, ``N``: the top N; ``training/slu.py:freeze_below``), the reduced setting's
knob; the last column extrapolates one epoch of the whole en-US train split from the rate. Compare
with ``benchmarks/slu_speed.py`` (zsjoint 54 and cosda 34 utterances/s on 640 utterances).

Needs ``data/03_primary/massive_slu.parquet`` (any ``kedro run --pipelines=slu``).

Usage::

    .venv/bin/python -u benchmarks/lajmcl_speed.py --max-train 320 --repeats 1
    .venv/bin/python -u benchmarks/lajmcl_speed.py --variants lajoint-cs lajmcl --train-layers none 6 3 --max-train 320
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import time

import torch
from slu_speed import slu_inputs  # benchmarks/ is on the path when a script here runs

from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.lajmcl import lajmcl_loss_fn, prepare_lajmcl
from language_agnostic.training.loop import train
from language_agnostic.training.slu_methods import method_settings


def train_layers_values(values: list[str]) -> list[str | int | None]:
    """``--train-layers``: ``conf`` (the method's configured value), ``none`` (every layer) or an integer."""
    return [v if v == "conf" else None if v.lower() in ("none", "null") else int(v) for v in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--variants", nargs="*", default=None, help="slu.methods entries (default: every method: lajoint)"
    )
    parser.add_argument("--train-layers", nargs="*", default=["conf"], help="conf | none | N, one run each")
    parser.add_argument("--max-train", type=int, default=320)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--raw-data-root", default="../shared/data", help="where muse/ is")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    params, extraction, rows, encoder, languages, dictionaries = slu_inputs(args.raw_data_root)
    configured = {name: dict(spec) for name, spec in params["methods"].items() if dict(spec).get("method") == "lajoint"}
    variants = args.variants or list(configured)
    n_full = int(((rows["locale"] == params["data"]["training_locale"]) & (rows["partition"] == "train")).sum())
    print(
        f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, threads "
        f"{torch.get_num_threads()}, {args.max_train} en-US utterances, median of {args.repeats}"
    )
    print(
        "| variant | train_layers | setup (s) | one epoch (utterances/s) | runs "
        "| mean padded batch (rows x sub-tokens) "
        f"| one epoch of {n_full:,} (min) |\n|---|---|---:|---:|---|---|---:|"
    )
    for name in variants:
        if name not in configured:
            raise SystemExit(
                f"--variants: {name!r} is not a method: lajoint entry of conf/base's slu.methods ({list(configured)})"
            )
        spec = configured[name]
        method, training_overrides, data_overrides = method_settings(
            name, {k: v for k, v in spec.items() if k != "code_switch"}
        )
        data = {**params["data"], **data_overrides, "max_train": args.max_train}
        if spec.get("code_switch"):
            data["code_switch"] = {**params["code_switch"], "languages": languages}
        for layers in train_layers_values(args.train_layers):
            training = {**params["training"], **training_overrides, "max_epochs": 1, "progress": False}
            if layers != "conf":
                training["train_layers"] = layers
            rates, setups, shapes = [], [], []
            for _ in range(args.repeats):
                start = time.perf_counter()
                run = prepare_lajmcl(rows, encoder, FineTuning(name, method, data, training, extraction), dictionaries)
                setups.append(time.perf_counter() - start)
                batches = list(run.train_data.batches(1, torch.Generator().manual_seed(0)))
                shapes.append(
                    (
                        statistics.mean(b["input_ids"].shape[0] for b in batches),
                        statistics.mean(b["input_ids"].shape[1] for b in batches),
                    )
                )
                start = time.perf_counter()
                train(run.model, lajmcl_loss_fn(run.loss_weights), run.train_data, run.dev_data, run.settings, None)
                rates.append(run.train_data.n_utterances / (time.perf_counter() - start))
            rows_, width = shapes[0]
            rate = statistics.median(rates)
            layers_run = "null" if run.info["train_layers"] is None else run.info["train_layers"]
            print(
                f"| {name} | {layers_run} | {statistics.median(setups):.1f} | {rate:.1f} | "
                f"{[round(r, 1) for r in rates]} | {rows_:.0f} x {width:.0f} | {n_full / rate / 60:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
