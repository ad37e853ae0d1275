"""``slu`` (``conf/*/parameters_slu.yml``): zero-shot cross-lingual SLU on MASSIVE: the locales read, the data, the
CoSDA-ML code-switching, the training, LAJ-MCL's Figure 3, the budgets and the methods trained.

What reads them: ``pipelines/slu/pipeline.py`` (``methods``, ``figure``), ``pipelines/slu/nodes.py``
(``locales``, ``method_key``, ``grid_methods``, ``train_slu_variant``: how ``code_switch`` reaches a method),
``training/slu_methods.py`` (``method_settings``, ``method_kind``), ``training/slu.py`` (``SluData``,
``code_switch_settings``, ``slu_split``: ``training.train_layers``), ``training/lajmcl.py`` (``method_config``:
a ``lajoint`` method's options, ``MclData``, ``mcl_levels``), ``methods/slu.py:SluConfig``,
``methods/lajoint.py:LajointConfig``, ``methods/lajmcl.py:MclConfig``, ``training/loop.py:TrainSettings``,
``text/code_switch.py:code_switch_languages`` and ``reporting/figures.py:parallel_intent_sample``.

A method's ``data`` and ``training`` override ``slu.data`` / ``slu.training`` key by key (each key optional);
``budget: <name>`` puts ``slu.budgets.<name>`` under them (``pipelines/config_loader.py`` expands it when
``conf/`` is loaded, so a run's parameters hold no ``budget`` key).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from language_agnostic.methods.lajmcl import AFFINITIES, DEFAULT_LAMBDA, DEFAULT_MARGIN, MclConfig
from language_agnostic.methods.lajmcl import WEIGHTS as LAJOINT_WEIGHTS
from language_agnostic.methods.lajoint import ABSTRACT_TEXTS, LajointConfig
from language_agnostic.methods.registry import SLU_METHODS
from language_agnostic.methods.slu import WEIGHTS as SLU_WEIGHTS
from language_agnostic.methods.slu import SluConfig
from language_agnostic.parameters._rules import NonEmpty, error_at, matching
from language_agnostic.parameters.base import Section, given, overrides
from language_agnostic.parameters.emu import Locale, Seed, Training
from language_agnostic.training.lajmcl import MCL_LEVELS, MclData
from language_agnostic.training.slu import SluData

_DATA = SluData()  # the defaults of a key left out
_SLU = SluConfig(n_intents=2, n_labels=1)
_LAJOINT = LajointConfig(n_intents=2, slots=("slot",))
_MCL = MclConfig()
_MCL_DATA = MclData()

Finite = Field(allow_inf_nan=False)
LossWeight = Annotated[float, Field(ge=0)]
# pipelines/slu/nodes.py:METHOD_NAME: a name becomes node and dataset names ('-' -> '_', '+' -> '_plus_')
METHOD_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_+-]*"
MethodName = Annotated[str, matching(METHOD_NAME_PATTERN, "a method name: letters, digits, '_', '-' and '+' only")]


def _plain(value: Any) -> Any:
    """A value as the YAML gave it (a block as its mapping), for a message."""
    return value.model_dump(exclude_unset=True) if isinstance(value, Section) else value


def method_key(name: str) -> str:
    """A method's name as its node and dataset names hold it (``pipelines/slu/nodes.py:method_key``)."""
    return name.replace("-", "_").replace("+", "_plus_")


# ---------------------------------------------------------------------------- slu.data, slu.code_switch


class SluDataBlock(Section):
    """``slu.data`` (``training/slu.py:SluData``): what the model trains and is selected on (strict zero-shot)."""

    training_locale: Locale = _DATA.training_locale
    """Its train split trains, its dev split selects the checkpoint."""
    dev_locale: Locale | None = _DATA.dev_locale
    """Whose dev split selects the checkpoint; null: the training locale's."""
    batch_size: Annotated[int, Field(ge=1)] = _DATA.batch_size
    """Utterances per step."""
    group_by_length: bool = _DATA.group_by_length
    """Batches of utterances of similar length (less padding)."""
    max_train: Annotated[int, Field(ge=1)] | None = _DATA.max_train
    """A seeded sample of this many train utterances; null: all."""
    seed: Seed = _DATA.seed
    """Seeds the max_train sample."""


class CodeSwitch(Section):
    """``slu.code_switch``: CoSDA-ML (Qin et al. 2020) for the methods with code_switch: true."""

    ratio: Annotated[float, Field(ge=0, le=1)]
    """Per-word replacement probability (every sentence is switched)."""
    languages: list[NonEmpty] = []
    """MUSE dictionaries (muse/en-<xx>.txt); []: those of slu.locales' languages."""
    seed: Seed = 0
    """With each epoch's seed: a new switch every epoch, the same every run."""
    keep_source: bool = False
    """Batches hold the English beside the switched utterances; false: switched only."""


_CodeSwitchOverrides = overrides(CodeSwitch, "_CodeSwitchOverrides", "")


class CodeSwitchOverrides(_CodeSwitchOverrides):
    """Overrides of slu.code_switch for this method (unset: slu.code_switch's)."""

    languages: Annotated[list[NonEmpty], Field(min_length=1)] = None
    """MUSE languages switched into (loaded by slu.code_switch); unset: all loaded."""


_SluDataOverrides = overrides(SluDataBlock, "_SluDataOverrides", "")


class SluDataOverrides(_SluDataOverrides):
    """Overrides of slu.data for this method (unset: slu.data's)."""

    code_switch: CodeSwitchOverrides = CodeSwitchOverrides()
    """Overrides of slu.code_switch (with code_switch: true)."""


# ---------------------------------------------------------------------------- slu.training


class SluTraining(Training):
    """``slu.training``: ``TrainSettings`` (AdamW, linear decay after warmup) and the encoder layers that train;
    selection on the training locale's dev exact match."""

    train_layers: Annotated[int, Field(ge=0)] | None = None
    """Only the top N encoder layers train; null: every layer."""


TrainingOverrides = overrides(
    SluTraining, "SluTrainingOverrides", "Overrides of slu.training for this method (unset: slu.training's)."
)


# ---------------------------------------------------------------------------- slu.methods


class SluLossWeights(Section):
    """``slu.methods.<name>.loss_weights``: the joint loss's weights and, for lajoint, MCL's λ1-λ3 (a level is on
    when its weight is > 0)."""

    intent: LossWeight = 1.0
    """w_I: the intent loss."""
    slot: LossWeight = 1.0
    """w_S: the slot loss."""
    utterance: LossWeight = DEFAULT_LAMBDA
    """λ1: utterance-level CL (lajoint only)."""
    slot_value: LossWeight = DEFAULT_LAMBDA
    """λ2: slot-level CL (lajoint only)."""
    word: LossWeight = DEFAULT_LAMBDA
    """λ3: word-level CL (lajoint only)."""


class Margins(Section):
    """``slu.methods.<name>.options.margins``: MCL's margins r_u, r_s, r_w (``MclConfig.margins``)."""

    utterance: Annotated[float, Field(ge=0), Finite] = DEFAULT_MARGIN
    """r_u, the utterance level's."""
    slot_value: Annotated[float, Field(ge=0), Finite] = DEFAULT_MARGIN
    """r_s, the slot level's."""
    word: Annotated[float, Field(ge=0), Finite] = DEFAULT_MARGIN
    """r_w, the word level's."""


class MclOptions(Section):
    """``slu.methods.<name>.options.mcl`` (``training/lajmcl.py:MclData``): how MCL's negatives are made."""

    slot_negatives: Annotated[int, Field(ge=1)] = _MCL_DATA.slot_negatives
    """N_s: negative utterances per utterance (slot level)."""
    word_negatives: Annotated[int, Field(ge=1)] = _MCL_DATA.word_negatives
    """N_w: negatives per slot word (word level)."""
    p_v: Annotated[int, Field(ge=0)] = _MCL_DATA.p_v
    """Frequent values per slot (B_k; Table 6's grid {0, 10, 20})."""
    p_s: Annotated[int, Field(ge=1)] = _MCL_DATA.p_s
    """Similar slots per slot (Table 6's grid {5, 10})."""
    init_layers: Annotated[int, Field(ge=1)] = _MCL_DATA.init_layers
    """Bottom encoder layers the label embeddings are initialised from."""
    pool_values: Annotated[int, Field(ge=1)] | None = _MCL_DATA.pool_values
    """Frequent values per similar slot in the negative pool V_k; null: p_v (Algorithm 1)."""


class SluOptions(Section):
    """``slu.methods.<name>.options``: the model's settings. slu (``SluConfig``): dropout, ignore_index; lajoint
    (``LajointConfig``, ``MclConfig``, ``MclData``): every key."""

    dropout: Annotated[float, Field(ge=0, lt=1)] = _SLU.dropout
    """Dropout on the encoder's outputs before the heads."""
    ignore_index: Annotated[int, Field(lt=0)] = _SLU.ignore_index
    """The slot label id the loss skips (negative)."""
    compressor: bool = _LAJOINT.compressor
    """The label compressor (eq. 2-3); false: a plain average (Table 4's - compressor)."""
    projector: bool = _LAJOINT.projector
    """The projector (eq. 4-5); false: H = E (Table 4's - projector)."""
    abstract_texts: Annotated[list[str], Field(min_length=3, max_length=3)] = list(ABSTRACT_TEXTS)
    """The texts s_O, s_B, s_I are initialised from."""
    margins: Margins = Margins()
    """MCL's margins."""
    head_dim: Annotated[int, Field(ge=1)] | None = _MCL.head_dim
    """Width of MCL's projection heads g_u, g_s, g_w; null: the encoder's."""
    slot_temperature: Annotated[float, Field(gt=0), Finite] = _MCL.slot_temperature
    """τ_s dividing eq. 10's affinities (1: the paper as printed)."""
    slot_affinity: Literal[AFFINITIES] = _MCL.slot_affinity
    """dot (eq. 10 as printed) or cosine."""
    mcl: MclOptions = MclOptions()
    """How MCL's negatives are made."""


# what a `method: slu` entry takes (methods/slu.py: SluConfig's fields but the derived ones, its weights)
SLU_OPTIONS = tuple(f.name for f in fields(SluConfig) if f.name in SluOptions.model_fields)
LAJOINT_ONLY_OPTIONS = tuple(k for k in SluOptions.model_fields if k not in SLU_OPTIONS)
LAJOINT_ONLY_WEIGHTS = tuple(k for k in LAJOINT_WEIGHTS if k not in SLU_WEIGHTS)


class SluMethod(Section):
    """``slu.methods.<name>``: one model trained (its own train / evaluate nodes, MLflow child run and rows
    method=<name>)."""

    method: Literal[SLU_METHODS] = "slu"
    """slu: the joint baseline (ZSJoint, CoSDA-ML); lajoint: LAJoint / LAJ-MCL."""
    code_switch: bool = False
    """Trained on CoSDA-ML code-switched English (slu.code_switch)."""
    loss_weights: SluLossWeights = SluLossWeights()
    """The loss weights."""
    options: SluOptions = SluOptions()
    """The model's settings (lajoint: and MCL's)."""
    training: TrainingOverrides = TrainingOverrides()
    """Overrides of slu.training."""
    data: SluDataOverrides = SluDataOverrides()
    """Overrides of slu.data (and of slu.code_switch)."""
    budget: str | None = None
    """A name of slu.budgets, whose data / training this method's own override; null: none."""

    def mcl_levels(self) -> list[str]:
        """The MCL levels on (weighted > 0; ``training/lajmcl.py:mcl_levels``)."""
        if self.method != "lajoint":
            return []
        return [level for level in MCL_LEVELS if getattr(self.loss_weights, level) > 0]

    @model_validator(mode="after")
    def _consistent(self) -> SluMethod:
        if self.method == "slu":
            for block, only, takes in (
                ("options", LAJOINT_ONLY_OPTIONS, SLU_OPTIONS),
                ("loss_weights", LAJOINT_ONLY_WEIGHTS, SLU_WEIGHTS),
            ):
                for key in only:
                    if key in getattr(self, block).model_fields_set:
                        raise error_at(
                            (block, key),
                            f"is method lajoint's only; method slu takes {block} {list(takes)}",
                            _plain(getattr(getattr(self, block), key)),
                        )
        if "code_switch" in self.data.model_fields_set and not self.code_switch:
            raise error_at(
                ("data", "code_switch"),
                "takes effect with code_switch: true only",
                self.data.code_switch.model_dump(exclude_unset=True),
            )
        mcl = self.options.mcl
        if "slot_value" in self.mcl_levels() and (mcl.p_v if mcl.pool_values is None else mcl.pool_values) == 0:
            # training/lajmcl.py:slot_level_negatives
            raise error_at(
                ("options", "mcl", "p_v"),
                "0 with pool_values null leaves every negative pool V_k empty (Algorithm 1, line 8): set "
                "mcl.pool_values (Table 6's p_v = 0: slots described by name only)",
                mcl.p_v,
            )
        return self


class SluBudget(Section):
    """``slu.budgets.<name>``: training settings stated once; a method takes them by ``budget: <name>`` and its
    own keys merge over them."""

    data: SluDataOverrides = SluDataOverrides()
    """Overrides of slu.data."""
    training: TrainingOverrides = TrainingOverrides()
    """Overrides of slu.training."""


class SluFigure(Section):
    """``slu.figure``: LAJ-MCL Figure 3, a t-SNE of [CLS] of parallel test utterances of one intent, one panel per
    method."""

    methods: list[str] = []
    """slu.methods names, a panel each (unknown ones left out); []: no figure."""
    intent: NonEmpty = "play_music"
    """The intent whose parallel test utterances are drawn."""
    n_utterances: Annotated[int, Field(ge=1)] = 100
    """Parallel utterances drawn (seeded)."""
    locales: list[Locale] = []
    """The locales drawn (one colour each); []: slu.locales."""
    seed: Seed = 0
    """Seeds the sample and t-SNE."""


# ---------------------------------------------------------------------------- the section


class Slu(Section):
    """Zero-shot cross-lingual SLU on MASSIVE: joint intent + slot models fine-tuned on the training locale only,
    the checkpoint chosen on its dev exact match, tested on every locale. The methods trained are read when the
    pipeline is built."""

    locales: Annotated[list[Locale], Field(min_length=1)]
    """The training and test locales (read from the MASSIVE archive for slu alone)."""
    data: SluDataBlock
    """What every method trains on."""
    code_switch: CodeSwitch
    """CoSDA-ML code-switching, for the methods with code_switch: true."""
    training: SluTraining
    """Every method's training."""
    figure: SluFigure = SluFigure()
    """Figure 3: t-SNE of [CLS] of parallel test utterances."""
    budgets: dict[str, SluBudget] = {}
    """Named training settings a method takes by budget: <name>."""
    methods: dict[MethodName, SluMethod] = {"zsjoint": SluMethod(), "cosda": SluMethod(code_switch=True)}
    """Every model trained, by name; empty: zsjoint and cosda."""

    @model_validator(mode="after")
    def _methods_agree(self) -> Slu:
        locales = self.locales
        if self.data.training_locale not in locales:  # pipelines/slu/nodes.py:parse_slu_locales
            raise error_at(
                ("data", "training_locale"), f"must be one of slu.locales {locales}", self.data.training_locale
            )
        if self.figure.methods and any(loc not in locales for loc in self.figure.locales):
            raise error_at(("figure", "locales"), f"must be among slu.locales {locales}", self.figure.locales)
        keys: dict[str, str] = {}
        for name, method in self.methods.items():
            key = method_key(name)
            if key in keys:
                raise error_at(
                    ("methods", name), f"becomes the node name {key!r} as {keys[key]!r} does: rename one", name
                )
            keys[key] = name
            if method.budget is not None and method.budget not in self.budgets:
                raise error_at(
                    ("methods", name, "budget"), f"must be one of slu.budgets {sorted(self.budgets)}", method.budget
                )
            for key_name in ("training_locale", "dev_locale"):
                locale = given(method.data, key_name, self.data)
                if locale is not None and locale not in locales:
                    raise error_at(("methods", name, "data", key_name), f"must be one of slu.locales {locales}", locale)
            on = method.mcl_levels()
            switch = method.data.code_switch
            keep_source = (
                switch.keep_source if "keep_source" in switch.model_fields_set else self.code_switch.keep_source
            )
            if on and not (method.code_switch and keep_source):  # training/lajmcl.py:mcl_levels
                raise error_at(
                    ("methods", name, "loss_weights"),
                    f"the MCL levels weighted > 0 (unset: {DEFAULT_LAMBDA}) need code_switch: true with keep_source: "
                    f"true; for LAJoint without MCL set them to 0",
                    {level: getattr(method.loss_weights, level) for level in on},
                )
        return self


SECTIONS: dict[str, type[Section]] = {"slu": Slu}
