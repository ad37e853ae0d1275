"""MASSIVE as a joint intent / slot-filling (SLU) task: words, BIO labels, label ids.

The words are the tokens of :func:`~language_agnostic.corpora.massive.parse_annot_utt`,
except for the locales MASSIVE's own preprocessing splits into characters (ja-JP, zh-CN,
zh-TW), whose annotations are not word-segmented. Labels are BIO tags (``O``, ``B-time``,
``I-time``); a model predicts one label per word, read off the word's first sub-token.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from language_agnostic.corpora.errors import CorpusFormatError, OnBadRow, RejectLog
from language_agnostic.corpora.massive import AnnotationError, parse_annot_utt

logger = logging.getLogger(__name__)

CHAR_SPLIT_LOCALES = ("ja-JP", "zh-CN", "zh-TW")
INPUT_COLUMNS = ("locale", "id", "partition", "intent", "annot_utt")
OUTPUT_COLUMNS = ["locale", "id", "partition", "intent", "words", "labels", "spaced"]
REJECT_COLUMNS = ["locale", "source", "line", "key", "kind", "reason", "content"]


def _keeps_with_latin_run(ch: str) -> bool:
    """Whether ``ch`` belongs to a run that stays one word in a character-split locale.

    ASCII (letters, digits and ASCII punctuation, so ``7:30`` and ``p.m.`` stay whole as
    MASSIVE's preprocessing keeps all-ASCII chunks) and Latin-script letters beyond ASCII
    (``boøwy``, full-width ``ＢＢＣ``), which are code-switched words, not ideographs.
    """
    if ch.isascii():
        return True
    return unicodedata.category(ch).startswith("L") and "LATIN" in unicodedata.name(ch, "")


def _is_invisible(ch: str) -> bool:
    """Whitespace and format/control characters (zero-width space, BOM): never a word.

    A sub-word tokenizer produces no sub-token for them, so a word made of one would get no
    label and no prediction.
    """
    return ch.isspace() or unicodedata.category(ch) in ("Cf", "Cc")


def split_characters(token: str) -> list[str]:
    """Split one token of a character-split locale into words.

    Every character is its own word, except that maximal runs of ASCII / Latin-script
    characters stay together; invisible characters are dropped.

    Args:
        token: One whitespace token of ``annot_utt``, e.g. ``"iphoneを7時に"``.

    Returns:
        e.g. ``["iphone", "を", "7", "時", "に"]``; empty if the token is all invisible.
    """
    pieces: list[str] = []
    run = ""
    for ch in token:
        if _is_invisible(ch):
            continue
        if _keeps_with_latin_run(ch):
            run += ch
            continue
        if run:
            pieces.append(run)
            run = ""
        pieces.append(ch)
    if run:
        pieces.append(run)
    return pieces


def slu_words(
    annot_utt: str, locale: str, char_locales: Sequence[str] = CHAR_SPLIT_LOCALES
) -> tuple[list[str], list[str]]:
    """Words and BIO labels of one MASSIVE utterance (:func:`slu_words_spaced` without the spacing)."""
    words, labels, _ = slu_words_spaced(annot_utt, locale, char_locales)
    return words, labels


def slu_words_spaced(
    annot_utt: str, locale: str, char_locales: Sequence[str] = CHAR_SPLIT_LOCALES
) -> tuple[list[str], list[str], list[bool]]:
    """Words and BIO labels of one MASSIVE utterance.

    Locales not in ``char_locales`` get the tokens and labels of ``parse_annot_utt`` as
    they are. Tokens of the others are split by :func:`split_characters`, as MASSIVE's
    preprocessing splits them:

    * every character is a word, except that runs of ASCII characters (``iphone``, ``7pm``,
      ``BBC``, ``7:30``) and of Latin-script letters stay one word;
    * punctuation (``、``, ``。``, ``？``) is a word with its own label, as upstream,
      so that the model sees the whole utterance;
    * whitespace and invisible format characters (zero-width space) are never words.

    A split token's first piece keeps its label; the following pieces of a ``B-x`` token
    become ``I-x``, those of an ``I-x`` or ``O`` token keep ``I-x`` / ``O``.

    Args:
        annot_utt: e.g. ``"[date : 金曜日] の [time : 午前九時] に起こしてください"``.
        locale: The utterance's locale, e.g. ``"ja-JP"``.
        char_locales: Locales to split into characters.

    Returns:
        ``(words, labels, spaced)`` of equal length; ``spaced[i]``: word ``i`` starts a
        whitespace token of the utterance (``False`` for the later pieces of a split token), so
        that the text can be rebuilt without the spaces the split would otherwise insert.

    Raises:
        AnnotationError: the markup does not parse, or a token of a character-split locale
            is made only of invisible characters (it would silently lose its label).
    """
    ann = parse_annot_utt(annot_utt)
    if locale not in char_locales:
        return list(ann.tokens), list(ann.bio), [True] * len(ann.tokens)
    words: list[str] = []
    labels: list[str] = []
    spaced: list[bool] = []
    for token, label in zip(ann.tokens, ann.bio):
        pieces = split_characters(token)
        if not pieces:
            raise AnnotationError(f"token {token!r} has only invisible characters in {annot_utt!r}")
        inside = "I-" + label[2:] if label.startswith("B-") else label
        words.extend(pieces)
        labels.append(label)
        labels.extend([inside] * (len(pieces) - 1))
        spaced.extend([True] + [False] * (len(pieces) - 1))
    return words, labels, spaced


def slu_table(
    utterances: pd.DataFrame,
    char_locales: Sequence[str] = CHAR_SPLIT_LOCALES,
    on_bad_row: OnBadRow = "error",
    source: str = "massive_utterances",
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, dict[str, int]]]:
    """One SLU row (words, BIO labels) per utterance of a MASSIVE table.

    Args:
        utterances: At least the columns ``locale, id, partition, intent, annot_utt``
            (``massive_utterances`` has them).
        char_locales: Locales split into characters (see :func:`slu_words`).
        on_bad_row: ``"error"`` raises at the first bad row, naming its locale and id;
            ``"skip"`` leaves it out and returns it among the rejects.
        source: The table's name in messages.

    Returns:
        ``(table, rejects, counts)``: ``locale, id, partition, intent, words, labels`` in
        input order; one row per rejected utterance with its reason; ``rows_in``,
        ``rows_out``, ``rejected`` and ``rejected_<kind>`` per locale (``en_US``) and ``all``.

    Raises:
        CorpusFormatError: a required column is missing, or (``on_bad_row: error``) a row is
            bad: an annotation that does not parse, or an id seen twice in one locale.
    """
    missing = [c for c in INPUT_COLUMNS if c not in utterances.columns]
    if missing:
        raise CorpusFormatError(f"{source}: missing column(s) {missing} (has {list(utterances.columns)})")
    log = RejectLog(policy=on_bad_row, logger=logger)
    rows: list[dict[str, Any]] = []
    reject_locales: list[str] = []
    seen: set[tuple[str, str]] = set()
    counts: dict[str, dict[str, int]] = {}
    for locale, key, partition, intent, annot in utterances[list(INPUT_COLUMNS)].itertuples(index=False, name=None):
        locale, key = str(locale), str(key)
        tally = counts.setdefault(locale.replace("-", "_"), {"rows_in": 0, "rows_out": 0, "rejected": 0})
        tally["rows_in"] += 1
        kind, reason, (words, labels, spaced) = _utterance_words(locale, key, annot, seen, char_locales)
        if kind:
            log.reject(source, None, kind, reason, key, str(annot))
            reject_locales.append(locale)
            tally["rejected"] += 1
            tally[f"rejected_{kind}"] = tally.get(f"rejected_{kind}", 0) + 1
            continue
        seen.add((locale, key))
        tally["rows_out"] += 1
        rows.append(
            {
                "locale": locale,
                "id": key,
                "partition": partition,
                "intent": intent,
                "words": words,
                "labels": labels,
                "spaced": spaced,
            }
        )
    counts["all"] = _all_locales(counts)
    logger.info(
        "SLU table from %s: %d rows in, %d out, %d rejected %s",
        source,
        counts["all"]["rows_in"],
        counts["all"]["rows_out"],
        counts["all"]["rejected"],
        log.counts() or "",
    )
    rejects = pd.DataFrame([{"locale": loc, **r} for loc, r in zip(reject_locales, log.rows)], columns=REJECT_COLUMNS)
    return pd.DataFrame(rows, columns=OUTPUT_COLUMNS), rejects, counts


def _utterance_words(
    locale: str, key: str, annot: Any, seen: set[tuple[str, str]], char_locales: Sequence[str]
) -> tuple[str, str, tuple[list[str], list[str], list[bool]]]:
    """``("", "", (words, labels, spaced))`` of a good utterance, or its reject kind and reason (and empty lists)."""
    where = f"locale {locale!r} id {key!r}"
    if (locale, key) in seen:
        return "duplicate_id", f"{where}: duplicate id", ([], [], [])
    if not isinstance(annot, str):
        return "bad_annotation", f"{where}: annot_utt is {annot!r}, not a string", ([], [], [])
    try:
        return "", "", slu_words_spaced(annot, locale, char_locales)
    except AnnotationError as exc:
        return "bad_annotation", f"{where}: annot_utt: {exc}", ([], [], [])


def _all_locales(counts: dict[str, dict[str, int]]) -> dict[str, int]:
    """Every count of ``counts`` summed over its locales (``rows_in``, ``rows_out``, ``rejected`` always present)."""
    total: dict[str, int] = {}
    for tally in counts.values():
        for name, n in tally.items():
            total[name] = total.get(name, 0) + n
    return {"rows_in": 0, "rows_out": 0, "rejected": 0, **total}


def _check_label(label: str, where: str) -> None:
    """Raise on a label that is neither ``O`` nor ``B-x`` / ``I-x``."""
    if label != "O" and not (label[:2] in ("B-", "I-") and len(label) > 2):
        raise ValueError(f"{where}: label {label!r} is not 'O', 'B-<slot>' or 'I-<slot>'")


def label_vocabulary(tables: pd.DataFrame | Iterable[pd.DataFrame]) -> list[str]:
    """The label set of a model: ``O``, then ``B-x``, ``I-x`` for every slot type x, sorted by x.

    Both ``B-`` and ``I-`` of every slot type seen are included, so that a label seen at
    test time only in its other form still has an id.

    Args:
        tables: The training table(s), with a ``labels`` column of BIO lists (from
            :func:`slu_table`); every row given is used, so pass training data only.

    Returns:
        e.g. ``["O", "B-date", "I-date", "B-time", "I-time"]``.

    Raises:
        ValueError: a table has no ``labels`` column, or a label is not BIO.
    """
    frames = [tables] if isinstance(tables, pd.DataFrame) else list(tables)
    slots: set[str] = set()
    for i, frame in enumerate(frames):
        if "labels" not in frame.columns:
            raise ValueError(f"tables[{i}]: no 'labels' column (has {list(frame.columns)})")
        for labels in frame["labels"]:
            for label in labels:
                _check_label(label, f"tables[{i}]")
                if label != "O":
                    slots.add(label[2:])
    return ["O"] + [f"{prefix}{slot}" for slot in sorted(slots) for prefix in ("B-", "I-")]


def align_labels(
    word_ids: Sequence[int | None],
    labels: Sequence[str],
    label_to_id: Mapping[str, int],
    ignore_index: int = -100,
) -> list[int]:
    """Label ids per sub-token: the word's label on its first sub-token, ``ignore_index`` elsewhere.

    Args:
        word_ids: ``encoding.word_ids()`` of a fast tokenizer (``None`` for special tokens),
            for an input given as pre-split words.
        labels: One BIO label per word.
        label_to_id: Label → id.
        ignore_index: The id the loss ignores (later sub-tokens, special tokens).

    Returns:
        One id per sub-token.

    Raises:
        ValueError: a word id outside ``labels``, a word whose sub-tokens are not
            contiguous, or a label missing from ``label_to_id``.
    """
    out: list[int] = []
    previous: int | None = None
    done: set[int] = set()
    for position, word in enumerate(word_ids):
        if word is None:
            out.append(ignore_index)
            previous = None
            continue
        if not 0 <= word < len(labels):
            raise ValueError(f"word_ids[{position}] = {word} but there are {len(labels)} labels")
        if word == previous:
            out.append(ignore_index)
            continue
        if word in done:
            raise ValueError(f"word_ids[{position}]: word {word} comes back after another word")
        label = labels[word]
        if label not in label_to_id:
            raise ValueError(f"labels[{word}] = {label!r} is not in label_to_id")
        out.append(label_to_id[label])
        done.add(word)
        previous = word
    return out


def first_subtoken_predictions(
    word_ids: Sequence[int | None],
    predicted_ids: Sequence[int],
    n_words: int | None = None,
    fill: int | None = None,
) -> list[int]:
    """One predicted label id per word: the prediction at the word's first sub-token.

    Args:
        word_ids: ``encoding.word_ids()`` (``None`` for special tokens).
        predicted_ids: One predicted id per sub-token (same length as ``word_ids``).
        n_words: The number of words of the utterance; by default one past the largest word
            id, which misses words cut off by truncation.
        fill: The id for a word without any sub-token (truncated away); by default such a
            word is an error, since dropping it would misalign the labels.

    Returns:
        ``n_words`` ids, in word order.

    Raises:
        ValueError: lengths differ, a word id is outside ``n_words``, or a word has no
            sub-token and ``fill`` is ``None``.
    """
    if len(word_ids) != len(predicted_ids):
        raise ValueError(f"{len(word_ids)} word_ids but {len(predicted_ids)} predicted_ids; they must align")
    first: dict[int, int] = {}
    for word, predicted in zip(word_ids, predicted_ids):
        if word is not None and word not in first:
            first[word] = int(predicted)
    count = n_words if n_words is not None else max(first, default=-1) + 1
    beyond = [w for w in first if not 0 <= w < count]
    if beyond:
        raise ValueError(f"word_ids has word {min(beyond)} but n_words is {count}")
    out: list[int] = []
    for word in range(count):
        if word in first:
            out.append(first[word])
        elif fill is not None:
            out.append(fill)
        else:
            raise ValueError(f"word {word} of {count} has no sub-token (truncated?); pass fill= to label it")
    return out
