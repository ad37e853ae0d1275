"""The shared loop: early stopping on dev only, best weights kept, same seed same result."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from language_agnostic.methods.dream import Dream, dream_losses
from language_agnostic.training.data import QuadrupletBatches
from language_agnostic.training.loop import TrainSettings, history_metrics, inference_autocast, train


class Fixed:
    """One batch with a constant target (the loss pulls a single weight towards it)."""

    def __init__(self, target: float) -> None:
        self.target = target

    def batches(self, epoch, generator):
        yield {"x": torch.tensor([self.target])}


def _pull(model: nn.Module, batch):
    return {"total": ((model.weight.squeeze() - batch["x"][0]) ** 2)}


def test_early_stopping_keeps_the_best_dev_epoch():
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.0)
    # Adam moves w by about lr per epoch towards 1.0 (train); the dev loss (w - 0.35)^2 is
    # lowest after some 35 epochs and rises after that
    result = train(
        model, _pull, Fixed(1.0), Fixed(0.35), TrainSettings(lr=0.01, max_epochs=200, patience=5, progress=False)
    )
    assert 30 <= result.best_epoch <= 40
    assert result.epochs_run == result.best_epoch + 5
    assert model.weight.item() == pytest.approx(0.35, abs=0.006)  # the best weights are restored
    # one record per epoch, and the initial weights' as epoch 0
    assert [h["epoch"] for h in result.history] == list(range(result.epochs_run + 1))
    dev = [h["dev_total"] for h in result.history]
    assert dev[0] == pytest.approx(0.35**2) and "train_total" not in result.history[0]
    assert min(dev) == dev[result.best_epoch]
    metrics = history_metrics(result.history, "toy")
    assert metrics["toy.dev_total"][:2] == [{"value": dev[0], "step": 0}, {"value": dev[1], "step": 1}]


def test_a_dev_score_replaces_the_dev_loss_as_the_criterion():
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.0)
    # the dev loss alone would pick w ~ 0.35 (test above); a score peaking at w = 0.2 picks ~20 epochs
    result = train(
        model,
        _pull,
        Fixed(1.0),
        Fixed(0.35),
        TrainSettings(lr=0.01, max_epochs=200, patience=5, progress=False),
        dev_score=lambda m: -abs(m.weight.item() - 0.2),
    )
    assert 15 <= result.best_epoch <= 25
    assert result.epochs_run == result.best_epoch + 5
    assert model.weight.item() == pytest.approx(0.2, abs=0.006)
    scores = [h["dev_score"] for h in result.history]
    assert max(scores) == scores[result.best_epoch] and scores[0] == pytest.approx(-0.2)


def test_the_initial_weights_are_kept_when_training_only_worsens_dev(caplog: pytest.LogCaptureFixture):
    model = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(0.35)
    # training pulls w towards 1.0, away from dev's 0.35: every epoch is worse than the start
    with caplog.at_level("WARNING", logger="language_agnostic.training.loop"):
        result = train(
            model, _pull, Fixed(1.0), Fixed(0.35), TrainSettings(lr=0.01, max_epochs=50, patience=3, progress=False)
        )
    assert (result.best_epoch, result.epochs_run, result.best_step) == (0, 3, 0)
    assert torch.equal(model.weight.data, torch.tensor([[0.35]])) and torch.equal(
        result.state_dict["weight"], torch.tensor([[0.35]])
    )
    assert [h["dev_total"] for h in result.history][0] == 0.0
    assert "no improvement on dev: no epoch of 3 beat the initial weights" in caplog.text
    # the loop before epoch 0 was scored: the first epoch always replaced the initial weights
    model.weight.data.fill_(0.35)
    old = train(
        model,
        _pull,
        Fixed(1.0),
        Fixed(0.35),
        TrainSettings(lr=0.01, max_epochs=50, patience=3, progress=False, keep_initial=False),
    )
    assert old.best_epoch == 1 and model.weight.item() == pytest.approx(0.36, abs=1e-3)


def test_scoring_the_initial_weights_does_not_move_the_training_draws():
    # a dev loss that draws random numbers from the global generator: epoch 0's draws are undone
    def noisy(model, batch):
        return {"total": (model.weight.squeeze() - batch["x"][0]) ** 2 + 0 * torch.rand(())}

    weights = {}
    for keep in (True, False):
        model = nn.Linear(1, 1, bias=False)
        torch.nn.init.constant_(model.weight, 0.0)
        result = train(
            model,
            lambda m, b: {"total": noisy(m, b)["total"] + torch.rand(()) * 1e-3},
            Fixed(1.0),
            Fixed(0.35),
            TrainSettings(lr=0.01, max_epochs=5, patience=5, progress=False, keep_initial=keep),
        )
        weights[keep] = (model.weight.item(), [h["train_total"] for h in result.history if h["epoch"] > 0])
    assert weights[True] == weights[False]


def test_training_dream_is_deterministic_and_lowers_dev_loss():
    rng = np.random.default_rng(0)
    meaning = rng.standard_normal((300, 8)).astype(np.float32)
    lang = np.array([[3.0] + [0.0] * 7, [0.0, 3.0] + [0.0] * 6], dtype=np.float32)
    source, target = meaning + lang[0], meaning + lang[1] + 0.1 * rng.standard_normal((300, 8)).astype(np.float32)
    ids = (np.zeros(300, dtype=np.int64), np.ones(300, dtype=np.int64))

    def run() -> tuple[list[dict], dict]:
        torch.manual_seed(123)  # model init; training is seeded by the settings
        model = Dream(8, 2)
        data = QuadrupletBatches(source[:240], target[:240], ids[0][:240], ids[1][:240], batch_size=32)
        dev = QuadrupletBatches(source[240:], target[240:], ids[0][240:], ids[1][240:], batch_size=32, shuffle=False)
        result = train(
            model,
            lambda m, b: dream_losses(m, b),
            data,
            dev,
            TrainSettings(lr=1e-2, max_epochs=15, patience=3, seed=7, progress=False),
        )
        return result.history, result.state_dict

    first, weights = run()
    second, weights2 = run()
    assert first == second
    assert all(torch.equal(weights[k], weights2[k]) for k in weights)
    assert first[-1]["dev_total"] < 0.7 * first[0]["dev_total"]


def test_partners_are_never_the_example_itself():
    x = np.arange(8, dtype=np.float32)[:, None].repeat(2, axis=1)
    data = QuadrupletBatches(x, x, np.zeros(8), np.ones(8), batch_size=8, source_pool=np.array([2, 3]))
    for seed in range(20):
        (batch,) = data.batches(1, torch.Generator().manual_seed(seed))
        assert set(batch["s2"][:, 0].tolist()) <= {2.0, 3.0}
        assert (batch["s"][:, 0] != batch["s2"][:, 0]).all()
        assert (batch["t"][:, 0] != batch["t2"][:, 0]).all()


def test_bad_settings():
    with pytest.raises(ValueError, match="max_epochs and patience must be >= 1, got 0, 5"):
        train(nn.Linear(1, 1), _pull, Fixed(1), Fixed(1), TrainSettings(max_epochs=0, patience=5, progress=False))
    with pytest.raises(ValueError, match="the source partner pool needs at least 2 sentences, has 1"):
        QuadrupletBatches(np.zeros((3, 2)), np.zeros((3, 2)), np.zeros(3), np.zeros(3), 2, source_pool=np.array([0]))


class Three(Fixed):
    """Three batches an epoch, with the batch count the loop can show."""

    def batches(self, epoch, generator):
        for _ in range(3):
            yield {"x": torch.tensor([self.target])}

    def n_batches(self) -> int:
        return 3


def test_an_epoch_has_a_batch_bar_that_counts_every_batch(monkeypatch):
    import language_agnostic.training.loop as loop

    made = []

    class Recorder:
        def __init__(self, iterable=None, **kwargs):
            self.iterable, self.kwargs, self.n, self.closed = iterable, kwargs, 0, False
            made.append(self)

        def __iter__(self):
            return iter(self.iterable)

        def update(self, n=1):
            self.n += n

        def set_postfix(self, *args, **kwargs):
            pass

        def close(self):
            self.closed = True

    monkeypatch.setattr(loop, "tqdm", Recorder)
    train(nn.Linear(1, 1, bias=False), _pull, Three(1.0), Fixed(0.35), TrainSettings(lr=0.01, max_epochs=2, patience=5))
    epochs = [b for b in made if b.kwargs.get("unit") == "batch"]
    assert [b.kwargs["desc"] for b in epochs] == ["epoch 1", "epoch 2"]
    assert all(b.kwargs["total"] == 3 and b.n == 3 and b.closed and b.kwargs["delay"] == 5 for b in epochs)


def test_inference_autocast_computes_in_the_precision_asked():
    layer, x, cpu = nn.Linear(3, 2), torch.ones(1, 3), torch.device("cpu")
    with inference_autocast(cpu, "bf16"):
        assert layer(x).dtype == torch.bfloat16
    with inference_autocast(cpu, "no"):
        assert layer(x).dtype == torch.float32
    with pytest.raises(ValueError, match=r"mixed_precision must be one of .*'bf32'"):
        inference_autocast(cpu, "bf32")
