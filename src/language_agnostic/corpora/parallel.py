"""Parallel training corpora for the QE/STS heads, and their hygiene against the test sets.

Readers (all return ``(source sentence, target sentence)`` pairs, line-aligned files checked):

- MLQE-PE post-edits: ``<pair>-<split>/<split>.src`` + ``.pe``, Moses-tokenised upstream, so
  detokenised here (sacremoses) to look like the QE test sentences;
- FLoRes v1 ne-en / si-en: ``wikipedia.<split>.<pair>.<lang>``;
- OPUS-MT Tatoeba test sets: ``<set>.<xxx>`` + ``<set>.eng``, optionally filtered by the
  ``.labels`` file's per-line language variant.

Hygiene: exact duplicates are dropped, and so is every pair whose source *or* target appears
in any evaluation set (compared after NFKC, case folding and whitespace normalisation), then
a seeded 90/10 train/validation split. Every step returns counts, so nothing is lost silently.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

from language_agnostic.corpora.errors import CorpusFormatError

Pair = tuple[str, str]


def read_line_aligned(source_text: str, target_text: str, where: str) -> list[Pair]:
    """Zip two line-aligned files; a different line count is an error naming both."""
    src, tgt = _lines(source_text), _lines(target_text)
    if len(src) != len(tgt):
        raise CorpusFormatError(f"{where}: {len(src)} source lines but {len(tgt)} target lines")
    return list(zip(src, tgt))


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


@lru_cache(maxsize=16)
def _detokenizer(lang: str):
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=lang)


def moses_detokenize(line: str, lang: str) -> str:
    """Undo Moses tokenisation (``Freiburg .`` → ``Freiburg.``) for language ``lang``."""
    return _detokenizer(lang).detokenize(line.split())


def mlqe_pe_pairs(src_text: str, pe_text: str, pair: str, where: str) -> list[Pair]:
    """Source + human post-edit pairs of an MLQE-PE split, detokenised.

    Args:
        src_text: ``<split>.src``.
        pe_text: ``<split>.pe``.
        pair: e.g. ``"ro-en"`` (source language first).
        where: For messages.
    """
    src_lang, tgt_lang = pair.split("-")
    return [
        (moses_detokenize(s, src_lang), moses_detokenize(t, tgt_lang))
        for s, t in read_line_aligned(src_text, pe_text, where)
    ]


def filter_by_labels(
    pairs: Sequence[Pair], labels_text: str, keep: Iterable[str], where: str
) -> tuple[list[Pair], int]:
    """Keep the pairs whose ``.labels`` line names a kept variant (e.g. ``cmn_Hans``).

    Returns:
        ``(kept pairs, number dropped)``.
    """
    labels = _lines(labels_text)
    if len(labels) != len(pairs):
        raise CorpusFormatError(f"{where}: {len(labels)} labels for {len(pairs)} sentence pairs")
    wanted = set(keep)
    kept = [p for p, label in zip(pairs, labels) if label.strip().split("\t")[0] in wanted]
    return kept, len(pairs) - len(kept)


_SPACE = re.compile(r"\s+")


def overlap_key(text: str) -> str:
    """The form in which sentences are compared for train/test overlap."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def clean_pairs(pairs: Sequence[Pair], test_sentences: Iterable[str]) -> tuple[list[Pair], dict[str, int]]:
    """Drop empty pairs, exact duplicates, and pairs with either side in a test set.

    Args:
        pairs: Candidate training pairs.
        test_sentences: Every sentence of every evaluation set (QE, STS, Tatoeba, ...).

    Returns:
        ``(kept, counts)`` with ``in, empty, duplicate, test_overlap, out``.
    """
    banned = {overlap_key(s) for s in test_sentences}
    seen: set[Pair] = set()
    kept: list[Pair] = []
    counts = {"in": len(pairs), "empty": 0, "duplicate": 0, "test_overlap": 0}
    for src, tgt in pairs:
        src, tgt = src.strip(), tgt.strip()
        if not src or not tgt:
            counts["empty"] += 1
            continue
        key = (overlap_key(src), overlap_key(tgt))
        if key in seen:
            counts["duplicate"] += 1
            continue
        seen.add(key)
        if key[0] in banned or key[1] in banned:
            counts["test_overlap"] += 1
            continue
        kept.append((src, tgt))
    counts["out"] = len(kept)
    return kept, counts


def train_validation_split(
    pairs: Sequence[Pair], validation_fraction: float, seed: int
) -> tuple[list[Pair], list[Pair]]:
    """A seeded random split; the validation part has ``round(fraction × n)`` pairs (at least 1)."""
    if not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must be between 0 and 1, got {validation_fraction}")
    if len(pairs) < 2:
        raise ValueError(f"need at least 2 pairs to split, got {len(pairs)}")
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    n_val = max(1, round(validation_fraction * len(pairs)))
    validation = sorted(order[:n_val])
    train = sorted(order[n_val:])
    return [pairs[i] for i in train], [pairs[i] for i in validation]


# OPUS-MT Tatoeba test sets used as STS training data: language -> directory under testsets/
OPUS_TATOEBA_DIRS = {
    "ara": "ara-eng",
    "deu": "deu-eng",
    "spa": "eng-spa",
    "fra": "eng-fra",
    "ita": "eng-ita",
    "nld": "eng-nld",
    "tur": "eng-tur",
    "ron": "eng-ron",
    "est": "eng-est",
    "zho": "eng-zho",
}
# where a file mixes varieties, the .labels values kept (others are dropped and counted)
OPUS_TATOEBA_LABELS = {"ara": ("ara",), "zho": ("cmn_Hans", "cmn_Hant")}
OPUS_TATOEBA_VERSION = "tatoeba-test-v2021-08-07"


def opus_tatoeba_files(lang3: str, version: str = OPUS_TATOEBA_VERSION) -> tuple[str, str, str | None]:
    """Relative paths (under ``opus-mt-testsets/testsets``) of a language's ``<xxx>``, ``eng`` and labels files."""
    if lang3 not in OPUS_TATOEBA_DIRS:
        raise ValueError(f"no OPUS-MT Tatoeba set configured for {lang3!r}; known: {sorted(OPUS_TATOEBA_DIRS)}")
    base = f"{OPUS_TATOEBA_DIRS[lang3]}/{version}"
    labels = f"{base}.{lang3}.labels" if lang3 in OPUS_TATOEBA_LABELS else None
    return f"{base}.{lang3}", f"{base}.eng", labels


def laser_tatoeba_files(lang3: str) -> tuple[str, str]:
    """Relative paths (under ``tatoeba/v1``) of the LASER Tatoeba test pair ``<xxx>``/``eng``."""
    return f"tatoeba.{lang3}-eng.{lang3}", f"tatoeba.{lang3}-eng.eng"
