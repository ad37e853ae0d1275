"""LAJ-MCL training data: SLU batches with the label prefix (LAJoint, §3.1) and MCL's extras (§3.2).

:class:`LajBatches` is :class:`~language_agnostic.training.slu_data.SluBatches` (words →
sub-tokens, labels on first sub-tokens, CoSDA-ML switching anew every epoch, ``keep_source``:
the English utterances then their switched versions, in the same order) with

- the label prefix ``[CLS] s_O s_B s_I s_1 … s_K [SEP]`` put in front of every utterance
  (:func:`prefix_tokens`): the utterance's own tokens, prefix and end token included, move
  ``K + 4`` positions to the right, and the length limit left to the utterance shrinks by as much;
- with MCL (``keep_source`` and a switcher), per batch of ``N`` source utterances:

  - ``value_ids`` ``(2N, L)``: per sub-token, the batch-wide index ``g`` of the slot value it
    is part of (``-1`` outside every value); the ``j``-th value of a source utterance and the
    ``j``-th value of its switched version share ``g`` (switching keeps a value's ``B-`` / ``I-``
    structure, so values correspond in order); ``value_slots`` ``(G,)`` its slot's index in
    ``slots`` and ``value_rows`` ``(G,)`` its source row;
  - with a :class:`~language_agnostic.text.slot_negatives.SlotNegatives` (slot-level CL):
    ``neg_input_ids``, ``neg_attention_mask``, ``neg_value_ids`` ``(N_s · N, L')``, row
    ``n · N + i`` the ``n``-th negative utterance of utterance ``i`` (Algorithm 1), its values
    sharing the ``g`` of the values they replace;
  - with ``word_negatives`` ``N_w`` > 0 (word-level CL): ``word_pairs`` ``(P, 3)``: ``(row,
    anchor position, negative position)``, for every slot word (label not ``O``) of every
    source and switched utterance up to ``N_w`` negatives drawn by eq. 12
    (:func:`~language_agnostic.methods.lajmcl.sample_word_negatives`).

Everything drawn (switches, negative values, negative words) comes from the epoch's generator
and ``switch_seed``: the same seeds give the same batches.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.methods.lajmcl import sample_word_negatives
from language_agnostic.methods.lajoint import prefix_shift, prepend_labels
from language_agnostic.text.slot_negatives import SlotNegatives, value_spans
from language_agnostic.training.slu_data import (
    SluBatches,
    WordTokenisation,
    WordTokens,
    pad,
    slot_label_ids,
    tokenise_words,
    word_tokenisation,
)


def label_tokenisation(
    encoder: LoadedEncoder, extraction: Mapping[str, object] | None, n_slots: int
) -> WordTokenisation:
    """The utterance's tokenisation with the length the label prefix leaves it (``max_length − (K + 4)``).

    Raises:
        ValueError: the prefix leaves no room for an utterance (naming ``max_length``).
    """
    full = word_tokenisation(encoder, extraction)
    left = full.max_length - prefix_shift(n_slots)
    if left < 3:  # start token, one sub-token, end token
        raise ValueError(
            f"max_length {full.max_length} leaves {left} positions for an utterance after the label prefix "
            f"of {n_slots} slots ({prefix_shift(n_slots)} positions); raise embeddings.extraction.max_length"
        )
    return dataclasses.replace(full, max_length=left)


def placeholder_id(tokenizer: object) -> int:
    """The id filling the label positions (their embeddings are replaced): ``unk``, else ``pad``."""
    unk = getattr(tokenizer, "unk_token_id", None)
    return int(unk if unk is not None else tokenizer.pad_token_id)


def prefix_tokens(tokens: WordTokens, n_slots: int, tokenizer: object) -> WordTokens:
    """``tokens`` with the label prefix in front (:func:`~language_agnostic.methods.lajoint.prepend_labels`);
    the prefix positions have no word, every word id moves with its sub-token."""
    cls_id, sep_id, fill = int(tokenizer.cls_token_id), int(tokenizer.sep_token_id), placeholder_id(tokenizer)
    n_new = prefix_shift(n_slots) + 1  # [CLS], the labels and [SEP]: no word
    ids = [prepend_labels(row, n_slots, cls_id, sep_id, fill) for row in tokens.input_ids]
    word_ids = [[None] * n_new + list(row[1:]) for row in tokens.word_ids]
    return WordTokens(ids, word_ids, list(tokens.n_words), tokens.truncated.copy(), tokens.words_cut.copy())


def value_id_row(
    word_ids: Sequence[int | None],
    spans: Sequence[tuple[int, int, str]],
    first_id: int,
    which: Sequence[int] | None = None,
) -> list[int]:
    """Per sub-token, ``first_id + j`` for a sub-token of the ``j``-th value's words, ``-1`` elsewhere.

    ``which``: the ``j`` of each span when they are not ``0, 1, ...`` (a negative utterance
    whose values without a negative are gone).
    """
    which = range(len(spans)) if which is None else which
    if len(which) != len(spans):
        raise ValueError(f"{len(spans)} values but {len(which)} indices")
    owner = {}
    for j, (a, b, _) in zip(which, spans):
        for w in range(a, b):
            owner[w] = first_id + j
    return [-1 if w is None else owner.get(w, -1) for w in word_ids]


@dataclasses.dataclass(frozen=True)
class _EpochRows:
    """What MCL's extras read of one epoch: its rows (the utterances, then their switched versions:
    row ``i + n`` is row ``i`` switched) and MCL's own random stream."""

    words: list[list[str]]
    labels: list[list[str]]
    word_ids: list[list[int | None]]
    rng: np.random.Generator


class LajBatches(SluBatches):
    """SLU batches with the label prefix, and MCL's extras (see the module docstring).

    Args:
        args, kwargs: :class:`~language_agnostic.training.slu_data.SluBatches`' arguments (``encoder, words,
            labels, intents, label_to_id, extraction``, then ``batch_size``, ``shuffle``, ``switcher``, ...).
        slots: The slot names in label order (``LajointConfig.slots``).
        mcl: Add the value spans (``value_ids``, ``value_slots``, ``value_rows``); needs
            ``keep_source`` and a switcher.
        slot_negatives: Algorithm 1's negative utterances (slot-level CL), or ``None``.
        word_negatives: ``N_w``, negatives per slot word (word-level CL); 0: none.

    Raises:
        ValueError: MCL asked for without ``keep_source`` and a switcher, ``word_negatives`` < 0,
            or the label prefix leaves no room (naming the parameter).
    """

    def __init__(
        self,
        *args: Any,
        slots: Sequence[str],
        mcl: bool = False,
        slot_negatives: SlotNegatives | None = None,
        word_negatives: int = 0,
        **kwargs: Any,
    ) -> None:
        self.slots = tuple(str(s) for s in slots)  # before SluBatches' tokenisation, which the prefix shortens
        super().__init__(*args, **kwargs)
        if word_negatives < 0:
            raise ValueError(f"word_negatives must be >= 0, got {word_negatives}")
        wants_mcl = mcl or slot_negatives is not None or word_negatives > 0
        if wants_mcl and not self.keep_source:
            raise ValueError(
                "mcl, slot_negatives and word_negatives need code-switching with keep_source: true "
                "(MCL pairs every English utterance with its switched version)"
            )
        self.mcl = wants_mcl
        self.slot_negatives, self.word_negatives = slot_negatives, int(word_negatives)
        self.slot_index = {s: k for k, s in enumerate(self.slots)}
        unknown = sorted({lab[2:] for row in self.labels for lab in row if lab != "O"} - set(self.slot_index))
        if unknown:
            raise ValueError(f"{self.what}: slot(s) {unknown} are not in slots")
        self.tokens = prefix_tokens(self.tokens, len(self.slots), self.tokenizer)
        self.slot_labels = slot_label_ids(self.tokens, self.labels, self.label_to_id, self.ignore_index, self.what)

    def _tokenisation(self, encoder: LoadedEncoder, extraction: Mapping[str, object] | None) -> WordTokenisation:
        """The length the label prefix leaves an utterance (:func:`label_tokenisation`)."""
        return label_tokenisation(encoder, extraction, len(self.slots))

    def _tokenise(
        self, words: Sequence[Sequence[str]], labels: Sequence[Sequence[str]], what: str
    ) -> tuple[WordTokens, list[list[int]]]:
        tokens = prefix_tokens(
            tokenise_words(self.tokenizer, words, self.tokenisation, on_too_long="truncate", what=what),
            len(self.slots),
            self.tokenizer,
        )
        return tokens, slot_label_ids(tokens, labels, self.label_to_id, self.ignore_index, self.what)

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[dict[str, torch.Tensor]]:
        """The epoch's batches: :meth:`SluBatches.batches` with the label prefix, and MCL's extras."""
        ids_rows, slot_labels, word_ids = self.tokens.input_ids, self.slot_labels, self.tokens.word_ids
        words, labels = self.words, self.labels
        if self.switcher is not None:
            sw_words, sw_labels = self.switched(generator)
            tokens, sw_slot_labels = self._tokenise(sw_words, sw_labels, f"{self.what} (code-switched, epoch {epoch})")
            self.truncated_by_epoch[epoch] = int(tokens.truncated.sum())
            if self.keep_source:  # rows n.. are the switched versions of rows ..n
                ids_rows, slot_labels = [*ids_rows, *tokens.input_ids], [*slot_labels, *sw_slot_labels]
                word_ids, words, labels = [*word_ids, *tokens.word_ids], [*words, *sw_words], [*labels, *sw_labels]
            else:
                ids_rows, slot_labels, word_ids = tokens.input_ids, sw_slot_labels, tokens.word_ids
        # length grouping (slu.data.group_by_length) sees the prefixed rows: the prefix adds the same K + 4 to
        # every row, so the groups are SluBatches'; the slot-level negatives (rows of their own) are not grouped
        order = self.epoch_order(ids_rows, generator)
        # MCL's draws come from their own stream, so that turning a level on does not change the batches
        rng = np.random.default_rng([self.switch_seed, int(torch.randint(2**31 - 1, (1,), generator=generator)), 17])
        epoch_rows = _EpochRows(words, labels, word_ids, rng)
        for index in order.split(self.batch_size):
            index = index.tolist()
            rows, batch = self.batch(ids_rows, slot_labels, index)
            if self.mcl:
                batch.update(self._mcl_extras(epoch_rows, index, rows, batch["slot_labels"]))
            yield batch

    def _mcl_extras(
        self, epoch: _EpochRows, index: list[int], rows: list[int], slot_labels: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        n, labels, word_ids = len(self.words), epoch.labels, epoch.word_ids
        value_rows_ids: list[list[int]] = [[] for _ in rows]
        value_slots: list[int] = []
        value_rows: list[int] = []
        first_of: list[int] = []  # per source row of the batch: the g of its first value
        for r, i in enumerate(index):
            spans = value_spans(labels[i])
            first_of.append(len(value_slots))
            value_rows_ids[r] = value_id_row(word_ids[i], spans, len(value_slots))
            switched_spans = value_spans(labels[i + n])
            if [s for _, _, s in switched_spans] != [s for _, _, s in spans]:  # never, with CodeSwitcher's label rule
                raise ValueError(
                    f"{self.what}: utterance {i}: its switched version has other slot values "
                    f"({switched_spans} vs {spans})"
                )
            value_rows_ids[len(index) + r] = value_id_row(word_ids[i + n], switched_spans, len(value_slots))
            value_slots.extend(self.slot_index[s] for _, _, s in spans)
            value_rows.extend([r] * len(spans))
        out = {
            "value_ids": pad(value_rows_ids, range(len(rows)), -1),
            "value_slots": torch.tensor(value_slots, dtype=torch.long),
            "value_rows": torch.tensor(value_rows, dtype=torch.long),
        }
        if self.slot_negatives is not None:
            out.update(self._slot_negatives(epoch, index, first_of))
        if self.word_negatives > 0:
            out["word_pairs"] = sample_word_negatives(
                slot_labels, self.word_negatives, epoch.rng, self.label_to_id["O"], self.ignore_index
            )
        return out

    def _slot_negatives(self, epoch: _EpochRows, index: list[int], first_of: list[int]) -> dict[str, torch.Tensor]:
        n, words, labels = len(self.words), epoch.words, epoch.labels
        n_s = self.slot_negatives.n_negatives
        neg_words: list[list[str]] = [[] for _ in range(n_s * len(index))]
        neg_labels: list[list[str]] = [[] for _ in range(n_s * len(index))]
        neg_which: list[list[int]] = [[] for _ in range(n_s * len(index))]
        for r, i in enumerate(index):
            # Algorithm 1 works on the switched utterance, so the negatives share the positive's context
            negatives = self.slot_negatives.negatives(
                words[i + n], labels[i + n], epoch.rng, source_words=words[i], source_labels=labels[i]
            )
            for m, (w, lab, which) in enumerate(negatives):
                row = m * len(index) + r
                neg_words[row], neg_labels[row], neg_which[row] = w, lab, which
        tokens, _ = self._tokenise(neg_words, neg_labels, f"{self.what} (slot-level negatives)")
        ids = tokens.input_ids
        value_ids = [
            value_id_row(tokens.word_ids[row], value_spans(neg_labels[row]), first_of[row % len(index)], neg_which[row])
            for row in range(len(neg_words))
        ]
        every = range(len(ids))
        return {
            "neg_input_ids": pad(ids, every, self.pad_id),
            "neg_attention_mask": pad([[1] * len(x) for x in ids], every, 0),
            "neg_value_ids": pad(value_ids, every, -1),
        }
