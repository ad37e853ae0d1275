"""EMU (Hirota et al., AAAI 2020): semantic specialisation of a multilingual encoder, the paper as the specification.

The encoder ``E`` itself is fine-tuned (no public code exists; ``../shared/papers/002``):

- a semantic classifier ``C`` over the sentence embedding ``u = E(x)`` with the
  **L2-constrained softmax** (Ranjan et al. 2017): ``u`` is L2-normalised and scaled by ``α``
  before the output layer, so that same-intent sentences meet on a hypersphere where Euclidean
  and cosine distance agree;
- the **center loss** (Wen et al. 2016, eq. 1): ``½ Σ_i ‖u_i − c_{y_i}‖²`` over the batch, where
  ``c_y`` is the centroid of intent ``y`` (``centers: centroid``: started at the class means of the
  labelled sentences under the starting encoder and moved towards each batch's class means with Wen
  et al.'s rate ``center_rate``, no gradient) or, as this project first read it, a learnable
  parameter from zero (``centers: learned``); ``L_C = L_{L2-sm} + λ L_center`` (eq. 2);
- a **language discriminator** ``D_t`` per training language ``t`` (two 900-d fully connected
  layers, dropout 0.2), trained as a Wasserstein critic: the paper writes eq. 3 with
  cross-entropy labels (1 for ``t``, 0 for an adversarial language ``ℓ``) but says it
  implements a WGAN, so ``L_{D_t} = mean D_t(v^ℓ) − mean D_t(u^t)`` (the critic's loss:
  score ``t`` high, ``ℓ`` low), with its weights clipped to ``[−c, c]`` after every update
  (Algorithm 1, line 8). With clipping the critic is bounded, so ``−γ L_{D_t}`` cannot fall
  without bound, which the cross-entropy reading would;
- the encoder and classifier step on ``L_{C+D_t} = L_C − γ L_{D_t}`` (eq. 4), ``k`` critic steps
  before each (Algorithm 1).

The baselines the paper fine-tunes the same encoder with are here too: plain ``softmax``, the
Siamese ``contrastive`` loss (Chopra et al. 2005) and the ``npair`` cosine loss (Yang et al. 2019).
Neither paper gives a margin or a scale for e5's mean-pooled vectors (norm about 4.8; different
intents are already 2.5-3.3 apart, so the classic margin 2.0 pushes nothing): ``margin`` and the
N-pair cosine ``scale`` are chosen on en-US dev (``docs/emu.md``), the literal settings stay
available as options (``margin: 2.0``, ``scale: 1.0``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from language_agnostic.encoders.loading import LoadedEncoder, encoder_from_config
from language_agnostic.encoders.pooling import pool
from language_agnostic.methods.losses import Batch, Losses, LossWeights, Options, check_loss_weights

LOSSES = ("emu", "softmax", "contrastive", "npair")
CENTERS = ("centroid", "learned")
WEIGHTS = ("l2_softmax", "center", "adversarial")  # loss_weights keys; center and adversarial default to λ and γ


@dataclass(frozen=True)
class EmuConfig:
    """EMU's hyper-parameters (§Experimental Settings as defaults).

    Attributes:
        n_intents: Classes of the semantic classifier.
        loss: ``emu`` (L2-constrained softmax + center loss + critic), ``softmax``,
            ``contrastive`` (Siamese, ``margin``) or ``npair``.
        alpha: Radius of the L2 constraint (α = 50).
        center_weight: λ of eq. 2 (1e-4); 0 is "EMU w/o CL".
        adversarial_weight: γ of eq. 4 (1e-4); 0 is "EMU w/o LD" (no critic is trained).
        critic_steps: ``k`` critic updates per encoder step (5).
        clip: ``c``: critic weights are clipped to ``[−c, c]`` after every update (0.01).
        critic_lr: The critic's Adam learning rate (5e-4).
        critic_hidden: Width of the critic's two hidden layers (900).
        critic_dropout: Dropout of the critic (0.2).
        training_languages: The languages with labelled data; one critic each.
        margin: The contrastive baseline's margin (2.0, Chopra et al.'s; chosen on dev in ``parameters_emu.yml``).
        scale: N-pair's cosine scale: the logits are ``scale · cos`` (1.0: the unscaled cosines).
        centers: ``centroid`` (the paper's class centroids, see above) or ``learned`` (a parameter from zero).
        center_rate: Wen et al.'s centroid update rate α (0.5).
        pooling: How ``u`` is read from the token states: ``mean`` (e5's own pooling) or ``cls``.
    """

    n_intents: int
    loss: str = "emu"
    alpha: float = 50.0
    center_weight: float = 1e-4
    adversarial_weight: float = 1e-4
    critic_steps: int = 5
    clip: float = 0.01
    critic_lr: float = 5e-4
    critic_hidden: int = 900
    critic_dropout: float = 0.2
    training_languages: tuple[str, ...] = ("en",)
    margin: float = 2.0
    pooling: str = "mean"
    scale: float = 1.0
    centers: str = "centroid"
    center_rate: float = 0.5

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {list(LOSSES)}, got {self.loss!r}")
        if self.pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', got {self.pooling!r}")
        if self.n_intents < 2:
            raise ValueError(f"n_intents must be >= 2, got {self.n_intents}")
        if self.critic_steps < 1 or self.clip <= 0 or self.alpha <= 0:
            raise ValueError("critic_steps must be >= 1, clip and alpha > 0")
        if self.centers not in CENTERS:
            raise ValueError(f"centers must be one of {list(CENTERS)}, got {self.centers!r}")
        if self.scale <= 0 or self.margin <= 0 or not 0 < self.center_rate <= 1:
            raise ValueError(
                f"scale and margin must be > 0 and center_rate in (0, 1], got {self.scale}, {self.margin}, "
                f"{self.center_rate}"
            )


def l2_constrained_logits(u: torch.Tensor, classifier: nn.Linear, alpha: float) -> torch.Tensor:
    """The output layer over ``α · u / ‖u‖`` (Ranjan et al. 2017; EMU §L2-constrained softmax)."""
    return classifier(alpha * F.normalize(u, dim=-1))


def center_loss(u: torch.Tensor, labels: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
    """Eq. 1: ``½ Σ_i ‖u_i − c_{y_i}‖²``, summed over the batch as printed."""
    return 0.5 * ((u - centers[labels]) ** 2).sum()


def class_means(u: torch.Tensor, labels: torch.Tensor, n_classes: int) -> torch.Tensor:
    """``(n_classes, D)``: the mean ``u`` of each class (zero for a class with no row)."""
    sums = torch.zeros(n_classes, u.shape[1], dtype=u.dtype).index_add_(0, labels, u)
    return sums / torch.bincount(labels, minlength=n_classes).clamp(min=1).to(u.dtype)[:, None]


def update_centroids(centers: torch.Tensor, u: torch.Tensor, labels: torch.Tensor, rate: float) -> None:
    """Wen et al. 2016, eq. 4: ``c_j ← c_j − α Σ_{i: y_i=j} (c_j − u_i) / (1 + n_j)``, in place, no gradient.

    A centre moves towards its intent's mean in the batch; an intent absent from the batch stays.
    """
    with torch.no_grad():
        u = u.detach().to(centers.dtype)
        counts = torch.bincount(labels, minlength=len(centers)).to(centers.dtype)
        sums = torch.zeros_like(centers).index_add_(0, labels, u)
        delta = (counts[:, None] * centers - sums) / (1 + counts[:, None])
        centers.sub_(rate * delta)


def siamese_contrastive_loss(a: torch.Tensor, b: torch.Tensor, same: torch.Tensor, margin: float = 2.0) -> torch.Tensor:
    """Chopra et al. 2005: ``d²`` for a same-intent pair, ``max(0, m − d)²`` otherwise (Euclidean ``d``), batch mean."""
    d = F.pairwise_distance(a, b)
    same = same.to(d.dtype)
    return (same * d**2 + (1 - same) * F.relu(margin - d) ** 2).mean()


def npair_cosine_loss(
    anchor: torch.Tensor, positive: torch.Tensor, labels: torch.Tensor, scale: float = 1.0
) -> torch.Tensor:
    """N-pair cosine loss (Yang et al. 2019): each anchor's positive against the batch's other positives.

    Softmax cross-entropy over ``scale ·`` the cosines of anchor ``i`` with every positive ``j``; a
    ``j`` of the anchor's own intent (other than ``i``) is not a negative and is masked out. With
    ``scale`` 1 the logits lie in [−1, 1] and the softmax over a batch of 16 is nearly flat (its
    loss cannot fall below about ``log 16 − 2``); a scale of 10–30 is what such losses use since.
    """
    cos = scale * (F.normalize(anchor, dim=-1) @ F.normalize(positive, dim=-1).T)
    same = labels[:, None] == labels[None, :]
    own = torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    cos = cos.masked_fill(same & ~own, float("-inf"))
    return F.cross_entropy(cos, torch.arange(len(labels), device=labels.device))


class LanguageCritic(nn.Module):
    """``D_t``: two fully connected hidden layers (900-d, dropout 0.2) and a scalar score."""

    def __init__(self, dim: int, hidden: int = 900, dropout: float = 0.2) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(dim, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 1),
        )

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return self.net(u).squeeze(-1)


def critic_loss(critic: LanguageCritic, u_t: torch.Tensor, v_l: torch.Tensor) -> torch.Tensor:
    """``L_{D_t}`` (eq. 3 as a Wasserstein critic): ``mean D_t(v^ℓ) − mean D_t(u^t)``."""
    return critic(v_l).mean() - critic(u_t).mean()


def encode_pooled(
    encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor, pooling: str
) -> torch.Tensor:
    """``u``: the encoder's last hidden states pooled (masked mean or the first token,
    :func:`~language_agnostic.encoders.pooling.pool`), the one way EMU reads a sentence."""
    states = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    return pool(states, attention_mask, pooling)


class PooledEncoder(nn.Module):
    """An encoder read the way EMU reads it (``pool`` over its last hidden states): the raw baseline."""

    def __init__(self, encoder: nn.Module, pooling: str = "mean") -> None:
        super().__init__()
        self.encoder, self.pooling = encoder, pooling

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return encode_pooled(self.encoder, input_ids, attention_mask, self.pooling)


class Emu(nn.Module):
    """The encoder ``E`` being fine-tuned, the classifier ``C``, the intent centres and one critic per
    training language.
    """

    def __init__(self, encoder: nn.Module, dim: int, config: EmuConfig) -> None:
        super().__init__()
        self.config = config
        self.encoder = encoder
        self.classifier = nn.Linear(dim, config.n_intents)
        if config.centers == "learned":
            self.centers = nn.Parameter(torch.zeros(config.n_intents, dim))
        else:  # class centroids: moved by update_centroids, not by the optimiser (set by set_centroids before training)
            self.register_buffer("centers", torch.zeros(config.n_intents, dim))
        self.critics = nn.ModuleDict(
            {
                lang: LanguageCritic(dim, config.critic_hidden, config.critic_dropout)
                for lang in config.training_languages
            }
        )

    @property
    def adversarial(self) -> bool:
        """Whether a critic is trained at all (``emu`` with γ > 0)."""
        return self.config.loss == "emu" and self.config.adversarial_weight > 0

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``u = E(x)``: the pooled sentence embedding."""
        return encode_pooled(self.encoder, input_ids, attention_mask, self.config.pooling)

    # --- what the training loop reads (training.loop.FineTunesEncoder / HasAdversary) ---
    def encoder_parameters(self) -> Iterator[nn.Parameter]:
        """Trained at ``TrainSettings.encoder_lr``; frozen ones (``requires_grad`` off) are skipped by the loop."""
        return self.encoder.parameters()

    def adversary_parameters(self) -> Iterator[nn.Parameter]:
        """The critics (their own Adam at ``critic_lr``); none without the language discriminator."""
        return self.critics.parameters() if self.adversarial else iter(())

    @property
    def adversary_steps(self) -> int:
        return self.config.critic_steps

    @property
    def adversary_lr(self) -> float:
        return self.config.critic_lr

    def after_adversary_step(self) -> None:
        """Algorithm 1, line 8: clip every critic weight to ``[−c, c]``."""
        with torch.no_grad():
            for p in self.critics.parameters():
                p.clamp_(-self.config.clip, self.config.clip)


def _critic(model: Emu, batch: Mapping[str, torch.Tensor]) -> LanguageCritic:
    """``D_t`` of the batch's training language (``train_lang``, an index into ``training_languages``)."""
    index = int(batch["train_lang"][0]) if "train_lang" in batch else 0
    return model.critics[model.config.training_languages[index]]


def _critic_terms(
    model: Emu, batch: Mapping[str, torch.Tensor], u_t: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``L_{D_t}`` on the batch's encoded training sentences ``u_t`` and its adversarial ones (``adv_*``):
    with gradients to the encoder (eq. 4), and on detached embeddings (the critic's own step)."""
    v_l = model(batch["adv_input_ids"], batch["adv_attention_mask"])
    critic = _critic(model, batch)
    return critic_loss(critic, u_t, v_l), critic_loss(critic, u_t.detach(), v_l.detach())


def emu_losses(model: Emu, batch: Batch, weights: LossWeights | None = None, options: Options | None = None) -> Losses:
    """Losses of one batch, by ``model.config.loss``.

    A batch has ``input_ids``, ``attention_mask`` and ``labels`` of labelled training sentences;
    ``adv_input_ids`` / ``adv_attention_mask`` of adversarial sentences (another language,
    unlabelled) for EMU's critic; ``pair_*`` and ``same`` for the contrastive baseline,
    ``pos_*`` for N-pair. A *critic batch* (no ``labels``) gives only ``adversary``: the
    critic's loss with the encoder's outputs detached, so only ``D_t`` learns from it.

    Returns:
        A labelled batch: ``l2_softmax``, ``center``, with a critic ``adversarial``
        (``−L_{D_t}``) and ``adversary`` (``L_{D_t}`` on detached embeddings), and ``total``
        (``L_C − γ L_{D_t}``, eq. 4); the baselines their loss and ``total``. A critic batch:
        ``adversary`` only.
    """
    del options
    config = model.config
    check_loss_weights(weights, WEIGHTS, "EMU")
    w = {
        "l2_softmax": 1.0,
        "center": config.center_weight,
        "adversarial": config.adversarial_weight,
        **dict(weights or {}),
    }
    if "labels" not in batch:  # a critic step (Algorithm 1, lines 2-8)
        with torch.no_grad():
            u_t = model(batch["input_ids"], batch["attention_mask"])
            v_l = model(batch["adv_input_ids"], batch["adv_attention_mask"])
        return {"adversary": critic_loss(_critic(model, batch), u_t, v_l)}
    u = model(batch["input_ids"], batch["attention_mask"])
    labels = batch["labels"]
    if config.loss == "softmax":
        loss = F.cross_entropy(model.classifier(u), labels)
        return {"softmax": loss, "total": loss}
    if config.loss == "contrastive":
        other = model(batch["pair_input_ids"], batch["pair_attention_mask"])
        loss = siamese_contrastive_loss(u, other, batch["same"], config.margin)
        return {"contrastive": loss, "total": loss}
    if config.loss == "npair":
        positive = model(batch["pos_input_ids"], batch["pos_attention_mask"])
        loss = npair_cosine_loss(u, positive, labels, config.scale)
        return {"npair": loss, "total": loss}
    losses = {
        "l2_softmax": F.cross_entropy(l2_constrained_logits(u, model.classifier, config.alpha), labels),
        "center": center_loss(u, labels, model.centers),
    }
    if config.centers == "centroid" and model.training:  # after the loss: c is the centroid before this batch
        update_centroids(model.centers, u, labels, config.center_rate)
    total = w["l2_softmax"] * losses["l2_softmax"] + w["center"] * losses["center"]
    if model.adversarial and "adv_input_ids" in batch:  # dev batches carry no adversarial sentences: L_C only
        # eq. 4: the encoder maximises the critic's loss (γ = w["adversarial"]); the critic's
        # own step uses detached embeddings so this term moves only E and C
        through, detached = _critic_terms(model, batch, u)
        losses["adversarial"] = -through
        total = total + w["adversarial"] * losses["adversarial"]
        # for a loop without separate critic batches (the critic then steps on this batch)
        losses["adversary"] = detached
    losses["total"] = total
    return losses


EMU_OPTIONS = (
    "encoder_config",
    "n_intents",
    "loss",
    "alpha",
    "center_weight",
    "adversarial_weight",
    "critic_steps",
    "clip",
    "critic_lr",
    "critic_hidden",
    "critic_dropout",
    "training_languages",
    "margin",
    "pooling",
    "scale",
    "centers",
    "center_rate",
)


def build_emu(dim: int, n_languages: int, options: Mapping[str, Any]) -> Emu:
    """An EMU model from its build spec (``methods.registry``): the encoder from its config, untrained.

    ``encoder_config`` is the fine-tuned encoder's ``transformers`` config as a dict
    (``model.config.to_dict()``): the artifact's state dict holds every encoder weight, so
    :func:`~language_agnostic.methods.registry.load_trained` needs no download. Without it, a
    one-layer BERT of width ``dim`` (the protocol's tests). ``n_languages`` is unused: the
    critics follow ``training_languages``.
    """
    del n_languages
    options = dict(options)
    encoder, width = encoder_from_config(options.pop("encoder_config", None), dim)
    if "training_languages" in options:
        options["training_languages"] = tuple(options["training_languages"])
    return Emu(encoder, width, EmuConfig(**{"n_intents": 2, **options}))


def encode_emu(model: Emu, inputs: tuple[torch.Tensor, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``{"meaning": u}``: the fine-tuned encoder's sentence embedding of ``(input_ids, attention_mask)``."""
    return {"meaning": model(*inputs)}


def rebuild_emu(encoder: LoadedEncoder, artifact: Mapping[str, Any]) -> Emu:
    """The fine-tuned model: a copy of the base encoder with the artifact's tensors loaded over it."""
    options = {k: v for k, v in dict(artifact["build"]["options"]).items() if k != "encoder_config"}
    options["training_languages"] = tuple(options.get("training_languages") or ("en-US",))
    model = Emu(copy.deepcopy(encoder.model), int(encoder.hidden_size), EmuConfig(**options))
    missing, unexpected = model.load_state_dict(artifact["state_dict"], strict=False)
    changed = set(artifact["state_dict"])
    if unexpected or any(not k.startswith("encoder.") for k in missing):
        raise ValueError(
            f"this EMU artifact does not fit the encoder: unexpected {unexpected[:3]}, missing {missing[:3]}"
        )
    if not changed:
        raise ValueError("this EMU artifact holds no weights")
    model.eval()
    return model
