"""The shared training loop: seeded batches, early stopping and selection on dev data only.

A method supplies a ``loss_fn(model, batch) -> {"total": tensor, <part>: tensor, ...}``; data
comes as :class:`BatchSource` objects that yield batches for an epoch from a seeded generator.
Model selection uses the dev split only: the weights kept are those of the evaluation with the
lowest mean dev ``total`` (or the best dev score); training stops after ``patience``
evaluations without improvement.

Device placement, mixed precision and multi-process data parallelism are 🤗 Accelerate's.
With ``processes: N > 1`` (or the run's ``--params=processes=N``) :func:`train` starts N workers
through torchrun (:mod:`language_agnostic.launch`); in them Accelerate's prepared data loader
deals each process every N-th batch, DistributedDataParallel averages the gradients, and the
dev loss is summed over the processes' shares of the dev set, so every process takes the same
early-stopping decision. One optimiser step then sees N batches, like one process with
``gradient_accumulation_steps: N`` (tested). This module adds what Accelerate leaves to the user:
parameter groups (an encoder learning rate apart from the heads'), a warmup schedule
(``transformers.get_scheduler``), gradient
clipping, evaluation every N optimiser steps, and the best checkpoint kept on the CPU. With
the defaults (CPU, fp32, one step per batch, constant learning rate, no clipping) it does
exactly what the earlier hand-written loop did: the same numbers (tested).
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.data_loader import prepare_data_loader
from accelerate.state import AcceleratorState
from accelerate.utils import DistributedDataParallelKwargs, broadcast_object_list
from torch import nn
from torch.utils.data import DataLoader, Dataset
from tqdm.auto import tqdm
from transformers import get_scheduler

from language_agnostic.encoders.extraction import cpu_has_native_bf16
from language_agnostic.launch import checked_processes, resolve_processes, run_in_processes, should_launch

logger = logging.getLogger(__name__)

Batch = Mapping[str, torch.Tensor]
LossFn = Callable[[nn.Module, Batch], Mapping[str, torch.Tensor]]


@runtime_checkable
class HasAdversary(Protocol):
    """A model trained against an adversary (MEAT's discriminator, a WGAN critic): its own optimiser.

    Optional attributes, read with defaults: ``adversary_steps`` (updates of the adversary per
    main step, 1), ``adversary_lr`` (its Adam's learning rate; ``TrainSettings.lr``) and
    ``after_adversary_step()`` (called after each adversary update, e.g. WGAN weight clipping).
    When the training data also has ``adversary_batches(epoch, generator)``, each adversary
    update reads the next of those batches (Algorithm 1 of EMU samples fresh sentences for
    every critic step); otherwise it reads the main batch (MEAT).
    """

    def adversary_parameters(self) -> Iterable[nn.Parameter]: ...


@runtime_checkable
class FineTunesEncoder(Protocol):
    """A model that fine-tunes an encoder: those parameters train at ``TrainSettings.encoder_lr``."""

    def encoder_parameters(self) -> Iterable[nn.Parameter]: ...


class BatchSource(Protocol):
    """Yields the batches of one epoch; the same (epoch, seed) gives the same batches.

    A source used with a learning-rate schedule also has ``n_batches()``, the number of
    batches of one epoch (its ``len()`` is, by the sources' convention, a number of examples).
    """

    def batches(self, epoch: int, generator: torch.Generator) -> Iterable[Batch]: ...


PRECISIONS = ("no", "bf16", "fp16", "auto")
SCHEDULES = ("constant", "linear", "cosine")


@dataclass(frozen=True)
class TrainSettings:
    """Training hyper-parameters (``params:<pipeline>.training``).

    Attributes:
        lr: Learning rate of the heads (every parameter not in ``encoder_parameters()``).
        max_epochs: Cap on passes over the training batches.
        patience: Evaluations without dev improvement before stopping.
        min_delta: Improvement smaller than this does not count.
        seed: Seeds Python, numpy, torch and every epoch's batch order.
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (CUDA when present).
        progress: Show a progress bar.
        encoder_lr: Learning rate of the model's ``encoder_parameters()`` (a method that
            fine-tunes the encoder declares them); ``None``: the same as ``lr``.
        weight_decay: Decoupled weight decay (AdamW); 0 is plain Adam.
        schedule: ``constant``, ``linear`` or ``cosine`` decay after warmup (``transformers.get_scheduler``).
        warmup_ratio: Fraction of the planned optimiser steps spent warming up linearly.
        max_grad_norm: Clip the gradient norm of each step to this; ``None``: no clipping.
        mixed_precision: ``no``, ``bf16`` or ``fp16`` autocast (Accelerate); ``auto``: bf16 where
            the device computes it natively (a CUDA GPU with bf16, a CPU with AVX512-BF16/AMX),
            otherwise ``no`` (:func:`resolve_precision`).
        gradient_accumulation_steps: Batches whose gradients are summed per optimiser step.
        eval_every_steps: Evaluate on dev (and consider stopping) every N optimiser steps;
            ``None``: at the end of every epoch.
        fused: Use torch's fused Adam/AdamW kernel (``fused=True``): the same update in one
            vectorised pass over all parameters. On 2 CPU cores it steps the 118M parameters
            of a fine-tuned multilingual-e5-small in 0.04 s instead of 0.75 s
            (``benchmarks/slu_speed.py``); off by default so the heads-only pipelines keep
            their results to the last bit.
        processes: Worker processes (data parallel, one optimiser step over one batch of each);
            ``None``: the run's ``processes`` parameter (1 unless set).
        keep_initial: Score the weights training starts from as epoch 0, and keep them when no
            epoch beats them on dev ("no improvement on dev": a method that only makes an encoder
            worse reports the encoder it started from). ``false``: the first epoch always
            replaces them (the loop's earlier behaviour).
    """

    lr: float = 1e-4
    max_epochs: int = 100
    patience: int = 15
    min_delta: float = 0.0
    seed: int = 0
    device: str = "cpu"
    progress: bool = True
    encoder_lr: float | None = None
    weight_decay: float = 0.0
    schedule: str = "constant"
    warmup_ratio: float = 0.0
    max_grad_norm: float | None = None
    mixed_precision: str = "no"
    gradient_accumulation_steps: int = 1
    eval_every_steps: int | None = None
    fused: bool = False
    processes: int | None = None
    keep_initial: bool = True

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.encoder_lr is not None and not self.encoder_lr >= 0:
            raise ValueError(f"encoder_lr must be >= 0 (0: the encoder does not move) or null, got {self.encoder_lr}")
        if self.max_epochs < 1 or self.patience < 1:
            raise ValueError(f"max_epochs and patience must be >= 1, got {self.max_epochs}, {self.patience}")
        if self.mixed_precision not in PRECISIONS:
            raise ValueError(f"mixed_precision must be one of {list(PRECISIONS)}, got {self.mixed_precision!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {list(SCHEDULES)}, got {self.schedule!r}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if self.gradient_accumulation_steps < 1:
            raise ValueError(f"gradient_accumulation_steps must be >= 1, got {self.gradient_accumulation_steps}")
        if self.eval_every_steps is not None and self.eval_every_steps < 1:
            raise ValueError(f"eval_every_steps must be >= 1 or null, got {self.eval_every_steps}")
        if self.max_grad_norm is not None and self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be > 0 or null, got {self.max_grad_norm}")
        if self.processes is not None:
            checked_processes(self.processes, "training.processes")
        if self.device not in ("auto", "cpu") and not self.device.startswith("cuda"):
            raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {self.device!r}")


@dataclass
class TrainResult:
    """What training produced.

    Attributes:
        state_dict: The best weights (lowest dev loss), on the CPU.
        best_epoch: The epoch they come from (1-based; 0: the initial weights, no epoch improved on dev).
        epochs_run: How many epochs ran before stopping.
        history: One dict per evaluation: ``epoch`` (and ``step``), ``train_<part>``, ``dev_<part>`` means.
        best_step: The optimiser step the best weights come from.
    """

    state_dict: dict[str, torch.Tensor]
    best_epoch: int
    epochs_run: int
    history: list[dict[str, float]] = field(default_factory=list)
    best_step: int = 0


@contextlib.contextmanager
def _random_state_kept() -> Iterator[None]:
    """Python's, numpy's and torch's random state as they were before the block (CPU generators;
    CUDA's too where present): scoring the initial weights must not move training's random draws."""
    python, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []):
        yield
    random.setstate(python)
    np.random.set_state(numpy_state)


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (CPU determinism; CUDA kernels may still vary)."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def _mean_losses(
    model: nn.Module, loss_fn: LossFn, batches: Iterable[Batch], accelerator: Accelerator
) -> dict[str, float]:
    """Mean dev losses, weighted by batch size; over several processes, of every process's share together."""
    totals: dict[str, float] = {}
    count = 0
    with torch.no_grad(), accelerator.autocast():
        for batch in batches:
            losses = loss_fn(model, {k: v.to(accelerator.device) for k, v in batch.items()})
            n = len(next(iter(batch.values())))
            for name, value in losses.items():
                totals[name] = totals.get(name, 0.0) + float(value) * n
            count += n
    totals, count = _summed(totals, count, accelerator)
    if count == 0:
        raise ValueError("the dev set yields no batches")
    return {name: value / count for name, value in totals.items()}


def _summed(totals: dict[str, float], count: int, accelerator: Accelerator) -> tuple[dict[str, float], int]:
    """Loss sums and example counts added up over the processes (as they are in one process)."""
    if accelerator.num_processes == 1:
        return totals, count
    # the first process's names: a process whose share was empty has none
    names = broadcast_object_list([sorted(totals)])[0]
    summed = (
        accelerator.reduce(
            torch.tensor([totals.get(k, 0.0) for k in names] + [count], dtype=torch.float64, device=accelerator.device),
            reduction="sum",
        )
        .cpu()
        .tolist()
    )
    return dict(zip(names, summed[:-1])), int(summed[-1])


class _LossModule(nn.Module):
    """``loss_fn(model, batch)`` as a module's forward: DistributedDataParallel synchronises the
    gradients of what runs inside a wrapped module's forward, and a method's loss calls the
    model's own parts (``model.encode``, heads), not its ``forward``.

    Only the part asked for keeps its graph: DDP counts a parameter as used when any output
    reaches it, and a backward through the adversary's loss alone must not wait for the others.
    """

    def __init__(self, model: nn.Module, loss_fn: LossFn) -> None:
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, batch: Batch, part: str = "total") -> dict[str, torch.Tensor]:
        losses = dict(self.loss_fn(self.model, batch))
        return {name: value if name == part else value.detach() for name, value in losses.items()}


class _Batches(Dataset):
    """One epoch's batches as a dataset of single items, for Accelerate's data-loader sharding."""

    def __init__(self, batches: Iterable[Batch]) -> None:
        self.items = list(batches)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Batch:
        return self.items[index]


def _only(items: list[Batch]) -> Batch:
    return items[0]


def _share(batches: Iterable[Batch], accelerator: Accelerator, even: bool) -> Iterable[Batch]:
    """This process's share of ``batches``: all of them in one process, else Accelerate's prepared loader.

    ``even``: every process gets as many batches (the last round is completed from the first
    batches, as Accelerate does), which gradient synchronisation needs; dev data is not evened,
    so each dev batch counts once.
    """
    if accelerator.num_processes == 1:
        return batches
    loader = DataLoader(_Batches(batches), batch_size=1, shuffle=False, collate_fn=_only)
    # process p gets batches p, p + N, ...; no RNG synchronisation (our batches are drawn already)
    return prepare_data_loader(
        loader,
        num_processes=accelerator.num_processes,
        process_index=accelerator.process_index,
        put_on_device=False,
        rng_types=[],
        dispatch_batches=False,
        even_batches=even,
    )


def _cpu_has_bf16() -> bool:
    # the embedding stage's test (dtype: auto), so both stages agree on what "native" means

    return cpu_has_native_bf16()


def resolve_precision(mixed_precision: str, device: torch.device) -> str:
    """``mixed_precision`` with ``auto`` resolved for ``device``.

    ``auto`` is bf16 only where the hardware computes it natively: elsewhere (an older CPU)
    bf16 autocast is emulated and slower than float32, so ``auto`` means ``no`` there.
    """
    if mixed_precision != "auto":
        return mixed_precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "no"
    return "bf16" if device.type == "cpu" and _cpu_has_bf16() else "no"


def inference_autocast(device: torch.device, precision: str) -> Any:
    """A context predicting under ``precision`` (``no``, ``bf16``, ``fp16``; ``auto`` resolved for ``device``
    by :func:`resolve_precision`): the same autocast Accelerate puts around a training forward pass, so a
    model is scored on test as it was scored on dev when its checkpoint was chosen.

    Raises:
        ValueError: an unknown ``precision``.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"mixed_precision must be one of {list(PRECISIONS)}, got {precision!r}")
    precision = resolve_precision(precision, device)
    dtypes = {"no": None, "bf16": torch.bfloat16, "fp16": torch.float16}
    return torch.autocast(device.type, dtype=dtypes[precision] or torch.float32, enabled=dtypes[precision] is not None)


def make_accelerator(settings: TrainSettings) -> Accelerator:
    """An ``Accelerator`` for ``settings.device`` and ``settings.mixed_precision``.

    Raises:
        ValueError: ``device`` asks for CUDA on a machine without it.
    """
    if settings.device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"training.device is {settings.device!r} but CUDA is not available here; use 'auto' or 'cpu'")
    if settings.device.startswith("cuda:"):
        torch.cuda.set_device(int(settings.device.split(":", 1)[1]))
    # Accelerate keeps its precision settings process-wide, and one Kedro run trains many
    # models with their own settings: reset that part (a launched process group is kept)
    AcceleratorState._reset_state(reset_partial_state=False)  # noqa: SLF001
    # accumulation is done here (see train), so Accelerate's own is left at 1
    on_cpu = settings.device == "cpu" or not torch.cuda.is_available()
    device = torch.device("cpu") if on_cpu else torch.device("cuda")
    # several processes: a method's loss may leave parameters out (a critic step, a frozen part)
    unused = DistributedDataParallelKwargs(find_unused_parameters=True)
    # cpu=True whenever the CPU computes: Accelerate then joins the workers' gloo group (without it,
    # a CPU-only machine would run each worker alone)
    return Accelerator(
        cpu=on_cpu, mixed_precision=resolve_precision(settings.mixed_precision, device), kwargs_handlers=[unused]
    )


def _optimisers(
    model: nn.Module, settings: TrainSettings
) -> tuple[torch.optim.Optimizer, torch.optim.Optimizer | None]:
    """The main optimiser (heads at ``lr``, encoder at ``encoder_lr``) and the adversary's, if the model has one."""
    # an adversarial method (MEAT) declares its adversary's parameters: they get their own
    # optimiser and are stepped on the "adversary" loss before the main step on "total"
    adversary = list(model.adversary_parameters()) if isinstance(model, HasAdversary) else []
    encoder = list(model.encoder_parameters()) if isinstance(model, FineTunesEncoder) else []
    taken = {id(p) for p in adversary} | {id(p) for p in encoder}
    heads = [p for p in model.parameters() if id(p) not in taken and p.requires_grad]
    groups = [{"params": heads, "lr": settings.lr}]
    if encoder:
        groups.append(
            {
                "params": [p for p in encoder if p.requires_grad],
                "lr": settings.lr if settings.encoder_lr is None else settings.encoder_lr,
            }
        )
    # plain Adam without decay: the same update as the earlier loop, bit for bit
    optimiser_class = torch.optim.AdamW if settings.weight_decay else torch.optim.Adam
    optimiser = optimiser_class(
        groups, lr=settings.lr, weight_decay=settings.weight_decay, **({"fused": True} if settings.fused else {})
    )
    adversary_lr = getattr(model, "adversary_lr", None) or settings.lr
    return optimiser, (torch.optim.Adam(adversary, lr=adversary_lr) if adversary else None)


def _lookahead(batches: Iterable[Batch]) -> Iterator[tuple[Batch, bool]]:
    """``(batch, is_last)`` pairs: the last batch of an epoch closes a partial accumulation."""
    iterator = iter(batches)
    try:
        current = next(iterator)
    except StopIteration:
        return
    for upcoming in iterator:
        yield current, False
        current = upcoming
    yield current, True


def _planned_steps(train_data: BatchSource, settings: TrainSettings) -> int:
    # n_batches, not len(): the sources' len() counts examples, and planning warmup and decay
    # on examples would stretch the schedule by the batch size
    if not hasattr(train_data, "n_batches"):
        raise ValueError(
            "training.schedule / warmup_ratio need the number of training batches per epoch; "
            f"{type(train_data).__name__} has no n_batches()"
        )
    return math.ceil(train_data.n_batches() / settings.gradient_accumulation_steps) * settings.max_epochs  # type: ignore[attr-defined]


def train(
    model: nn.Module,
    loss_fn: LossFn,
    train_data: BatchSource,
    dev_data: BatchSource,
    settings: TrainSettings,
    dev_score: Callable[[nn.Module], float] | None = None,
) -> TrainResult:
    """Train ``model`` with early stopping on the dev loss (or a dev score).

    Args:
        model: The model to train (its parameters are updated in place, then set to the best).
            It may declare ``encoder_parameters()`` (trained at ``encoder_lr``) and
            ``adversary_parameters()`` (their own Adam, stepped first on the ``"adversary"``
            loss).
        loss_fn: ``(model, batch) -> {"total": ..., parts...}``.
        train_data: Training batches (reshuffled every epoch by the seeded generator).
        dev_data: Dev batches (drawn with a fixed generator, so every evaluation sees the same).
        settings: Learning rates, schedule, precision, accumulation, clipping, epochs,
            patience, seed, device.
        dev_score: Optional ``model -> float`` on **dev** data, higher is better (e.g. dev
            retrieval accuracy). When given, it replaces the dev loss as the early-stopping and
            model-selection criterion; it is recorded as ``dev_score`` in the history.

    Returns:
        The best weights (on the CPU), the epoch they come from, and the history: one record
        per evaluation with ``epoch`` (and ``step`` when evaluating every N steps), the mean
        training losses since the previous evaluation and the dev losses.

    Raises:
        language_agnostic.launch.WorkerError: with ``processes > 1``, a worker failed.
    """
    if should_launch(settings.processes):
        processes = resolve_processes(settings.processes)
        # the workers train copies; the best weights come back into this process's model
        result = run_in_processes(
            train,
            (model, loss_fn, train_data, dev_data, settings, dev_score),
            processes,
            f"training ({type(model).__name__})",
        )
        model.load_state_dict(result.state_dict)
        return result
    return _Run(model, loss_fn, train_data, dev_data, settings, dev_score).fit()


def _scheduler(
    optimiser: torch.optim.Optimizer, train_data: BatchSource, settings: TrainSettings
) -> torch.optim.lr_scheduler.LRScheduler | None:
    """The learning-rate schedule with its warm-up (``transformers.get_scheduler``); None for a constant rate."""
    if settings.schedule == "constant" and settings.warmup_ratio <= 0:
        return None
    total = _planned_steps(train_data, settings)
    name = "constant_with_warmup" if settings.schedule == "constant" else settings.schedule
    return get_scheduler(name, optimiser, num_warmup_steps=int(settings.warmup_ratio * total), num_training_steps=total)


class _Run:
    """One training run in this process, in the order :func:`train` takes it: set up (seed, devices,
    optimisers, schedule), then epochs of steps, each epoch (or every N steps) closed by an
    evaluation on dev that keeps the best weights and decides when to stop.
    """

    def __init__(
        self,
        model: nn.Module,
        loss_fn: LossFn,
        train_data: BatchSource,
        dev_data: BatchSource,
        settings: TrainSettings,
        dev_score: Callable[[nn.Module], float] | None,
    ) -> None:
        seed_everything(settings.seed)
        self.model, self.loss_fn, self.settings, self.dev_score = model, loss_fn, settings, dev_score
        self.train_data, self.dev_data = train_data, dev_data
        self.accelerator = make_accelerator(settings)
        self.device = self.accelerator.device
        logger.info("training on %s, mixed precision %s", self.device, self.accelerator.mixed_precision)
        model.to(self.device)
        optimiser, adversary_optimiser = _optimisers(model, settings)
        self.adversary_steps = int(getattr(model, "adversary_steps", 1))
        self.after_adversary_step = getattr(model, "after_adversary_step", None)
        scheduler = _scheduler(optimiser, train_data, settings)
        # the model's own parts stay reachable as ``model``; ``losses_of`` (wrapped in DDP across
        # processes) is what the training steps call
        prepared = self.accelerator.prepare(
            _LossModule(model, loss_fn),
            optimiser,
            *([adversary_optimiser] if adversary_optimiser else []),
            *([scheduler] if scheduler else []),
        )
        self.losses_of, self.optimiser = prepared[0], prepared[1]
        self.adversary_optimiser = prepared[2] if adversary_optimiser is not None else None
        self.scheduler = prepared[-1] if scheduler is not None else None
        self.parameters = [p for group in self.optimiser.param_groups for p in group["params"]]
        # early stopping: lower is better (the dev loss, or the negated dev score)
        self.best_criterion, self.best_epoch, self.best_step = float("inf"), 0, 0
        self.best_state = _cpu_copy(model.state_dict())
        self.history: list[dict[str, float]] = []
        self.sums: dict[str, float] = {}  # training losses since the last evaluation, summed over examples
        self.count = 0
        self.step = 0  # optimiser steps taken
        self.stale = 0  # evaluations since the last improvement
        self.quiet = not settings.progress or not self.accelerator.is_local_main_process
        self.bar = tqdm(range(1, settings.max_epochs + 1), desc="training", unit="epoch", disable=self.quiet)
        # this process's batches per epoch (several processes share them out, see _share); a source
        # without n_batches() gets a bar without a total
        count_batches = getattr(train_data, "n_batches", None)
        self.n_batches = -(-count_batches() // self.accelerator.num_processes) if callable(count_batches) else None

    def fit(self) -> TrainResult:
        """Every epoch until early stopping or ``max_epochs``; the model ends with the best weights."""
        settings = self.settings
        epoch = 0
        if settings.keep_initial:
            # epoch 0: the weights training starts from compete with every epoch's (same dev data, same
            # criterion); when training changes nothing for the better, they are what is kept
            with _random_state_kept():
                self.evaluate(0)
        for epoch in self.bar:
            if self.run_epoch(epoch):
                break
        self.bar.close()
        if self.best_epoch == 0 and settings.keep_initial:
            logger.warning(
                "no improvement on dev: no epoch of %d beat the initial weights (dev criterion %.5f); "
                "keeping the initial weights",
                epoch,
                self.best_criterion,
            )
        self.model.load_state_dict(self.best_state)
        return TrainResult(self.best_state, self.best_epoch, epoch, self.history, self.best_step)

    def run_epoch(self, epoch: int) -> bool:
        """One pass over this process's training batches; True when early stopping says stop."""
        settings, accelerator = self.settings, self.accelerator
        self.model.train()
        # a bar inside the epoch, shown only once an epoch has run 5 s: a LAJ-MCL epoch on CPU takes
        # minutes, an FMDA head's a second (no bar, no noise in the log)
        batch_bar = tqdm(
            total=self.n_batches, desc=f"epoch {epoch}", unit="batch", leave=False, delay=5, disable=self.quiet
        )
        generator = torch.Generator().manual_seed(settings.seed * 1_000_003 + epoch)
        seen = 0
        adversary_stream = self._adversary_stream(epoch)
        stop = False
        for batch, last in _lookahead(_share(self.train_data.batches(epoch, generator), accelerator, even=True)):
            batch = {k: v.to(self.device) for k, v in batch.items()}
            if self.adversary_optimiser is not None:
                self._adversary_steps(batch, adversary_stream)
            closes = (seen + 1) % settings.gradient_accumulation_steps == 0 or last
            self._forward_backward(batch, closes)
            seen += 1
            batch_bar.update()
            if closes and self._optimiser_step(epoch):
                stop = True
                break
        batch_bar.close()
        if seen == 0:
            raise ValueError("the training set yields no batches")
        return stop or (settings.eval_every_steps is None and self.evaluate(epoch))

    def _adversary_stream(self, epoch: int) -> Iterator[Batch] | None:
        """The adversary's own batches, if the data has them: drawn from a generator of their own, so
        the main batches do not depend on how many adversary steps are taken."""
        if self.adversary_optimiser is None or not hasattr(self.train_data, "adversary_batches"):
            return None
        generator = torch.Generator().manual_seed(self.settings.seed * 1_000_003 + epoch + 500_009)
        return iter(self.train_data.adversary_batches(epoch, generator))

    def _adversary_steps(self, batch: Batch, stream: Iterator[Batch] | None) -> None:
        """MEAT's released code: the discriminator steps first, then the heads step against the
        updated discriminator (a fresh forward); EMU: k critic steps."""
        for _ in range(self.adversary_steps):
            sub = batch if stream is None else {k: v.to(self.device) for k, v in next(stream).items()}
            with self.accelerator.autocast():
                adversarial = self.losses_of(sub, "adversary")
            if "adversary" not in adversarial:
                raise ValueError("the model has adversary parameters but the loss has no 'adversary' term")
            self.adversary_optimiser.zero_grad()
            self.accelerator.backward(adversarial["adversary"])
            self.adversary_optimiser.step()
            if self.after_adversary_step is not None:
                self.after_adversary_step()

    def _forward_backward(self, batch: Batch, closes: bool) -> None:
        """The losses of one batch, their gradients accumulated, and their sums for the history."""
        accumulate = self.settings.gradient_accumulation_steps
        with self.accelerator.autocast():
            losses = self.losses_of(batch)
        # gradients of a partial accumulation stay local until the step that closes it
        with contextlib.nullcontext() if closes else self.accelerator.no_sync(self.losses_of):
            self.accelerator.backward(losses["total"] / accumulate if accumulate > 1 else losses["total"])
        n = len(next(iter(batch.values())))
        for name, value in losses.items():
            self.sums[name] = self.sums.get(name, 0.0) + float(value.detach()) * n
        self.count += n

    def _optimiser_step(self, epoch: int) -> bool:
        """Clip, step, schedule; with ``eval_every_steps``, evaluate. True when early stopping says stop."""
        settings = self.settings
        if settings.max_grad_norm is not None:
            self.accelerator.clip_grad_norm_(self.parameters, settings.max_grad_norm)
        self.optimiser.step()
        if self.scheduler is not None:
            self.scheduler.step()
        self.optimiser.zero_grad()
        self.step += 1
        return bool(settings.eval_every_steps and self.step % settings.eval_every_steps == 0 and self.evaluate(epoch))

    def evaluate(self, epoch: int) -> bool:
        """Record one evaluation on dev; True when early stopping says stop."""
        settings, accelerator, model = self.settings, self.accelerator, self.model
        model.eval()
        dev = _mean_losses(
            model,
            self.loss_fn,
            _share(self.dev_data.batches(0, torch.Generator().manual_seed(settings.seed)), accelerator, even=False),
            accelerator,
        )
        sums, count = _summed(self.sums, self.count, accelerator)  # the training losses of every process's batches
        record = {
            "epoch": float(epoch),
            **({"step": float(self.step)} if settings.eval_every_steps else {}),
            **{f"train_{k}": v / max(count, 1) for k, v in sums.items()},
            **{f"dev_{k}": v for k, v in dev.items()},
        }
        if self.scheduler is not None:
            record["lr"] = float(self.optimiser.param_groups[0]["lr"])
        criterion = dev["total"]
        if self.dev_score is not None:
            # a method's own dev score (e.g. nearest-neighbour accuracy) runs in the first process;
            # the others take its figure, so every process keeps the same weights and stops together
            score = [float(self.dev_score(model)) if accelerator.is_main_process else None]
            record["dev_score"] = float(broadcast_object_list(score)[0] if accelerator.num_processes > 1 else score[0])
            criterion = -record["dev_score"]
        self.history.append(record)
        self.bar.set_postfix(
            train=f"{record.get('train_total', float('nan')):.4f}",
            dev=f"{dev['total']:.4f}",
            **({"score": f"{record['dev_score']:.4f}"} if self.dev_score is not None else {}),
        )
        self.sums, self.count = {}, 0
        model.train()
        return self._early_stop(criterion, epoch)

    def _early_stop(self, criterion: float, epoch: int) -> bool:
        """Keep the weights when ``criterion`` improves by more than ``min_delta``; True after
        ``patience`` evaluations without."""
        if criterion < self.best_criterion - self.settings.min_delta:
            self.best_criterion, self.best_epoch, self.best_step, self.stale = criterion, epoch, self.step, 0
            self.best_state = _cpu_copy(self.model.state_dict())
            return False
        self.stale += 1
        if self.stale >= self.settings.patience:
            logger.info(
                "early stop at epoch %d (step %d): no dev improvement in %d evaluations since epoch %d "
                "(criterion %.5f)",
                epoch,
                self.step,
                self.stale,
                self.best_epoch,
                self.best_criterion,
            )
            return True
        return False


def _cpu_copy(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A copy of a state dict on the CPU: the best checkpoint never holds accelerator memory."""
    return {k: v.detach().to("cpu", copy=True) for k, v in state.items()}


def history_metrics(history: list[dict[str, float]], prefix: str) -> dict[str, list[dict[str, Any]]]:
    """Per-epoch losses as ``MlflowMetricsHistoryDataset`` input: ``{name: [{"value", "step"}, ...]}``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in history:
        step = int(record.get("step", record["epoch"]))
        for name, value in record.items():
            if name not in ("epoch", "step"):
                out.setdefault(f"{prefix}.{name}", []).append({"value": float(value), "step": step})
    return out
