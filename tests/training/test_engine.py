"""The training engine's options: the same numbers as the plain Adam loop by default, then
accumulation, parameter groups, schedules, clipping, step-wise evaluation and precision."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch
from torch import nn
from transformers import get_scheduler

from language_agnostic.training import loop
from language_agnostic.training.loop import TrainSettings, resolve_precision, train


class Batches:
    """Fixed batches of ``(x, y)``, shuffled by the epoch's generator; ``len()`` counts examples,
    as the project's sources do.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, size: int, shuffle: bool = True) -> None:
        self.x, self.y, self.size, self.shuffle = x, y, size, shuffle

    def __len__(self) -> int:
        return len(self.x)

    def n_batches(self) -> int:
        return -(-len(self.x) // self.size)

    def batches(self, epoch, generator):
        order = torch.randperm(len(self.x), generator=generator) if self.shuffle else torch.arange(len(self.x))
        for i in range(0, len(order), self.size):
            rows = order[i : i + self.size]
            yield {"x": self.x[rows], "y": self.y[rows]}


def _mse(model: nn.Module, batch):
    loss = ((model(batch["x"]) - batch["y"]) ** 2).mean()
    return {"total": loss, "mse": loss}


def _data(seed: int = 0, n: int = 12):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g)
    return x, x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.1 * torch.randn(n, 1, generator=g)


def _model(seed: int = 1) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Linear(3, 1)


def _reference(
    model: nn.Module, train_data: Batches, dev_data: Batches, lr: float, epochs: int, seed: int
) -> list[float]:
    """The loop before Accelerate, written out: Adam, one step per batch, the dev loss per epoch."""
    torch.manual_seed(seed)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    dev = []
    for epoch in range(1, epochs + 1):
        for batch in train_data.batches(epoch, torch.Generator().manual_seed(seed * 1_000_003 + epoch)):
            loss = _mse(model, batch)["total"]
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        with torch.no_grad():
            batch = next(iter(dev_data.batches(0, None)))
            dev.append(float(_mse(model, batch)["total"]))
    return dev


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "auto",
            marks=pytest.mark.skipif(
                torch.cuda.is_available(), reason="auto is CUDA there: other floating-point results"
            ),
        ),
    ],
)
def test_the_defaults_give_the_plain_adam_loop_bit_for_bit(device: str):
    x, y = _data()
    train_data, dev_data = Batches(x, y, 4), Batches(*_data(5, 6), 6, shuffle=False)
    reference = _model()
    dev = _reference(reference, train_data, dev_data, lr=0.05, epochs=6, seed=3)
    model = _model()
    # patience past the cap: every epoch runs, and the kept weights are the best dev epoch's
    # (keep_initial: false, the loop as it was: here every epoch is worse on dev than the start, which
    # the default would keep; see the test after this one)
    result = train(
        model,
        _mse,
        train_data,
        dev_data,
        TrainSettings(lr=0.05, max_epochs=6, patience=10, seed=3, device=device, progress=False, keep_initial=False),
    )
    assert [h["dev_total"] for h in result.history] == dev
    assert result.best_epoch == 1 + dev.index(min(dev)) and result.best_step == 3 * result.best_epoch
    # the kept weights are the reference's after the best epoch, exactly
    model.cpu()
    kept = _model()
    _reference(kept, train_data, dev_data, lr=0.05, epochs=result.best_epoch, seed=3)
    assert torch.equal(model.weight, kept.weight) and torch.equal(model.bias, kept.bias)


def test_by_default_the_start_is_kept_when_no_epoch_beats_it_on_dev():
    x, y = _data()
    train_data, dev_data = Batches(x, y, 4), Batches(*_data(5, 6), 6, shuffle=False)
    dev = _reference(_model(), train_data, dev_data, lr=0.05, epochs=6, seed=3)
    model = _model()
    result = train(
        model, _mse, train_data, dev_data, TrainSettings(lr=0.05, max_epochs=6, patience=10, seed=3, progress=False)
    )
    # the same six epochs, and before them the start, better on dev than any of them
    assert [h["dev_total"] for h in result.history[1:]] == dev and result.history[0]["dev_total"] < min(dev)
    assert (result.best_epoch, result.best_step) == (0, 0)
    assert torch.equal(model.weight, _model().weight) and torch.equal(model.bias, _model().bias)


def test_two_accumulated_half_batches_make_the_step_of_one_whole_batch():
    x, y = _data()
    dev = Batches(x, y, 12, shuffle=False)
    whole, halves = _model(), _model()
    train(whole, _mse, Batches(x, y, 12, shuffle=False), dev, TrainSettings(lr=0.1, max_epochs=1, progress=False))
    result = train(
        halves,
        _mse,
        Batches(x, y, 6, shuffle=False),
        dev,
        TrainSettings(lr=0.1, max_epochs=1, gradient_accumulation_steps=2, progress=False),
    )
    assert torch.allclose(whole.weight, halves.weight, atol=1e-6) and result.best_step == 1
    # a partial accumulation at the end of the epoch still steps: 3 batches, 2 per step -> 2 steps
    odd = train(
        _model(),
        _mse,
        Batches(x, y, 4, shuffle=False),
        dev,
        TrainSettings(lr=0.1, max_epochs=1, gradient_accumulation_steps=2, progress=False),
    )
    assert odd.best_step == 2


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_the_fused_optimiser_makes_the_same_steps(weight_decay: float):
    x, y = _data()
    dev = Batches(*_data(5, 6), 6, shuffle=False)
    runs = {}
    for fused in (False, True):
        model = _model()
        result = train(
            model,
            _mse,
            Batches(x, y, 4),
            dev,
            TrainSettings(
                lr=0.05,
                max_epochs=4,
                patience=10,
                seed=3,
                weight_decay=weight_decay,
                fused=fused,
                progress=False,
                keep_initial=False,
            ),
        )
        runs[fused] = (model, [h["dev_total"] for h in result.history])
    # one vectorised kernel instead of per-parameter ops: the same update up to float rounding
    assert runs[True][1] == pytest.approx(runs[False][1], rel=1e-5)
    assert torch.allclose(runs[True][0].weight, runs[False][0].weight, atol=1e-6)
    assert not torch.equal(runs[True][0].weight, _model().weight)  # it trained


def test_the_fused_setting_reaches_torch(monkeypatch: pytest.MonkeyPatch):
    made = []
    monkeypatch.setattr(torch.optim, "Adam", lambda *a, **k: made.append(k) or torch.optim.SGD(*a, lr=k["lr"]))
    x, y = _data()
    train(
        _model(),
        _mse,
        Batches(x, y, 4),
        Batches(x, y, 12),
        TrainSettings(lr=0.05, max_epochs=1, fused=True, progress=False),
    )
    assert made and made[0]["fused"] is True


class WithEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder, self.head = nn.Linear(3, 3), nn.Linear(3, 1)

    def forward(self, x):
        return self.head(self.encoder(x))

    def encoder_parameters(self):
        return self.encoder.parameters()


def test_the_encoder_has_its_own_learning_rate():
    x, y = _data()
    torch.manual_seed(0)
    model = WithEncoder()
    before = copy.deepcopy(model.state_dict())
    train(
        model,
        _mse,
        Batches(x, y, 4),
        Batches(x, y, 12),
        TrainSettings(lr=0.05, encoder_lr=0.0, max_epochs=2, patience=5, progress=False),
    )
    assert torch.equal(model.encoder.weight, before["encoder.weight"])
    assert not torch.equal(model.head.weight, before["head.weight"])


def test_warmup_and_decay_follow_transformers_schedule():
    x, y = _data()
    settings = TrainSettings(lr=0.1, max_epochs=2, patience=5, schedule="linear", warmup_ratio=0.5, progress=False)
    result = train(_model(), _mse, Batches(x, y, 4), Batches(x, y, 12), settings)
    # 3 steps an epoch, 6 planned, 3 warming up: the lr after each epoch's last step
    probe = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
    schedule = get_scheduler("linear", probe, num_warmup_steps=3, num_training_steps=6)
    expected = []
    for _ in range(2):
        for _ in range(3):
            probe.step()
            schedule.step()
        expected.append(probe.param_groups[0]["lr"])
    assert [h["lr"] for h in result.history[1:]] == pytest.approx(expected) == [0.1, 0.0]
    with pytest.raises(ValueError, match="need the number of training batches per epoch; Unsized has no n_batches"):

        class Unsized:
            def batches(self, epoch, generator):
                yield {"x": x, "y": y}

        train(_model(), _mse, Unsized(), Batches(x, y, 12), settings)


def test_clipping_bounds_every_steps_gradient(monkeypatch: pytest.MonkeyPatch):
    from accelerate import Accelerator

    norms = []
    original = Accelerator.clip_grad_norm_

    def spy(self, parameters, max_norm, norm_type=2):
        total = original(self, parameters, max_norm, norm_type)
        norms.append(float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in parameters]))))
        return total

    monkeypatch.setattr(Accelerator, "clip_grad_norm_", spy)
    x, y = _data()
    train(
        _model(),
        _mse,
        Batches(10 * x, y, 4),
        Batches(x, y, 12),
        TrainSettings(lr=0.01, max_epochs=1, max_grad_norm=0.5, progress=False),
    )
    assert len(norms) == 3 and max(norms) <= 0.5 + 1e-5


def test_evaluating_every_n_steps_records_steps_and_stops_on_evaluations():
    x, y = _data()
    result = train(
        _model(),
        _mse,
        Batches(x, y, 2),
        Batches(x, y, 12),
        TrainSettings(lr=0.05, max_epochs=3, patience=50, eval_every_steps=4, progress=False),
    )
    # 6 steps an epoch, 18 in all: evaluations after steps 4, 8, 12, 16
    assert [h["step"] for h in result.history] == [0.0, 4.0, 8.0, 12.0, 16.0]  # 0: the initial weights
    assert [h["epoch"] for h in result.history] == [0.0, 1.0, 2.0, 2.0, 3.0]


def _recording(seen: list) -> Callable:
    """The MSE loss, recording the dtype of a matmul inside it (Accelerate returns the model's own outputs in fp32)."""

    def loss(model, batch):
        seen.append((batch["x"] @ model.weight.T).dtype)
        return _mse(model, batch)

    return loss


def test_bf16_autocast_on_the_cpu():
    seen = []
    loss = _recording(seen)
    x, y = _data()
    train(
        _model(),
        loss,
        Batches(x, y, 12),
        Batches(x, y, 12),
        TrainSettings(lr=0.05, max_epochs=1, mixed_precision="bf16", progress=False),
    )
    assert seen and set(seen) == {torch.bfloat16}
    train(_model(), loss, Batches(x, y, 12), Batches(x, y, 12), TrainSettings(lr=0.05, max_epochs=1, progress=False))
    assert seen[-1] == torch.float32  # the next model trains in fp32 again


@pytest.mark.parametrize(("native", "expected"), [(True, "bf16"), (False, "no")])
def test_auto_precision_is_bf16_only_on_a_cpu_that_computes_it(
    monkeypatch: pytest.MonkeyPatch, native: bool, expected: str
):
    monkeypatch.setattr(loop, "_cpu_has_bf16", lambda: native)
    cpu = torch.device("cpu")
    assert resolve_precision("auto", cpu) == expected
    assert resolve_precision("no", cpu) == "no" and resolve_precision("bf16", cpu) == "bf16"  # explicit settings stand
    seen = []
    x, y = _data()
    train(
        _model(),
        _recording(seen),
        Batches(x, y, 12),
        Batches(x, y, 12),
        TrainSettings(lr=0.05, max_epochs=1, mixed_precision="auto", progress=False),
    )
    assert set(seen) == {torch.bfloat16 if native else torch.float32}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mixed_precision": "fp8"}, r"mixed_precision must be one of \['no', 'bf16', 'fp16', 'auto'\], got 'fp8'"),
        ({"schedule": "step"}, r"schedule must be one of \['constant', 'linear', 'cosine'\], got 'step'"),
        ({"warmup_ratio": 1.0}, r"warmup_ratio must be in \[0, 1\), got 1.0"),
        ({"gradient_accumulation_steps": 0}, "gradient_accumulation_steps must be >= 1, got 0"),
        ({"eval_every_steps": 0}, "eval_every_steps must be >= 1 or null, got 0"),
        ({"max_grad_norm": 0.0}, "max_grad_norm must be > 0 or null, got 0.0"),
        ({"device": "tpu"}, "device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'tpu'"),
    ],
)
def test_bad_settings_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TrainSettings(**kwargs)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_asking_for_cuda_without_it():
    x, y = _data()
    with pytest.raises(
        ValueError, match="training.device is 'cuda' but CUDA is not available here; use 'auto' or 'cpu'"
    ):
        train(_model(), _mse, Batches(x, y, 12), Batches(x, y, 12), TrainSettings(device="cuda", progress=False))
