"""``emu`` (``conf/*/parameters_emu.yml``): EMU (Hirota et al. 2020), its ablations and the fine-tuning baselines
on MASSIVE intents: the labelled data, the training, the methods trained, the evaluation and Figure 2.

What reads them: ``pipelines/emu/pipeline.py`` (``methods``, ``only``, ``save_encoders``, ``figure``),
``pipelines/emu/nodes.py`` (``evaluation``, ``figure``), ``training/emu.py`` (``EmuData``, ``method_settings``,
``prepare_emu``), ``methods/emu.py:EmuConfig`` (a method's ``options``), ``training/loop.py:TrainSettings``
(``training``), ``reporting/figures.py:plot_intent_tsne`` and ``methods/apply.py`` (``save_encoders``).

A method's ``data`` and ``training`` override ``emu.data`` / ``emu.training`` key by key: their models take the
same keys, each optional (:func:`overrides`). :class:`Training` (``TrainSettings``' keys) serves ``slu`` too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator

from language_agnostic.corpora.massive import LOCALE_PATTERN
from language_agnostic.evaluation.emu import DIRECTIONS
from language_agnostic.methods.emu import CENTERS, LOSSES, EmuConfig
from language_agnostic.parameters._rules import error_at, matching
from language_agnostic.parameters.base import Section, Word, given, overrides
from language_agnostic.training.emu import TRAINABLE, EmuData
from language_agnostic.training.loop import PRECISIONS, SCHEDULES, TrainSettings

_TRAIN = TrainSettings()  # the defaults of a key left out
_DATA = EmuData()
_CONFIG = EmuConfig(n_intents=2)

Locale = Annotated[str, matching(LOCALE_PATTERN, "a MASSIVE locale code such as 'en-US' or 'ja-JP'")]
Precision = Annotated[Literal[PRECISIONS], *Word.__metadata__]  # YAML reads `mixed_precision: no` as false
Device = Annotated[
    str,
    matching(r"auto|cpu|cuda(:\d+)?", "'auto', 'cpu', 'cuda' or 'cuda:N'"),
    Field(json_schema_extra={"pattern": r"^(auto|cpu|cuda(:\d+)?)$"}),
]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]  # numpy's default_rng and t-SNE's random_state take no other
LossWeight = Annotated[float, Field(ge=0)]
Adversarial = Literal["unlabelled", "parallel"]  # training/emu.py:_adversarial_sets
Pooling = Literal["mean", "cls"]  # methods/emu.py:EmuConfig


# ---------------------------------------------------------------------------- training (TrainSettings)


class Training(Section):
    """``training/loop.py:TrainSettings``: the shared training loop (AdamW, warmup schedule, early stopping on
    dev only)."""

    lr: Annotated[float, Field(gt=0)] = _TRAIN.lr
    """Learning rate of every parameter but the encoder's."""
    encoder_lr: Annotated[float, Field(ge=0)] | None = _TRAIN.encoder_lr
    """Learning rate of a fine-tuned encoder (0: frozen); null: lr."""
    weight_decay: Annotated[float, Field(ge=0)] = _TRAIN.weight_decay
    """Decoupled weight decay (AdamW); 0 is plain Adam."""
    schedule: Literal[SCHEDULES] = _TRAIN.schedule
    """Learning-rate decay after warmup."""
    warmup_ratio: Annotated[float, Field(ge=0, lt=1)] = _TRAIN.warmup_ratio
    """Fraction of the optimiser steps warming up linearly."""
    max_grad_norm: Annotated[float, Field(gt=0)] | None = _TRAIN.max_grad_norm
    """Clip each step's gradient norm to this; null: no clipping."""
    fused: bool = _TRAIN.fused
    """torch's fused Adam/AdamW: the same update, much faster on the CPU."""
    max_epochs: Annotated[int, Field(ge=1)] = _TRAIN.max_epochs
    """Cap on passes over the training batches."""
    patience: Annotated[int, Field(ge=1)] = _TRAIN.patience
    """Evaluations without dev improvement before stopping."""
    min_delta: float = _TRAIN.min_delta
    """An improvement smaller than this does not count."""
    seed: int = _TRAIN.seed
    """Seeds Python, numpy, torch, initialisation and batch order."""
    device: Device = _TRAIN.device
    """cpu, cuda, cuda:N or auto (CUDA when present, else the CPU)."""
    mixed_precision: Precision = _TRAIN.mixed_precision
    """no, bf16 or fp16 autocast; auto: bf16 where native, else no."""
    progress: bool = _TRAIN.progress
    """Show a progress bar."""
    gradient_accumulation_steps: Annotated[int, Field(ge=1)] = _TRAIN.gradient_accumulation_steps
    """Batches whose gradients are summed per optimiser step."""
    eval_every_steps: Annotated[int, Field(ge=1)] | None = _TRAIN.eval_every_steps
    """Evaluate on dev (and maybe stop) every N optimiser steps; null: every epoch."""
    processes: Annotated[int, Field(ge=1)] | None = _TRAIN.processes
    """Data-parallel worker processes; null: the run's processes."""
    keep_initial: bool = _TRAIN.keep_initial
    """The starting weights are epoch 0, kept when no epoch beats them on dev."""


class EmuTraining(Training):
    """``emu.training``: every method's training (``TrainSettings``); selection on the training locale's dev
    nearest-neighbour accuracy only."""


TrainingOverrides = overrides(
    EmuTraining, "EmuTrainingOverrides", "Overrides of emu.training for this method (unset: emu.training's)."
)


# ---------------------------------------------------------------------------- emu.data


class EmuDataBlock(Section):
    """``emu.data`` (``training/emu.py:EmuData``): what EMU trains on."""

    training_locale: Locale = _DATA.training_locale
    """The only labelled locale (the paper: English)."""
    per_intent: Annotated[int, Field(ge=1)] | None = _DATA.per_intent
    """Labelled train sentences per intent (seeded sample); null: all."""
    seed: Seed = _DATA.seed
    """Seeds the labelled sample."""
    adversarial_locales: list[Locale] = list(_DATA.adversarial_locales)
    """Locales whose train utterances (not labels) feed the critic; []: every other locale."""
    adversarial: Adversarial = _DATA.adversarial
    """unlabelled: the critic reads other locales' random train utterances; parallel: the labelled sentences'
    translations."""
    encoder_trainable: Literal[TRAINABLE] = _DATA.encoder_trainable
    """all encoder parameters, or no_embeddings (token embeddings frozen)."""
    batch_size: Annotated[int, Field(ge=1)] = _DATA.batch_size
    """Labelled sentences per step (16 in the paper)."""
    labelled_locales: list[Locale] = list(_DATA.labelled_locales)
    """Locales whose labelled sentences train (same sampled ids; EMU Table 3); []: the training locale."""


DataOverrides = overrides(
    EmuDataBlock, "EmuDataOverrides", "Overrides of emu.data for this method (unset: emu.data's)."
)


# ---------------------------------------------------------------------------- emu.methods


class EmuLossWeights(Section):
    """``emu.methods.<name>.loss_weights``: EMU's λ and γ."""

    center: LossWeight = _CONFIG.center_weight
    """λ of eq. 2, the center loss; 0 is EMU w/o CL."""
    adversarial: LossWeight = _CONFIG.adversarial_weight
    """γ of eq. 4, the language discriminator; 0: EMU w/o LD (no critic)."""


class EmuOptions(Section):
    """``emu.methods.<name>.options``: the other fields of ``methods/emu.py:EmuConfig`` (the paper's settings as
    defaults)."""

    alpha: Annotated[float, Field(gt=0)] = _CONFIG.alpha
    """Radius α of the L2-constrained softmax."""
    critic_steps: Annotated[int, Field(ge=1)] = _CONFIG.critic_steps
    """k: critic updates per encoder step."""
    clip: Annotated[float, Field(gt=0)] = _CONFIG.clip
    """c: the critic's weights are clipped to [-c, c]."""
    critic_lr: Annotated[float, Field(ge=0)] = _CONFIG.critic_lr
    """The critic's Adam learning rate."""
    critic_hidden: Annotated[int, Field(ge=1)] = _CONFIG.critic_hidden
    """Width of the critic's two hidden layers."""
    critic_dropout: Annotated[float, Field(ge=0, le=1)] = _CONFIG.critic_dropout
    """Dropout of the critic."""
    margin: Annotated[float, Field(gt=0)] = _CONFIG.margin
    """The contrastive baseline's margin (Euclidean distance)."""
    scale: Annotated[float, Field(gt=0)] = _CONFIG.scale
    """N-pair's logits are scale · cos (1: unscaled)."""
    centers: Literal[CENTERS] = _CONFIG.centers
    """centroid: the paper's class centroids (moved at center_rate); learned: a parameter from zero."""
    center_rate: Annotated[float, Field(gt=0, le=1)] = _CONFIG.center_rate
    """Wen et al.'s centroid update rate."""
    pooling: Pooling = _CONFIG.pooling
    """The sentence vector: mean (e5's own pooling) or cls."""


class EmuMethod(Section):
    """``emu.methods.<name>``: one fine-tuning (its own nodes, MLflow child run and rows method=<name>)."""

    method: Literal["emu"] = "emu"
    """The only method; the loss picks a baseline."""
    loss: Literal[LOSSES] = _CONFIG.loss
    """emu (L2-constrained softmax, center loss, critic), softmax, contrastive (Siamese) or npair."""
    loss_weights: EmuLossWeights = EmuLossWeights()
    """EMU's λ (center) and γ (adversarial)."""
    options: EmuOptions = EmuOptions()
    """The other EmuConfig settings."""
    training: TrainingOverrides = TrainingOverrides()
    """Overrides of emu.training."""
    data: DataOverrides = DataOverrides()
    """Overrides of emu.data."""
    budget: str | None = None
    """A name of emu.budgets, whose data / training this method's own override; null: none."""

    def needs_critic(self) -> bool:
        """Whether EMU's language critic trains (``training/emu.py:prepare_emu``)."""
        return self.loss == "emu" and self.loss_weights.adversarial > 0


class EmuBudget(Section):
    """``emu.budgets.<name>``: training settings stated once; a method takes them by ``budget: <name>``."""

    data: DataOverrides = DataOverrides()
    """Overrides of emu.data."""
    training: TrainingOverrides = TrainingOverrides()
    """Overrides of emu.training."""


# ---------------------------------------------------------------------------- evaluation, figure


class EmuEvaluation(Section):
    """``emu.evaluation``: nearest-neighbour intent classification on MASSIVE test, leave-one-out."""

    locales: list[Locale] = []
    """The locales evaluated (training locale first); []: massive.locales."""
    directions: Literal[DIRECTIONS] = "training"
    """training: en-en, EN -> *, * -> EN (Table 2); all: every ordered pair (Table 3)."""


class EmuFigure(Section):
    """``emu.figure``: Figure 2, a t-SNE of test sentences, colour = intent, one panel per method."""

    methods: list[str] = []
    """raw and emu.methods names, a panel each (untrained ones left out); []: no figure."""
    locales: list[Locale] = []
    """The locales drawn (markers o, x); []: no figure."""
    n_intents: Annotated[int, Field(ge=1)] = 10
    """The most frequent test intents drawn."""
    per_intent: Annotated[int, Field(ge=1)] = 20
    """Test sentences per intent and locale (same ids in each)."""
    seed: Seed = 0
    """Seeds the sample and t-SNE."""


def _names(value: Any) -> Any:
    """``only: emu`` as ``[emu]`` (an empty value, ``--params=emu.only=``, as null)."""
    if isinstance(value, str):
        return [value] if value else None
    return value


Names = Annotated[
    list[str] | None,
    BeforeValidator(_names),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}, {"type": "null"}]}),
]


# ---------------------------------------------------------------------------- the section


class Emu(Section):
    """EMU (Hirota et al., AAAI 2020) on MASSIVE intents: the encoder fine-tuned with the training locale's labels
    only, every other configured locale evaluated. The methods trained are read when the pipeline is built."""

    data: EmuDataBlock
    """What every method trains on."""
    training: EmuTraining
    """Every method's training."""
    methods: dict[str, EmuMethod] = {"emu": EmuMethod()}
    """Every fine-tuning, by name; empty: EMU alone."""
    budgets: dict[str, EmuBudget] = {}
    """Named training settings a method takes by budget: <name>."""
    evaluation: EmuEvaluation
    """Nearest-neighbour intent classification on MASSIVE test."""
    save_encoders: list[str] = []
    """Methods whose fine-tuned encoder is saved (data/06_models/emu/)."""
    only: Names = None
    """Train and report only these methods (and raw); null or []: every method."""
    figure: EmuFigure
    """Figure 2: t-SNE of test sentences."""

    @model_validator(mode="after")
    def _methods_agree(self) -> Emu:
        methods = self.methods or {"emu": EmuMethod()}
        for key in ("only", "save_encoders"):
            missing = [n for n in getattr(self, key) or [] if n not in methods]
            if missing:
                raise error_at((key,), f"names {missing} not in emu.methods {sorted(methods)}", getattr(self, key))
        for name, method in methods.items():
            if method.budget is not None and method.budget not in self.budgets:
                raise error_at(
                    ("methods", name, "budget"), f"must be one of emu.budgets {sorted(self.budgets)}", method.budget
                )
            labelled = given(method.data, "labelled_locales", self.data)
            if method.needs_critic() and len(labelled) > 1:
                # training/emu.py:prepare_emu: one critic D_t per labelled language is not built
                raise error_at(
                    ("methods", name, "data", "labelled_locales"),
                    "several labelled locales and EMU's critic (one per language, Algorithm 1) are not built "
                    "together: set loss_weights.adversarial: 0 (EMU w/o LD, as the paper's Table 3)",
                    labelled,
                )
        return self


SECTIONS: dict[str, type[Section]] = {"emu": Emu}
