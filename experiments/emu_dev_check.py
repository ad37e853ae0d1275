"""Dev-only choice of EMU's encoder learning rate: en-US dev nearest-neighbour intent accuracy per rate.

The paper's 1e-3 was for LASER's BiLSTM; a transformer fine-tuned at that rate forgets its
pre-training. For each ``--encoder-lrs`` value this trains one ``emu.methods`` entry with the
pipeline's own function (``training/emu.py:train_emu``) and the configured ``emu.data`` /
``emu.training``, and prints the kept epoch's en-US **dev** accuracy (leave-one-out nearest
neighbour), the epochs and the seconds taken. ``--raw`` prints the raw encoder's dev figure,
which a fine-tuned encoder has to beat. ``--options`` tries method options instead (e.g. the
contrastive baseline's ``margin``), each at the configured (or the first ``--encoder-lrs``) rate.
No test figure is computed.

Needs ``data/02_intermediate/massive_utterances.parquet`` (any ``kedro run`` of ``massive``).

Usage::

    .venv/bin/python -u experiments/emu_dev_check.py --raw
    .venv/bin/python -u experiments/emu_dev_check.py --method emu --encoder-lrs 1e-5 3e-5 1e-4
    .venv/bin/python -u experiments/emu_dev_check.py --method contrastive --options margin=2 margin=4 margin=6
    .venv/bin/python -u experiments/emu_dev_check.py --method npair --options scale=1 scale=10 scale=20
    .venv/bin/python -u experiments/emu_dev_check.py --method emu-no_ld --options centers=learned centers=centroid
"""

from __future__ import annotations

import argparse
import logging
import time

import pandas as pd
import yaml

from language_agnostic.encoders.loading import load_encoder
from language_agnostic.evaluation.intent_nn import nearest_neighbour_correct
from language_agnostic.methods.emu import PooledEncoder
from language_agnostic.training.emu import encode_tokenised, method_settings, train_emu
from language_agnostic.training.emu_data import tokenise
from language_agnostic.training.finetune import FineTuning


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--method", default="emu", help="an emu.methods entry")
    parser.add_argument("--encoder-lrs", type=float, nargs="*", default=[])
    parser.add_argument("--raw", action="store_true", help="the raw encoder's en-US dev accuracy")
    parser.add_argument(
        "--options",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="method options to try, one run each (EmuConfig fields, e.g. margin=4 or scale=20,centers=learned)",
    )
    parser.add_argument(
        "--mixed-precision", default=None, help="override emu.training.mixed_precision (no | bf16 | auto)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    params = yaml.safe_load(open("conf/base/parameters_emu.yml"))["emu"]
    extraction = yaml.safe_load(open("conf/base/parameters_embeddings.yml"))["embeddings"]["extraction"]
    utterances = pd.read_parquet("data/02_intermediate/massive_utterances.parquet")
    encoder = load_encoder("bundled")
    locale = params["data"]["training_locale"]
    if args.raw:
        dev = utterances[(utterances["locale"] == locale) & (utterances["partition"] == "dev")]
        u = encode_tokenised(
            PooledEncoder(encoder.model, "mean"),
            tokenise(encoder, dev["utt"].tolist(), extraction),
            int(encoder.tokenizer.pad_token_id),
        )
        ids, labels = dev["id"].tolist(), dev["intent"].tolist()
        print(
            f"raw/mean {locale} dev accuracy@1: {nearest_neighbour_correct(u, ids, labels, u, ids, labels).mean():.4f}"
        )
    config, training_overrides, data_overrides = method_settings(args.method, params["methods"][args.method])
    runs = [(lr, {}) for lr in args.encoder_lrs]
    lr_default = args.encoder_lrs[0] if args.encoder_lrs else {**params["training"], **training_overrides}["encoder_lr"]
    for option in args.options:  # one run per argument; "a=1,b=2" sets two options in one run
        pairs = [part.partition("=") for part in option.split(",")]
        runs.append((lr_default, {key: yaml.safe_load(value) for key, _, value in pairs}))
    print(
        f"| {args.method}: encoder lr, options | {locale} dev accuracy@1 (kept epoch; 0 = the raw encoder) | "
        "per epoch (0 = raw) | epochs | seconds |"
    )
    print("|---|---:|---|---:|---:|")
    for lr, options in runs:
        training = {**params["training"], **training_overrides, "encoder_lr": lr, "progress": False}
        if args.mixed_precision is not None:
            training["mixed_precision"] = args.mixed_precision
        start = time.perf_counter()
        _, result, info = train_emu(
            utterances,
            encoder,
            FineTuning(args.method, {**config, **options}, {**params["data"], **data_overrides}, training, extraction),
        )
        scores = [round(float(r["dev_score"]), 4) for r in result.history]
        label = f"{lr:g}" + "".join(f", {k}={v}" for k, v in options.items())
        print(
            f"| {label} | {info['dev_accuracy']:.4f} ({info['best_epoch']}) | {scores} | {info['epochs_run']} | "
            f"{time.perf_counter() - start:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
