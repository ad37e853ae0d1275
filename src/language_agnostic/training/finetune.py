"""What every fine-tuning of the encoder for SLU shares (the joint baseline and LAJoint / LAJ-MCL):
freezing the lower layers, timing, the kept checkpoint's report and the tensors an artifact saves;
and how a ``train_*`` function is made of its ``prepare_*`` (SLU and EMU alike)."""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import torch

from language_agnostic.training.loop import TrainResult

logger = logging.getLogger(__name__)
P = ParamSpec("P")
Run = TypeVar("Run")


@dataclass(frozen=True)
class FineTuning:
    """One configured variant of a fine-tuning: the parameter sections every ``prepare_*`` (SLU, LAJoint /
    LAJ-MCL, EMU) reads besides the data table and the encoder, as the pipeline's node merged them.

    Attributes:
        name: The variant's name (``<pipeline>.methods.<name>``: messages, parameter paths, ``info["name"]``).
        method: The method's settings (its config's fields; each ``prepare_*`` says which).
        data: The data section (``SluData`` or ``EmuData`` fields).
        training: ``TrainSettings`` fields (SLU: and ``train_layers``).
        extraction: ``embeddings.extraction`` (prefix, ``max_length``, ``on_too_long``).
    """

    name: str
    method: Mapping[str, Any]
    data: Mapping[str, Any]
    training: Mapping[str, Any]
    extraction: Mapping[str, Any] | None = None


def prepared_trainer(
    prepare: Callable[P, Run], fine_tune: Callable[[Run], tuple[TrainResult, dict[str, Any]]]
) -> Callable[P, tuple[torch.nn.Module, TrainResult, dict[str, Any]]]:
    """A ``train_*`` function taking ``prepare``'s arguments: the run ``prepare`` builds (its ``model``,
    batches, settings and dev scorer) fine-tuned by ``fine_tune``; it returns ``(model, result, info)``.

    ``prepare`` stays callable on its own, so a benchmark can time the loop without the preparation.
    """

    def train_fn(*args: P.args, **kwargs: P.kwargs) -> tuple[torch.nn.Module, TrainResult, dict[str, Any]]:
        run = prepare(*args, **kwargs)
        result, info = fine_tune(run)
        return run.model, result, info  # type: ignore[attr-defined]

    # help() and inspect show prepare's arguments and what is returned
    train_fn.__signature__ = inspect.signature(prepare).replace(  # type: ignore[attr-defined]
        return_annotation="tuple[torch.nn.Module, TrainResult, dict[str, Any]]"
    )
    return train_fn


def encoder_layers(encoder: torch.nn.Module) -> tuple[torch.nn.Module, list[torch.nn.Module]]:
    """The embedding module and the transformer layers, bottom first, of a BERT-style encoder
    (``BertModel``, ``XLMRobertaModel``: ``embeddings`` and ``encoder.layer``).

    Raises:
        ValueError: another layout, naming ``slu.training.train_layers``.
    """
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    embeddings = getattr(encoder, "embeddings", None)
    if layers is None or embeddings is None:
        raise ValueError(
            f"slu.training.train_layers needs a BERT-style encoder (embeddings, encoder.layer); "
            f"{type(encoder).__name__} is not one: set train_layers: null"
        )
    return embeddings, list(layers)


def freeze_below(encoder: torch.nn.Module, train_layers: int | None) -> dict[str, int]:
    """``slu.training.train_layers``: only the top ``train_layers`` transformer layers of ``encoder`` train.

    The embedding layer (token, position and type embeddings) and every layer below the top
    ``train_layers`` have their parameters frozen (``requires_grad`` off: no weight gradient, no
    optimiser update, not saved in the artifact; the base encoder has them). The heads (and
    LAJoint's label embeddings, compressor, projector and MCL's heads) always train. ``None``:
    nothing is frozen.

    No ``torch.no_grad`` is needed, and none is used: autograd records an operation only when
    one of its inputs requires a gradient, so where nothing below the first trained layer does
    (the joint baseline: token ids → frozen embeddings → frozen layers) the frozen part runs
    without a graph — no activations kept, the backward stops at the first trained layer.
    LAJoint's label embeddings are trained and enter at the input (eq. 1), so their gradient
    must flow back through every layer: there the frozen layers still carry the graph and the
    backward (input gradients only), and freezing saves their weight gradients and optimiser
    updates — the 96M-parameter token embeddings' AdamW step above all — not their backward.

    Returns:
        ``{"trained": ..., "frozen": ...}`` parameter counts of the encoder.

    Raises:
        ValueError: ``train_layers`` outside ``0 .. the encoder's layers`` or an encoder that is
            not BERT-style (naming the parameter).
    """
    if train_layers is not None:
        embeddings, layers = encoder_layers(encoder)
        if not 0 <= train_layers <= len(layers):
            raise ValueError(
                f"slu.training.train_layers must be null or in 0..{len(layers)} (the encoder's layers), "
                f"got {train_layers}"
            )
        for module in [embeddings, *layers[: len(layers) - train_layers]]:
            for parameter in module.parameters():
                parameter.requires_grad_(False)
    trained = sum(p.numel() for p in encoder.parameters() if p.requires_grad)
    return {"trained": int(trained), "frozen": int(sum(p.numel() for p in encoder.parameters()) - trained)}


def timed_training(run_train: Callable[[], TrainResult]) -> tuple[TrainResult, float]:
    """``run_train()`` and its wall-clock seconds (every epoch with its dev loss and dev exact match: LAJ-MCL Table 10's
    "training, second/epoch" is this divided by the epochs run)."""
    start = time.perf_counter()
    result = run_train()
    return result, time.perf_counter() - start


def kept_checkpoint_info(
    info: Mapping[str, Any],
    result: TrainResult,
    dev_scores: Mapping[str, float],
    seconds: float,
    truncated_switched: int,
    name: str,
) -> dict[str, Any]:
    """What every SLU fine-tuning (``slu`` and ``lajoint`` methods alike) reports about the checkpoint it keeps.

    ``info`` with ``best_epoch``, ``best_step``, ``epochs_run``, the kept checkpoint's
    ``dev_intent_accuracy``, ``dev_slot_f1``, ``dev_exact_match`` (on the whole dev split),
    ``train_seconds`` and ``train_seconds_per_epoch`` (wall clock, the per-epoch dev
    evaluation included), and the switched utterances cut (``n_truncated.train_switched``).
    """
    out = {
        **info,
        "best_epoch": result.best_epoch,
        "best_step": result.best_step,
        "epochs_run": result.epochs_run,
        **{f"dev_{k}": float(v) for k, v in dev_scores.items()},
        "train_seconds": float(seconds),
        "train_seconds_per_epoch": float(seconds) / max(result.epochs_run, 1),
        "n_truncated": {**dict(info["n_truncated"]), "train_switched": int(truncated_switched)},
    }
    logger.info(
        "slu %s: kept epoch %d (step %d) of %d (%.0f s an epoch): %s dev exact match %.4f, intent accuracy %.4f, "
        "slot F1 %.4f",
        name,
        result.best_epoch,
        result.best_step,
        result.epochs_run,
        out["train_seconds_per_epoch"],
        info["dev_locale"],
        dev_scores["exact_match"],
        dev_scores["intent_accuracy"],
        dev_scores["slot_f1"],
    )
    return out


def trained_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Every tensor the fine-tuning can have changed (frozen encoder weights left out: the base has them)."""
    frozen = {f"encoder.{n}" for n, p in model.encoder.named_parameters() if not p.requires_grad}
    return {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items() if k not in frozen}


def split_loss_weights(method: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A method entry's settings (``slu.methods.<name>``, ``emu.methods.<name>``) without ``loss_weights``,
    and its loss weights (their names checked by the parameter models: ``parameters/slu.py``, ``parameters/emu.py``).
    """
    options = dict(method)
    weights = dict(options.pop("loss_weights", None) or {})
    return options, weights
