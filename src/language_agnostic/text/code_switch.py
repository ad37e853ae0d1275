"""Dynamic code-switching data augmentation (CoSDA-ML; Qin et al., 2020).

Each training sentence is re-switched every time it is drawn: every word, with probability
``ratio``, is replaced by its translation from the bilingual dictionary of a language picked
at random, so that the encoder sees source words aligned with many target languages at once.
Slot labels follow the words, so the augmented sentence is still a valid SLU example.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from language_agnostic.corpora.errors import CorpusFormatError, decode_text

logger = logging.getLogger(__name__)


def read_muse(path: str | Path) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Read a MUSE bilingual dictionary and count what was read.

    One ``source target`` pair per line. A tab, when the line has one, is the separator
    (the target may then be several words, ``new york<TAB>nueva york`` style); otherwise the
    line must be exactly two space-separated fields. Blank lines are skipped; a repeated pair
    is kept once.

    Args:
        path: e.g. ``/work/shared/data/muse/en-de.txt``.

    Returns:
        ``(dictionary, counts)``: source word → its translations in file order;
        ``lines`` (non-blank), ``pairs`` (distinct), ``duplicates``, ``sources``.

    Raises:
        FileNotFoundError: no such file.
        CorpusFormatError: ``<path>:<line>: ...`` for a line that is not one pair, or for
            invalid UTF-8.
    """
    path = Path(path)
    text = decode_text(path.read_bytes(), str(path))
    dictionary: dict[str, list[str]] = {}
    counts = {"lines": 0, "pairs": 0, "duplicates": 0, "sources": 0}
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        counts["lines"] += 1
        source, target = _muse_pair(line, f"{path}:{line_no}")
        translations = dictionary.setdefault(source, [])
        if target in translations:
            counts["duplicates"] += 1
            continue
        translations.append(target)
        counts["pairs"] += 1
    counts["sources"] = len(dictionary)
    logger.info(
        "MUSE %s: %d lines, %d pairs (%d duplicates), %d source words",
        path.name,
        counts["lines"],
        counts["pairs"],
        counts["duplicates"],
        counts["sources"],
    )
    return dictionary, counts


def _muse_pair(line: str, where: str) -> tuple[str, str]:
    """``(source, target)`` of one non-blank dictionary line, or a :class:`CorpusFormatError`."""
    if "\t" in line:
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) != 2:
            raise CorpusFormatError(
                f"{where}: expected 'source<TAB>target', got {len(fields)} tab-separated fields in {line!r}"
            )
        if not all(fields):
            raise CorpusFormatError(f"{where}: empty source or target in {line!r}")
        source, target = fields
        if len(source.split()) != 1:
            raise CorpusFormatError(f"{where}: source {source!r} is not a single word")
        # a multi-word target keeps single spaces between its words
        return source, " ".join(target.split())
    fields = line.split()
    if len(fields) != 2:
        raise CorpusFormatError(
            f"{where}: expected 'source target', got {len(fields)} space-separated field(s) in {line!r} "
            "(a multi-word target needs a tab after the source)"
        )
    return fields[0], fields[1]


def load_muse(path: str | Path) -> dict[str, list[str]]:
    """A MUSE dictionary as source word → translations (see :func:`read_muse`)."""
    return read_muse(path)[0]


def _draws(rng: random.Random | np.random.Generator) -> tuple[Callable[[], float], Callable[[int], int]]:
    """``(uniform, index)`` functions over ``random.Random`` or ``numpy.random.Generator``."""
    if isinstance(rng, np.random.Generator):
        return (lambda: float(rng.random())), (lambda n: int(rng.integers(n)))
    if isinstance(rng, random.Random):
        return rng.random, rng.randrange
    raise TypeError(f"rng must be a random.Random or numpy.random.Generator, got {type(rng).__name__}")


class CodeSwitcher:
    """Replace words by dictionary translations at random, labels following (CoSDA-ML).

    Args:
        dictionaries: Language → (source word → translations). Source words are
            lower-cased here, since look-up is by the lower-cased word.
        ratio: Probability that a word is chosen for replacement, in [0, 1].
        seed: Seed of the switcher's own generator (used when ``switch`` gets none).

    Raises:
        ValueError: no language, or ``ratio`` outside [0, 1].
    """

    def __init__(self, dictionaries: Mapping[str, Mapping[str, Sequence[str]]], ratio: float, seed: int = 0) -> None:
        if not dictionaries:
            raise ValueError("dictionaries: no language given")
        if math.isnan(ratio) or not 0.0 <= ratio <= 1.0:
            raise ValueError(f"ratio must be a number in [0, 1], got {ratio!r}")
        self.ratio = float(ratio)
        # sorted, so that the language drawn for a seed does not depend on the config's order
        self.languages = tuple(sorted(dictionaries))
        self._dictionaries: dict[str, dict[str, list[str]]] = {}
        for lang in self.languages:
            merged: dict[str, list[str]] = {}
            for source, targets in dictionaries[lang].items():
                kept = merged.setdefault(source.lower(), [])
                kept.extend(t for t in targets if t.strip() and t not in kept)
            self._dictionaries[lang] = {s: t for s, t in merged.items() if t}
        self._rng = random.Random(seed)

    def switch(
        self,
        words: Sequence[str],
        labels: Sequence[str],
        rng: random.Random | np.random.Generator | None = None,
    ) -> tuple[list[str], list[str]]:
        """One code-switched version of a sentence; every call draws afresh.

        A word chosen (probability ``ratio``) is looked up, lower-cased, in the dictionary of
        a language drawn uniformly; if that dictionary has it, one of its translations, drawn
        uniformly, replaces it, else the word stays. A translation of several words is
        several words: the labels become ``B-x, I-x, ...`` for ``B-x``, ``I-x, I-x, ...``
        for ``I-x`` and ``O, O, ...`` for ``O``.

        Args:
            words: The sentence's words.
            labels: One label per word.
            rng: A ``random.Random`` or ``numpy.random.Generator``; the switcher's own
                seeded generator when ``None``.

        Returns:
            ``(words, labels)`` of equal length.

        Raises:
            ValueError: ``words`` and ``labels`` differ in length.
        """
        if len(words) != len(labels):
            raise ValueError(f"{len(words)} words but {len(labels)} labels; they must align")
        uniform, index = _draws(self._rng if rng is None else rng)
        out_words: list[str] = []
        out_labels: list[str] = []
        for word, label in zip(words, labels):
            # one uniform draw per word whatever happens, so that a sentence consumes the
            # generator the same way whether or not its words are in the dictionaries
            if uniform() >= self.ratio:
                out_words.append(word)
                out_labels.append(label)
                continue
            lang = self.languages[index(len(self.languages))]
            candidates = self._dictionaries[lang].get(word.lower())
            if not candidates:
                out_words.append(word)
                out_labels.append(label)
                continue
            pieces = candidates[index(len(candidates))].split()
            inside = "I-" + label[2:] if label.startswith("B-") else label
            out_words.extend(pieces)
            out_labels.append(label)
            out_labels.extend([inside] * (len(pieces) - 1))
        return out_words, out_labels

    def coverage(self, sentences: Iterable[Sequence[str]]) -> dict[str, float]:
        """Per language, the fraction of word tokens (lower-cased) its dictionary has.

        Args:
            sentences: Sentences as lists of words.

        Raises:
            ValueError: the sentences have no word at all.
        """
        total = 0
        hits = dict.fromkeys(self.languages, 0)
        for words in sentences:
            for word in words:
                total += 1
                key = word.lower()
                for lang in self.languages:
                    hits[lang] += key in self._dictionaries[lang]
        if total == 0:
            raise ValueError("sentences: no word tokens to measure coverage on")
        return {lang: hits[lang] / total for lang in self.languages}


def code_switch_languages(
    code_switch: Mapping[str, Any], locales: Iterable[str], available: Sequence[str]
) -> list[str]:
    """``code_switch.languages``, or ([]) the ``available`` dictionary languages that are also the
    language part of one of ``locales`` (English, the source, excluded).
    """
    configured = list(code_switch.get("languages") or [])
    if configured:
        return configured
    wanted = {str(loc).split("-")[0] for loc in locales} - {"en"}
    return [lang for lang in available if lang in wanted]
