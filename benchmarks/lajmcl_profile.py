"""Where one LAJ-MCL training step spends its time, part by part, on real MASSIVE batches.

Builds the ``lajmcl`` method of ``conf/base``'s ``slu.methods`` (its budget's data and training
settings) on ``--max-train`` en-US utterances through ``training/lajmcl.py:prepare_lajmcl``, as
``benchmarks/lajmcl_speed.py`` does, then runs ``--steps`` training steps (forward under the loop's
autocast, backward, clipping, AdamW) on its first batches and times, with ``torch.profiler``:

* ``encode: utterances`` (source and switched rows, label prefix in front) and ``encode: negatives``
  (Algorithm 1's negative utterances, the slot level's extra encoder pass);
* ``heads + losses`` (eq. 2-14 on the encoder states), ``backward``, ``clip``, ``optimiser``;
* ``batch`` (what the batch source does to hand the step its tensors: word-pair sampling, padding).

Each part's share of the step (median over steps after ``--warmup``) and the utterances per second
of the step, which is the training loop's rate without its dev evaluation.

The floor, timed on the same batches between the steps (so both see the same machine): the bare
encoder's forward and backward over the same rows, as :meth:`LAJoint.encode` feeds it (the label
prefix as ``inputs_embeds``, the same frozen layers, the same autocast), with nothing around it (a
sum of the last hidden states as the loss, no heads, no clipping, no optimiser). What the step
costs above it is what could be removed without changing what the method computes.

Usage::

    .venv/bin/python -u benchmarks/lajmcl_profile.py --max-train 160 --steps 12 --warmup 2
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import platform
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import torch
from slu_speed import slu_inputs  # benchmarks/ is on the path when a script here runs

from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.lajmcl import lajmcl_loss_fn, prepare_lajmcl
from language_agnostic.training.loop import inference_autocast, resolve_precision
from language_agnostic.training.slu import SluRun
from language_agnostic.training.slu_methods import method_settings

FLOOR = "floor: encoder forward + backward"
PARTS = ("batch", "encode: utterances", "encode: negatives", "heads + losses", "backward", "clip", "optimiser")


class Timer:
    """Wall-clock seconds per named part, per step."""

    def __init__(self) -> None:
        self.steps: list[dict[str, float]] = []

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.steps[-1][name] += time.perf_counter() - start


def prepared_lajmcl(variant: str, raw_data_root: str, data: dict[str, Any], training: dict[str, Any]) -> SluRun:
    """``prepare_lajmcl`` of conf/base's ``slu.methods.<variant>`` as a run builds it (its budget, its
    code-switching), with ``data`` / ``training`` over it and no progress bars (also ``lajmcl_drift.py``)."""
    params, extraction, rows, encoder, languages, dictionaries = slu_inputs(raw_data_root)
    spec = dict(params["methods"][variant])
    method, training_overrides, data_overrides = method_settings(
        variant, {k: v for k, v in spec.items() if k != "code_switch"}
    )
    data = {**params["data"], **data_overrides, **data}
    if spec.get("code_switch"):
        data["code_switch"] = {**params["code_switch"], "languages": languages}
    training = {**params["training"], **training_overrides, **training, "progress": False}
    return prepare_lajmcl(rows, encoder, FineTuning(variant, method, data, training, extraction), dictionaries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="lajmcl", help="a method: lajoint entry of slu.methods")
    parser.add_argument("--max-train", type=int, default=160)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--raw-data-root", default="../shared/data", help="where muse/ is")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    run = prepared_lajmcl(args.variant, args.raw_data_root, {"max_train": args.max_train}, {"max_epochs": 1})
    model, settings = run.model, run.settings
    precision = resolve_precision(settings.mixed_precision, torch.device("cpu"))
    loss_fn = lajmcl_loss_fn(run.loss_weights)
    timer = Timer()
    encode = model.encode

    def timed_encode(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        # the first encode of a step is the utterances', the second (slot level) the negatives'
        name = "encode: negatives" if timer.steps[-1]["encode: utterances"] > 0 else "encode: utterances"
        with timer.part(name):
            return encode(input_ids, attention_mask)

    model.encode = timed_encode  # type: ignore[method-assign]
    trained = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trained, lr=settings.lr)
    model.train()
    batches = iter(run.train_data.batches(0, torch.Generator().manual_seed(0)))
    shapes = []
    for _ in range(args.steps):
        timer.steps.append(defaultdict(float))
        with timer.part("batch"):
            batch = next(batches)
        shapes.append((tuple(batch["input_ids"].shape), tuple(batch.get("neg_input_ids", torch.zeros(0, 0)).shape)))
        start = time.perf_counter()
        with inference_autocast(torch.device("cpu"), precision):
            losses = loss_fn(model, batch)
        encoded = timer.steps[-1]["encode: utterances"] + timer.steps[-1]["encode: negatives"]
        timer.steps[-1]["heads + losses"] += time.perf_counter() - start - encoded
        with timer.part("backward"):
            losses["total"].backward()
        with timer.part("clip"):
            if settings.max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(trained, settings.max_grad_norm)
        with timer.part("optimiser"):
            optimiser.step()
            optimiser.zero_grad()
        with timer.part(FLOOR):
            floor_pass(encode, model, batch, precision)
    kept = timer.steps[args.warmup :]
    totals = [sum(v for k, v in s.items() if k != FLOOR) for s in kept]
    step = statistics.median(totals)
    n_source = statistics.median(s[0][0] for s in shapes[args.warmup :]) / 2
    print(
        f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, threads "
        f"{torch.get_num_threads()}, precision {precision}, {args.variant}, {len(kept)} steps after {args.warmup}"
    )
    print(f"batches (rows x sub-tokens; negatives): {[s for s in shapes[args.warmup :]]}")
    print("| part | median s/step | share |\n|---|---:|---:|")
    for name in PARTS:
        value = statistics.median(s[name] for s in kept)
        print(f"| {name} | {value:.3f} | {value / step:.0%} |")
    print(f"| step | {step:.3f} | {n_source / step:.2f} English utterances/s |")
    floor = statistics.median(s[FLOOR] for s in kept)
    print(f"| {FLOOR} | {floor:.3f} | step / floor {step / floor:.2f} |")


def floor_pass(
    encode: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    model: torch.nn.Module,
    batch: dict[str, torch.Tensor],
    precision: str,
) -> None:
    """The encoder's forward and backward over the step's rows (utterances, then negatives), nothing else:
    ``encode`` is the model's own :meth:`LAJoint.encode` (label prefix spliced in), not the timed wrapper."""
    losses = []
    with inference_autocast(torch.device("cpu"), precision):
        for ids_key, mask_key in (("input_ids", "attention_mask"), ("neg_input_ids", "neg_attention_mask")):
            if ids_key in batch:
                losses.append(encode(batch[ids_key], batch[mask_key]).float().sum())
    sum(losses).backward()
    model.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
