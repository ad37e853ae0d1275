"""Each head family of the ``fmda`` pipeline against its floor, in fp32 and bf16: where a training's time goes.

For one language pair's stored inputs (``data/04_feature/<pair>/fmda_inputs.json``, left by a ``fmda``
run) and the configured parameters (``conf/base``), trains each family with the pipeline's own node
function and ``mixed_precision`` set to ``no`` (fp32) and ``bf16``, and splits its wall time into:

- **steps**: forward, backward and the optimiser step of every training batch (the loop's own calls);
- **batches**: building the batches (gathering token states, padding, drawing negatives);
- **dev**: the evaluations on dev (dev loss, and the dev retrieval score with ``select_on: dev_retrieval``);
- **rest**: everything else (set-up, the kept model's final scoring, MLflow-free bookkeeping).

The **floor** is the same arithmetic with nothing around it: one epoch's batches built beforehand, then
only forward, backward and the optimiser step over them (median of ``--repeats`` epochs), in the same
precision. ``steps / epoch`` against ``floor / epoch`` says what the loop adds to the arithmetic; the other
columns say what is not arithmetic at all. The dev figure is the kept model's dev accuracy@1 of its
meaning embedding (``dev_m_accuracy``), the figure that selects the model.

Usage (from a project root whose ``data/`` holds a ``fmda`` run's inputs)::

    .venv/bin/python -u benchmarks/train_floor.py --pair en_de --families fmda fmda_infonce two_stage dream
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from kedro.framework.startup import bootstrap_project

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.encoders.extraction import cpu_has_native_bf16
from language_agnostic.pipelines.project_config import load_parameters
from language_agnostic.training import fmda as fmda_training
from language_agnostic.training import heads, loop

FAMILIES = {
    "fmda": ("variants", "all_together"),
    "fmda_infonce": ("variants", "infonce"),
    "two_stage": ("variants", "two_stage"),
    "two_stage_infonce": ("variants", "two_stage_infonce"),
    "dream": ("methods", "dream"),
    "linear_infonce": ("methods", "linear_infonce"),
    "dream_infonce": ("methods", "dream_infonce"),
}


class Clock:
    """Seconds spent in each part of a training, accumulated by patched methods."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {"steps": 0.0, "batches": 0.0, "dev": 0.0}
        self.epochs = 0
        self.floor_batches: list[dict[str, torch.Tensor]] | None = None

    @contextlib.contextmanager
    def timing(self, part: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[part] += time.perf_counter() - start


def _patched(clock: Clock) -> contextlib.ExitStack:
    """Patch the loop so each part's time lands in ``clock`` (and keep the first epoch's batches for the floor)."""
    stack = contextlib.ExitStack()
    run = loop._Run

    def forward_backward(self: Any, batch: Any, closes: bool, _orig=run._forward_backward) -> None:
        with clock.timing("steps"):
            _orig(self, batch, closes)

    def optimiser_step(self: Any, epoch: int, _orig=run._optimiser_step) -> bool:
        with clock.timing("steps"):
            return _orig(self, epoch)

    def evaluate(self: Any, epoch: int, _orig=run.evaluate) -> bool:
        with clock.timing("dev"):
            return _orig(self, epoch)

    def run_epoch(self: Any, epoch: int, _orig=run.run_epoch) -> bool:
        clock.epochs += 1
        source = self.train_data
        original = source.batches

        def timed_batches(epoch_: int, generator: torch.Generator) -> Iterator[Any]:
            iterator = iter(original(epoch_, generator))
            kept = [] if clock.floor_batches is None else None
            while True:
                with clock.timing("batches"):
                    try:
                        batch = next(iterator)
                    except StopIteration:
                        break
                if kept is not None:
                    kept.append({k: v.clone() for k, v in batch.items()})
                yield batch
            if kept is not None:
                clock.floor_batches = kept

        source.batches = timed_batches
        try:
            return _orig(self, epoch)
        finally:
            source.batches = original

    for name, replacement in (
        ("_forward_backward", forward_backward),
        ("_optimiser_step", optimiser_step),
        ("evaluate", evaluate),
        ("run_epoch", run_epoch),
    ):
        stack.enter_context(_swap(run, name, replacement))
    return stack


@contextlib.contextmanager
def _swap(owner: Any, name: str, value: Any) -> Iterator[None]:
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _floor(
    model_and_loss: tuple[torch.nn.Module, Callable[..., Any]],
    batches: list[dict[str, torch.Tensor]],
    precision: str,
    lr: float,
    repeats: int,
) -> float:
    """Median seconds of one epoch of forward, backward and Adam over prebuilt batches."""
    model, loss_fn = model_and_loss
    model.train()
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for batch in batches:
            with autocast:
                total = loss_fn(model, batch)["total"]
            optimiser.zero_grad()
            total.backward()
            optimiser.step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(family: str, precision: str, manifest: dict, pools: pd.DataFrame, params: dict, repeats: int) -> dict:
    kind, name = FAMILIES[family]
    fmda = params["fmda"]
    training = {**fmda["training"], "mixed_precision": precision, "progress": False}
    clock = Clock()
    captured: dict[str, Any] = {}
    original_train = loop.train

    def capturing_train(model: Any, loss_fn: Any, *args: Any, **kwargs: Any) -> Any:
        captured["model_and_loss"] = (model, loss_fn)  # the last stage's, for two-stage
        return original_train(model, loss_fn, *args, **kwargs)

    start = time.perf_counter()
    with _patched(clock), _swap(fmda_training, "train", capturing_train), _swap(heads, "train", capturing_train):
        if kind == "methods":
            spec = fmda["methods"][name]
            trained, _ = fmda_training.train_pooled_head(manifest, pools, spec, training, fmda["loss"], name)
        elif fmda["variants"][name].get("two_stage"):
            raise SystemExit("two-stage families need the template pairs: use --template-pairs")
        else:
            trained, _ = fmda_training.train_fmda(
                manifest, pools, fmda["model"], fmda["variants"][name], training, fmda["loss"], name
            )
    wall = time.perf_counter() - start
    lr = float({**training, **dict((fmda.get(kind, {}).get(name) or {}).get("training") or {})}.get("lr", 1e-3))
    floor = _floor(captured["model_and_loss"], clock.floor_batches or [], precision, lr, repeats)
    return _row(family, precision, clock, wall, floor, trained, clock.epochs + 1)


def measure_two_stage(
    family: str, precision: str, manifest: dict, template_pairs: dict, pools: pd.DataFrame, params: dict, repeats: int
) -> dict:
    """Two-stage FMDA: both stages' parts summed; the floor is the second stage's epoch."""
    fmda = params["fmda"]
    name = FAMILIES[family][1]
    training = {**fmda["training"], "mixed_precision": precision, "progress": False}
    clock = Clock()
    captured: dict[str, Any] = {}
    original_train = loop.train

    def capturing_train(model: Any, loss_fn: Any, *args: Any, **kwargs: Any) -> Any:
        captured["model_and_loss"] = (model, loss_fn)
        clock.floor_batches = None  # keep the last stage's first epoch
        return original_train(model, loss_fn, *args, **kwargs)

    start = time.perf_counter()
    with _patched(clock), _swap(fmda_training, "train", capturing_train):
        trained, _ = fmda_training.train_fmda_two_stage(
            manifest, template_pairs, pools, fmda["model"], fmda["variants"][name], training, fmda["loss"], name
        )
    wall = time.perf_counter() - start
    floor = _floor(captured["model_and_loss"], clock.floor_batches or [], precision, float(training["lr"]), repeats)
    # an evaluation per epoch, and each stage's epoch-0 evaluation
    return {
        **_row(family, precision, clock, wall, floor, trained, clock.epochs + 2),
        "stage_epochs": trained["stage_epochs"],
    }


def _row(family: str, precision: str, clock: Clock, wall: float, floor: float, trained: dict, evaluations: int) -> dict:
    """One family's figures: seconds per epoch of each part, the floor, the dev figure."""
    epochs, parts = max(clock.epochs, 1), clock.seconds
    return {
        "family": family,
        "precision": precision,
        "epochs": clock.epochs,
        "wall_s": round(wall, 1),
        "steps_per_epoch_s": round(parts["steps"] / epochs, 2),
        "floor_per_epoch_s": round(floor, 2),
        "batches_per_epoch_s": round(parts["batches"] / epochs, 2),
        "dev_per_epoch_s": round(parts["dev"] / evaluations, 2),
        "rest_s": round(wall - sum(parts.values()), 1),
        "dev_m_accuracy": round(float(trained["dev_m_accuracy"]), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--pair", default="en_de")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--precisions", nargs="+", default=["no", "bf16"], choices=["no", "bf16"])
    parser.add_argument("--repeats", type=int, default=3, help="floor epochs timed (median)")
    parser.add_argument("--out", default=None, help="also write the rows to this CSV")
    parser.add_argument("--max-epochs", type=int, default=None, help="cap every training (default: as configured)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    bootstrap_project(Path.cwd())  # the project's settings (its config loader and resolvers)
    params = load_parameters()
    if args.max_epochs:
        params["fmda"]["training"]["max_epochs"] = args.max_epochs
        for spec in params["fmda"]["methods"].values():
            spec.setdefault("training", {})["max_epochs"] = args.max_epochs
    manifest = EmbeddingManifestDataset(f"data/04_feature/{args.pair}/fmda_inputs.json").load()
    template_path = Path(f"data/04_feature/{args.pair}/fmda_template_pairs.json")
    template_pairs = EmbeddingManifestDataset(str(template_path)).load() if template_path.is_file() else None
    pools = pd.read_parquet("data/03_primary/massive_negative_pools.parquet")
    print(
        f"# {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
        f"native bf16: {cpu_has_native_bf16()}, torch {torch.__version__}"
    )
    rows = []
    for family in args.families:
        for precision in args.precisions:
            if params["fmda"].get("variants", {}).get(FAMILIES[family][1], {}).get("two_stage"):
                row = measure_two_stage(family, precision, manifest, template_pairs, pools, params, args.repeats)
            else:
                row = measure(family, precision, manifest, pools, params, args.repeats)
            rows.append(row)
            print(row, flush=True)
    table = pd.DataFrame(rows)
    print(table.to_markdown(index=False))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
