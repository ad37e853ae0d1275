"""The shared training loop: Adam, seeded batches, early stopping on the dev loss only.

A method supplies a ``loss_fn(model, batch) -> {"total": tensor, <part>: tensor, ...}``; data
comes as :class:`BatchSource` objects that yield batches for an epoch from a seeded generator.
Model selection uses the dev split only: the weights kept are those of the epoch with the
lowest mean dev ``total``; training stops after ``patience`` epochs without improvement.
"""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

Batch = Mapping[str, torch.Tensor]
LossFn = Callable[[nn.Module, Batch], Mapping[str, torch.Tensor]]


class BatchSource(Protocol):
    """Yields the batches of one epoch; the same (epoch, seed) gives the same batches."""

    def batches(self, epoch: int, generator: torch.Generator) -> Iterable[Batch]: ...


@dataclass(frozen=True)
class TrainSettings:
    """Training hyper-parameters (``params:<pipeline>.training``)."""

    lr: float = 1e-4
    max_epochs: int = 100
    patience: int = 15
    min_delta: float = 0.0
    seed: int = 0
    device: str = "cpu"
    progress: bool = True


@dataclass
class TrainResult:
    """What training produced.

    Attributes:
        state_dict: The best weights (lowest dev loss), on the CPU.
        best_epoch: The epoch they come from (1-based).
        epochs_run: How many epochs ran before stopping.
        history: One dict per epoch: ``epoch``, ``train_<part>``, ``dev_<part>`` means.
    """

    state_dict: dict[str, torch.Tensor]
    best_epoch: int
    epochs_run: int
    history: list[dict[str, float]] = field(default_factory=list)


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (CPU determinism; CUDA kernels may still vary)."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def _mean_losses(model: nn.Module, loss_fn: LossFn, batches: Iterable[Batch], device: torch.device) -> dict[str, float]:
    totals: dict[str, float] = {}
    count = 0
    with torch.no_grad():
        for batch in batches:
            losses = loss_fn(model, {k: v.to(device) for k, v in batch.items()})
            n = len(next(iter(batch.values())))
            for name, value in losses.items():
                totals[name] = totals.get(name, 0.0) + float(value) * n
            count += n
    if count == 0:
        raise ValueError("the dev set yields no batches")
    return {name: value / count for name, value in totals.items()}


def train(model: nn.Module, loss_fn: LossFn, train_data: BatchSource, dev_data: BatchSource,
          settings: TrainSettings, dev_score: Callable[[nn.Module], float] | None = None) -> TrainResult:
    """Train ``model`` with Adam and early stopping on the dev loss (or a dev score).

    Args:
        model: The head to train (its parameters are updated in place, then set to the best).
        loss_fn: ``(model, batch) -> {"total": ..., parts...}``.
        train_data: Training batches (reshuffled every epoch by the seeded generator).
        dev_data: Dev batches (drawn with a fixed generator, so every epoch sees the same).
        settings: Learning rate, epochs, patience, seed, device.
        dev_score: Optional ``model -> float`` on **dev** data, higher is better (e.g. dev
            retrieval accuracy). When given, it replaces the dev loss as the early-stopping and
            model-selection criterion; it is recorded as ``dev_score`` in the history.

    Returns:
        The best weights, the epoch they come from, and the per-epoch history.
    """
    if settings.max_epochs < 1 or settings.patience < 1:
        raise ValueError(f"max_epochs and patience must be >= 1, got {settings.max_epochs}, {settings.patience}")
    seed_everything(settings.seed)
    device = torch.device(settings.device)
    model.to(device)
    # an adversarial method (MEAT) names its adversary's parameters: they get their own
    # optimiser and are stepped on the "adversary" loss before the main step on "total"
    adversary = list(model.adversary_parameters()) if hasattr(model, "adversary_parameters") else []
    adversary_ids = {id(p) for p in adversary}
    optimiser = torch.optim.Adam([p for p in model.parameters() if id(p) not in adversary_ids], lr=settings.lr)
    adversary_optimiser = torch.optim.Adam(adversary, lr=settings.lr) if adversary else None
    best_loss, best_epoch, best_state = float("inf"), 0, copy.deepcopy(model.state_dict())
    history: list[dict[str, float]] = []
    bar = tqdm(range(1, settings.max_epochs + 1), desc="training", unit="epoch", disable=not settings.progress)
    epoch = 0
    for epoch in bar:
        model.train()
        generator = torch.Generator().manual_seed(settings.seed * 1_000_003 + epoch)
        sums: dict[str, float] = {}
        count = 0
        for batch in train_data.batches(epoch, generator):
            batch = {k: v.to(device) for k, v in batch.items()}
            if adversary_optimiser is not None:
                # MEAT's released code: the discriminator steps first, then the heads step
                # against the updated discriminator (a fresh forward)
                adversarial = loss_fn(model, batch)
                if "adversary" not in adversarial:
                    raise ValueError("the model has adversary parameters but the loss has no 'adversary' term")
                adversary_optimiser.zero_grad()
                adversarial["adversary"].backward()
                adversary_optimiser.step()
            losses = loss_fn(model, batch)
            optimiser.zero_grad()
            losses["total"].backward()
            optimiser.step()
            n = len(next(iter(batch.values())))
            for name, value in losses.items():
                sums[name] = sums.get(name, 0.0) + float(value.detach()) * n
            count += n
        if count == 0:
            raise ValueError("the training set yields no batches")
        model.eval()
        dev = _mean_losses(model, loss_fn, dev_data.batches(0, torch.Generator().manual_seed(settings.seed)), device)
        record = {"epoch": float(epoch), **{f"train_{k}": v / count for k, v in sums.items()},
                  **{f"dev_{k}": v for k, v in dev.items()}}
        # lower is better: the dev loss, or the negated dev score
        criterion = dev["total"]
        if dev_score is not None:
            record["dev_score"] = float(dev_score(model))
            criterion = -record["dev_score"]
        history.append(record)
        bar.set_postfix(train=f"{record['train_total']:.4f}", dev=f"{dev['total']:.4f}",
                        **({"score": f"{record['dev_score']:.4f}"} if dev_score is not None else {}))
        if criterion < best_loss - settings.min_delta:
            best_loss, best_epoch = criterion, epoch
            best_state = copy.deepcopy(model.state_dict())
        elif epoch - best_epoch >= settings.patience:
            logger.info("early stop after epoch %d: no dev improvement since epoch %d (criterion %.5f)",
                        epoch, best_epoch, best_loss)
            break
    bar.close()
    model.load_state_dict(best_state)
    return TrainResult({k: v.detach().cpu() for k, v in best_state.items()}, best_epoch, epoch, history)


def history_metrics(history: list[dict[str, float]], prefix: str) -> dict[str, list[dict[str, Any]]]:
    """Per-epoch losses as ``MlflowMetricsHistoryDataset`` input: ``{name: [{"value", "step"}, ...]}``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in history:
        step = int(record["epoch"])
        for name, value in record.items():
            if name != "epoch":
                out.setdefault(f"{prefix}.{name}", []).append({"value": float(value), "step": step})
    return out
