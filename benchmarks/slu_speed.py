"""SLU fine-tuning throughput: the optimiser step alone, and one epoch of each method.

Fine-tuning multilingual-e5-small updates 118M parameters a step, 96M of them the token
embedding matrix. torch's default Adam on the CPU walks them parameter by parameter; its fused
kernel (``fused=True``, ``slu.training.fused``) does the same update in one vectorised pass.
This prints (median of ``--repeats``):

* the seconds of one optimiser step over the whole encoder, for torch's default (for-loop),
  ``foreach`` and ``fused`` Adam, after a forward/backward on a batch of ``slu.data.batch_size``
  random utterances (bf16 autocast where the CPU computes it natively, as the pipeline does);
* the padding of random training batches of ``slu.data.batch_size`` en-US utterances (what
  ``slu.data.group_by_length`` removes): mean sub-tokens, mean batch maximum;
* training utterances per second of one epoch of each ``--methods`` entry on a seeded sample of
  ``--max-train`` en-US train utterances, through the pipeline's own setup
  (``training/slu.py:prepare_slu``) and loop (``training/loop.py:train``): torch's default Adam,
  the fused one, and the fused one with length-grouped batches (``slu.data.group_by_length``);
  the dev loss (256 utterances) is included, the dev exact match is not. A full epoch of
  the 11,514 en-US utterances takes about 11,514 / that rate seconds, plus the dev exact match.

Needs ``data/03_primary/massive_slu.parquet`` (any ``kedro run --pipelines=slu``).

Usage::

    .venv/bin/python -u benchmarks/slu_speed.py --methods zsjoint cosda --max-train 640 --repeats 3
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from language_agnostic.datasets.muse import MuseDirectory
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.slu import slu_losses
from language_agnostic.pipelines.config_loader import expand_budgets
from language_agnostic.text.code_switch import code_switch_languages
from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.loop import resolve_precision, train
from language_agnostic.training.slu import prepare_slu
from language_agnostic.training.slu_methods import method_settings


def step_seconds(model: torch.nn.Module, kind: str, batch_size: int, repeats: int, precision: str) -> float:
    """Median seconds of one Adam step over ``model`` (``kind``: default | foreach | fused)."""
    options = {} if kind == "default" else {kind: True}
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-12, **options)  # a tiny lr: the weights barely move
    ids = torch.randint(1000, 20000, (batch_size, 24), generator=torch.Generator().manual_seed(0))
    times = []
    for _ in range(repeats + 1):  # the first step allocates the moments
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            out = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
        out.float().pow(2).mean().backward()
        start = time.perf_counter()
        optimiser.step()
        times.append(time.perf_counter() - start)
        optimiser.zero_grad()
    return statistics.median(times[1:])


SLU_ROWS = Path("data/03_primary/massive_slu.parquet")  # the slu pipeline's build_slu_rows_node writes it


def slu_inputs(raw_data_root: str) -> tuple[dict, dict, pd.DataFrame, object, list[str], dict]:
    """``(slu params, extraction params, SLU rows, the bundled encoder, code-switching languages, their
    MUSE dictionaries)`` as the pipeline has them (also for ``benchmarks/lajmcl_speed.py``).

    Raises:
        SystemExit: the SLU rows are not there yet (a fresh clone), saying how to make them.
    """
    if not SLU_ROWS.is_file():
        raise SystemExit(
            f"{SLU_ROWS} not found (run from the project root): make it first with "
            "`kedro run --pipelines=slu --to-nodes=build_slu_rows_node` (about 10 s)"
        )
    # through the config loader's budget expansion, as a run reads them (`budget: laj` written out)
    params = expand_budgets(yaml.safe_load(open("conf/base/parameters_slu.yml")))["slu"]
    extraction = yaml.safe_load(open("conf/base/parameters_embeddings.yml"))["embeddings"]["extraction"]
    rows = pd.read_parquet(SLU_ROWS)
    rows = rows.assign(words=rows["words"].map(list), labels=rows["labels"].map(list))
    muse = MuseDirectory(Path(raw_data_root) / "muse")
    locales = rows.loc[rows["locale"].isin(params["locales"]), "locale"]
    languages = code_switch_languages(params["code_switch"], locales, muse.languages())
    return (
        params,
        extraction,
        rows,
        load_encoder("bundled"),
        languages,
        {lang: muse.read(lang)[0] for lang in languages},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", nargs="*", default=["zsjoint", "cosda"])
    parser.add_argument("--max-train", type=int, default=640, help="en-US train utterances in the timed epoch")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--raw-data-root", default="../shared/data", help="where muse/ is (the cosda dictionaries)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    params, extraction, rows, encoder, languages, dictionaries = slu_inputs(args.raw_data_root)
    batch_size = int(params["data"]["batch_size"])
    precision = resolve_precision(str(params["training"].get("mixed_precision", "no")), torch.device("cpu"))
    print(
        f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, threads "
        f"{torch.get_num_threads()}, batch {batch_size}, precision {precision}, median of {args.repeats}"
    )
    print("| what | value (median) | runs |\n|---|---:|---|")
    train_en = rows[(rows["locale"] == params["data"]["training_locale"]) & (rows["partition"] == "train")]
    lengths = np.array(
        [
            len(x)
            for x in encoder.tokenizer(
                [[*str(extraction.get("prefix", "")).split(), *w] for w in train_en["words"]], is_split_into_words=True
            )["input_ids"]
        ]
    )
    order = np.random.default_rng(0).permutation(len(lengths))
    widest = np.array([lengths[order[i : i + batch_size]].max() for i in range(0, len(order), batch_size)])
    print(
        f"| random batches of {batch_size} en-US train utterances: mean sub-tokens, mean batch maximum, padding | "
        f"{lengths.mean():.1f}, {widest.mean():.1f}, "
        f"{1 - lengths.sum() / (widest * batch_size).sum():.0%} | one draw |",
        flush=True,
    )
    model = encoder.model
    model.train()
    for kind in ("default", "foreach", "fused"):
        seconds = [step_seconds(model, kind, batch_size, 3, precision) for _ in range(args.repeats)]
        print(
            f"| Adam step over the encoder ({sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters), "
            f"{kind} | "
            f"{statistics.median(seconds):.3f} s | {[round(s, 3) for s in seconds]} |",
            flush=True,
        )
    model.eval()
    for name in args.methods:
        spec = dict(params["methods"][name])
        method, training_overrides, data_overrides = method_settings(
            name, {k: v for k, v in spec.items() if k != "code_switch"}
        )
        data = {**params["data"], **data_overrides, "max_train": args.max_train}
        if spec.get("code_switch"):
            data["code_switch"] = {**params["code_switch"], "languages": languages}
        # torch's default Adam, then fused, then fused with length-grouped batches (the defaults)
        for fused, grouped in ((False, False), (True, False), (True, True)):
            training = {**params["training"], **training_overrides, "max_epochs": 1, "progress": False, "fused": fused}
            rates = []
            for _ in range(args.repeats):
                run = prepare_slu(
                    rows,
                    encoder,
                    FineTuning(name, method, {**data, "group_by_length": grouped}, training, extraction),
                    dictionaries,
                )
                start = time.perf_counter()
                train(
                    run.model,
                    lambda m, b, w=run.loss_weights: slu_losses(m, b, w),
                    run.train_data,
                    run.dev_data,
                    run.settings,
                    None,
                )
                rates.append(run.train_data.n_utterances / (time.perf_counter() - start))
            print(
                f"| {name}, one epoch of {args.max_train} utterances, fused {str(fused).lower()}, "
                f"group_by_length {str(grouped).lower()} | {statistics.median(rates):.1f} utterances/s | "
                f"{[round(r, 1) for r in rates]} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
