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
(:func:`encoder_sentence_transformer`).

FMDA's meaning path works on token states, which no standard module reads: its export is
``Transformer → FmdaMeaning`` (:func:`fmda_sentence_transformer`), the one custom module,
defined in ``methods/fmda_meaning.py``, a file that imports only torch and sentence-transformers.
:func:`ship_custom_code` copies that file beside the saved ``modules.json`` and names the class by
it, so the directory loads with ``trust_remote_code=True`` (MLflow's flavour passes it) and without
this package.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense, Pooling, Transformer
from torch import nn

from language_agnostic.config import ParameterError
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.methods.fmda_meaning import MEANING_LAYERS, FmdaMeaning
from language_agnostic.methods.registry import METHODS, POOLED_METHODS, TRAINED_METHODS, load_trained

# the heads whose meaning is one linear layer (and an activation) over a pooled vector
EXPORTABLE = tuple(dict.fromkeys((*TRAINED_METHODS, *POOLED_METHODS)))
POOLING_MODES = {"mean": "mean", "cls": "cls"}  # this project's pooling → sentence-transformers' mode
PROMPT_NAME = "query"  # the prefix ("query: " for e5) becomes the default prompt of this name
# the project's own sentence-transformers modules, written into an export as source files
CUSTOM_MODULES: dict[str, type[nn.Module]] = {f"{FmdaMeaning.__module__}.{FmdaMeaning.__name__}": FmdaMeaning}
TOKEN_STATES = "token states"  # the record's pooling of a model over token states (FMDA)


class ExportError(ParameterError):
    """A model that cannot be exported as asked (``export.only``, its pooling); the message names it and why."""


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
    transformer = _transformer(encoder, max_length)
    dense = Dense(
        linear.in_features,
        linear.out_features,
        bias=linear.bias is not None,
        activation_function=activation,
        init_weight=linear.weight.detach().clone().float(),
        init_bias=linear.bias.detach().clone().float() if linear.bias is not None else None,
    )
    return _assemble([transformer, _pooling(linear.in_features, pooling), dense], prefix)


def fmda_sentence_transformer(
    saved: Mapping[str, Any], encoder: LoadedEncoder, prefix: str, max_length: int | None = None
) -> SentenceTransformer:
    """A trained FMDA model's meaning path over ``encoder`` as an in-memory ``SentenceTransformer`` on the
    CPU: ``Transformer → FmdaMeaning`` (``emb_m`` of §3.1 over every token state, prefix included).

    Args:
        saved: The FMDA model as saved (``build`` with its config, its weights).
        encoder: The encoder whose token states it was trained on.
        prefix: What the extraction puts before every text.
        max_length: Tokens per text, special tokens included; None = the encoder's maximum.

    Raises:
        ExportError: ``saved`` is not a model over token states.
    """
    if not over_token_states(saved):
        raise ExportError(f"{saved['build']['method']!r} is not a model over token states; export it as a head")
    _, model = load_trained(saved)
    config = model.config
    meaning = FmdaMeaning(config.dim, config.ffn_layers, config.mlp_layers, config.activation, config.attention_scale)
    # the meaning path's layers, by the names they have in the full model; the rest serve training only
    meaning.load_state_dict({k: v.float() for k, v in model.state_dict().items() if k.split(".")[0] in MEANING_LAYERS})
    return _assemble([_transformer(encoder, max_length), meaning], prefix)


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
    with _fixed_initialisation():
        transformer = Transformer(str(directory), max_seq_length=max_length)
    return _assemble([transformer, _pooling(transformer.get_embedding_dimension(), pooling)], prefix)


@contextlib.contextmanager
def _fixed_initialisation(seed: int = 0) -> Iterator[None]:
    """Draw what a checkpoint lacks from a fixed seed, leaving the caller's random state as it was.

    The ``Transformer`` module loads its model with ``from_pretrained``, which initialises weights the
    checkpoint does not hold at random: BERT's pooler, which the bundled encoder does not ship and no
    pooling here reads. Drawn from a fixed seed, the same inputs give the same export byte for byte, so a
    rerun can recognise an export it already logged (``pipelines/export``'s digest).
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _transformer(encoder: LoadedEncoder, max_length: int | None) -> Transformer:
    """The loaded encoder as a ``Transformer`` module (its weights as loaded, e.g. dequantised)."""
    with tempfile.TemporaryDirectory() as tmp:
        # the Transformer module loads from a directory; the encoder's own files, as loaded
        encoder.model.save_pretrained(tmp)
        encoder.tokenizer.save_pretrained(tmp)
        with _fixed_initialisation():
            transformer = Transformer(tmp, max_seq_length=int(max_length or encoder.max_length))
    # the encoder's name, not the temporary directory's (MLflow records it as the source model)
    name = str(encoder.identity.get("name") or "encoder")
    transformer.auto_model.name_or_path = transformer.auto_model.config.name_or_path = name
    return transformer


def _pooling(dim: int, pooling: str) -> Pooling:
    """The project's ``pooling`` over every token, the prefix's included (as extraction pools)."""
    return Pooling(dim, pooling_mode=POOLING_MODES[pooling], include_prompt=True)


def _assemble(modules: list[nn.Module], prefix: str) -> SentenceTransformer:
    """``modules`` in order, with ``prefix`` as the default prompt."""
    # sentence-transformers warns that a default prompt applies to every text: here that is the point
    # (the extraction's prefix), said in the module docstring, so not once per exported model
    quiet = _Without("Default prompt name is set")
    logging.getLogger("sentence_transformers.base.model").addFilter(quiet)
    try:
        return SentenceTransformer(
            modules=modules,
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
    """Where an exported model came from: its method, pooling (``token states`` for a model over them),
    prefix, encoder and ``provenance`` (e.g. the model's name, file and MLflow run)."""
    return {
        "method": str(saved["build"]["method"]),
        "pooling": TOKEN_STATES if over_token_states(saved) else str(saved.get("pooling", "mean")),
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
    """Write a trained model (a pooled head or FMDA) over ``encoder`` as a sentence-transformers directory, with
    :func:`export_record` as ``out_dir/language_agnostic.json``.

    Returns:
        ``out_dir``.
    """
    model = exportable(saved, encoder, prefix, max_length)
    out = Path(out_dir)
    model.save(str(out))
    ship_custom_code(out)
    record = export_record(saved, prefix, encoder.identity, provenance)
    (out / "language_agnostic.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    return out


def exportable(
    saved: Mapping[str, Any], encoder: LoadedEncoder, prefix: str, max_length: int | None = None
) -> SentenceTransformer:
    """A trained model as a ``SentenceTransformer``: :func:`fmda_sentence_transformer` for a model over token
    states, :func:`sentence_transformer` for a head over pooled vectors."""
    if over_token_states(saved):
        return fmda_sentence_transformer(saved, encoder, prefix, max_length)
    return sentence_transformer(saved, encoder, prefix, max_length)


def over_token_states(saved: Mapping[str, Any]) -> bool:
    """Whether a saved model's method reads token states (FMDA), per its registry entry."""
    method = METHODS.get(str(saved["build"]["method"]))
    return method is not None and method.inputs == "tokens"


def ship_custom_code(directory: str | Path) -> list[str]:
    """Make a saved sentence-transformers ``directory`` load without this package: each module of
    :data:`CUSTOM_MODULES` gets its source file copied beside ``modules.json`` and its ``type`` renamed
    ``<file>.<class>``, which sentence-transformers imports from the directory under ``trust_remote_code``.

    Returns:
        The files copied (none for a model of standard modules only).
    """
    path = Path(directory) / "modules.json"
    modules = json.loads(path.read_text())
    shipped = []
    for entry in modules:
        module_class = CUSTOM_MODULES.get(entry["type"])
        if module_class is None:
            continue
        source = Path(inspect.getfile(module_class))
        shutil.copyfile(source, Path(directory) / source.name)
        entry["type"] = f"{source.stem}.{module_class.__name__}"
        shipped.append(source.name)
    if shipped:
        path.write_text(json.dumps(modules, indent=2) + "\n")
    return shipped
