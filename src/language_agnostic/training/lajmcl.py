"""Fine-tuning LAJoint / LAJ-MCL on English MASSIVE, Kedro-free (the arguments of the shared loop).

The protocol is the ``slu`` pipeline's (:mod:`language_agnostic.training.slu`): train on the
training locale's train split, keep the checkpoint with the best semantic exact match on the
same locale's dev split, never read another locale before the test; the encoder is a copy.

One function serves every variant; what differs is the data and the loss weights:

- ``lajoint``: no code-switching, ``λ1 = λ2 = λ3 = 0``;
- ``lajoint-cs`` (LAJoint+CS, "w/o MCL"): code-switching with ``keep_source``, ``λ = 0``;
- ``lajmcl``: code-switching with ``keep_source`` and the three levels (``λ1..λ3`` > 0);
- the ablations ``+ucl``, ``+scl``, ``+wcl`` and their pairs: the other weights at 0.

A level is on when its weight is > 0, and only then are its extras built (Algorithm 1's
negatives for the slot level, eq. 12's word pairs for the word level).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.methods.lajmcl import DEFAULT_LAMBDA, LajMcl, MclConfig, lajmcl_losses
from language_agnostic.methods.lajoint import (
    INIT_LAYERS,
    LAJoint,
    LajointConfig,
    initial_label_embeddings,
    label_names,
    prefix_shift,
)
from language_agnostic.methods.registry import build_spec
from language_agnostic.text.code_switch import CodeSwitcher
from language_agnostic.text.slot_negatives import SlotNegatives, mean_pooled_embedder
from language_agnostic.training.finetune import FineTuning, freeze_below, split_loss_weights, trained_state
from language_agnostic.training.lajmcl_data import LajBatches, label_tokenisation, prefix_tokens
from language_agnostic.training.slu import (
    CodeSwitchSettings,
    Dictionaries,
    SluRun,
    SluSplit,
    code_switcher,
    log_training_data,
    slu_batches,
    slu_split,
    slu_trainer,
    switch_info,
)
from language_agnostic.training.slu_data import labels_of, words_of
from language_agnostic.training.slu_predict import first_token_states, predict_names, prediction_tokens

MCL_LEVELS = ("utterance", "slot_value", "word")


@dataclass(frozen=True)
class MclData:
    """``slu.methods.<name>.mcl``: how MCL's negatives are made (Appendix B.1).

    Attributes:
        slot_negatives: ``N_s``, negative utterances per utterance (slot level; the paper's 2).
        word_negatives: ``N_w``, negatives per slot word (word level; the paper's 2).
        p_v: Frequent values per slot (``B_k``; the paper's 20, Table 6's grid {0, 10, 20}).
        p_s: Similar slots per slot (the paper's 5, Table 6's grid {5, 10}).
        init_layers: Bottom encoder layers the label embeddings are initialised from (§3.1's 3).
        pool_values: Frequent values per similar slot that make the negative pool ``V_k``
            (Algorithm 1, line 8); ``None``: ``p_v``, as written. Table 6's ``p_v = 0`` describes
            slots by their names only ("not concatenating ``B_k`` for slot representation") but
            still draws negatives, so it needs this set (``conf/slu_grid``: 20).
    """

    slot_negatives: int = 2
    word_negatives: int = 2
    p_v: int = 20
    p_s: int = 5
    init_layers: int = INIT_LAYERS
    pool_values: int | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "pool_values" and value is None:
                continue
            low = 0 if f.name == "p_v" else 1
            if value < low:
                raise ValueError(f"mcl.{f.name} must be an integer >= {low}, got {value!r}")


LajRun = SluRun  # what train_lajmcl hands to the shared SLU loop (training.slu.fine_tune)


def method_config(
    method: Mapping[str, Any], name: str, n_intents: int, slots: Sequence[str], encoder: LoadedEncoder
) -> tuple[LajointConfig, MclConfig, MclData, dict[str, float]]:
    """``slu.methods.<name>`` options split into the model's, MCL's and the data's settings and the loss weights.

    Keys: :class:`~language_agnostic.methods.lajoint.LajointConfig` fields but the derived
    ``n_intents``, ``slots``, ``encoder_config`` (``compressor``, ``projector``, ``dropout``,
    ``ignore_index``, ``abstract_texts``); ``margins``, ``head_dim``, ``slot_temperature``, ``slot_affinity``
    (:class:`~language_agnostic.methods.lajmcl.MclConfig`); ``mcl`` (:class:`MclData`);
    ``loss_weights`` (``intent``, ``slot``, ``utterance`` = λ1, ``slot_value`` = λ2, ``word`` = λ3;
    unset λ: :data:`~language_agnostic.methods.lajmcl.DEFAULT_LAMBDA`). Their keys and values are checked by
    ``parameters/slu.py:SluMethod`` when the run starts.

    Raises:
        ValueError: an unknown weight (naming ``slu.methods.<name>.loss_weights``), or a value the settings'
            own checks refuse.
    """
    options, weights = split_loss_weights(method)
    # every MclConfig field is a method option: a field added there needs no edit here or in the artifact
    mcl_config = MclConfig(**{f.name: options.pop(f.name) for f in fields(MclConfig) if f.name in options})
    mcl_data = MclData(**dict(options.pop("mcl", None) or {}))
    config = LajointConfig(
        **options, n_intents=n_intents, slots=tuple(slots), encoder_config=encoder.model.config.to_dict()
    )
    full = {"intent": 1.0, "slot": 1.0, **dict.fromkeys(MCL_LEVELS, DEFAULT_LAMBDA)}
    full.update({k: float(v) for k, v in weights.items()})
    return config, mcl_config, mcl_data, full


def slot_level_negatives(
    words: Sequence[Sequence[str]],
    tags: Sequence[Sequence[str]],
    slots: Sequence[str],
    encoder: LoadedEncoder,
    extraction: Mapping[str, Any] | None,
    mcl_data: MclData,
    switcher: CodeSwitcher | None,
    name: str,
) -> SlotNegatives:
    """Algorithm 1 on the training data (the slot level's hard negatives), embedded by the unchanged base encoder.

    Raises:
        ValueError: ``p_v`` 0 without ``pool_values`` (every pool would be empty), naming the parameter.
    """
    embed = mean_pooled_embedder(encoder.model, encoder.tokenizer, prefix=str((extraction or {}).get("prefix", "")))
    p_s = max(1, min(mcl_data.p_s, len(slots) - 1))  # a slot set smaller than p_s + 1: every other slot
    if (mcl_data.p_v if mcl_data.pool_values is None else mcl_data.pool_values) == 0:
        raise ValueError(
            f"slu.methods.{name}.mcl: p_v 0 with pool_values null leaves every negative pool V_k empty "
            "(Algorithm 1, line 8): set mcl.pool_values (Table 6's p_v = 0: slots described by name only)"
        )
    return SlotNegatives.build(
        words, tags, slots, embed, mcl_data.p_v, p_s, switcher, mcl_data.slot_negatives, mcl_data.pool_values
    )


def prepare_lajmcl(
    table: pd.DataFrame, encoder: LoadedEncoder, variant: FineTuning, dictionaries: Dictionaries | None = None
) -> LajRun:
    """The model, batches, settings and dev scorer of one LAJoint / LAJ-MCL fine-tuning.

    Args:
        table: SLU rows (``locale, id, partition, intent, words, labels``).
        encoder: The encoder to start from (not modified: a copy is trained).
        variant: Its ``method``: ``slu.methods.<name>`` options (:func:`method_config`; for LAJoint without
            MCL ``loss_weights: {utterance: 0, slot_value: 0, word: 0}``); ``data``:
            :class:`~language_agnostic.training.slu.SluData` fields (MCL needs ``code_switch`` with
            ``keep_source: true``); ``training``: ``TrainSettings`` fields.
        dictionaries: Language → MUSE dictionary, for ``data.code_switch``.

    Raises:
        ValueError: missing columns or data, bad settings, or an MCL level on without
            code-switched pairs (naming the parameter).
    """
    method, extraction, name = variant.method, variant.extraction, variant.name
    split = slu_split(table, variant.data, variant.training)
    slots = slot_set(split.labels)
    config, mcl_config, mcl_data, weights = method_config(method, name, len(split.intents), slots, encoder)
    switcher, switch = code_switcher(split.data, dictionaries)
    on = mcl_levels(weights, switch, name)
    words, tags = words_of(split.train_rows), labels_of(split.train_rows)
    slot_negatives = (
        slot_level_negatives(words, tags, slots, encoder, extraction, mcl_data, switcher, name)
        if weights["slot_value"] > 0
        else None
    )
    train_data, dev_data, known = slu_batches(
        functools.partial(LajBatches, slots=slots),
        split,
        encoder,
        extraction,
        (switcher, switch),
        config.ignore_index,
        name,
        mcl=bool(on),
        slot_negatives=slot_negatives,
        word_negatives=mcl_data.word_negatives if weights["word"] > 0 else 0,
    )
    dev_tokens = prefix_tokens(
        split.dev_tokens(encoder, label_tokenisation(encoder, extraction, len(slots)), name),
        len(slots),
        encoder.tokenizer,
    )
    dev_score = split.dev_scorer(dev_tokens, int(encoder.tokenizer.pad_token_id))

    torch.manual_seed(split.settings.seed)
    model, parameters = _lajmcl_model(encoder, config, mcl_config, mcl_data.init_layers, split.train_layers)
    info = {
        **_split_info(split, name, slots, len(known), weights, on),
        "margins": dict(mcl_config.margins or {}),
        "slot_temperature": mcl_config.slot_temperature,
        "slot_affinity": mcl_config.slot_affinity,
        "mcl": {f.name: getattr(mcl_data, f.name) for f in fields(mcl_data)},
        "compressor": config.compressor,
        "projector": config.projector,
        "code_switch": switch_info(switch),
        "n_truncated": {"train": train_data.n_truncated, "dev": int(dev_tokens.truncated.sum())},
        "similar_slots": dict(slot_negatives.similar or {}) if slot_negatives is not None else None,
        "train_layers": split.train_layers,
        "encoder_parameters": parameters,
    }
    details = {"slots": len(info["slots"]), "MCL levels": info["mcl_levels"], "train_layers": info["train_layers"]}
    log_training_data("lajmcl", info, **details)
    predict = functools.partial(_predict_dev, encoder=encoder, info=info, extraction=extraction)
    loss_fn = lajmcl_loss_fn(weights)
    return LajRun(
        model, train_data, dev_data, split.settings, dev_score, weights, info, loss_fn, predict, split.dev_rows
    )


def _lajmcl_model(
    encoder: LoadedEncoder, config: LajointConfig, mcl: MclConfig, init_layers: int, train_layers: int | None
) -> tuple[LajMcl, dict[str, int]]:
    """A LAJ-MCL model on a copy of ``encoder``, its label embeddings initialised from its bottom
    ``init_layers``, and the encoder's trained and frozen parameter counts (:func:`freeze_below`)."""
    base = copy.deepcopy(encoder.model)
    init = initial_label_embeddings(base, encoder.tokenizer, config.label_texts(), init_layers)
    model = LajMcl(base, int(base.config.hidden_size), config, mcl, init)
    return model, freeze_below(model.encoder, train_layers)  # the label embeddings stay trained (freeze_below)


def _predict_dev(
    model: torch.nn.Module,
    rows: pd.DataFrame,
    precision: str,
    encoder: LoadedEncoder,
    info: Mapping[str, Any],
    extraction: Mapping[str, Any] | None,
) -> tuple[list[str], list[list[str]]]:
    """:func:`predict_lajmcl` with the intents, labels and slots ``info`` records (the dev split after training)."""
    names = (info["intents"], info["labels"], len(info["slots"]))
    return predict_lajmcl(model, rows, encoder, *names, extraction, precision=precision)


def slot_set(labels: Sequence[str]) -> list[str]:
    """The slots of the BIO ``labels`` trained, sorted (the model's label order is the vocabulary's).

    Raises:
        ValueError: no slot at all (LAJoint needs a slot set), naming ``slu.data``.
    """
    slots = sorted({label[2:] for label in labels if label != "O"})
    if not slots:
        raise ValueError("slu.data: the training utterances have no slot value; LAJoint needs a slot set")
    assert label_names(slots) == list(labels)
    return slots


def mcl_levels(weights: Mapping[str, float], switch: CodeSwitchSettings | None, name: str) -> list[str]:
    """The MCL levels on (weighted > 0), in :data:`MCL_LEVELS` order.

    Raises:
        ValueError: a level on without code-switching that keeps the source, naming the parameters.
    """
    on = [level for level in MCL_LEVELS if weights[level] > 0]
    if on and not (switch and switch.keep_source):
        raise ValueError(
            f"slu.methods.{name}: MCL ({on} weighted > 0) needs slu.data.code_switch with keep_source: true; "
            f"for LAJoint without MCL set loss_weights {dict.fromkeys(on, 0)}"
        )
    return on


def _split_info(
    split: SluSplit, name: str, slots: list[str], n_dev_loss: int, weights: dict[str, float], on: list[str]
) -> dict[str, Any]:
    """The first entries of a LAJoint / LAJ-MCL fine-tuning's info: what it trained on and its loss weights."""
    return {
        "name": name,
        "intents": split.intents,
        "labels": split.labels,
        "slots": slots,
        "training_locale": split.data.training_locale,
        "dev_locale": split.dev_locale,
        "n_train": len(split.train_rows),
        "n_dev": len(split.dev_rows),
        "n_dev_loss": n_dev_loss,
        "loss_weights": weights,
        "mcl_levels": on,
    }


def lajmcl_loss_fn(
    weights: Mapping[str, float],
) -> Callable[[torch.nn.Module, Mapping[str, torch.Tensor]], dict[str, torch.Tensor]]:
    """The loop's ``loss_fn``: eq. 14 on training batches, ``L_J`` alone on dev batches.

    Dev utterances are never switched, so they have no pairs to contrast; their loss is only
    the history's curve (selection is on dev exact match). A batch is a training batch with MCL
    when it has ``value_ids`` (``LajBatches`` with an MCL level on).
    """
    weights = dict(weights)
    joint_only = {**weights, **dict.fromkeys(MCL_LEVELS, 0.0)}

    def loss_fn(model: torch.nn.Module, batch: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return lajmcl_losses(model, batch, weights if "value_ids" in batch else joint_only)

    return loss_fn


train_lajmcl = slu_trainer(prepare_lajmcl)
train_lajmcl.__name__ = train_lajmcl.__qualname__ = "train_lajmcl"
train_lajmcl.__doc__ = """Fine-tune a copy of ``encoder`` as LAJoint / LAJ-MCL (arguments: :func:`prepare_lajmcl`'s),
selected on dev exact match; ``(model, result, info)`` as :func:`~language_agnostic.training.slu.train_slu`."""


def predict_lajmcl(
    model: torch.nn.Module,
    rows: pd.DataFrame | Sequence[Sequence[str]],
    encoder: LoadedEncoder,
    intent_names: Sequence[str],
    label_names_: Sequence[str],
    n_slots: int,
    extraction: Mapping[str, Any] | None = None,
    batch_size: int = 64,
    precision: str = "no",
) -> tuple[list[str], list[list[str]]]:
    """Predicted intent and BIO labels of every utterance, as ``training.slu.predict_slu`` but with the label prefix
    (``precision``: the autocast, as there).

    Rows whose ``spaced`` flags say words were written together (ja/zh) are tokenised as their
    text reads and a character inside a longer sub-token continues its label, as in ``predict_slu``.
    """
    if len(rows) == 0:
        return [], []
    tokens, covering = prediction_tokens(
        rows, encoder, label_tokenisation(encoder, extraction, n_slots), "lajmcl predictions"
    )
    prefixed = prefix_tokens(tokens, n_slots, encoder.tokenizer)
    if covering is not None:  # the label prefix shifts every sub-token
        shift = prefix_shift(n_slots)
        covering = [[None if c is None else c + shift for c in row] for row in covering]
    pad_id = int(encoder.tokenizer.pad_token_id)
    return predict_names(model, prefixed, covering, intent_names, label_names_, pad_id, batch_size, precision)


def lajmcl_intent_vectors(
    model: LAJoint,
    rows: pd.DataFrame | Sequence[Sequence[str]],
    encoder: LoadedEncoder,
    n_slots: int,
    extraction: Mapping[str, Any] | None = None,
    batch_size: int = 64,
) -> np.ndarray:
    """The ``[CLS]`` (intent) representation of every utterance ``(N, D)``: the encoder's output at position 0
    with the label prefix in front (eq. 1), tokenised as :func:`predict_lajmcl` tokenises it (LAJ-MCL Figure 3)."""
    if len(rows) == 0:
        return np.zeros((0, int(model.intent_head.in_features)), dtype=np.float32)
    tokens, _ = prediction_tokens(
        rows, encoder, label_tokenisation(encoder, extraction, n_slots), "lajmcl intent vectors"
    )
    return first_token_states(
        model, prefix_tokens(tokens, n_slots, encoder.tokenizer), int(encoder.tokenizer.pad_token_id), batch_size
    )


def lajmcl_artifact(model: LajMcl, encoder: LoadedEncoder, **extra: Any) -> dict[str, Any]:
    """The trained model as saved: its configs (LAJoint's, with the encoder config, and MCL's), the
    tensors fine-tuning changed (:func:`~language_agnostic.training.slu.trained_state`) and ``extra``."""
    options = asdict(model.config)
    options["encoder_config"] = dict(model.config.encoder_config or model.encoder.config.to_dict())
    options["mcl"] = {
        **{f.name: getattr(model.mcl, f.name) for f in fields(MclConfig)},
        "margins": dict(model.mcl.margins or {}),
    }
    return {
        "build": build_spec("lajoint", int(encoder.hidden_size), 1, options),
        "state_dict": trained_state(model),
        **extra,
    }
