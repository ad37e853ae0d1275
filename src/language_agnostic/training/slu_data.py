"""SLU training data: words tokenised with their BIO labels on first sub-tokens, optionally
code-switched anew every epoch.

Words are tokenised as pre-split words (``is_split_into_words=True``), so each sub-token knows
its word. The embedding stage's prefix (``embeddings.extraction.prefix``, e5's ``"query: "``)
is put in front as leading words of its own, which gives the same sub-tokens as prefixing the
text for tokenizers that split on whitespace first (WordPiece, SentencePiece); those
sub-tokens get no word and so no slot label, like the special tokens. A word's label goes on
its first sub-token (:func:`~language_agnostic.corpora.massive_slu.align_labels`).

Inputs longer than the encoder allows are cut (keeping the end token) or refused, as the
embedding stage's ``on_too_long`` says; cut utterances and the words that lost every sub-token
are counted and logged, never dropped silently.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from language_agnostic.corpora.massive_slu import align_labels
from language_agnostic.encoders.extraction import ExtractionError, tokenisation_settings
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.text.code_switch import CodeSwitcher

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WordTokenisation:
    """How words become sub-tokens: the prefix, the longest input (special tokens included), the too-long policy."""

    prefix: str
    max_length: int
    on_too_long: str = "truncate"


def word_tokenisation(encoder: LoadedEncoder, extraction: Mapping[str, object] | None = None) -> WordTokenisation:
    """The tokenisation of ``embeddings.extraction`` (its ``prefix``, ``max_length``, ``on_too_long``;
    the same defaults).

    Raises:
        ExtractionError: ``max_length`` beyond the encoder's, or an unknown ``on_too_long``.
    """
    settings = tokenisation_settings(extraction)
    limit = settings.max_length or encoder.max_length
    if limit > encoder.max_length:
        raise ExtractionError(f"max_length {limit} exceeds the encoder's maximum {encoder.max_length}")
    if settings.on_too_long not in ("truncate", "error"):
        raise ExtractionError(f"on_too_long must be 'truncate' or 'error', got {settings.on_too_long!r}")
    return WordTokenisation(settings.prefix, int(limit), settings.on_too_long)


@dataclass
class WordTokens:
    """Utterances tokenised from their words.

    Attributes:
        input_ids: Sub-token ids per utterance (special tokens and prefix included).
        word_ids: Per sub-token, the index of its word in the utterance; ``None`` for special
            tokens and the prefix.
        n_words: Words per utterance.
        truncated: Whether each utterance was cut to ``max_length``.
        words_cut: Per utterance, the words left without any sub-token by the cut.
    """

    input_ids: list[list[int]]
    word_ids: list[list[int | None]]
    n_words: list[int]
    truncated: np.ndarray
    words_cut: np.ndarray

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(x) for x in self.input_ids), dtype=np.int64, count=len(self.input_ids))


def tokenise_words(
    tokenizer: object,
    words: Sequence[Sequence[str]],
    tokenisation: WordTokenisation,
    on_too_long: str | None = None,
    what: str = "utterances",
) -> WordTokens:
    """Tokenise pre-split utterances with the prefix as leading words; cut or refuse the too long.

    Args:
        tokenizer: A fast tokenizer (``word_ids`` needs one).
        words: The words of every utterance.
        tokenisation: Prefix, length limit and policy (:func:`word_tokenisation`).
        on_too_long: Overrides ``tokenisation.on_too_long``.
        what: Names the utterances in messages.

    Raises:
        ExtractionError: an utterance without words, or one too long under ``on_too_long: error``.
    """
    policy = on_too_long or tokenisation.on_too_long
    empty = [i for i, w in enumerate(words) if len(w) == 0]
    if empty:
        raise ExtractionError(f"{what}: {len(empty)} utterance(s) without words, first at position {empty[0]}")
    prefix = tokenisation.prefix.split()
    encoded = tokenizer(
        [[*prefix, *map(str, w)] for w in words],
        is_split_into_words=True,
        add_special_tokens=True,
        truncation=False,
        return_attention_mask=False,
        verbose=False,
    )
    limit = tokenisation.max_length
    ids_out: list[list[int]] = []
    word_ids_out: list[list[int | None]] = []
    truncated = np.zeros(len(words), dtype=bool)
    words_cut = np.zeros(len(words), dtype=np.int64)
    for i, ids in enumerate(encoded["input_ids"]):
        word_ids = [None if w is None or w < len(prefix) else w - len(prefix) for w in encoded.word_ids(i)]
        if len(ids) > limit:
            if policy == "error":
                raise ExtractionError(
                    f"{what}: utterance {i} has {len(ids)} sub-tokens, more than max_length {limit}: "
                    f"{' '.join(map(str, words[i]))[:80]!r}. "
                    "Set on_too_long: truncate to cut it (its cut words are counted)."
                )
            before = {w for w in word_ids if w is not None}
            if word_ids[-1] is None:  # keep the end-of-sequence token
                ids, word_ids = ids[: limit - 1] + [ids[-1]], word_ids[: limit - 1] + [None]
            else:
                ids, word_ids = ids[:limit], word_ids[:limit]
            truncated[i] = True
            words_cut[i] = len(before - {w for w in word_ids if w is not None})
        ids_out.append(list(ids))
        word_ids_out.append(word_ids)
    if truncated.any():
        logger.warning(
            "%s: %d of %d utterances cut to %d sub-tokens, %d words lost every sub-token "
            "(no label trained on them; predicted 'O')",
            what,
            int(truncated.sum()),
            len(words),
            limit,
            int(words_cut.sum()),
        )
    return WordTokens(ids_out, word_ids_out, [len(w) for w in words], truncated, words_cut)


def tokenise_spaced_words(
    tokenizer: object,
    words: Sequence[Sequence[str]],
    spaced: Sequence[Sequence[bool]],
    tokenisation: WordTokenisation,
    what: str = "utterances",
) -> tuple[WordTokens, list[list[int | None]]]:
    """Tokenise utterances as their text reads, for words that are not all space-separated (ja, zh).

    Pre-split words given to the tokenizer one by one each get a word-start marker: ja/zh split
    into characters would read ``▁ 暗 ▁ く ▁ し ▁ て``, twice as long and unlike anything the
    encoder saw. Here the text is rebuilt (a space only before a ``spaced`` word), tokenised
    as a whole, and each sub-token is given to the word of its first non-space character
    (from the offsets); a sub-token spanning several words (``して``) is the first sub-token of
    the first of them only. Utterances too long are cut (``truncate``).

    Returns:
        ``(tokens, covering)``: the tokens (``word_ids`` as for pre-split words) and, per
        utterance and word, the index of the sub-token that covers the word's first character
        (``None`` if cut off): what a word without a sub-token of its own is predicted from.
    """
    prefix = tokenisation.prefix
    texts, spans = [], []
    for ws, sp in zip(words, spaced):
        if len(ws) != len(sp):
            raise ValueError(f"{what}: {len(ws)} words but {len(sp)} spacing flags")
        text, starts = prefix, []
        for i, (w, s) in enumerate(zip(ws, sp)):
            if i > 0 and s:
                text += " "
            starts.append((len(text), len(text) + len(str(w))))
            text += str(w)
        texts.append(text)
        spans.append(starts)
    encoded = tokenizer(
        texts,
        add_special_tokens=True,
        truncation=True,
        max_length=tokenisation.max_length,
        return_offsets_mapping=True,
        return_attention_mask=False,
        verbose=False,
    )
    ids_out, word_ids_out, covering_out = [], [], []
    truncated = np.zeros(len(words), dtype=bool)
    words_cut = np.zeros(len(words), dtype=np.int64)
    for i, (ids, offsets) in enumerate(zip(encoded["input_ids"], encoded["offset_mapping"])):
        owner = np.full(len(texts[i]), -1, dtype=np.int64)
        for w, (a, b) in enumerate(spans[i]):
            owner[a:b] = w
        word_ids: list[int | None] = []
        covering: list[int | None] = [None] * len(spans[i])
        for t, (a, b) in enumerate(offsets):
            inside = [int(owner[c]) for c in range(a, b) if owner[c] >= 0]
            word_ids.append(inside[0] if inside else None)
            for w in dict.fromkeys(inside):
                if covering[w] is None:
                    covering[w] = t
        cut = sum(c is None for c in covering)
        truncated[i], words_cut[i] = cut > 0, cut
        ids_out.append(list(ids))
        word_ids_out.append(word_ids)
        covering_out.append(covering)
    if truncated.any():
        logger.warning(
            "%s: %d of %d utterances cut to %d sub-tokens, %d words lost every sub-token (predicted 'O')",
            what,
            int(truncated.sum()),
            len(words),
            tokenisation.max_length,
            int(words_cut.sum()),
        )
    return WordTokens(ids_out, word_ids_out, [len(w) for w in words], truncated, words_cut), covering_out


def slot_label_ids(
    tokens: WordTokens,
    labels: Sequence[Sequence[str]],
    label_to_id: Mapping[str, int],
    ignore_index: int = -100,
    what: str = "utterances",
) -> list[list[int]]:
    """Per sub-token, the word's label id on its first sub-token and ``ignore_index`` elsewhere.

    Raises:
        ValueError: naming the utterance, a label not in ``label_to_id`` or labels that do not fit the words.
    """
    out = []
    for i, (word_ids, row) in enumerate(zip(tokens.word_ids, labels)):
        try:
            out.append(align_labels(word_ids, list(row), label_to_id, ignore_index))
        except ValueError as exc:
            raise ValueError(f"{what}: utterance {i}: {exc}") from None
    return out


def pad(rows: Sequence[Sequence[int]], index: Sequence[int], value: int) -> torch.Tensor:
    """The rows at ``index`` as one ``(len(index), longest)`` long tensor padded with ``value``."""
    width = max(len(rows[i]) for i in index)
    out = np.full((len(index), width), value, dtype=np.int64)
    for row, i in enumerate(index):
        out[row, : len(rows[i])] = rows[i]
    return torch.from_numpy(out)


def id_batch(tokens: WordTokens, index: Sequence[int], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)`` of the utterances at ``index``, padded to the longest of them."""
    ids = pad(tokens.input_ids, index, pad_id)
    mask = pad([[1] * len(x) for x in (tokens.input_ids[i] for i in index)], range(len(index)), 0)
    return ids, mask


class SluBatches:
    """Batches of SLU utterances: ``input_ids``, ``attention_mask``, ``intents``, ``slot_labels`` (padded per batch).

    With a :class:`~language_agnostic.text.code_switch.CodeSwitcher`, every epoch switches every
    utterance anew (CoSDA-ML's dynamic code-switching) from a generator seeded by the epoch's
    generator and ``switch_seed``: the same seeds give the same switched data, another epoch
    other switches. Without one (dev data: never switched) the tokenisation is done once.

    The unswitched utterances are tokenised up front (so ``on_too_long: error`` fails at once);
    a switched epoch that comes out too long (a translation can be several words) is cut, and
    its counts are kept in :attr:`truncated_by_epoch`.

    Args:
        encoder: Its fast tokenizer and length limit.
        words: The words of every utterance.
        labels: One BIO label per word.
        intents: Intent ids, one per utterance.
        label_to_id: BIO label → id.
        extraction: ``embeddings.extraction`` (prefix, ``max_length``, ``on_too_long``).
        batch_size: Utterances per batch.
        shuffle: Reshuffle every epoch (training) or keep the order (dev).
        switcher: Code-switch training utterances, or ``None``.
        switch_seed: Seeds the switching together with the epoch's generator.
        keep_source: With a switcher, every batch holds its utterances as they are *and* their
            code-switched versions (LAJ-MCL's CoSDA-ML*, "both the en training data and the
            code-switching data", §4.2): twice the utterances per step, the same steps per epoch.
            ``False``: the switched versions only.
        group_by_length: Batch utterances of similar length (🤗 Trainer's ``group_by_length``,
            ``transformers.trainer_pt_utils.get_length_grouped_indices``: shuffled, cut into
            mega-batches of 50 batches, sorted by length inside each). With random batches 45 %
            of the tokens of an en-US MASSIVE batch of 32 are padding.
        ignore_index: The slot label of sub-tokens without one.
        what: Names the data in messages.

    Raises:
        ValueError: misaligned inputs, a label not in ``label_to_id`` (naming the utterance),
            or ``batch_size`` < 1.
    """

    def __init__(
        self,
        encoder: LoadedEncoder,
        words: Sequence[Sequence[str]],
        labels: Sequence[Sequence[str]],
        intents: Sequence[int],
        label_to_id: Mapping[str, int],
        extraction: Mapping[str, object] | None = None,
        batch_size: int = 32,
        shuffle: bool = True,
        switcher: CodeSwitcher | None = None,
        switch_seed: int = 0,
        ignore_index: int = -100,
        what: str = "utterances",
        keep_source: bool = False,
        group_by_length: bool = False,
    ) -> None:
        if not len(words) == len(labels) == len(intents):
            raise ValueError(
                f"{what}: {len(words)} utterances, {len(labels)} label lists and {len(intents)} intents; "
                "they must align"
            )
        if len(words) == 0:
            raise ValueError(f"{what}: no utterances")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        for i, (w, l) in enumerate(zip(words, labels)):
            if len(w) != len(l):
                raise ValueError(f"{what}: utterance {i} has {len(w)} words but {len(l)} labels")
        self.words = [[str(x) for x in w] for w in words]
        self.labels = [[str(x) for x in l] for l in labels]
        self.intents = torch.as_tensor(np.asarray(intents, dtype=np.int64))
        self.tokenizer, self.pad_id = encoder.tokenizer, int(encoder.tokenizer.pad_token_id)
        self.tokenisation = self._tokenisation(encoder, extraction)
        self.label_to_id, self.ignore_index, self.what = dict(label_to_id), ignore_index, what
        self.batch_size, self.shuffle = batch_size, shuffle
        self.switcher, self.switch_seed = switcher, switch_seed
        self.keep_source = bool(keep_source) and switcher is not None
        self.group_by_length = bool(group_by_length)
        self.tokens = tokenise_words(self.tokenizer, self.words, self.tokenisation, what=what)
        self.slot_labels = slot_label_ids(self.tokens, self.labels, self.label_to_id, ignore_index, what)
        self.truncated_by_epoch: dict[int, int] = {}

    def _tokenisation(self, encoder: LoadedEncoder, extraction: Mapping[str, object] | None) -> WordTokenisation:
        """The utterances' tokenisation (a subclass that puts tokens in front shortens it)."""
        return word_tokenisation(encoder, extraction)

    def __len__(self) -> int:
        """Utterances (the batch sources' convention: ``len()`` counts examples)."""
        return len(self.words)

    def n_batches(self) -> int:
        """Batches per epoch (what the loop plans its schedule on)."""
        return math.ceil(len(self.words) / self.batch_size)

    @property
    def n_utterances(self) -> int:
        return len(self.words)

    @property
    def n_truncated(self) -> int:
        """Unswitched utterances cut to the length limit."""
        return int(self.tokens.truncated.sum())

    def switched(self, generator: torch.Generator) -> tuple[list[list[str]], list[list[str]]]:
        """One code-switched copy of every utterance, drawn from ``generator`` (one draw) and ``switch_seed``."""
        if self.switcher is None:
            raise ValueError("no code-switcher given")
        draw = int(torch.randint(2**31 - 1, (1,), generator=generator))
        rng = np.random.default_rng([self.switch_seed, draw])
        pairs = [self.switcher.switch(w, l, rng) for w, l in zip(self.words, self.labels)]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def epoch_order(self, ids_rows: Sequence[Sequence[int]], generator: torch.Generator) -> torch.Tensor:
        """The order the epoch's utterances are batched in: reshuffled from ``generator``, length-grouped
        (``group_by_length``), or as given (``shuffle: false``).

        Args:
            ids_rows: The epoch's token rows: the utterances, then (``keep_source``) their switched
                versions; an utterance's length is the longer of its two rows, as both share a batch.
            generator: The epoch's generator (one draw of it either way).
        """
        n = len(self.words)
        if self.shuffle and self.group_by_length:
            from transformers.trainer_pt_utils import get_length_grouped_indices

            lengths = [max(len(ids_rows[i]), len(ids_rows[i + n]) if self.keep_source else 0) for i in range(n)]
            return torch.tensor(get_length_grouped_indices(lengths, self.batch_size, generator=generator))
        return torch.randperm(n, generator=generator) if self.shuffle else torch.arange(n)

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[dict[str, torch.Tensor]]:
        """The epoch's batches (switched first, when a switcher is given; then shuffled).

        With ``keep_source`` a batch is its ``batch_size`` utterances followed by their switched
        versions, in the same order.
        """
        ids_rows, slot_labels = self.tokens.input_ids, self.slot_labels
        if self.switcher is not None:
            words, labels = self.switched(generator)
            tokens = tokenise_words(
                self.tokenizer,
                words,
                self.tokenisation,
                on_too_long="truncate",
                what=f"{self.what} (code-switched, epoch {epoch})",
            )
            switched_labels = slot_label_ids(tokens, labels, self.label_to_id, self.ignore_index, self.what)
            self.truncated_by_epoch[epoch] = int(tokens.truncated.sum())
            if self.keep_source:  # rows n.. are the switched versions of rows ..n
                ids_rows, slot_labels = [*ids_rows, *tokens.input_ids], [*slot_labels, *switched_labels]
            else:
                ids_rows, slot_labels = tokens.input_ids, switched_labels
        for index in self.epoch_order(ids_rows, generator).split(self.batch_size):
            yield self.batch(ids_rows, slot_labels, index.tolist())[1]

    def batch(
        self, ids_rows: Sequence[Sequence[int]], slot_labels: Sequence[Sequence[int]], index: list[int]
    ) -> tuple[list[int], dict[str, torch.Tensor]]:
        """The rows of the utterances at ``index`` (with ``keep_source``, then their switched versions) and
        their batch: ``input_ids``, ``attention_mask``, ``intents``, ``slot_labels`` padded to the longest row.
        """
        n = len(self.words)
        rows = index + [i + n for i in index] if self.keep_source else index
        return rows, {
            "input_ids": pad(ids_rows, rows, self.pad_id),
            "attention_mask": pad([[1] * len(ids_rows[i]) for i in rows], range(len(rows)), 0),
            "intents": self.intents[index].repeat(2 if self.keep_source else 1),
            "slot_labels": pad(slot_labels, rows, self.ignore_index),
        }


def partition_rows(table: pd.DataFrame, locale: str, partition: str) -> pd.DataFrame:
    """The rows of one locale's partition, ordered by id (numerically when every id is a number)."""
    rows = table[(table["locale"] == locale) & (table["partition"] == partition)]
    ids = rows["id"].astype(str)
    key = ids.astype(int) if ids.str.isdigit().all() else ids
    return rows.iloc[np.argsort(key.to_numpy(), kind="stable")].reset_index(drop=True)


def words_of(rows: pd.DataFrame) -> list[list[str]]:
    """The ``words`` column as lists of strings."""
    return [[str(w) for w in words] for words in rows["words"]]


def labels_of(rows: pd.DataFrame) -> list[list[str]]:
    """The ``labels`` column as lists of strings."""
    return [[str(x) for x in labels] for labels in rows["labels"]]
