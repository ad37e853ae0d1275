"""``fmda`` and ``fmda_paper`` (``conf/*/parameters_fmda.yml``, ``parameters_fmda_paper.yml``): FMDA's model,
its contrastive loss and training, the variants trained per language pair, the heads over pooled vectors
(DREAM and the InfoNCE controls), the two-stage hold-out, Figure 4, and the paper-only experiment set.

What reads them: ``pipelines/fmda/pipeline.py`` (variants, heads and their pairs, the figure's pair, the unified
model's pairs), ``training/fmda.py`` (``_training_settings``, ``_variant_setup``, ``train_pooled_head``),
``methods/fmda.py:FmdaConfig``, ``methods/contrastive.py:ContrastiveSettings``,
``training/loop.py:TrainSettings``, ``pipelines/fmda/nodes.py:embed_template_pairs`` (the hold-out) and
``reporting/figures.py:plot_embeddings`` (the figure).

A variant's ``loss`` and ``training`` (and a head's ``training``) override ``fmda.loss`` / ``fmda.training``
key by key: their models take the same keys, each optional (:func:`~language_agnostic.parameters.base.overrides`);
``TrainSettings``' keys are the shared :class:`~language_agnostic.parameters.emu.Training`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from language_agnostic.methods.contrastive import CONTRASTIVE_KINDS, NEGATIVE_TERMS
from language_agnostic.methods.dream import ACTIVATIONS as DREAM_ACTIVATIONS
from language_agnostic.methods.dream import DEFAULT_WEIGHTS as DREAM_WEIGHTS
from language_agnostic.methods.fmda import ABLATIONS, ALL_TOGETHER, LOSS_WEIGHTS, TEMPLATE_LOSSES
from language_agnostic.methods.fmda_meaning import ACTIVATIONS
from language_agnostic.methods.registry import POOLED_METHODS
from language_agnostic.parameters._rules import word_or_list
from language_agnostic.parameters.base import Blank, Section, overrides
from language_agnostic.parameters.emu import LossWeight, Seed, Training
from language_agnostic.training.fmda import NEGATIVES, SELECTION

# the splits of a pair's FMDA inputs (pipelines/fmda/nodes.py:SPLITS): Figure 4's panels c, d draw from one
SPLITS = ("train", "dev", "test")
# methods over pooled vectors whose model has no activation and whose loss takes no weights
NO_ACTIVATION_OR_WEIGHTS = ("linear-infonce",)


Pairs = word_or_list("all", str)  # `all`, or a list of pair namespaces of massive.pairs


# ---------------------------------------------------------------------------- fmda.model


class FmdaModel(Section):
    """The choices §3 leaves open (``methods/fmda.py:FmdaConfig``); argued in docs/fmda.md."""

    ffn_layers: Annotated[int, Field(ge=1)] = 1
    """Linear layers in each of the four token FFNs (1: affine, computed in the input space)."""
    mlp_layers: Annotated[int, Field(ge=1)] = 1
    """Linear layers in MLP_lang, MLP_m and MLP_rec."""
    activation: Literal[tuple(ACTIVATIONS)] = "gelu"
    """Activation between layers of a multi-layer FFN or MLP."""
    attention_scale: Literal["sqrt_d", "none"] = "sqrt_d"
    """sqrt_d: Q·Kᵀ scaled by 1/√D; none: unscaled, as printed."""
    utterance_target: Literal["cls", "mean", "tokens"] = "cls"
    """The utterance reconstruction's target: the first-token state, the mean token state, or every token."""
    init: Literal["pytorch", "identity"] = "pytorch"
    """identity: every D x D layer starts as the identity, zero bias; pytorch: random."""


# ---------------------------------------------------------------------------- fmda.loss


class FmdaLoss(Section):
    """The contrastive terms tp_con / m_con (eq. 3-4; ``methods/contrastive.py:ContrastiveSettings``)."""

    contrastive: Literal[CONTRASTIVE_KINDS] = "pairwise"
    """pairwise: eq. 3-4, one pool negative per side; infonce: in-batch negatives."""
    negative: Literal[NEGATIVE_TERMS] = "hinge"
    """pairwise's negative term: hinge, max(0, cos - margin), as DREAM's code; linear: cos, as printed."""
    margin: Annotated[float, Field(ge=-1, lt=1)] = 0.0
    """The hinge's margin (cosine)."""
    temperature: Annotated[float, Field(gt=0)] = 0.05
    """InfoNCE's temperature τ (fmda-infonce and the controls)."""


FmdaLossOverrides = overrides(
    FmdaLoss, "FmdaLossOverrides", "Overrides of fmda.loss for this model (unset: fmda.loss's)."
)


# ---------------------------------------------------------------------------- fmda.training


class FmdaHeadTraining(Training):
    """``training/loop.py:TrainSettings``' keys, ``batch_size`` and ``select_on``: what a head over pooled vectors
    reads of ``fmda.training`` (``training/fmda.py:_training_settings``)."""

    batch_size: Annotated[int, Field(ge=1)] = 512
    """Pairs per batch."""
    select_on: Literal[SELECTION] = "dev_loss"
    """dev_retrieval: mean dev accuracy@1 (both directions) of the meaning embedding; or dev_loss."""


class FmdaTraining(FmdaHeadTraining):
    """Training of every FMDA model and head; early stopping and selection on the MASSIVE dev split only."""

    length_buckets: bool = False
    """Training batches of similar lengths (less padding); not read by the pooled heads."""


FmdaTrainingOverrides = overrides(
    FmdaTraining, "FmdaTrainingOverrides", "Overrides of fmda.training for this model (unset: fmda.training's)."
)
FmdaHeadTrainingOverrides = overrides(
    FmdaHeadTraining,
    "FmdaHeadTrainingOverrides",
    "Overrides of fmda.training for this head (unset: fmda.training's; pooled vectors have no length to bucket).",
)


# ---------------------------------------------------------------------------- variants


def _stages(ablation: str, loss_weights: Mapping[str, float], two_stage: bool) -> dict[str, dict[str, float]]:
    """The loss weights each stage trains with (``training/fmda.py``: all together, or §4.6's two stages)."""
    given = {**ABLATIONS[ablation], **loss_weights}
    if not two_stage:
        return {"": {**LOSS_WEIGHTS, **given}}
    return {
        f"stage {stage}": {
            name: float(given.get(name, 1.0)) if (name in TEMPLATE_LOSSES) == (stage == 1) else 0.0
            for name in LOSS_WEIGHTS
        }
        for stage in (1, 2)
    }


def _something_to_train(loss_weights: dict[str, float], info: ValidationInfo) -> dict[str, float]:
    """``loss_weights`` that leave a loss to train (every stage of a two-stage variant), with the ablation."""
    ablation, two_stage = info.data.get("ablation", "full"), bool(info.data.get("two_stage", False))
    for stage, weights in _stages(ablation, loss_weights, two_stage).items():
        if not any(weights.values()):
            where = f" in {stage}" if stage else ""
            raise ValueError(f"every FMDA loss weight is 0{where} with ablation {ablation!r}: nothing to train")
    return loss_weights


class FmdaVariant(Section):
    """An FMDA trained on each of its pairs: a node per pair, its own MLflow run, rows method=fmda-<name>
    (fmda for all_together)."""

    pairs: Pairs = "all"
    """Pairs of massive.pairs it trains on; all: every pair."""
    ablation: Literal[tuple(ABLATIONS)] = "full"
    """Table 4's ablation: the losses it sets to weight 0."""
    two_stage: bool = False
    """Two-stage training (§4.6): template losses on template pairs first."""
    loss_weights: dict[Literal[tuple(LOSS_WEIGHTS)], LossWeight] = {}
    """Loss weights over the ablation's and the defaults (all 1)."""
    loss: FmdaLossOverrides = FmdaLossOverrides()
    """Overrides of fmda.loss."""
    training: FmdaTrainingOverrides = FmdaTrainingOverrides()
    """Overrides of fmda.training."""

    _weights = field_validator("loss_weights")(_something_to_train)


class FmdaUnified(Section):
    """One FMDA on the mixture of several pairs (Appendix C / Table 9), one language id per locale."""

    pairs: list[str] = []
    """Pairs of massive.pairs trained on together; []: no unified model."""
    ablation: Literal[tuple(ABLATIONS)] = "full"
    """Table 4's ablation: the losses it sets to weight 0."""
    loss_weights: dict[Literal[tuple(LOSS_WEIGHTS)], LossWeight] = {}
    """Loss weights over the ablation's and the defaults (all 1)."""
    loss: FmdaLossOverrides = FmdaLossOverrides()
    """Overrides of fmda.loss."""
    training: FmdaTrainingOverrides = FmdaTrainingOverrides()
    """Overrides of fmda.training."""

    _weights = field_validator("loss_weights")(_something_to_train)


# ---------------------------------------------------------------------------- heads over pooled vectors


def _nothing_required(schema: dict[str, Any]) -> None:
    schema.pop("required", None)


class FmdaHead(Section):
    """A head over the pair's pooled sentence vectors (``training/fmda.py:train_pooled_head``): a node per pair,
    its own MLflow run, rows method=<method>, embedding=meaning."""

    # `method` may be left out in conf/ (the entry's name is the method): filled in before validation
    model_config = ConfigDict(json_schema_extra=_nothing_required)

    method: Literal[POOLED_METHODS]
    """dream, linear-infonce or dream-infonce (controls of fmda-infonce); absent: the entry's name."""
    pairs: Pairs = "all"
    """Pairs of massive.pairs it trains on; all: every pair."""
    pooling: Literal["mean", "cls"] = "mean"
    """The sentence vector it reads."""
    negatives: Literal[NEGATIVES] = "all"
    """Source of the partners s', t': all: any utterance of the split (DREAM); pool: FMDA's BLEU pool."""
    activation: Literal[tuple(DREAM_ACTIVATIONS)] = "none"
    """DREAM's activation between layers; none: single linear layers."""
    loss_weights: dict[Literal[tuple(DREAM_WEIGHTS)], LossWeight] = {}
    """DREAM's loss weights over its defaults (language_push: 0)."""
    training: FmdaHeadTrainingOverrides = FmdaHeadTrainingOverrides()
    """Overrides of fmda.training for this head."""

    @field_validator("activation", "loss_weights")
    @classmethod
    def _an_option_of_its_method(cls, value: Any, info: ValidationInfo) -> Any:
        if info.data.get("method") in NO_ACTIVATION_OR_WEIGHTS:
            raise ValueError(f"{info.data['method']} takes no {info.field_name} (one linear map trained by InfoNCE)")
        return value


def _method_from_name(heads: Any) -> Any:
    """A head without ``method`` is the method of its name (as ``train_pooled_head`` reads it)."""
    if not isinstance(heads, Mapping):
        return heads
    return {
        name: {"method": name, **spec} if isinstance(spec, Mapping) and "method" not in spec else spec
        for name, spec in heads.items()
    }


# ---------------------------------------------------------------------------- holdout, figure


class TemplatePairsHoldout(Section):
    """Two-stage training, stage 1: the template pairs held out for its early stopping."""

    dev_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.1
    """Fraction of each language's source utterances held out (seeded)."""
    seed: Seed = 0
    """Seed of the hold-out draw."""


class FmdaFigure(Section):
    """Figure 4: t-SNE plots of FMDA's language, meaning and template embeddings."""

    pair: Blank = ""
    """A pair of massive.pairs, or first; empty: no figure."""
    n_pairs: Annotated[int, Field(ge=1)] = 800
    """Test pairs drawn for panels a, b (at most)."""
    split: Literal[SPLITS] = "test"
    """Panels c, d: utterances of this split of the pair."""
    intent: str = "auto"
    """auto: the intent with most templates of per_template utterances; or an intent."""
    n_templates: Annotated[int, Field(ge=2)] = 4
    """Templates shown (at most); fewer than 2 usable is an error."""
    per_template: Annotated[int, Field(ge=1)] = 3
    """Utterances per template."""
    seed: Seed = 0
    """Seed of the draws and of t-SNE."""


# ---------------------------------------------------------------------------- the sections


class Fmda(Section):
    """FMDA (Wu et al. 2022) and its DREAM baseline on MASSIVE, per language pair of massive.pairs. What is
    trained (variants, heads, pairs) is read when the pipeline is built."""

    model: FmdaModel = FmdaModel()
    """The choices §3 leaves open."""
    loss: FmdaLoss = FmdaLoss()
    """The contrastive terms tp_con / m_con (eq. 3-4)."""
    variants: dict[str, FmdaVariant] = {ALL_TOGETHER: FmdaVariant()}
    """Every FMDA trained, by name (rows fmda-<name>; all_together's: fmda); empty: all_together."""
    methods: dict[str, FmdaHead] = {}
    """Heads over pooled sentence vectors, by name (DREAM and the InfoNCE controls)."""
    template_pairs_holdout: TemplatePairsHoldout = TemplatePairsHoldout()
    """Two-stage, stage 1: template pairs held out for early stopping."""
    figure: FmdaFigure = FmdaFigure()
    """Figure 4: t-SNE plots."""
    training: FmdaTraining = FmdaTraining()
    """Every model's and head's training; early stopping on MASSIVE dev."""

    @field_validator("methods", mode="before")
    @classmethod
    def _methods_named(cls, heads: Any) -> Any:
        return _method_from_name(heads)


class FmdaPaper(Section):
    """The paper-only experiment set (eq. 3-4 as printed, Table 4's ablations, Table 9's unified model), off by
    default; ``--env=paper`` fills it in. Its variants have fmda.variants' schema and other names."""

    variants: dict[str, FmdaVariant] = {}
    """More FMDA variants, by name (not fmda.variants' names)."""
    unified: FmdaUnified = FmdaUnified()
    """Appendix C / Table 9: one model on a mixture of pairs."""


SECTIONS: dict[str, type[Section]] = {"fmda": Fmda, "fmda_paper": FmdaPaper}
