"""FMDA's meaning path (Wu et al., MMNLU-22, §3.1, Figure 2) as a sentence-transformers module.

This file is copied as it is into every exported FMDA model (``fmda_meaning.py`` beside its
``modules.json``), so that ``SentenceTransformer(directory, trust_remote_code=True)`` and MLflow
load the model without this project installed. It therefore imports only torch and
sentence-transformers (a test fails on any other import), and the project's own FMDA model
(``methods/fmda.py``) builds its layers with :func:`stack` and computes its attention with
:func:`template_attention` from here: one definition of both.

Over the encoder's token states ``X`` (``L × D``, prefix and special tokens included, as the
project's extraction stores them) and their mask:

- ``q = FFN_q(x_0)``, the first position's query (only the first attention row is ever used);
- ``AttnProb = softmax(q · FFN_k(X)ᵀ · scale)`` over the real tokens, ``scale = 1/√D`` or 1;
- ``emb_tp = AttnProb · FFN_v,tp(X)``; ``emb_rs = softmax(1 − AttnProb) · FFN_v,rs(X)``;
- ``emb_m = MLP_m(emb_tp + emb_rs)``, the sentence embedding.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from sentence_transformers.base.modules import Module
from torch import nn

ACTIVATIONS: dict[str, type[nn.Module]] = {"none": nn.Identity, "relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}
# the layers of the full FMDA model the meaning path reads (the others serve its training losses)
MEANING_LAYERS = ("query_tp", "key_tp", "value_tp", "value_rs", "meaning")


def stack(dim: int, layers: int, activation: str) -> nn.Sequential:
    """``layers`` ``D × D`` linear layers with ``activation`` between them (none after the last)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    modules: list[nn.Module] = []
    for i in range(layers):
        modules.append(nn.Linear(dim, dim))
        if i < layers - 1:
            modules.append(ACTIVATIONS[activation]())
    return nn.Sequential(*modules)


def template_attention(
    query_tp: nn.Module,
    key_tp: nn.Module,
    value_tp: nn.Module,
    value_rs: nn.Module,
    states: torch.Tensor,
    mask: torch.Tensor,
    sqrt_d: bool,
    affine: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(emb_tp, emb_rs, AttnProb, softmax(1 − AttnProb))`` of the first position (§3.1); attention rows ``(B, L)``.

    Only the first position's query is computed: only its row is ever used. With ``affine`` (one-layer
    FFNs, affine maps) keys and values are never materialised per token: attention weights sum to 1, so
    ``q·(W_k x + b_k) = (W_kᵀ q)·x + q·b_k`` and ``Σ a_l (W_v x_l + b_v) = W_v (Σ a_l x_l) + b_v``,
    O(L·D) per text instead of O(L·D²), the same numbers (tested against the token-wise form).

    Args:
        states: Token states ``(B, L, D)``; position 0 is the first token.
        mask: ``(B, L)``, true for real tokens.
        sqrt_d: Scores divided by ``√D`` (as in Transformers), else as the paper writes them.
        affine: The FFNs are single ``nn.Linear`` layers inside ``nn.Sequential``.
    """
    mask = mask.bool()
    query = query_tp(states[:, 0])
    if affine:
        key = key_tp[0]
        scores = torch.einsum("bd,bld->bl", query @ key.weight, states) + (query @ key.bias).unsqueeze(1)
    else:
        scores = torch.einsum("bd,bld->bl", query, key_tp(states))
    if sqrt_d:
        scores = scores / math.sqrt(states.shape[-1])
    attn_tp = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    attn_rs = torch.softmax((1 - attn_tp).masked_fill(~mask, float("-inf")), dim=-1)
    if affine:
        tp = value_tp(torch.einsum("bl,bld->bd", attn_tp, states))
        rs = value_rs(torch.einsum("bl,bld->bd", attn_rs, states))
    else:
        tp = torch.einsum("bl,bld->bd", attn_tp, value_tp(states))
        rs = torch.einsum("bl,bld->bd", attn_rs, value_rs(states))
    return tp, rs, attn_tp, attn_rs


class FmdaMeaning(Module):
    """``token_embeddings`` and ``attention_mask`` in, FMDA's meaning embedding ``emb_m`` out as
    ``sentence_embedding``.

    Args:
        dim: The encoder's hidden size ``D``.
        ffn_layers: Linear layers in each token FFN (query, key, the two values).
        mlp_layers: Linear layers in ``MLP_m``.
        activation: Between the layers of a multi-layer FFN or MLP (``none``, ``relu``, ``gelu``, ``tanh``).
        attention_scale: ``sqrt_d`` (scores times ``1/√D``) or ``none``.
    """

    config_keys: list[str] = ["dim", "ffn_layers", "mlp_layers", "activation", "attention_scale"]

    def __init__(
        self,
        dim: int,
        ffn_layers: int = 1,
        mlp_layers: int = 1,
        activation: str = "gelu",
        attention_scale: str = "sqrt_d",
    ) -> None:
        super().__init__()
        if attention_scale not in ("sqrt_d", "none"):
            raise ValueError(f"attention_scale must be 'sqrt_d' or 'none', got {attention_scale!r}")
        self.dim, self.ffn_layers, self.mlp_layers = int(dim), int(ffn_layers), int(mlp_layers)
        self.activation, self.attention_scale = activation, attention_scale
        self.query_tp = stack(self.dim, self.ffn_layers, activation)
        self.key_tp = stack(self.dim, self.ffn_layers, activation)
        self.value_tp = stack(self.dim, self.ffn_layers, activation)
        self.value_rs = stack(self.dim, self.ffn_layers, activation)
        self.meaning = stack(self.dim, self.mlp_layers, activation)

    def forward(self, features: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tp, rs, _, _ = template_attention(
            self.query_tp,
            self.key_tp,
            self.value_tp,
            self.value_rs,
            features["token_embeddings"],
            features["attention_mask"],
            sqrt_d=self.attention_scale == "sqrt_d",
            affine=self.ffn_layers == 1,
        )
        features["sentence_embedding"] = self.meaning(tp + rs)
        return features

    def get_embedding_dimension(self) -> int:
        return self.dim

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(
        cls,
        model_name_or_path: str,
        subfolder: str = "",
        token: bool | str | None = None,
        cache_folder: str | None = None,
        revision: str | None = None,
        local_files_only: bool = False,
        **kwargs: Any,
    ) -> FmdaMeaning:
        hub = {
            "subfolder": subfolder,
            "token": token,
            "cache_folder": cache_folder,
            "revision": revision,
            "local_files_only": local_files_only,
        }
        model = cls(**cls.load_config(model_name_or_path=model_name_or_path, **hub))
        return cls.load_torch_weights(model_name_or_path=model_name_or_path, model=model, **hub)
