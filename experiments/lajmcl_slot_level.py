"""What LAJ-MCL's slot level (eq. 9–11) does to training under each reading: the evidence behind ``conf/slu_scl``.

Two measurements on real en-US training batches of a ``slu.methods`` entry (default ``lajmcl``, with its
reduced setting: 2,000 utterances, batches of 8, code-switched pairs):

- **at initialisation** (no training): for each ``--temperatures`` value ``τ_s``, the mean norm of the
  projected values ``z``, the spread (standard deviation over the slots) of their affinities
  ``z Z_Kᵀ / τ_s``, the KL divergence of a value's distribution from its switched version's (positive)
  and from its negatives', and the hinge of eq. 11. Where both divergences are about 0 the hinge sits
  at its margin and, a divergence having no gradient where its distributions agree, gives none;
- **during training** (``--steps N``): the real training loop, stopped after ``N`` optimiser steps;
  every ``--every`` steps, each weighted term's value and the norm of its own gradient (over every
  trained parameter, and over the encoder's alone), before clipping; and of ``g_s`` in that step's
  forward pass, the mean norm of its outputs and the share of its ReLU units active on any input
  (0 %: ``g_s`` maps everything to 0, every affinity distribution is uniform and the slot level
  sits at its margin with no gradient).

Nothing here reads a dev or test split. Needs ``data/03_primary/massive_slu.parquet`` (any
``kedro run --pipelines=slu``) and the MUSE dictionaries under ``--raw-data-root``.

Usage::

    .venv/bin/python -u experiments/lajmcl_slot_level.py                          # init, τ_s 1, 1/4, 1/16
    .venv/bin/python -u experiments/lajmcl_slot_level.py --steps 60 --every 5     # and the gradients of 60 steps
    .venv/bin/python -u experiments/lajmcl_slot_level.py --steps 60 --option slot_temperature=0.0625
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

# slu_budget_dev sits beside this script (its directory is on the path); slu_speed is a benchmark
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from slu_budget_dev import add_env_methods, parse_options
from slu_speed import slu_inputs

import language_agnostic.methods.lajmcl as mcl
from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.lajmcl import LajRun, lajmcl_loss_fn, prepare_lajmcl
from language_agnostic.training.loop import train
from language_agnostic.training.slu_methods import method_settings

TERMS = ("intent", "slot", "utterance", "slot_value", "word")


class _Stop(Exception):
    """Ends the training loop after the requested steps."""


def prepare(name: str, env: str | None, options: Mapping[str, Any], raw_data_root: str) -> LajRun:
    """The method's run as ``kedro run --pipelines=slu`` would prepare it (progress bars off)."""
    params, extraction, rows, encoder, languages, dictionaries = slu_inputs(raw_data_root)
    add_env_methods(params, env)
    spec = dict(params["methods"][name])
    spec["options"] = {**dict(spec.get("options") or {}), **options}
    method, training_over, data_over = method_settings(name, {k: v for k, v in spec.items() if k != "code_switch"})
    data = {**params["data"], **data_over}
    if spec.get("code_switch"):
        data["code_switch"] = {**params["code_switch"], "languages": languages}
    training = {**params["training"], **training_over, "progress": False}
    return prepare_lajmcl(
        rows,
        encoder,
        FineTuning(name, method, data, training, extraction),
        dictionaries if spec.get("code_switch") else None,
    )


@torch.no_grad()
def at_initialisation(run: LajRun, temperatures: list[float], n_batches: int) -> None:
    """The slot level's quantities on the first batches, before any step."""
    model = run.model.eval()
    k = model.config.n_slots
    margin, kind = model.mcl.margins["slot_value"], model.mcl.slot_affinity  # the affinity as the method reads it
    sums: dict[float, list[float]] = {t: [0.0] * 5 for t in temperatures}
    batches = 0
    for batch in run.train_data.batches(0, torch.Generator().manual_seed(0)):
        if batches == n_batches:
            break
        out = model.outputs(batch["input_ids"], batch["attention_mask"])
        n, g = out.states.shape[0] // 2, int(batch["value_slots"].shape[0])
        if g == 0:
            continue
        batches += 1
        source, _ = mcl.pool_values(out.states[:n], batch["value_ids"][:n], g)
        switched, _ = mcl.pool_values(out.states[n:], batch["value_ids"][n:], g)
        negatives, _ = mcl.pool_values(
            model.encode(batch["neg_input_ids"], batch["neg_attention_mask"])[:n], batch["neg_value_ids"][:n], g
        )  # the first negative of each value
        slots = model.g_s(out.states[batch["value_rows"], 4 : 4 + k])
        z, z_pos, z_neg = model.g_s(source), model.g_s(switched), model.g_s(negatives)
        for t in temperatures:
            pos = mcl.slot_guided_similarity(z, z_pos, slots, t, kind)
            neg = mcl.slot_guided_similarity(z, z_neg, slots, t, kind)
            row = (
                z.norm(dim=-1).mean(),
                mcl.slot_affinity(z, slots, t, kind).std(-1).mean(),
                pos.mean(),
                neg.mean(),
                torch.relu(pos - neg + margin).mean(),
            )
            sums[t] = [s + float(v) for s, v in zip(sums[t], row)]
    print(f"\nat initialisation, {kind} affinity, mean over {batches} batches (margin r_s = {margin}):\n")
    print("| τ_s | mean ‖z‖ | affinity spread over the slots | KL to the switched value | KL to a negative | eq. 11 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for t in temperatures:
        z_norm, spread, pos, neg, hinge = (s / max(batches, 1) for s in sums[t])
        print(f"| {t:g} | {z_norm:.2f} | {spread:.3f} | {pos:.4f} | {neg:.4f} | {hinge:.4f} |")


def during_training(run: LajRun, steps: int, every: int) -> None:
    """Each weighted term and the norm of its own gradient, every ``every`` steps of the real loop."""
    base = lajmcl_loss_fn(run.loss_weights)
    weights = run.loss_weights
    encoder_ids = {id(p) for p in run.model.encoder.parameters()} | {id(run.model.label_embeddings)}
    seen = {"steps": 0}
    start = time.perf_counter()
    print(
        f"\nduring training, before clipping at max_grad_norm {run.settings.max_grad_norm} "
        "(term value, then its gradient norm: all trained parameters / the encoder's):\n"
    )
    print(
        "| step | seconds | "
        + " | ".join(t for t in TERMS if weights.get(t, 0) > 0)
        + " | g_s: mean ‖out‖, units active |"
    )
    print("|---:|---:|" + "---:|" * sum(weights.get(t, 0) > 0 for t in TERMS) + "---:|")
    seen_gs: dict[str, Any] = {}

    def hidden_hook(_module: torch.nn.Module, _inputs: Any, output: torch.Tensor) -> None:
        active = (output.detach().float().reshape(-1, output.shape[-1]) > 0).any(0)
        seen_gs["active"] = active if "active" not in seen_gs else seen_gs["active"] | active

    def output_hook(_module: torch.nn.Module, _inputs: Any, output: torch.Tensor) -> None:
        seen_gs.setdefault("norms", []).append(float(output.detach().float().norm(dim=-1).mean()))

    run.model.g_s.w1.register_forward_hook(hidden_hook)
    run.model.g_s.register_forward_hook(output_hook)

    def loss_fn(model: torch.nn.Module, batch: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        seen_gs.clear()
        parts = base(model, batch)
        if not parts["total"].requires_grad:  # a dev batch
            return parts
        seen["steps"] += 1
        if (seen["steps"] - 1) % every == 0:
            trained = [p for p in model.parameters() if p.requires_grad]
            cells = []
            for term in TERMS:
                if weights.get(term, 0) == 0:
                    continue
                if not parts[term].requires_grad:
                    cells.append(f"{float(parts[term].detach()):.3f}: -")
                    continue
                grads = torch.autograd.grad(weights[term] * parts[term], trained, retain_graph=True, allow_unused=True)
                every_norm = sum(float(x.float().pow(2).sum()) for x in grads if x is not None) ** 0.5
                encoder_norm = (
                    sum(
                        float(x.float().pow(2).sum())
                        for p, x in zip(trained, grads)
                        if x is not None and id(p) in encoder_ids
                    )
                    ** 0.5
                )
                cells.append(f"{float(parts[term].detach()):.3f}: {every_norm:.3g} / {encoder_norm:.3g}")
            norms, active = seen_gs.get("norms", [0.0]), seen_gs.get("active")
            share = float(active.float().mean()) if active is not None else 0.0
            cells.append(f"{sum(norms) / len(norms):.3g}, {share:.0%}")
            print(f"| {seen['steps']} | {time.perf_counter() - start:.0f} | " + " | ".join(cells) + " |", flush=True)
        if seen["steps"] >= steps:
            raise _Stop
        return parts

    try:
        train(run.model, loss_fn, run.train_data, run.dev_data, run.settings, run.dev_score)
    except _Stop:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--method", default="lajmcl", help="a slu.methods entry with slot-level CL on")
    parser.add_argument("--env", default=None, help="also read slu.methods of conf/ENV/parameters_slu.yml")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="a method option")
    parser.add_argument("--temperatures", default="1,0.25,0.0625", help="τ_s values measured at initialisation")
    parser.add_argument("--batches", type=int, default=8, help="batches measured at initialisation")
    parser.add_argument("--steps", type=int, default=0, help="optimiser steps of the gradient log (0: none)")
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--raw-data-root", default="../shared/data", help="where muse/ is")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    options = parse_options(args.option)
    run = prepare(args.method, args.env, options, args.raw_data_root)
    if run.loss_weights["slot_value"] == 0:
        raise SystemExit(f"--method {args.method}: its slot level is off (loss_weights.slot_value 0)")
    print(
        f"{args.method}, options {options}: {run.info['n_train']} en-US utterances, loss weights {run.loss_weights}, "
        f"torch {torch.__version__}, threads {torch.get_num_threads()}"
    )
    at_initialisation(run, [float(t) for t in args.temperatures.split(",")], args.batches)
    if args.steps:
        during_training(run, args.steps, args.every)


if __name__ == "__main__":
    main()
