"""Predicting with a fine-tuned SLU model: intents and one BIO label per word, and the ``[CLS]`` vectors.

Shared by the joint baseline (``training.slu``) and LAJoint / LAJ-MCL (``training.lajmcl``, which
puts its label prefix in front of the same tokens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.corpora.massive_slu import first_subtoken_predictions
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.methods.slu import JointSlu
from language_agnostic.training.loop import inference_autocast
from language_agnostic.training.slu_data import (
    WordTokenisation,
    WordTokens,
    id_batch,
    tokenise_spaced_words,
    tokenise_words,
    word_tokenisation,
    words_of,
)


def predict_ids(
    model: JointSlu,
    tokens: WordTokens,
    pad_id: int,
    batch_size: int,
    fill: int,
    covering: list[list[int | None]] | None = None,
    inside: Sequence[int] | None = None,
    precision: str = "no",
) -> tuple[np.ndarray, list[list[int]]]:
    """Intent ids and one label id per word of every tokenised utterance, in input order, under
    ``precision``'s autocast (:func:`~language_agnostic.training.loop.inference_autocast`).

    With ``covering`` (:func:`~language_agnostic.training.slu_data.tokenise_spaced_words`), a word
    without a sub-token of its own takes the prediction of the sub-token covering it, as a
    continuation (``inside``: label id → the id of its ``I-`` form).
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    intents = np.zeros(len(tokens), dtype=np.int64)
    labels: list[list[int]] = [[] for _ in range(len(tokens))]
    order = np.argsort(tokens.lengths, kind="stable")  # batches of similar length: little padding
    try:
        with torch.no_grad(), inference_autocast(device, precision):  # resolved once, not per batch
            for start in range(0, len(order), batch_size):
                index = order[start : start + batch_size].tolist()
                ids, mask = id_batch(tokens, index, pad_id)
                intent_logits, slot_logits = model(ids.to(device), mask.to(device))
                intents[index] = intent_logits.argmax(-1).cpu().numpy()
                slots = slot_logits.argmax(-1).cpu().numpy()
                for row, i in enumerate(index):
                    word_ids = tokens.word_ids[i]
                    labels[i] = first_subtoken_predictions(
                        word_ids, slots[row, : len(word_ids)].tolist(), n_words=tokens.n_words[i], fill=fill
                    )
                    if covering is not None and inside is not None:
                        own = {w for w in word_ids if w is not None}
                        for w, t in enumerate(covering[i]):
                            if w not in own and t is not None:
                                labels[i][w] = int(inside[int(slots[row, t])])
    finally:
        model.train(was_training)
    return intents, labels


def predict_slu(
    model: JointSlu,
    rows: pd.DataFrame | Sequence[Sequence[str]],
    encoder: LoadedEncoder,
    intent_names: Sequence[str],
    label_names: Sequence[str],
    extraction: Mapping[str, Any] | None = None,
    batch_size: int = 64,
    precision: str = "no",
) -> tuple[list[str], list[list[str]]]:
    """Predicted intent and BIO labels of every utterance (no gradients, batches sorted by length, the model's device).

    A word's label is the prediction at its first sub-token. A word cut off by truncation
    (longer than the encoder's ``max_length``) is labelled ``O``; cut utterances are counted in
    a warning. Rows whose ``spaced`` flags say some words were written together (ja/zh split
    into characters) are tokenised as their text reads
    (:func:`~language_agnostic.training.slu_data.tokenise_spaced_words`), and a character
    inside a longer sub-token continues that sub-token's label (``B-x`` → ``I-x``).

    Args:
        model: The trained joint model.
        rows: A table with a ``words`` column, or the words of every utterance.
        encoder: Its tokenizer (the one the model was trained with).
        intent_names: Intent id → name (the training run's ``info["intents"]``).
        label_names: Label id → BIO label (``info["labels"]``).
        extraction: ``embeddings.extraction`` (the same prefix as in training).
        batch_size: Utterances per forward pass.
        precision: ``no`` (fp32), ``bf16``, ``fp16`` or ``auto`` autocast; the pipeline passes the
            method's ``training.mixed_precision``, the precision its checkpoint was chosen under.

    Returns:
        ``(intents, labels)``: one intent per utterance and one label per word, in input order.
    """
    if len(rows) == 0:
        return [], []
    # ja/zh split into characters: tokenised as the text reads (slu_data.tokenise_spaced_words)
    tokens, covering = prediction_tokens(rows, encoder, word_tokenisation(encoder, extraction), "slu predictions")
    pad_id = int(encoder.tokenizer.pad_token_id)
    return predict_names(model, tokens, covering, intent_names, label_names, pad_id, batch_size, precision)


def predict_names(
    model: torch.nn.Module,
    tokens: WordTokens,
    covering: list[list[int | None]] | None,
    intent_names: Sequence[str],
    label_names: Sequence[str],
    pad_id: int,
    batch_size: int = 64,
    precision: str = "no",
) -> tuple[list[str], list[list[str]]]:
    """:func:`predict_ids` as names: a word without a sub-token of its own (``covering``, ja/zh) continues
    its covering sub-token's label (``B-x`` → ``I-x``); a word cut off is ``O``."""
    names = list(label_names)
    fill = names.index("O") if "O" in names else 0
    inside = None  # label id -> the id of its I- form
    if covering is not None:
        inside = [
            names.index(f"I-{n[2:]}") if n.startswith("B-") and f"I-{n[2:]}" in names else j
            for j, n in enumerate(names)
        ]
    intents, labels = predict_ids(model, tokens, pad_id, batch_size, fill, covering, inside, precision)
    return [intent_names[i] for i in intents], [[names[j] for j in row] for row in labels]


def prediction_tokens(
    rows: pd.DataFrame | Sequence[Sequence[str]], encoder: LoadedEncoder, tokenisation: WordTokenisation, what: str
) -> tuple[WordTokens, list[list[int | None]] | None]:
    """Utterances tokenised for prediction: as pre-split words, or, for rows whose ``spaced`` flags
    say some words were written together (ja/zh), as their text reads
    (:func:`~language_agnostic.training.slu_data.tokenise_spaced_words`, with the covering sub-token
    of every word; ``None`` otherwise). Too long utterances are cut."""
    words = words_of(rows) if isinstance(rows, pd.DataFrame) else [[str(w) for w in x] for x in rows]
    spaced = (
        [list(map(bool, s)) for s in rows["spaced"]]
        if isinstance(rows, pd.DataFrame) and "spaced" in rows.columns
        else None
    )
    if spaced is not None and not all(all(s) for s in spaced):
        return tokenise_spaced_words(encoder.tokenizer, words, spaced, tokenisation, what=what)
    return tokenise_words(encoder.tokenizer, words, tokenisation, on_too_long="truncate", what=what), None


def first_token_states(model: torch.nn.Module, tokens: WordTokens, pad_id: int, batch_size: int = 64) -> np.ndarray:
    """The encoder's final state at the first position (``[CLS]``: what the intent head reads) of every
    tokenised utterance ``(N, D)`` float32, in input order (eval mode, no gradients, batches sorted by length).

    ``model`` is a :class:`~language_agnostic.methods.slu.JointSlu` (``states``) or a LAJoint
    (``encode``: the label embeddings in place, so ``tokens`` carry the label prefix).
    """
    encode = model.encode if hasattr(model, "encode") else model.states
    device = next(model.parameters()).device
    out = np.zeros((len(tokens), int(model.intent_head.in_features)), dtype=np.float32)
    order = np.argsort(tokens.lengths, kind="stable")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, len(order), batch_size):
                index = order[start : start + batch_size].tolist()
                ids, mask = id_batch(tokens, index, pad_id)
                out[index] = encode(ids.to(device), mask.to(device))[:, 0].float().cpu().numpy()
    finally:
        model.train(was_training)
    return out


def intent_vectors(
    model: JointSlu,
    rows: pd.DataFrame | Sequence[Sequence[str]],
    encoder: LoadedEncoder,
    extraction: Mapping[str, Any] | None = None,
    batch_size: int = 64,
) -> np.ndarray:
    """The ``[CLS]`` (intent) representation of every utterance ``(N, D)``, tokenised as :func:`predict_slu`
    tokenises it (LAJ-MCL Figure 3: "the encoder output of [CLS] is obtained as the utterance representation")."""
    if len(rows) == 0:
        return np.zeros((0, int(model.intent_head.in_features)), dtype=np.float32)
    tokens, _ = prediction_tokens(rows, encoder, word_tokenisation(encoder, extraction), "slu intent vectors")
    return first_token_states(model, tokens, int(encoder.tokenizer.pad_token_id), batch_size)
