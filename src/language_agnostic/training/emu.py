"""Fine-tuning the encoder with EMU (Hirota et al. 2020) or a baseline loss, on English MASSIVE intents.

Labelled data: a seeded sample of the training locale's train split (intents only). The
critic's adversarial sentences: train utterances of the other configured locales, never their
labels. Model selection: leave-one-out nearest-neighbour intent accuracy on the training
locale's **dev** split (no other locale's dev, no test).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.extraction import Tokenised, padded_batch
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.intent_nn import nearest_neighbour_correct
from language_agnostic.methods.emu import Emu, EmuConfig, class_means, emu_losses
from language_agnostic.training.emu_data import EmuBatches, sample_per_intent, tokenise
from language_agnostic.training.finetune import FineTuning, prepared_trainer, split_loss_weights
from language_agnostic.training.loop import TrainResult, TrainSettings, inference_autocast, train

logger = logging.getLogger(__name__)

TRAINABLE = ("all", "no_embeddings")
DEV_LOSS_SENTENCES = 256
EXTRAS = {"emu": ("adversarial",), "softmax": (), "contrastive": ("pair",), "npair": ("positive",)}


@dataclass(frozen=True)
class EmuData:
    """``emu.data``: what EMU trains on.

    Attributes:
        training_locale: The labelled locale (English in the paper).
        per_intent: Labelled sentences per intent (``None``: the whole train split).
        adversarial_locales: Locales whose train utterances (unlabelled) feed the critic;
            empty: every other locale present in the data.
        seed: Seeds the labelled sample.
        encoder_trainable: ``all`` encoder parameters, or ``no_embeddings`` (the token
            embedding matrix frozen: 96M of e5-small's 118M parameters, touched sparsely).
        batch_size: Sentences per step (16 in the paper).
        adversarial: ``unlabelled`` (the critic sees random train utterances of the other
            locales) or ``parallel`` (EMU-PARALLEL: the translations of the training sentences).
        labelled_locales: The locales whose labelled sentences train (EMU Table 3: En, De, Fr
            and their combinations): the same sampled MASSIVE ids in each. Empty: the
            training locale only. Selection is then on the mean of their dev accuracies.
    """

    training_locale: str = "en-US"
    per_intent: int | None = 20
    adversarial_locales: tuple[str, ...] = ()
    seed: int = 2020
    encoder_trainable: str = "no_embeddings"
    batch_size: int = 16
    adversarial: str = "unlabelled"
    labelled_locales: tuple[str, ...] = ()


def _translations(utterances: pd.DataFrame, locale: str, ids: pd.Series, what: str) -> pd.DataFrame:
    """``locale``'s train utterances of the MASSIVE ``ids``, in their order
    (an error names ``what`` when one is missing).
    """
    rows = _rows(utterances, locale, "train").set_index("id").reindex(ids)
    if rows["utt"].isna().any():
        raise ValueError(f"{what}: {int(rows['utt'].isna().sum())} labelled sentences have no {locale} translation")
    return rows.reset_index()


def _rows(utterances: pd.DataFrame, locale: str, partition: str) -> pd.DataFrame:
    rows = utterances[(utterances["locale"] == locale) & (utterances["partition"] == partition)]
    return rows.sort_values("id", key=lambda c: c.astype(int)).reset_index(drop=True)


def encode_tokenised(
    model: torch.nn.Module, tok: Tokenised, pad_id: int, batch_size: int = 64, precision: str = "no"
) -> np.ndarray:
    """``u = E(x)`` of every tokenised text (eval mode, no gradients, on the model's device), in input order.

    Texts are batched in order of length, so a batch pads to about its own length. ``precision``:
    the autocast to encode under (``no``: fp32; a trained model's test sets pass its training's, the
    precision its dev score was computed in: :func:`~language_agnostic.training.loop.inference_autocast`).
    """
    device = next(model.parameters()).device
    model.eval()
    order = np.argsort(tok.lengths, kind="stable")
    out = np.empty((len(order), 0), dtype=np.float32)
    with torch.no_grad(), inference_autocast(device, precision):
        for start in range(0, len(order), batch_size):
            index = order[start : start + batch_size]
            ids, mask = padded_batch(tok, index, pad_id)
            u = model(ids.to(device), mask.to(device)).float().cpu().numpy()
            if out.shape[1] == 0:
                out = np.empty((len(order), u.shape[1]), dtype=np.float32)
            out[index] = u
    return out


@dataclass
class EmuRun:
    """Everything :func:`train_emu` hands to the training loop (also what ``benchmarks/emu_speed.py`` times)."""

    model: Emu
    train_data: EmuBatches
    dev_data: EmuBatches
    settings: TrainSettings
    dev_score: Callable[[torch.nn.Module], float]
    info: dict[str, Any]


def _emu_data(data: Mapping[str, Any]) -> EmuData:
    """``emu.data`` (checked by ``parameters/emu.py`` when the run starts) with its locale lists as tuples."""
    return EmuData(
        **{
            **dict(data),
            "adversarial_locales": tuple(data.get("adversarial_locales") or ()),
            "labelled_locales": tuple(data.get("labelled_locales") or ()),
        }
    )


def _labelled_rows(
    utterances: pd.DataFrame, settings_data: EmuData, locales: tuple[str, ...]
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The labelled training rows of every labelled locale and each one's dev split.

    Raises:
        ValueError: the training locale has no train or dev utterances, or a labelled locale no dev ones.
    """
    # the sample is drawn in the training locale; other labelled locales take the same ids
    # (MASSIVE is parallel), as the paper's translated training sets are the same sentences
    sample = sample_per_intent(
        _rows(utterances, settings_data.training_locale, "train"), settings_data.per_intent, settings_data.seed
    )
    if sample.empty or _rows(utterances, settings_data.training_locale, "dev").empty:
        raise ValueError(f"emu.data.training_locale {settings_data.training_locale!r}: no train or dev utterances")
    train_rows = (
        sample
        if locales == (settings_data.training_locale,)
        else pd.concat(
            [_translations(utterances, loc, sample["id"], "emu.data.labelled_locales") for loc in locales],
            ignore_index=True,
        )
    )
    dev_sets = {loc: _rows(utterances, loc, "dev") for loc in locales}
    empty = [loc for loc, d in dev_sets.items() if d.empty]
    if empty:
        raise ValueError(f"emu.data.labelled_locales: no dev utterances in {empty}")
    return train_rows, dev_sets


def _adversarial_sets(
    utterances: pd.DataFrame,
    encoder: LoadedEncoder,
    settings_data: EmuData,
    train_rows: pd.DataFrame,
    adversarial_locales: tuple[str, ...],
    needs_critic: bool,
    extraction: Mapping[str, Any] | None,
) -> list[Tokenised]:
    """The critic's sentences, one tokenised set per adversarial locale (none without a critic).

    Raises:
        ValueError: ``adversarial: parallel`` and a labelled sentence without its translation in an adversarial
            locale.
    """
    adversarial: list[Tokenised] = []
    if needs_critic:
        for locale in adversarial_locales:
            # parallel: the translations of the labelled sample, row for row (same MASSIVE id)
            rows = (
                _translations(utterances, locale, train_rows["id"], "emu-parallel")
                if settings_data.adversarial == "parallel"
                else _rows(utterances, locale, "train")
            )
            if len(rows):
                adversarial.append(tokenise(encoder, rows["utt"].tolist(), extraction))
    return adversarial


def _dev_scorer(
    dev_sets: Mapping[str, pd.DataFrame], encoder: LoadedEncoder, extraction: Mapping[str, Any] | None, pad_id: int
) -> Callable[[torch.nn.Module], float]:
    """Model selection's score over the whole dev split of every labelled locale."""
    dev_all = {
        loc: (tokenise(encoder, d["utt"].tolist(), extraction), d["id"].tolist(), d["intent"].tolist())
        for loc, d in dev_sets.items()
    }

    def dev_score(model: torch.nn.Module) -> float:
        """Leave-one-out NN intent accuracy on each labelled locale's dev split, averaged over them."""
        scores = []
        for tok, ids, labels in dev_all.values():
            u = encode_tokenised(model, tok, pad_id)
            scores.append(float(nearest_neighbour_correct(u, ids, labels, u, ids, labels).mean()))
        return float(np.mean(scores))

    return dev_score


def _new_model(
    encoder: LoadedEncoder,
    config: EmuConfig,
    settings_data: EmuData,
    seed: int,
    labelled: Tokenised,
    intent_ids: np.ndarray,
    n_intents: int,
) -> Emu:
    """A seeded EMU model over a copy of the encoder, its centres at the class centroids where EMU starts them."""
    torch.manual_seed(seed)
    model = Emu(copy.deepcopy(encoder.model), int(encoder.model.config.hidden_size), config)
    if settings_data.encoder_trainable == "no_embeddings":
        model.encoder.get_input_embeddings().weight.requires_grad_(False)
    if config.loss == "emu" and config.centers == "centroid" and config.center_weight > 0:
        # c_y starts as the class centroid under the encoder training starts from (EMU eq. 1)
        u = torch.from_numpy(encode_tokenised(model, labelled, int(encoder.tokenizer.pad_token_id)))
        model.centers.copy_(class_means(u, torch.tensor(intent_ids), n_intents))
    return model


def prepare_emu(utterances: pd.DataFrame, encoder: LoadedEncoder, variant: FineTuning) -> EmuRun:
    """The model, batches, settings and dev scorer of one EMU fine-tuning (:func:`train_emu` trains it).

    Args:
        utterances: MASSIVE utterances (``locale, id, partition, utt, intent``).
        encoder: The encoder to start from (not modified: a copy is trained).
        variant: Its ``method``: :class:`~language_agnostic.methods.emu.EmuConfig` fields but ``n_intents``
            (``loss``, ``alpha``, ...); ``data``: :class:`EmuData` fields; ``training``: ``TrainSettings``
            fields (``encoder_lr`` is the encoder's learning rate).
    """
    method, extraction, name = variant.method, variant.extraction, variant.name
    settings_data = _emu_data(variant.data)
    settings = TrainSettings(**variant.training)
    locales = settings_data.labelled_locales or (settings_data.training_locale,)
    train_rows, dev_sets = _labelled_rows(utterances, settings_data, locales)
    intents = sorted(set(train_rows["intent"]))
    index = {intent: i for i, intent in enumerate(intents)}
    config = EmuConfig(**{**dict(method), "n_intents": len(intents), "training_languages": locales[:1]})
    adversarial_locales = settings_data.adversarial_locales or tuple(sorted(set(utterances["locale"]) - set(locales)))
    pad_id = int(encoder.tokenizer.pad_token_id)
    labelled = tokenise(encoder, train_rows["utt"].tolist(), extraction)
    needs_critic = config.loss == "emu" and config.adversarial_weight > 0
    if needs_critic and len(locales) > 1:
        raise ValueError(
            f"emu.methods.{name}: EMU's critic with several labelled locales (one D_t each, Algorithm 1) is not "
            f"built; train the labelled-locale study (Table 3) without it, as the paper does (emu-no_ld)"
        )
    adversarial = _adversarial_sets(
        utterances, encoder, settings_data, train_rows, adversarial_locales, needs_critic, extraction
    )
    extras = EXTRAS[config.loss] if needs_critic or config.loss != "emu" else ()
    train_data = EmuBatches(
        labelled,
        train_rows["intent"].map(index).to_numpy(),
        adversarial,
        pad_id,
        settings_data.batch_size,
        shuffle=True,
        extras=extras,
        parallel=settings_data.adversarial == "parallel",
    )
    # the dev loss (a curve in the history) on the first DEV_LOSS_SENTENCES dev sentences of known
    # intents (first labelled locale); selection is on the dev NN accuracy of whole dev splits (below)
    dev_rows = dev_sets[locales[0]]
    known = dev_rows[dev_rows["intent"].isin(index)].reset_index(drop=True).iloc[:DEV_LOSS_SENTENCES]
    dev_tok = tokenise(encoder, known["utt"].tolist(), extraction)
    dev_data = EmuBatches(
        dev_tok,
        known["intent"].map(index).to_numpy(),
        adversarial,
        pad_id,
        64,
        shuffle=False,
        extras=tuple(e for e in extras if e != "adversarial"),
    )
    dev_score = _dev_scorer(dev_sets, encoder, extraction, pad_id)
    intent_ids = train_rows["intent"].map(index).to_numpy()
    model = _new_model(encoder, config, settings_data, settings.seed, labelled, intent_ids, len(intents))
    info = {
        "name": name,
        "loss": config.loss,
        "intents": intents,
        "n_train": len(train_rows),
        "training_locale": settings_data.training_locale,
        "labelled_locales": list(locales),
        "adversarial_locales": list(adversarial_locales) if needs_critic else [],
        "adversarial": settings_data.adversarial,
    }
    return EmuRun(model, train_data, dev_data, settings, dev_score, info)


def fine_tune_emu(run: EmuRun) -> tuple[TrainResult, dict[str, Any]]:
    """``run`` trained with its EMU or baseline loss (kept at its best dev NN accuracy); the result and
    ``run.info`` with the kept epoch, its dev accuracy and the training's autocast."""
    info = run.info
    logger.info(
        "emu %s: %d labelled %s sentences (%d intents), adversarial locales %s, encoder lr %s",
        info["name"],
        info["n_train"],
        info["training_locale"],
        len(info["intents"]),
        info["adversarial_locales"],
        run.settings.encoder_lr,
    )
    result = train(run.model, lambda m, b: emu_losses(m, b), run.train_data, run.dev_data, run.settings, run.dev_score)
    # the kept model's dev accuracy; epoch 0 (when scored) is the encoder training started from
    initial = [float(r["dev_score"]) for r in result.history if r["epoch"] == 0]
    info = {
        **info,
        "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run,
        "dev_accuracy": max(float(r["dev_score"]) for r in result.history),
        "dev_accuracy_initial": initial[0] if initial else None,
        # the dev score ran under the training's autocast (Accelerate wraps the model's forward):
        # test is encoded the same way (pipelines/emu/nodes.py:evaluate_emu_variant)
        "mixed_precision": run.settings.mixed_precision,
    }
    return result, info


train_emu = prepared_trainer(prepare_emu, fine_tune_emu)
train_emu.__name__ = train_emu.__qualname__ = "train_emu"
train_emu.__doc__ = """Fine-tune a copy of ``encoder`` with EMU or a baseline loss (arguments: :func:`prepare_emu`'s).

Returns:
    ``(model, result, info)``: the trained model (best dev epoch), the training result and
    what was trained on (sizes, intents, locales, the kept dev accuracy)."""


# loss_weights of EMU map onto its config: λ (eq. 2) and γ (eq. 4)
WEIGHT_FIELDS = {"center": "center_weight", "adversarial": "adversarial_weight"}


def method_settings(name: str, spec: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``emu.methods.<name>``: ``{method: emu, loss, loss_weights, options, training, data}`` as
    ``(EmuConfig fields, training overrides, data overrides)``; its keys and values are checked by
    ``parameters/emu.py:EmuMethod`` when the run starts.

    Raises:
        ValueError: An unknown loss weight (naming the parameter).
    """
    spec = dict(spec or {})
    _, weights = split_loss_weights(spec)
    config = {**dict(spec.get("options") or {}), **{WEIGHT_FIELDS[k]: float(v) for k, v in weights.items()}}
    if "loss" in spec:
        config["loss"] = str(spec["loss"])
    return config, dict(spec.get("training") or {}), dict(spec.get("data") or {})


def trained_state(model: Emu) -> dict[str, torch.Tensor]:
    """Every tensor the fine-tuning can have changed (frozen encoder weights are left out: the base has them)."""
    frozen = {f"encoder.{n}" for n, p in model.encoder.named_parameters() if not p.requires_grad}
    return {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items() if k not in frozen}


def adversarial_locales_of(pairs: Sequence[Mapping[str, str]], training_locale: str) -> list[str]:
    """The configured locales other than the training one, in order (the critic's languages)."""
    out: list[str] = []
    for pair in pairs:
        for locale in (pair["source"], pair["target"]):
            if locale != training_locale and locale not in out:
                out.append(locale)
    return out
