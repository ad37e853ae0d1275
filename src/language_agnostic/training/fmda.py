"""Training FMDA (Wu et al. 2022) in every variant, its DREAM baseline and the InfoNCE controls on MASSIVE pairs.

All-together, two-stage (§4.6) and unified (Appendix C) training; early stopping and model
selection on MASSIVE dev only (the dev loss, or the dev accuracy@1 of ``emb_m`` with
``select_on: dev_retrieval``). Each trained model is an artifact (``methods/registry.py``)
with its dev figure and an MLflow child run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.contrastive import ContrastiveSettings
from language_agnostic.methods.fmda import (
    ABLATIONS,
    ALL_TOGETHER,
    TEMPLATE_LOSSES,
    Fmda,
    FmdaConfig,
    encode_with_fmda,
    fmda_losses,
    freeze_template_encoder,
    method_name,
    two_stage_weights,
)
from language_agnostic.methods.registry import build_spec, get_method
from language_agnostic.tracking import log_child_model, log_child_run
from language_agnostic.training.data import InterleavedBatches, QuadrupletBatches
from language_agnostic.training.fmda_data import FmdaBatches
from language_agnostic.training.heads import HeadSpec, fit_head, head_spec
from language_agnostic.training.loop import TrainResult, TrainSettings, history_metrics, train

logger = logging.getLogger(__name__)

# what `select_on` may be: model selection on the dev loss or on dev accuracy@1 (parameters/fmda.py offers these)
SELECTION = ("dev_loss", "dev_retrieval")


def _training_settings(params: Mapping[str, Any]) -> tuple[TrainSettings, int, bool]:
    """``fmda.training`` (a variant's or a head's overrides merged over it) as the loop's settings, the batch
    size and ``length_buckets``; ``select_on`` is read where the model is selected (:func:`_dev_scorer`).

    Its keys, types and ranges are checked by ``parameters/fmda.py``'s models when a run starts.
    """
    params = dict(params)
    batch_size = params.pop("batch_size", 512)
    buckets = params.pop("length_buckets", False)
    params.pop("select_on", None)
    return TrainSettings(**params), batch_size, buckets


def dev_retrieval(model: torch.nn.Module, *manifests: Mapping[str, Any]) -> float:
    """Mean MASSIVE **dev** accuracy@1 of ``emb_m``, both directions of every pair (no test data)."""
    accuracies = []
    for manifest in manifests:
        a = encode_with_fmda(model, manifest["sets"]["dev.source.utt"])["m"]
        b = encode_with_fmda(model, manifest["sets"]["dev.target.utt"])["m"]
        accuracies += [retrieval_accuracy_at_1(a, b), retrieval_accuracy_at_1(b, a)]
    return float(np.mean(accuracies))


def template_dev_retrieval(model: torch.nn.Module, template_pairs: Mapping[str, Any]) -> float:
    """Mean accuracy@1 of ``emb_tp`` on the **held-out** template pairs (stage 1 of two-stage FMDA).

    Per language, utterance ``a`` of each held-out pair retrieves its partner ``b`` (same
    template, other slot values) among all held-out ``b``, and the reverse; these are train
    utterances set aside by ``fmda.template_pairs_holdout``, never MASSIVE dev or test.
    """
    accuracies = []
    for side in ("source", "target"):
        a = encode_with_fmda(model, template_pairs["sets"][f"dev.{side}.a"])["tp"]
        b = encode_with_fmda(model, template_pairs["sets"][f"dev.{side}.b"])["tp"]
        accuracies += [retrieval_accuracy_at_1(a, b), retrieval_accuracy_at_1(b, a)]
    return float(np.mean(accuracies))


def _dev_scorer(
    training: Mapping[str, Any], *manifests: Mapping[str, Any]
) -> Callable[[torch.nn.Module], float] | None:
    """``select_on: dev_retrieval``: :func:`dev_retrieval` as the selection criterion; else None."""
    if training.get("select_on", "dev_loss") != "dev_retrieval":
        return None
    return lambda model: dev_retrieval(model, *manifests)


def contrastive_settings(loss: Mapping[str, Any] | None, spec: Mapping[str, Any] | None = None) -> ContrastiveSettings:
    """``fmda.loss`` with the variant's ``loss`` overrides on top, as :class:`ContrastiveSettings`."""
    merged = {**dict(loss or {}), **dict((spec or {}).get("loss") or {})}
    return ContrastiveSettings(**merged)


def variant_training(training: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """``fmda.training`` with the variant's ``training`` overrides (e.g. ``length_buckets: false``)."""
    return {**dict(training), **dict(spec.get("training") or {})}


@dataclass(frozen=True)
class _VariantSetup:
    """What every FMDA training node reads of a variant (:func:`_variant_setup`)."""

    training: dict[str, Any]  # fmda.training with the variant's overrides
    settings: TrainSettings
    batch_size: int
    buckets: bool
    weights: dict[str, float]
    contrastive: ContrastiveSettings

    @property
    def negatives(self) -> bool:
        """Whether the batches carry the BLEU pools' negatives (``contrastive: pairwise``)."""
        return self.contrastive.contrastive == "pairwise"


def _variant_setup(
    training: Mapping[str, Any], spec: Mapping[str, Any], loss: Mapping[str, Any] | None
) -> _VariantSetup:
    """What every FMDA training node reads of a variant: merged training params, settings, batch size,
    buckets, loss weights and contrastive settings."""
    training = variant_training(training, spec)
    settings, batch_size, buckets = _training_settings(training)
    return _VariantSetup(
        training, settings, batch_size, buckets, _variant_weights(spec), contrastive_settings(loss, spec)
    )


def _run_params(
    variant: str,
    spec: Mapping[str, Any],
    model_params: Mapping[str, Any],
    training: Mapping[str, Any],
    contrastive: ContrastiveSettings,
    **extra: Any,
) -> dict[str, Any]:
    """The parameters of a variant's nested MLflow run."""
    return {
        "variant": variant,
        **extra,
        **spec,
        **model_params,
        **training,
        **{f"loss.{k}": v for k, v in contrastive.__dict__.items()},
    }


def _variant_weights(variant: Mapping[str, Any]) -> dict[str, float]:
    """The variant's loss weights: its ``loss_weights`` over its ablation's (``methods/fmda.py:ABLATIONS``)."""
    return {**ABLATIONS[str(variant.get("ablation", "full"))], **dict(variant.get("loss_weights") or {})}


def pool_rows(ids: np.ndarray, pools: pd.DataFrame, locale: str, partition: str) -> np.ndarray:
    """Rows of ``ids`` negatives are drawn from: those in the locale's negative pool of ``partition``.

    Train and dev negatives follow one rule (§4.2's BLEU < 0.1 pool, built within each
    partition), so the dev loss measures what training optimises. A pool table without a
    ``partition`` column holds train pools only.

    Raises:
        ValueError: No pool for that locale and partition (add it to ``massive.negative_pool.partitions``).
    """
    chosen = pools["locale"] == locale
    if "partition" in pools.columns:
        chosen &= pools["partition"] == partition
    elif partition != "train":
        chosen &= False
    # a hash lookup: np.isin sorts object (string) arrays, ~1.8 s a call on MASSIVE train
    rows = np.flatnonzero(pd.Index(pools.loc[chosen, "id"]).get_indexer(pd.Index(ids)) >= 0)
    if len(rows) < 2:
        raise ValueError(
            f"the {partition} negative pool of {locale} has {len(rows)} of these utterances; "
            f"FMDA draws {partition} negatives from it: list {partition!r} in massive.negative_pool.partitions"
        )
    return rows


def _fmda_batches(
    manifest: Mapping[str, Any],
    split: str,
    pools: pd.DataFrame,
    batch_size: int,
    shuffle: bool,
    buckets: bool = False,
    langs: tuple[int, int] = (0, 1),
    negatives: bool = True,
) -> FmdaBatches:
    sets, ids = manifest["sets"], np.array(manifest["ids"][split])
    pool = {side: pool_rows(ids, pools, manifest[f"{side}_locale"], split) for side in ("source", "target")}
    targets = {
        f"{s[0]}_{kind}": np.asarray(sets[f"{split}.{s}.{kind}"].vectors("cls"))
        for s in ("source", "target")
        for kind in ("tp", "rs")
    }
    return FmdaBatches(
        sets[f"{split}.source.utt"],
        sets[f"{split}.target.utt"],
        targets,
        *langs,
        pool["source"],
        pool["target"],
        batch_size,
        shuffle=shuffle,
        bucket=buckets,
        negatives=negatives,
    )


def _new_model(manifest: Mapping[str, Any], model_params: Mapping[str, Any], n_languages: int, seed: int) -> Fmda:
    dim = manifest["sets"]["train.source.utt"].dim
    config = FmdaConfig(**model_params, dim=dim, n_languages=n_languages)
    torch.manual_seed(seed)
    return Fmda(config)


def _trained(
    model: Fmda,
    results: list[Any],
    variant: str,
    spec: Mapping[str, Any],
    contrastive: ContrastiveSettings,
    *manifests: Mapping[str, Any],
    **extra: Any,
) -> dict[str, Any]:
    # the kept model's dev accuracy@1 of emb_m: the dev figure the loss defaults are argued on
    dev = dev_retrieval(model, *manifests)
    logger.info(
        "FMDA %s: best dev epoch(s) %s of %s; dev accuracy@1 of emb_m %.4f",
        variant,
        [r.best_epoch for r in results],
        [r.epochs_run for r in results],
        dev,
    )
    config = dict(model.config.__dict__)
    build = build_spec("fmda", config.pop("dim"), config.pop("n_languages"), config)
    return {
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "build": build,
        "config": model.config.__dict__,
        "variant": variant,
        "method": method_name(variant),
        "ablation": str(spec.get("ablation", "full")),
        "loss": contrastive.__dict__,
        "best_epoch": results[-1].best_epoch,
        "epochs_run": results[-1].epochs_run,
        "stage_epochs": [[r.best_epoch, r.epochs_run] for r in results],
        "dev_m_accuracy": dev,
        "encoder": encoder_of(manifests[0]),
        **extra,
    }


def _log_trained(
    trained: dict[str, Any], run: str, params: Mapping[str, Any], history: list[dict[str, float]], model: str
) -> None:
    """Log a training to the MLflow child run ``run`` (its id kept as ``trained["mlflow_run_id"]``) and
    the trained model to it as ``model``."""
    trained["mlflow_run_id"] = log_child_run(run, params, history)
    log_child_model(trained["mlflow_run_id"], model, trained)


def encoder_of(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """The identity of the encoder whose states a manifest holds
    (saved with a model, so applying it checks the encoder).
    """
    entry = manifest["sets"].get("train.source.utt")
    return dict(entry.meta.get("identity") or {}) or None if entry is not None else None


def _history(result_history: list[dict[str, float]], prefix: str, trained: Mapping[str, Any]) -> dict[str, Any]:
    metrics = history_metrics(result_history, prefix)
    metrics[f"{prefix}.dev_m_accuracy"] = [{"value": float(trained["dev_m_accuracy"]), "step": 0}]
    return metrics


def _train_on_pairs(
    model: Fmda, setup: _VariantSetup, weights: Mapping[str, float], manifest: Mapping[str, Any], pools: pd.DataFrame
) -> TrainResult:
    """``model`` trained on the pair's MASSIVE train split with the loss ``weights``, early stopping on dev."""
    return train(
        model,
        lambda m, b: fmda_losses(m, b, weights, setup.contrastive),
        _fmda_batches(manifest, "train", pools, setup.batch_size, True, setup.buckets, negatives=setup.negatives),
        _fmda_batches(manifest, "dev", pools, setup.batch_size, False, negatives=setup.negatives),
        setup.settings,
        _dev_scorer(setup.training, manifest),
    )


def train_fmda(
    manifest: Mapping[str, Any],
    pools: pd.DataFrame,
    model_params: Mapping[str, Any],
    spec: Mapping[str, Any],
    training: Mapping[str, Any],
    loss: Mapping[str, Any] | None = None,
    variant: str = ALL_TOGETHER,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Train FMDA on the pair's train split, early stopping on dev (§4.2); all losses together.

    Args:
        manifest: From :func:`embed_fmda_inputs`.
        pools: ``massive_negative_pools``; train negatives come from the train pools, dev
            negatives from the dev pools (the same BLEU rule within each split).
        model_params: ``FmdaConfig`` fields other than ``dim``/``n_languages``.
        spec: The variant (``fmda.variants.<name>``): ``ablation`` (a key of ``ABLATIONS``),
            extra ``loss_weights``, ``loss`` and ``training`` overrides.
        training: ``TrainSettings`` fields, ``batch_size`` and ``length_buckets``.
        loss: ``fmda.loss`` (:class:`ContrastiveSettings` fields).
        variant: The variant's name (rows and MLflow run are named after it).

    Returns:
        ``(model, metrics)``: the trained weights and config, and per-epoch losses for MLflow.
    """
    setup = _variant_setup(training, spec, loss)
    model = _new_model(manifest, model_params, 2, setup.settings.seed)
    result = _train_on_pairs(model, setup, setup.weights, manifest, pools)
    trained = _trained(model, [result], variant, spec, setup.contrastive, manifest)
    pair = f"{manifest['source_locale']}-{manifest['target_locale']}"
    params = _run_params(variant, spec, model_params, setup.training, setup.contrastive)
    _log_trained(trained, f"fmda/{variant}/{pair}", params, result.history, f"fmda_{variant}")
    return trained, _history(result.history, f"fmda.{variant}.{pair}", trained)


def _template_pair_batches(
    manifest: Mapping[str, Any],
    split: str,
    pools: pd.DataFrame,
    batch_size: int,
    shuffle: bool,
    buckets: bool,
    negatives: bool = True,
) -> InterleavedBatches:
    """Stage-1 batches; the held-out template pairs are train utterances, so both splits draw from the train pools."""
    sources = []
    for lang, side in enumerate(("source", "target")):
        sets, ids = manifest["sets"], np.array(manifest["ids"][f"{split}.{side}"])
        target = np.asarray(sets[f"{split}.{side}.tp"].vectors("cls"))
        pool = pool_rows(ids, pools, manifest[f"{side}_locale"], "train")
        # both utterances share the template, so one target serves both; the residual targets
        # are unused (weight 0 in stage 1) and filled with the same array
        targets = {k: target for k in ("s_tp", "t_tp", "s_rs", "t_rs")}
        sources.append(
            FmdaBatches(
                sets[f"{split}.{side}.a"],
                sets[f"{split}.{side}.b"],
                targets,
                lang,
                lang,
                pool,
                pool,
                batch_size,
                shuffle=shuffle,
                bucket=buckets,
                negatives=negatives,
            )
        )
    return InterleavedBatches(sources)


def train_fmda_two_stage(
    manifest: Mapping[str, Any],
    template_pairs: Mapping[str, Any],
    pools: pd.DataFrame,
    model_params: Mapping[str, Any],
    spec: Mapping[str, Any],
    training: Mapping[str, Any],
    loss: Mapping[str, Any] | None = None,
    variant: str = "two_stage",
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two-stage FMDA (§4.6): template losses on monolingual template pairs, then the rest with the
    template encoder frozen.

    Stage 1 stops early on the held-out template pairs (their retrieval accuracy of ``emb_tp`` under
    ``select_on: dev_retrieval``, else their loss), stage 2 on the MASSIVE dev pairs. Both
    stages use the variant's contrastive settings (``fmda.loss`` + ``loss``): with pool negatives,
    stage 1's ``tp_con`` draws them from the train pools for the held-out pairs too (they are
    train utterances).
    """
    setup = _variant_setup(training, spec, loss)
    model = _new_model(manifest, model_params, 2, setup.settings.seed)
    stage1 = {**two_stage_weights(1), **{k: v for k, v in setup.weights.items() if k in TEMPLATE_LOSSES}}
    # with select_on: dev_retrieval, stage 1 keeps the epoch whose template embedding best retrieves
    # the held-out pairs' partners (its held-out loss kept falling to the epoch cap, docs/fmda.md)
    first_scorer = (
        (lambda m: template_dev_retrieval(m, template_pairs))
        if setup.training.get("select_on") == "dev_retrieval"
        else None
    )
    first = train(
        model,
        lambda m, b: fmda_losses(m, b, stage1, setup.contrastive),
        _template_pair_batches(template_pairs, "train", pools, setup.batch_size, True, setup.buckets, setup.negatives),
        _template_pair_batches(template_pairs, "dev", pools, setup.batch_size, False, False, setup.negatives),
        setup.settings,
        first_scorer,
    )
    freeze_template_encoder(model)
    stage2 = {**two_stage_weights(2), **{k: v for k, v in setup.weights.items() if k not in TEMPLATE_LOSSES}}
    second = _train_on_pairs(model, setup, stage2, manifest, pools)
    trained = _trained(model, [first, second], variant, spec, setup.contrastive, manifest)
    # one curve: stage 2's epochs after stage 1's (its epoch 0, the stage-1 weights, is stage 1's last point)
    history = first.history + [{**r, "epoch": r["epoch"] + first.epochs_run} for r in second.history if r["epoch"] > 0]
    pair = f"{manifest['source_locale']}-{manifest['target_locale']}"
    params = _run_params(variant, spec, model_params, setup.training, setup.contrastive, two_stage=True)
    _log_trained(trained, f"fmda/{variant}/{pair}", params, history, f"fmda_{variant}")
    metrics = _history(second.history, f"fmda.{variant}.{pair}.stage2", trained)
    return trained, {**history_metrics(first.history, f"fmda.{variant}.{pair}.stage1"), **metrics}


def train_fmda_unified(
    pools: pd.DataFrame,
    model_params: Mapping[str, Any],
    spec: Mapping[str, Any],
    training: Mapping[str, Any],
    loss: Mapping[str, Any],
    *manifests: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One FMDA on the mixture of several pairs (Appendix C), one language id per locale.

    Every epoch holds every pair's batches in a seeded random order; early stopping uses the
    summed dev loss of all pairs.
    """
    setup = _variant_setup(training, spec, loss)
    languages = list(dict.fromkeys(loc for m in manifests for loc in (m["source_locale"], m["target_locale"])))
    langs = [(languages.index(m["source_locale"]), languages.index(m["target_locale"])) for m in manifests]
    model = _new_model(manifests[0], model_params, len(languages), setup.settings.seed)
    result = train(
        model,
        lambda m, b: fmda_losses(m, b, setup.weights, setup.contrastive),
        InterleavedBatches(
            [
                _fmda_batches(m, "train", pools, setup.batch_size, True, setup.buckets, l, setup.negatives)
                for m, l in zip(manifests, langs)
            ]
        ),
        InterleavedBatches(
            [
                _fmda_batches(m, "dev", pools, setup.batch_size, False, False, l, setup.negatives)
                for m, l in zip(manifests, langs)
            ]
        ),
        setup.settings,
        _dev_scorer(setup.training, *manifests),
    )
    trained = _trained(model, [result], "unified", spec, setup.contrastive, *manifests, languages=languages)
    params = _run_params("unified", spec, model_params, setup.training, setup.contrastive)
    _log_trained(trained, "fmda/unified/" + "+".join(languages), params, result.history, "fmda_unified")
    return trained, _history(result.history, "fmda.unified", trained)


# the methods over pooled sentence vectors that `fmda.methods` may name: the DREAM baseline and the
# two controls of fmda-infonce (same InfoNCE, data, selection and budget, without FMDA's architecture)
# where a pooled head's partners s', t' (DREAM's negatives) come from: any utterance of the split
# (DREAM's own rule, the default) or the pair's BLEU negative pool of the split, as FMDA's own
# negatives ("our data", §4.3); chosen on EN-DE dev (docs/fmda.md)
NEGATIVES = ("pool", "all")


def pooled_head_spec(spec: Mapping[str, Any] | None) -> HeadSpec:
    """``fmda.methods.<name>`` as a :class:`HeadSpec` (the schema of ``qe.methods``); its ``pairs`` are read when
    the pipeline is built and its ``negatives`` by :func:`train_pooled_head`.

    ``parameters/fmda.py:FmdaHead`` checks it when a run starts (a method of ``POOLED_METHODS``, known keys).
    """
    return head_spec({k: v for k, v in dict(spec or {}).items() if k not in ("pairs", "negatives")})


def _head_training(training: Mapping[str, Any], parsed: HeadSpec) -> dict[str, Any]:
    """``fmda.training`` with a head's ``training`` over it (``length_buckets`` does not apply to pooled vectors)."""
    return {k: v for k, v in {**dict(training), **dict(parsed.training)}.items() if k != "length_buckets"}


def pooled_batches(
    manifest: Mapping[str, Any],
    vectors: Mapping[str, np.ndarray],
    split: str,
    pools: pd.DataFrame | None,
    batch_size: int,
    shuffle: bool,
) -> QuadrupletBatches:
    """A split's pooled pairs for a head, partners from the split's negative pool of each side's
    locale (:func:`pool_rows`), or from every utterance of the split when ``pools`` is None."""
    s, t = vectors[f"{split}.source"], vectors[f"{split}.target"]
    pool: dict[str, np.ndarray | None] = {"source": None, "target": None}
    if pools is not None:
        ids = np.array(manifest["ids"][split])
        pool = {side: pool_rows(ids, pools, manifest[f"{side}_locale"], split) for side in pool}
    return QuadrupletBatches(
        s,
        t,
        np.zeros(len(s)),
        np.ones(len(t)),
        batch_size,
        source_pool=pool["source"],
        target_pool=pool["target"],
        shuffle=shuffle,
    )


def _head_options(method: str, parsed: HeadSpec, loss: Mapping[str, Any]) -> dict[str, Any]:
    """The build options ``method`` takes of its activation and the InfoNCE temperature (``fmda.loss``)."""
    accepted = get_method(method).options
    return {
        k: v
        for k, v in (
            ("activation", str(parsed.activation)),
            ("temperature", contrastive_settings(loss, {}).temperature),
        )
        if k in accepted
    }


def _pooled_vectors(sets: Mapping[str, Any], pooling: str) -> dict[str, np.ndarray]:
    """``{"train.source": ..., "dev.target": ...}``: the pair's pooled utterance vectors as float32."""
    return {
        f"{split}.{side}": np.asarray(sets[f"{split}.{side}.utt"].vectors(pooling), dtype=np.float32)
        for split in ("train", "dev")
        for side in ("source", "target")
    }


@dataclass(frozen=True)
class _PooledHead:
    """What :func:`train_pooled_head` trained: the method, its key and settings, and the vectors' size."""

    method: str
    name: str
    pooling: str
    negatives: str
    options: dict[str, Any]
    weights: dict[str, float]
    params: dict[str, Any]
    dim: int


def _logged_head(
    manifest: Mapping[str, Any], head: _PooledHead, result: TrainResult, dev: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trained head as an artifact with its dev figure, logged to its MLflow child run, and its metrics."""
    method, name, pooling, negatives, options = head.method, head.name, head.pooling, head.negatives, head.options
    pair = f"{manifest['source_locale']}-{manifest['target_locale']}"
    logger.info(
        "%s %s: best dev epoch %d of %d; dev accuracy@1 of its meaning embedding %.4f",
        method,
        pair,
        result.best_epoch,
        result.epochs_run,
        dev,
    )
    trained = {
        "state_dict": result.state_dict,
        "build": build_spec(method, head.dim, 2, options),
        "method": method,
        "name": name,
        "pooling": pooling,
        **options,
        "loss_weights": head.weights,
        "negatives": negatives,
        "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run,
        "dev_m_accuracy": dev,
        "encoder": encoder_of(manifest),
    }
    params = {"method": method, "name": name, "pooling": pooling, "negatives": negatives, **options, **head.params}
    _log_trained(trained, f"{method}/{pair}", params, result.history, name)
    metrics = history_metrics(result.history, f"{method}.{pair}")
    metrics[f"{method}.{pair}.dev_m_accuracy"] = [{"value": dev, "step": 0}]
    return trained, metrics


def train_pooled_head(
    manifest: Mapping[str, Any],
    pools: pd.DataFrame | None,
    spec: Mapping[str, Any],
    training: Mapping[str, Any],
    loss: Mapping[str, Any],
    name: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A head over the pair's pooled sentence vectors: the DREAM baseline or a control of ``fmda-infonce``.

    ``dream`` is DREAM (Tiyajamorn et al. 2021, eq. 1-9); ``linear-infonce`` one linear map
    trained with InfoNCE alone; ``dream-infonce`` DREAM with its meaning loss (eq. 5-7) replaced by
    InfoNCE. Each reads the pair's train/dev pooled vectors in random batches and is trained by
    :func:`~language_agnostic.training.heads.fit_head`, the path the QE/STS heads take, with
    ``fmda.training`` under the method's ``training`` overrides: it stops on the dev loss, or on
    the dev accuracy@1 of its meaning embedding when ``select_on: dev_retrieval``.

    Its partners ``s'``, ``t'`` (DREAM's negatives) are drawn from every utterance of the split
    (``negatives: all``, DREAM's own rule and the default: higher EN-DE dev accuracy@1, docs/fmda.md)
    or, like FMDA's, from the split's BLEU negative pool (``negatives: pool``: the FMDA paper trained
    its baselines "with our data").

    Args:
        manifest: From :func:`embed_fmda_inputs`.
        pools: ``massive_negative_pools`` (only read with ``negatives: pool``).
        spec: ``fmda.methods.<name>``: ``method`` (default: the name), ``pooling`` (``mean`` |
            ``cls``; default ``mean``), ``activation`` (DREAM), ``loss_weights``, ``training``, ``pairs``,
            ``negatives`` (``pool`` | ``all``).
        training: ``fmda.training`` (``length_buckets`` does not apply: pooled vectors have no length).
        loss: ``fmda.loss``; its ``temperature`` is the InfoNCE temperature.
        name: The key in ``fmda.methods`` (runs and metric keys are named after the method).
    """
    parsed = pooled_head_spec(spec)
    method, pooling = parsed.method or name, parsed.pooling or "mean"
    params = _head_training(training, parsed)
    settings, batch_size, _ = _training_settings(params)
    options = _head_options(method, parsed, loss)
    weights = dict(parsed.loss_weights)
    sets = manifest["sets"]
    vectors = _pooled_vectors(sets, pooling)

    negatives = str(dict(spec).get("negatives", "all"))
    if negatives == "pool" and pools is None:
        raise ValueError(f"fmda.methods.{name}.negatives is 'pool' but no negative pools were given")

    def batches(split: str, shuffle: bool) -> QuadrupletBatches:
        return pooled_batches(manifest, vectors, split, pools if negatives == "pool" else None, batch_size, shuffle)

    def dev_score(m: torch.nn.Module) -> float:
        a, b = control_meaning(m, vectors["dev.source"], method), control_meaning(m, vectors["dev.target"], method)
        return float(np.mean([retrieval_accuracy_at_1(a, b), retrieval_accuracy_at_1(b, a)]))

    selecting = params.get("select_on", "dev_loss") == "dev_retrieval"
    dim = sets["train.source.utt"].dim
    model, result = fit_head(
        method,
        dim,
        2,
        options,
        weights,
        batches("train", True),
        batches("dev", False),
        settings,
        dev_score if selecting else None,
        where=f"fmda.methods.{name}",
    )
    head = _PooledHead(method, name, pooling, negatives, options, weights, params, dim)
    return _logged_head(manifest, head, result, dev_score(model))
