"""Does a LAJ-MCL epoch slow down as it goes, and are subnormal floats the cause?

In the default ``slu`` run the ``lajmcl`` epoch ran about 1.65 s a batch for its first 200 batches
and 1.9-2.0 s after, while ``lajoint-cs`` (no MCL) kept its rate. Subnormal ("denormal") floats are
the usual suspect on x86: an operation on one costs tens of times a normal one, and values that
only decay (Adam's moments of a parameter whose gradient has become tiny, a saturated softmax's
gradient) reach that range after a few hundred steps.

This runs the real training loop (``training/loop.py:train``) of conf/base's ``lajmcl`` (its budget:
all the en-US training data, its schedule) and stops it after ``--steps`` optimiser steps. Every
``--every`` steps it prints the window's seconds per step and how many subnormal values the
gradients and Adam's two moments hold. ``--flush-denormal`` runs the same with
``torch.set_flush_denormal(True)`` (subnormals read and written as 0), for the before/after.

Usage::

    .venv/bin/python -u benchmarks/lajmcl_drift.py --steps 400 --every 40
    .venv/bin/python -u benchmarks/lajmcl_drift.py --steps 400 --every 40 --flush-denormal
"""

from __future__ import annotations

import argparse
import logging
import platform
import time
from typing import Any

import torch
from lajmcl_profile import prepared_lajmcl  # benchmarks/ is on the path when a script here runs
from torch.optim.optimizer import register_optimizer_step_post_hook

from language_agnostic.training.loop import train


class Stop(Exception):
    """Raised from the optimiser hook once the steps asked for are taken."""


def subnormal(tensors: list[torch.Tensor]) -> int:
    """How many of the tensors' values are subnormal (non-zero, below the dtype's smallest normal)."""
    return sum(int(((t != 0) & (t.abs() < torch.finfo(t.dtype).tiny)).sum()) for t in tensors if t.is_floating_point())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="lajmcl", help="a method: lajoint entry of slu.methods")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--every", type=int, default=40)
    parser.add_argument("--flush-denormal", action="store_true")
    parser.add_argument("--raw-data-root", default="../shared/data", help="where muse/ is")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.flush_denormal and not torch.set_flush_denormal(True):
        raise SystemExit("this CPU cannot flush subnormals (torch.set_flush_denormal returned False)")
    run = prepared_lajmcl(args.variant, args.raw_data_root, {}, {})
    print(
        f"machine: {platform.processor() or platform.machine()}, torch {torch.__version__}, threads "
        f"{torch.get_num_threads()}, {args.variant}, {run.info['n_train']} training utterances, "
        f"flush_denormal {args.flush_denormal}"
    )
    print("| steps | s / step | subnormal: gradients | Adam exp_avg | Adam exp_avg_sq |\n|---|---:|---:|---:|---:|")
    state: dict[str, Any] = {"step": 0, "since": None}

    def after_step(optimiser: torch.optim.Optimizer, *_: Any) -> None:
        state["step"] += 1
        if state["since"] is None:  # timing starts after the first step (the loop's setup and dev pass before it)
            state["since"] = time.perf_counter()
            return
        if state["step"] % args.every == 0 or state["step"] >= args.steps:
            now = time.perf_counter()
            parameters = [p for group in optimiser.param_groups for p in group["params"]]
            moments = [optimiser.state[p] for p in parameters if p in optimiser.state]
            window = args.every if state["step"] % args.every == 0 else state["step"] % args.every
            window = min(window, state["step"] - 1)
            print(
                f"| {state['step'] - window + 1}-{state['step']} | {(now - state['since']) / window:.3f} | "
                f"{subnormal([p.grad for p in parameters if p.grad is not None]):,} | "
                f"{subnormal([m['exp_avg'] for m in moments]):,} | {subnormal([m['exp_avg_sq'] for m in moments]):,} |",
                flush=True,
            )
            state["since"] = time.perf_counter()  # the counting above is not in the next window
        if state["step"] >= args.steps:
            raise Stop

    handle = register_optimizer_step_post_hook(after_step)
    try:
        train(run.model, run.loss_fn, run.train_data, run.dev_data, run.settings, run.dev_score)
    except Stop:
        pass
    finally:
        handle.remove()


if __name__ == "__main__":
    main()
