"""Fine-tuning the joint intent / slot model on English MASSIVE (zsjoint), optionally code-switched (cosda).

Protocol (strict zero-shot): train on the training locale's train split (en-US); the checkpoint
kept is the one with the best semantic **exact match** (intent and every slot label right) on
the same locale's **dev** split, and nothing of another locale is seen before the test. The
encoder is a copy: the loaded one is never modified.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ParamSpec

import numpy as np
import pandas as pd
import torch

from language_agnostic.corpora.massive_slu import label_vocabulary
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.slu import exact_match, slu_scores
from language_agnostic.methods.registry import build_spec
from language_agnostic.methods.slu import JointSlu, SluConfig, slu_losses
from language_agnostic.text.code_switch import CodeSwitcher
from language_agnostic.training.finetune import (
    FineTuning,
    freeze_below,
    kept_checkpoint_info,
    prepared_trainer,
    split_loss_weights,
    timed_training,
    trained_state,
)
from language_agnostic.training.loop import TrainResult, TrainSettings, train
from language_agnostic.training.slu_data import (
    SluBatches,
    WordTokens,
    labels_of,
    partition_rows,
    tokenise_words,
    word_tokenisation,
    words_of,
)
from language_agnostic.training.slu_predict import predict_ids, predict_slu

logger = logging.getLogger(__name__)
P = ParamSpec("P")
Dictionaries = Mapping[str, Mapping[str, Sequence[str]]]  # language → MUSE dictionary (word → translations)

DEV_LOSS_ROWS = 256  # the dev loss is only a curve in the history; selection is on the whole dev split's exact match
REQUIRED_COLUMNS = ("locale", "id", "partition", "intent", "words", "labels")


@dataclass(frozen=True)
class SluData:
    """``slu.data``: what the joint model trains and is selected on.

    Attributes:
        training_locale: The labelled locale (en-US): its train split is the training data.
        dev_locale: Whose dev split selects the checkpoint; ``None``: the training locale
            (strict zero-shot: never a target locale's dev).
        batch_size: Utterances per step.
        max_train: ``None``: the whole train split; an int: a seeded sample of that many.
        seed: Seeds the ``max_train`` sample.
        code_switch: ``None`` (zsjoint), or ``{ratio, languages, seed, keep_source}`` (cosda):
            every word of every training utterance is replaced, with probability ``ratio``, by a
            translation into one of ``languages`` (their MUSE dictionaries), anew every epoch;
            ``keep_source``: each batch also holds the utterances as they are.
        group_by_length: Training batches of utterances of similar length (less padding; see
            :class:`~language_agnostic.training.slu_data.SluBatches`).
    """

    training_locale: str = "en-US"
    dev_locale: str | None = None
    batch_size: int = 32
    max_train: int | None = None
    seed: int = 0
    code_switch: Mapping[str, Any] | None = None
    group_by_length: bool = False


@dataclass(frozen=True)
class CodeSwitchSettings:
    """``slu.data.code_switch``: CoSDA-ML's switching ratio, target languages and seed, and
    whether the English utterances are trained on beside their switched versions (``keep_source``)."""

    ratio: float
    languages: tuple[str, ...]
    seed: int = 0
    keep_source: bool = False


def code_switch_settings(params: Mapping[str, Any], where: str = "slu.data.code_switch") -> CodeSwitchSettings:
    """``{ratio, languages, seed, keep_source}`` as settings (their keys and values are checked by
    ``parameters/slu.py:CodeSwitch`` when the run starts).

    Raises:
        ValueError: no language to switch into (``slu.code_switch.languages: []`` and no MUSE dictionary of a
            language of ``slu.locales``), naming ``where``.
    """
    params = dict(params)
    if not params.get("languages"):
        raise ValueError(f"{where}.languages must be a non-empty list of languages, got {params.get('languages')!r}")
    return CodeSwitchSettings(
        **{**params, "languages": tuple(str(x) for x in params["languages"]), "ratio": float(params["ratio"])}
    )


Predict = Callable[[torch.nn.Module, pd.DataFrame, str], tuple[list[str], list[list[str]]]]


@dataclass
class SluRun:
    """Everything one SLU fine-tuning (joint or label-aware) hands to the shared loop (:func:`fine_tune`):
    the model, batches, settings, dev scorer, loss weights and info, the loop's ``loss_fn``, the dev
    split's ``predict(model, rows, precision)`` and the dev rows it is scored on after training."""

    model: torch.nn.Module
    train_data: Any  # SluBatches or LajBatches: batches(epoch, generator) and truncated_by_epoch
    dev_data: Any
    settings: TrainSettings
    dev_score: Callable[[torch.nn.Module], float]
    loss_weights: dict[str, float]
    info: dict[str, Any]
    loss_fn: Callable[[torch.nn.Module, Mapping[str, torch.Tensor]], dict[str, torch.Tensor]]
    predict: Callable[[torch.nn.Module, pd.DataFrame, str], tuple[list[str], list[list[str]]]]
    dev_rows: pd.DataFrame


def fine_tune(run: SluRun) -> tuple[TrainResult, dict[str, Any]]:
    """The SLU fine-tuning every variant shares: ``run`` trained with its ``loss_fn`` (kept at its
    best dev exact match), then its dev rows predicted as the test will be, and their scores
    recorded (:func:`kept_checkpoint_info`)."""
    info = run.info
    result, seconds = timed_training(
        lambda: train(run.model, run.loss_fn, run.train_data, run.dev_data, run.settings, run.dev_score)
    )
    info["mixed_precision"] = run.settings.mixed_precision  # test is predicted as dev was scored (evaluate_slu_variant)
    predicted, predicted_labels = run.predict(run.model, run.dev_rows, run.settings.mixed_precision)
    scores = slu_scores(run.dev_rows["intent"].tolist(), predicted, labels_of(run.dev_rows), predicted_labels)
    truncated = sum(run.train_data.truncated_by_epoch.values())
    return result, kept_checkpoint_info(info, result, scores, seconds, truncated, info["name"])


def slu_trainer(prepare: Callable[P, SluRun]) -> Callable[P, tuple[torch.nn.Module, TrainResult, dict[str, Any]]]:
    """A ``train_*`` function taking ``prepare``'s arguments: its run fine-tuned by :func:`fine_tune`.

    The function returns ``(model, result, info)``: the model at its best dev exact match, the
    loop's result, and what was trained on (intents and labels in id order, sizes, truncation
    counts, the code-switching) with the kept checkpoint's ``dev_intent_accuracy``,
    ``dev_slot_f1`` and ``dev_exact_match`` and the training's seconds (:func:`kept_checkpoint_info`).
    """
    return prepared_trainer(prepare, fine_tune)


def _method_config(
    method: Mapping[str, Any], name: str, n_intents: int, n_labels: int, encoder: LoadedEncoder
) -> tuple[SluConfig, dict[str, float]]:
    fields, weights = split_loss_weights(method)
    config = SluConfig(**fields, n_intents=n_intents, n_labels=n_labels, encoder_config=encoder.model.config.to_dict())
    return config, {k: float(v) for k, v in weights.items()}


def code_switcher(
    settings: SluData, dictionaries: Dictionaries | None
) -> tuple[CodeSwitcher | None, CodeSwitchSettings | None]:
    """The CoSDA-ML switcher of ``slu.data.code_switch`` and its settings; ``(None, None)`` without switching.

    Raises:
        ValueError: a configured language without a MUSE dictionary (naming the parameter).
    """
    if settings.code_switch is None:
        return None, None
    switch = code_switch_settings(settings.code_switch)
    missing = [lang for lang in switch.languages if lang not in (dictionaries or {})]
    if missing:
        raise ValueError(
            f"slu.data.code_switch.languages: no dictionary for {missing} "
            f"(dictionaries given: {sorted(dictionaries or {})})"
        )
    assert dictionaries is not None
    return CodeSwitcher({lang: dictionaries[lang] for lang in switch.languages}, switch.ratio, switch.seed), switch


def switch_info(switch: CodeSwitchSettings | None) -> dict[str, Any] | None:
    """The code-switching a fine-tuning trained with, as its info and artifact record it (``None``: none)."""
    if switch is None:
        return None
    return {
        "ratio": switch.ratio,
        "languages": list(switch.languages),
        "seed": switch.seed,
        "keep_source": switch.keep_source,
    }


@dataclass(frozen=True)
class SluSplit:
    """What every SLU fine-tuning trains and selects on (:func:`slu_split`)."""

    data: SluData
    settings: TrainSettings
    train_rows: pd.DataFrame
    dev_rows: pd.DataFrame
    dev_locale: str
    intents: list[str]
    labels: list[str]
    train_layers: int | None = None

    def dev_loss_rows(self) -> pd.DataFrame:
        """The dev loss's utterances (a curve in the history): the first :data:`DEV_LOSS_ROWS` dev
        utterances whose intent and labels were all trained.

        Raises:
            ValueError: none is, naming ``slu.data.dev_locale``.
        """
        intents, labels = set(self.intents), set(self.labels)
        rows = self.dev_rows
        known = rows[
            [
                intent in intents and all(str(x) in labels for x in row)
                for intent, row in zip(rows["intent"], rows["labels"])
            ]
        ].reset_index(drop=True)
        if known.empty:
            raise ValueError(
                f"slu.data.dev_locale {self.dev_locale!r}: no dev utterance has a trained intent and trained labels"
            )
        return known.iloc[:DEV_LOSS_ROWS]

    def dev_tokens(self, encoder: LoadedEncoder, tokenisation: Any, name: str) -> WordTokens:
        """The whole dev split tokenised with ``tokenisation`` (too long: truncated), for :meth:`dev_scorer`."""
        return tokenise_words(
            encoder.tokenizer, words_of(self.dev_rows), tokenisation, on_too_long="truncate", what=f"slu {name} dev"
        )

    def dev_scorer(self, tokens: WordTokens, pad_id: int, batch_size: int = 64) -> Callable[[torch.nn.Module], float]:
        """The selection criterion: exact match on the whole dev split, ``tokens`` its tokenisation
        (utterances of untrained intents or labels count as misses; higher is better)."""
        gold_intents, gold_labels = self.dev_rows["intent"].tolist(), labels_of(self.dev_rows)
        intents, labels, fill = self.intents, self.labels, self.labels.index("O")

        def dev_score(model: torch.nn.Module) -> float:
            predicted, predicted_labels = predict_ids(model, tokens, pad_id, batch_size, fill)
            return exact_match(
                gold_intents,
                [intents[i] for i in predicted],
                gold_labels,
                [[labels[j] for j in row] for row in predicted_labels],
            )

        return dev_score


def slu_split(table: pd.DataFrame, data: Mapping[str, Any], training: Mapping[str, Any]) -> SluSplit:
    """``slu.data`` and ``slu.training`` as settings (checked by ``parameters/slu.py`` when the run starts);
    the training locale's train rows (a seeded ``max_train`` sample) and the dev locale's dev rows; the
    intents and BIO labels trained.

    Raises:
        ValueError: a missing column, a split without rows or fewer than 2 intents, naming the parameter.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"slu table: missing column(s) {missing} (has {list(table.columns)})")
    settings_data = SluData(**data)
    training = dict(training)
    train_layers = training.pop("train_layers", None)  # the encoder's, not the loop's: applied by freeze_below
    settings = TrainSettings(**training)
    dev_locale = settings_data.dev_locale or settings_data.training_locale
    train_rows = partition_rows(table, settings_data.training_locale, "train")
    if train_rows.empty:
        raise ValueError(f"slu.data.training_locale {settings_data.training_locale!r}: no train utterances")
    dev_rows = partition_rows(table, dev_locale, "dev")
    if dev_rows.empty:
        raise ValueError(f"slu.data.dev_locale {dev_locale!r}: no dev utterances")
    if settings_data.max_train is not None and settings_data.max_train < len(train_rows):
        keep = np.sort(
            np.random.default_rng(settings_data.seed).permutation(len(train_rows))[: settings_data.max_train]
        )
        train_rows = train_rows.iloc[keep].reset_index(drop=True)
    intents = sorted(set(train_rows["intent"]))
    if len(intents) < 2:
        raise ValueError(f"slu.data: the training utterances have {len(intents)} intent(s); a classifier needs 2")
    return SluSplit(
        settings_data, settings, train_rows, dev_rows, dev_locale, intents, label_vocabulary(train_rows), train_layers
    )


def slu_batches(
    make: Callable[..., Any],
    split: SluSplit,
    encoder: LoadedEncoder,
    extraction: Mapping[str, Any] | None,
    switch: tuple[CodeSwitcher | None, CodeSwitchSettings | None],
    ignore_index: int,
    name: str,
    **train_options: Any,
) -> tuple[Any, Any, pd.DataFrame]:
    """The training batches (shuffled, code-switched as ``switch`` says) and the dev-loss batches of
    ``split``, both built by ``make`` (``SluBatches``, or ``LajBatches`` with its slots), and the
    dev-loss rows; ``train_options`` go to the training batches only."""
    switcher, settings = switch
    intent_index = {intent: i for i, intent in enumerate(split.intents)}
    label_to_id = {label: i for i, label in enumerate(split.labels)}

    def batches(rows: pd.DataFrame, **options: Any) -> Any:
        intents = rows["intent"].map(intent_index).tolist()
        return make(encoder, words_of(rows), labels_of(rows), intents, label_to_id, extraction=extraction, **options)

    train_data = batches(
        split.train_rows,
        batch_size=split.data.batch_size,
        shuffle=True,
        switcher=switcher,
        switch_seed=settings.seed if settings else 0,
        ignore_index=ignore_index,
        what=f"slu {name} train",
        keep_source=bool(settings and settings.keep_source),
        group_by_length=split.data.group_by_length,
        **train_options,
    )
    known = split.dev_loss_rows()
    dev_data = batches(known, batch_size=64, shuffle=False, ignore_index=ignore_index, what=f"slu {name} dev")
    return train_data, dev_data, known


def prepare_slu(
    table: pd.DataFrame, encoder: LoadedEncoder, variant: FineTuning, dictionaries: Dictionaries | None = None
) -> SluRun:
    """The model, batches, settings and dev scorer of one joint SLU fine-tuning (:func:`train_slu` trains it).

    Args:
        table: SLU rows (``locale, id, partition, intent, words, labels``: ``corpora.massive_slu.slu_table``).
        encoder: The encoder to start from (not modified: a copy is trained).
        variant: Its ``method``: ``slu.methods.<name>`` settings: :class:`~language_agnostic.methods.slu.SluConfig`
            fields but the derived ``n_intents``, ``n_labels``, ``encoder_config`` (i.e.
            ``dropout``, ``ignore_index``), and ``loss_weights`` (``intent``, ``slot``); ``data``:
            :class:`SluData` fields; ``training``: ``TrainSettings`` fields (``lr`` for the heads, ``encoder_lr``,
            ``weight_decay``, ``schedule``, ``warmup_ratio``, ...) and ``train_layers`` (:func:`freeze_below`).
        dictionaries: Language → MUSE dictionary (``text.code_switch.load_muse``), for ``data.code_switch``.
    """
    method, extraction, name = variant.method, variant.extraction, variant.name
    split = slu_split(table, variant.data, variant.training)
    settings_data, settings, train_rows, dev_rows = split.data, split.settings, split.train_rows, split.dev_rows
    intents, labels, dev_locale = split.intents, split.labels, split.dev_locale
    config, weights = _method_config(method, name, len(intents), len(labels), encoder)
    switcher, switch = code_switcher(settings_data, dictionaries)
    train_data, dev_data, known = slu_batches(
        SluBatches, split, encoder, extraction, (switcher, switch), config.ignore_index, name
    )
    # selection: exact match on the whole dev split (utterances of untrained intents or labels count as misses)
    dev_tokens = split.dev_tokens(encoder, word_tokenisation(encoder, extraction), name)
    dev_score = split.dev_scorer(dev_tokens, int(encoder.tokenizer.pad_token_id))

    torch.manual_seed(settings.seed)
    model = JointSlu(copy.deepcopy(encoder.model), int(encoder.model.config.hidden_size), config)
    parameters = freeze_below(model.encoder, split.train_layers)
    info: dict[str, Any] = {
        "name": name,
        "intents": intents,
        "labels": labels,
        "training_locale": settings_data.training_locale,
        "dev_locale": dev_locale,
        "n_train": len(train_rows),
        "n_dev": len(dev_rows),
        "n_dev_loss": len(known),
        "loss_weights": {"intent": 1.0, "slot": 1.0, **weights},
        "code_switch": switch_info(switch),
        "n_truncated": {"train": train_data.n_truncated, "dev": int(dev_tokens.truncated.sum())},
        "dev_words_cut": int(dev_tokens.words_cut.sum()),
        "train_layers": split.train_layers,
        "encoder_parameters": parameters,
    }
    if switcher is not None:
        info["code_switch"]["coverage"] = switcher.coverage(train_data.words)
    log_training_data("slu", info, **{"encoder lr": settings.encoder_lr})

    def predict(model: torch.nn.Module, rows: pd.DataFrame, precision: str) -> tuple[list[str], list[list[str]]]:
        return predict_slu(model, rows, encoder, intents, labels, extraction, precision=precision)

    loss_fn = functools.partial(slu_losses, weights=weights)
    return SluRun(model, train_data, dev_data, settings, dev_score, weights, info, loss_fn, predict, dev_rows)


def log_training_data(kind: str, info: Mapping[str, Any], **details: Any) -> None:
    """One log line on what an SLU / LAJoint fine-tuning trains on (its ``info``), then ``details``."""
    logger.info(
        "%s %s: %d %s train utterances (%d intents, %d labels), dev %s (%d), code-switch %s%s",
        kind,
        info["name"],
        info["n_train"],
        info["training_locale"],
        len(info["intents"]),
        len(info["labels"]),
        info["dev_locale"],
        info["n_dev"],
        info["code_switch"],
        "".join(f", {key} {value}" for key, value in details.items()),
    )


train_slu = slu_trainer(prepare_slu)
train_slu.__name__ = train_slu.__qualname__ = "train_slu"
train_slu.__doc__ = f"""Fine-tune a copy of ``encoder`` as a joint intent / slot model, selected on dev exact match.

Arguments: :func:`prepare_slu`'s. {slu_trainer.__doc__.split(chr(10), 2)[2].strip()}"""


def slu_artifact(model: JointSlu, encoder: LoadedEncoder, **extra: Any) -> dict[str, Any]:
    """The trained model as saved: its build spec (``methods.registry``, with the encoder config),
    weights and ``extra``.
    """
    options = asdict(model.config)
    options["encoder_config"] = dict(model.config.encoder_config or model.encoder.config.to_dict())
    return {
        "build": build_spec("slu", int(encoder.hidden_size), 1, options),
        "state_dict": trained_state(model),
        **extra,
    }
