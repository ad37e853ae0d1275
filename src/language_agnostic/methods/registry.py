"""One protocol for every method, and the registry the pipelines build them from.

A method is what a pipeline needs to train and use it, and nothing about Kedro:

- ``build(dim, n_languages, options)``: an untrained model;
- ``losses(model, batch, loss_weights, options)``: ``{name: tensor, ..., "total": tensor}``
  (plus ``"adversary"`` for a method whose model is a ``training.loop.HasAdversary``; a
  model that fine-tunes an encoder is a ``training.loop.FineTunesEncoder``: the training
  loop gives each group its own optimiser or learning rate, so a method declares its
  optimisers by declaring its parameter groups);
- ``encode(model, inputs)``: ``{embedding name: tensor}`` for a batch of inputs (pooled
  vectors ``(B, D)``, or ``(states, mask)`` for token-level methods);
- ``options``: the method-specific keys it takes (the pipelines pass it only these; what the
  user writes in ``conf/`` is checked by the models of ``language_agnostic/parameters``).

Adding a method is one entry in :data:`METHODS` (and its module in ``methods/``).
A trained model is saved as an *artifact*: ``{"build": {"method", "dim", "n_languages",
"options"}, "state_dict", ...}`` (other keys are the pipeline's metadata, e.g. the name its
rows carry); :func:`load_trained` turns any artifact back into a model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from language_agnostic.config import ParameterError
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.methods.contrastive import ContrastiveSettings
from language_agnostic.methods.dream import Dream, dream_losses
from language_agnostic.methods.emu import EMU_OPTIONS, build_emu, emu_losses, encode_emu, rebuild_emu
from language_agnostic.methods.fmda import Fmda, FmdaConfig, fmda_losses
from language_agnostic.methods.lajmcl import LAJMCL_OPTIONS, build_lajmcl, encode_lajmcl, lajmcl_losses, rebuild_lajmcl
from language_agnostic.methods.linear import LinearHead, linear_infonce_losses
from language_agnostic.methods.losses import Batch, Losses, LossWeights, Options
from language_agnostic.methods.meat import Meat, meat_losses
from language_agnostic.methods.seed import Seed, seed_losses
from language_agnostic.methods.slu import SLU_OPTIONS, build_slu, encode_slu, rebuild_slu, slu_losses

# roles (Method.roles): a head the qe and sts pipelines train (and retrain in their ablations);
# a head over pooled sentence vectors that fmda.methods may name (DREAM and the InfoNCE controls);
# a joint intent / slot model the slu pipeline fine-tunes (slu.methods.<name>.method)
SIMILARITY_HEAD = "similarity_head"
POOLED_HEAD = "pooled_head"
SLU_MODEL = "slu_model"


@dataclass(frozen=True)
class Method:
    """How to build, train and use one method (see the module docstring)."""

    name: str
    # "vectors" (pooled sentence vectors) | "tokens" (token states and mask) |
    # "ids" (input ids and mask: fine-tunes the encoder)
    inputs: str
    build: Callable[[int, int, Options], nn.Module]
    losses: Callable[[nn.Module, Batch, LossWeights, Options], Losses]
    encode: Callable[[nn.Module, Any], dict[str, torch.Tensor]]
    options: tuple[str, ...] = ()
    description: str = ""
    # what the pipelines train it as (SIMILARITY_HEAD, POOLED_HEAD, SLU_MODEL): their lists of methods
    # are derived from these, so a new method is named here and nowhere else
    roles: tuple[str, ...] = ()
    # a model that fine-tunes the encoder saves only the tensors fine-tuning changed (a few MB instead
    # of the whole encoder) and is rebuilt over a copy of the base encoder it started from
    rebuild: Callable[[LoadedEncoder, Mapping[str, Any]], nn.Module] | None = None


def _meaning_language(model: nn.Module, e: torch.Tensor) -> dict[str, torch.Tensor]:
    meaning, language = model(e)
    return {"meaning": meaning, "language": language}


def _fmda_config(dim: int, n_languages: int, options: Options) -> FmdaConfig:
    return FmdaConfig(dim=dim, n_languages=n_languages, **{k: v for k, v in options.items() if k != "loss"})


def _fmda_encode(model: nn.Module, inputs: tuple[torch.Tensor, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = model(*inputs)
    return {k: out[k] for k in ("m", "tp", "rs", "lang")}


def _dream(dim: int, n_languages: int, options: Options) -> nn.Module:
    return Dream(dim, n_languages, str(options.get("activation", "none")))


def _temperature(options: Options) -> float:
    return float(options.get("temperature", 0.05))


def _meaning_language_head(name: str, **fields: Any) -> Method:
    """A head over pooled sentence vectors whose model returns ``(meaning, language)`` (DREAM, MEAT, SEED)."""
    return Method(name, "vectors", encode=_meaning_language, **fields)


METHODS: dict[str, Method] = {
    "dream": _meaning_language_head(
        "dream",
        build=_dream,
        losses=lambda m, b, w, o: dream_losses(m, b, w),
        options=("activation",),
        description="Tiyajamorn et al. 2021: meaning/language MLPs, reconstruction, pairwise meaning loss",
        roles=(SIMILARITY_HEAD, POOLED_HEAD),
    ),
    "linear-infonce": Method(
        "linear-infonce",
        "vectors",
        build=lambda dim, n, o: LinearHead(dim),
        losses=lambda m, b, w, o: linear_infonce_losses(m, b["s"], b["t"], _temperature(o)),
        encode=lambda m, e: {"meaning": m(e)},
        options=("temperature",),
        description="one identity-initialised linear map trained with InfoNCE (control for fmda-infonce)",
        roles=(POOLED_HEAD,),
    ),
    "dream-infonce": _meaning_language_head(
        "dream-infonce",
        build=_dream,
        losses=lambda m, b, w, o: dream_losses(m, b, w, meaning="infonce", temperature=_temperature(o)),
        options=("activation", "temperature"),
        description="DREAM with its meaning loss replaced by in-batch InfoNCE (control for fmda-infonce)",
        roles=(POOLED_HEAD,),
    ),
    "meat": _meaning_language_head(
        "meat",
        build=lambda dim, n, o: Meat(dim, n),
        losses=lambda m, b, w, o: meat_losses(m, b, w),
        description="MEAT: meaning/language heads against an adversarial language discriminator",
        roles=(SIMILARITY_HEAD,),
    ),
    "seed": _meaning_language_head(
        "seed",
        build=lambda dim, n, o: Seed(dim),
        losses=lambda m, b, w, o: seed_losses(m, b, w),
        description="SEED: one meaning map, language = e - meaning",
        roles=(SIMILARITY_HEAD,),
    ),
    "fmda": Method(
        "fmda",
        "tokens",
        build=lambda dim, n, o: Fmda(_fmda_config(dim, n, o)),
        losses=lambda m, b, w, o: fmda_losses(m, b, w, ContrastiveSettings(**dict(o.get("loss") or {}))),
        encode=_fmda_encode,
        options=("ffn_layers", "mlp_layers", "activation", "attention_scale", "utterance_target", "init", "loss"),
        description="Wu et al. 2022: template / residual / language embeddings over token states",
    ),
    "emu": Method(
        "emu",
        "ids",
        build=build_emu,
        losses=emu_losses,
        encode=encode_emu,
        options=EMU_OPTIONS,
        rebuild=rebuild_emu,
        description="Hirota et al. 2020: the encoder fine-tuned with an L2-constrained softmax, center loss "
        "and a WGAN language critic",
    ),
    "slu": Method(
        "slu",
        "ids",
        build=build_slu,
        losses=slu_losses,
        encode=encode_slu,
        options=SLU_OPTIONS,
        rebuild=rebuild_slu,
        description="joint intent (first token) and BIO slot (first sub-token) heads over the fine-tuned encoder, "
        "L_I + L_S (zsjoint; cosda with code-switched training data)",
        roles=(SLU_MODEL,),
    ),
    "lajoint": Method(
        "lajoint",
        "ids",
        build=build_lajmcl,
        losses=lajmcl_losses,
        encode=encode_lajmcl,
        options=LAJMCL_OPTIONS,
        rebuild=rebuild_lajmcl,
        description="Liang et al. 2022: LAJoint (label embeddings in the input, compressor, projector; "
        "eq. 1-6) and LAJ-MCL's utterance-, slot- and word-level contrastive losses (eq. 7-14); "
        "input ids carry the label prefix",
        roles=(SLU_MODEL,),
    ),
}


def get_method(name: str, where: str = "method") -> Method:
    """The registered method ``name``; an unknown name raises naming ``where`` and the known ones."""
    if name not in METHODS:
        raise ValueError(f"{where}: unknown method {name!r}; known: {sorted(METHODS)}")
    return METHODS[name]


def build(name: str, dim: int, n_languages: int, options: Options | None = None, where: str = "method") -> nn.Module:
    """An untrained model of method ``name`` (``where``: the parameter that names it, for an unknown name)."""
    return get_method(name, where).build(dim, n_languages, dict(options or {}))


def build_spec(method: str, dim: int, n_languages: int, options: Options | None = None) -> dict[str, Any]:
    """How to rebuild a model: the ``build`` entry of an artifact."""
    return {"method": method, "dim": int(dim), "n_languages": int(n_languages), "options": dict(options or {})}


def artifact(
    method: str, model: nn.Module, dim: int, n_languages: int, options: Options | None = None, **extra: Any
) -> dict[str, Any]:
    """A trained model as saved: how to rebuild it, its weights on the CPU, and ``extra`` metadata."""
    return {
        "build": build_spec(method, dim, n_languages, options),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        **extra,
    }


def load_trained(saved: Mapping[str, Any], base: LoadedEncoder | None = None) -> tuple[Method, nn.Module]:
    """Rebuild any saved model with its weights, in eval mode: the one way back from a saved artifact.

    Args:
        saved: A model as saved (:func:`artifact`, or a fine-tuning trainer's artifact).
        base: The base encoder of a model that fine-tuned it (EMU, SLU, LAJoint / LAJ-MCL), whose
            artifact holds only the changed tensors; such a model is rebuilt over a copy of it.

    Returns:
        The method and the model.

    Raises:
        ValueError: The artifact has no ``build`` entry (saved by an older version: rerun the
            pipeline that trained it), or its tensors do not fit ``base``.
    """
    if "build" not in saved:
        raise ValueError(
            "this trained model has no 'build' entry (saved before the method registry); "
            "rerun the pipeline that trained it"
        )
    spec = saved["build"]
    method = get_method(str(spec["method"]), "build.method")
    if base is not None and method.rebuild is not None:
        return method, method.rebuild(base, saved)
    model = method.build(int(spec["dim"]), int(spec["n_languages"]), dict(spec.get("options") or {}))
    model.load_state_dict(saved["state_dict"])
    model.eval()
    return method, model


def methods_for(role: str) -> tuple[str, ...]:
    """The registered methods with ``role`` (:attr:`Method.roles`), in registry order."""
    return tuple(name for name, method in METHODS.items() if role in method.roles)


# the heads the qe and sts pipelines train (and their ablations retrain): dream, meat, seed
TRAINED_METHODS = methods_for(SIMILARITY_HEAD)
# the heads over pooled vectors fmda.methods may name: dream and the controls of fmda-infonce
POOLED_METHODS = methods_for(POOLED_HEAD)
# what slu.methods.<name>.method may name: the joint baseline (slu) and LAJoint / LAJ-MCL (lajoint)
SLU_METHODS = methods_for(SLU_MODEL)


def check_ablations(ablations: Mapping[str, Any] | None, pipeline: str = "qe") -> dict[str, dict[str, Any]]:
    """Validate ``<pipeline>.ablations``: ``{name: {base, loss_weights, seed}}`` (SEED Table 5, DREAM Table 6).

    ``base`` is the head retrained with ``loss_weights`` over its own, or with another training
    ``seed`` (a seed run: the claims' seeds, ``conf/similarity_seeds``). Returns
    ``{name: {"method": base, "loss_weights": {...}, "seed": int | None}}``.

    Raises:
        ValueError: A name that clashes with a method or the baselines, an unknown base, or
            neither a loss weight nor a seed changed (each names the parameter).
    """
    out: dict[str, dict[str, Any]] = {}
    for name, spec in dict(ablations or {}).items():
        spec, where = dict(spec or {}), f"{pipeline}.ablations.{name}"
        if name in (*TRAINED_METHODS, "raw", "centering") or not name.replace("_", "").isalnum():
            raise ParameterError(f"{where}: the name must be a new identifier (letters, digits, _), not a method name")
        if spec.get("base") not in TRAINED_METHODS:
            raise ParameterError(f"{where}.base must be one of {list(TRAINED_METHODS)}, got {spec.get('base')!r}")
        if not spec.get("loss_weights") and spec.get("seed") is None:
            raise ParameterError(f"{where}: give the loss_weights it changes (e.g. {{meaning: 0}}) or a training seed")
        out[name] = {
            "method": str(spec["base"]),
            "loss_weights": {str(k): float(v) for k, v in dict(spec.get("loss_weights") or {}).items()},
            "seed": None if spec.get("seed") is None else int(spec["seed"]),
        }
    return out
