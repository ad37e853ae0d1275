"""Trained meaning models written as sentence-transformers models, usable without this package.

A head over pooled sentence vectors (DREAM, MEAT, SEED and the InfoNCE controls) computes its
meaning embedding as ``MLP_M(pool(encoder(prefix + text)))`` with ``MLP_M`` one linear layer and an
optional activation. sentence-transformers has a standard module for each step, so the export is
``Transformer → Pooling → Dense`` with the prefix as the model's default prompt, and
``SentenceTransformer(directory).encode(texts)`` gives the vectors this project scores (to float
precision; see ``tests/methods/test_export.py``). No custom code is saved: the directory loads
wherever ``sentence-transformers`` is installed.

A fine-tuned encoder (EMU's, saved as a Hugging Face directory) needs no head: its meaning
embedding is ``pool(encoder(prefix + text))``, exported as ``Transformer → Pooling``
(:func:`encoder_sentence_transformer`). Models over token states (FMDA) need a module
sentence-transformers does not have and are not exported here yet.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense, Pooling, Transformer
from torch import nn

from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.methods.registry import POOLED_METHODS, TRAINED_METHODS, load_trained

# the heads whose meaning is one linear layer (and an activation) over a pooled vector
EXPORTABLE = tuple(dict.fromkeys((*TRAINED_METHODS, *POOLED_METHODS)))
POOLING_MODES = {"mean": "mean", "cls": "cls"}  # this project's pooling → sentence-transformers' mode
PROMPT_NAME = "query"  # the prefix ("query: " for e5) becomes the default prompt of this name


class ExportError(ValueError):
    """A model that cannot be exported as asked; the message names it and why."""


def meaning_layers(model: nn.Module, method: str) -> tuple[nn.Linear, nn.Module]:
    """The linear layer and the activation that make a pooled head's meaning embedding (``model.meaning``).

    Raises:
        ExportError: ``method`` is not a pooled head, or its meaning is not one linear layer.
    """
    if method not in EXPORTABLE:
        raise ExportError(
            f"{method!r}: only heads over pooled vectors export to sentence-transformers ({list(EXPORTABLE)})"
        )
    meaning = getattr(model, "meaning", None)
    if isinstance(meaning, nn.Linear):
        return meaning, nn.Identity()
    if isinstance(meaning, nn.Sequential) and len(meaning) == 2 and isinstance(meaning[0], nn.Linear):
        return meaning[0], meaning[1]
    raise ExportError(f"{method!r}: its meaning network is not one linear layer and an activation: {meaning!r}")


def sentence_transformer(
    saved: Mapping[str, Any], encoder: LoadedEncoder, prefix: str, max_length: int | None = None
) -> SentenceTransformer:
    """A trained pooled head over ``encoder`` as an in-memory ``SentenceTransformer`` on the CPU.

    Args:
        saved: The head as saved (``pooling`` and ``build`` entries, its weights).
        encoder: The encoder it was trained over (the project's configured encoder).
        prefix: What the extraction puts before every text (``embeddings.extraction.prefix``).
        max_length: Tokens per text, special tokens included; None = the encoder's maximum.
    """
    method, model = load_trained(saved)
    name = method.name if method is not None else str(saved["build"]["method"])
    linear, activation = meaning_layers(model, name)
    pooling = str(saved.get("pooling", "mean"))
    if pooling not in POOLING_MODES:
        raise ExportError(f"pooling {pooling!r} has no sentence-transformers mode; known: {sorted(POOLING_MODES)}")
    with tempfile.TemporaryDirectory() as tmp:
        # the Transformer module loads from a directory; the encoder's own files, as loaded
        encoder.model.save_pretrained(tmp)
        encoder.tokenizer.save_pretrained(tmp)
        transformer = Transformer(tmp, max_seq_length=int(max_length or encoder.max_length))
    dense = Dense(
        linear.in_features,
        linear.out_features,
        bias=linear.bias is not None,
        activation_function=activation,
        init_weight=linear.weight.detach().clone().float(),
        init_bias=linear.bias.detach().clone().float() if linear.bias is not None else None,
    )
    return _assemble([transformer, dense], linear.in_features, pooling, prefix)


def encoder_sentence_transformer(
    directory: str | Path, pooling: str, prefix: str, max_length: int | None = None
) -> SentenceTransformer:
    """A fine-tuned encoder directory (EMU's ``data/06_models/emu/encoders/<name>``) read with ``pooling``,
    as an in-memory ``SentenceTransformer`` on the CPU: ``Transformer → Pooling``, no head.

    Args:
        directory: The Hugging Face directory the pipeline saved (weights, config, tokenizer).
        pooling: The pooling the model was trained and scored with (``mean`` or ``cls``).
        prefix: What the extraction puts before every text.
        max_length: Tokens per text, special tokens included; None = the model's maximum.
    """
    if pooling not in POOLING_MODES:
        raise ExportError(f"pooling {pooling!r} has no sentence-transformers mode; known: {sorted(POOLING_MODES)}")
    if not (Path(directory) / "config.json").is_file():
        raise ExportError(f"{directory} is not a fine-tuned encoder directory (no config.json)")
    transformer = Transformer(str(directory), max_seq_length=max_length)
    return _assemble([transformer], transformer.get_embedding_dimension(), pooling, prefix)


def _assemble(modules: list[nn.Module], dim: int, pooling: str, prefix: str) -> SentenceTransformer:
    """``modules[0] → Pooling(pooling) → modules[1:]`` with ``prefix`` as the default prompt."""
    # sentence-transformers warns that a default prompt applies to every text: here that is the point
    # (the extraction's prefix), said in the module docstring, so not once per exported model
    quiet = _Without("Default prompt name is set")
    logging.getLogger("sentence_transformers.base.model").addFilter(quiet)
    try:
        pool = Pooling(dim, pooling_mode=POOLING_MODES[pooling], include_prompt=True)
        return SentenceTransformer(
            modules=[modules[0], pool, *modules[1:]],
            device="cpu",
            prompts={PROMPT_NAME: prefix} if prefix else None,
            default_prompt_name=PROMPT_NAME if prefix else None,
            similarity_fn_name="cosine",
        )
    finally:
        logging.getLogger("sentence_transformers.base.model").removeFilter(quiet)


class _Without(logging.Filter):
    """Drops log records whose message starts with ``prefix``."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefix)


def export_record(
    saved: Mapping[str, Any], prefix: str, identity: Mapping[str, Any], provenance: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Where an exported model came from: its method, pooling, prefix, encoder and ``provenance``
    (e.g. the model's name, file and MLflow run)."""
    return {
        "method": str(saved["build"]["method"]),
        "pooling": str(saved.get("pooling", "mean")),
        "prefix": prefix,
        "encoder": dict(identity),
        **dict(provenance or {}),
    }


def export_sentence_transformer(
    saved: Mapping[str, Any],
    encoder: LoadedEncoder,
    out_dir: str | Path,
    prefix: str,
    max_length: int | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> Path:
    """Write a trained pooled head over ``encoder`` as a sentence-transformers directory, with
    :func:`export_record` as ``out_dir/language_agnostic.json``.

    Returns:
        ``out_dir``.
    """
    model = sentence_transformer(saved, encoder, prefix, max_length)
    out = Path(out_dir)
    model.save(str(out))
    record = export_record(saved, prefix, encoder.identity, provenance)
    (out / "language_agnostic.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    return out
