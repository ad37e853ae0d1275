"""The LASER Tatoeba similarity-search test sets (Artetxe & Schwenk 2019): 112 ``xxx-eng`` pairs, line-aligned.

Layout of ``tatoeba/v1``: ``tatoeba.<xxx>-eng.<xxx>`` and ``tatoeba.<xxx>-eng.eng``, UTF-8, one
sentence per line, line ``i`` of one file the translation of line ``i`` of the other (between
104 and 1,000 pairs per language). The English sides differ from language to language.

Every check names the file and line: a missing partner file, files of different lengths (the
first line that has no partner), an invalid byte, an empty sentence (rejected under
``on_bad_row: skip``, counted, kept in the rejects table; fatal under ``error``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog
from language_agnostic.corpora.languages import language_table

logger = logging.getLogger(__name__)

Files = Mapping[str, Callable[[], str]]
PAIR_COLUMNS = ["language", "line", "text", "eng"]
REJECT_COLUMNS = ["source", "line", "key", "kind", "reason", "content"]
LANGUAGE_COLUMNS = ["language", "iso639_1", "script", "name", "pairs", "seen", "seen_by"]
_FILE = re.compile(r"^tatoeba\.([a-z]{3})-eng\.([a-z]{3})$")


def tatoeba_files(language: str) -> tuple[str, str]:
    """The two file names of the pair ``<language>-eng``: ``(tatoeba.xxx-eng.xxx, tatoeba.xxx-eng.eng)``."""
    return f"tatoeba.{language}-eng.{language}", f"tatoeba.{language}-eng.eng"


def available_languages(names: Sequence[str]) -> list[str]:
    """The languages with a ``tatoeba.<xxx>-eng.<xxx>`` file among ``names``, sorted (other files are ignored)."""
    found = set()
    for name in names:
        match = _FILE.match(str(name).rsplit("/", 1)[-1])
        if match and match.group(1) == match.group(2) and match.group(1) != "eng":
            found.add(match.group(1))
    return sorted(found)


def _lines(text: str) -> list[str]:
    # "\n" only: str.splitlines would also split at U+2028 or \x1c inside a sentence and shift the alignment
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def read_tatoeba_pair(
    xxx_text: str, eng_text: str, language: str, sources: tuple[str, str], rejects: RejectLog
) -> list[tuple[int, str, str]]:
    """The aligned sentence pairs of one language.

    Args:
        xxx_text: The ``tatoeba.<xxx>-eng.<xxx>`` file's text.
        eng_text: The ``tatoeba.<xxx>-eng.eng`` file's text.
        language: ``xxx`` (for reject keys).
        sources: The two files' names for messages (``xxx`` side, ``eng`` side).
        rejects: Where empty sentences go (or raise, under ``on_bad_row: error``).

    Returns:
        ``(line, xxx sentence, English sentence)`` per kept pair; ``line`` is 1-based.

    Raises:
        CorpusFormatError: The files differ in length (naming the shorter file and its first
            missing line), or an empty sentence under ``on_bad_row: error``.
    """
    xxx, eng = _lines(xxx_text), _lines(eng_text)
    if len(xxx) != len(eng):
        short, long_, n_short, n_long = (
            (sources[0], sources[1], len(xxx), len(eng))
            if len(xxx) < len(eng)
            else (sources[1], sources[0], len(eng), len(xxx))
        )
        raise CorpusFormatError(
            f"{short}:{n_short + 1}: missing line: {short} has {n_short} lines but {long_} has "
            f"{n_long}; the two files of a Tatoeba pair must be line-aligned"
        )
    pairs = []
    for number, (a, b) in enumerate(zip(xxx, eng), start=1):
        empty = [source for source, text in zip(sources, (a, b)) if not text.strip()]
        if empty:
            rejects.reject(
                empty[0],
                number,
                "empty_sentence",
                "empty sentence (its translation is dropped with it)",
                key=f"{language}:{number}",
                content=a if empty[0] == sources[1] else b,
            )
            continue
        pairs.append((number, a.strip(), b.strip()))
    return pairs


def ingest_tatoeba(
    files: Files, params: Mapping[str, Any], seen_by: Mapping[str, Sequence[str]] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Read the configured Tatoeba pairs into one table, with the languages' codes, scripts and training status.

    Args:
        files: File name → reader of ``tatoeba/v1`` (a ``TextDirectoryDataset``; ``source`` names the folder).
        params: ``tatoeba.ingest``: ``languages`` (``all`` or ISO 639-3 codes), ``expected_pairs``
            (the number of languages ``all`` must find; ``null``: any) and ``on_bad_row``; validated by
            ``parameters.tatoeba.Ingest`` when the run starts (an unknown key here is ignored).
        seen_by: ``{training source: [ISO 639-3 codes]}``: which configured training data holds
            each language (``methods/apply.py:training_languages``); ``None``: none.

    Returns:
        ``(pairs, rejects, languages, counts)``: :data:`PAIR_COLUMNS` rows in language then line
        order; the rejected lines; one row per language (:data:`LANGUAGE_COLUMNS`; ``seen`` is
        whether any training source holds it, ``seen_by`` those sources, comma-separated);
        ``{language: {xxx_lines, eng_lines, pairs, rejected}}`` plus ``total``.

    Raises:
        CorpusFormatError: No pair found, a configured language without its files, another number
            of languages than ``expected_pairs``, or a bad file (see :func:`read_tatoeba_pair`).
    """
    folder = getattr(files, "source", "tatoeba/v1")
    present = available_languages(list(files))
    wanted = params.get("languages", "all")
    if wanted == "all":
        languages = present
        expected = params.get("expected_pairs")
        if not languages:
            raise CorpusFormatError(f"{folder}: no tatoeba.<xxx>-eng.<xxx> file")
        if expected is not None and len(languages) != int(expected):
            raise CorpusFormatError(
                f"{folder}: {len(languages)} language pairs found, tatoeba.ingest.expected_pairs "
                f"says {int(expected)}; found: {languages}"
            )
    else:
        languages = [str(lang) for lang in wanted]
    rejects = RejectLog(str(params.get("on_bad_row", "error")), logger=logger)
    tables, counts = [], {}
    for language in languages:
        names = tatoeba_files(language)
        for name in names:
            if name not in files:
                raise CorpusFormatError(
                    f"{folder}/{name}: file not found; the pair {language}-eng needs both {names[0]} and {names[1]}"
                )
        texts = [files[name]() for name in names]
        before = len(rejects.rows)
        pairs = read_tatoeba_pair(
            texts[0], texts[1], language, (f"{folder}/{names[0]}", f"{folder}/{names[1]}"), rejects
        )
        n_lines = len(_lines(texts[0]))
        counts[language] = {
            "xxx_lines": n_lines,
            "eng_lines": len(_lines(texts[1])),
            "pairs": len(pairs),
            "rejected": len(rejects.rows) - before,
        }
        tables.append(pd.DataFrame(pairs, columns=["line", "text", "eng"]).assign(language=language))
    table = pd.concat(tables, ignore_index=True)[PAIR_COLUMNS]
    counts["total"] = {"languages": len(languages), "pairs": int(len(table)), "rejected": len(rejects.rows)}
    logger.info(
        "Tatoeba: %d pairs in %d languages from %s (%d rejected; fewest %s, most %s)",
        len(table),
        len(languages),
        folder,
        len(rejects.rows),
        *_extremes(counts),
    )
    frame = pd.DataFrame(rejects.rows, columns=REJECT_COLUMNS).astype({"line": "Int64"})
    return table, frame, language_rows(languages, counts, seen_by or {}), counts


def _extremes(counts: Mapping[str, Mapping[str, int]]) -> tuple[str, str]:
    sizes = {k: v["pairs"] for k, v in counts.items() if k != "total"}
    low, high = min(sizes, key=sizes.get), max(sizes, key=sizes.get)
    return f"{low} {sizes[low]}", f"{high} {sizes[high]}"


def language_rows(
    languages: Sequence[str], counts: Mapping[str, Mapping[str, int]], seen_by: Mapping[str, Sequence[str]]
) -> pd.DataFrame:
    """One row per language: codes, script and name (``corpora/languages.py``), pairs kept, training status."""
    table = language_table()
    rows = []
    for language in languages:
        info = table.get(language)
        if info is None:
            logger.warning(
                "Tatoeba language %r is not in corpora/languages.py: no ISO 639-1 code, script or name", language
            )
        sources = sorted(source for source, codes in seen_by.items() if language in set(codes))
        rows.append(
            [
                language,
                info.iso639_1 if info else "",
                info.script if info else "",
                info.name if info else language,
                int(counts[language]["pairs"]),
                bool(sources),
                ",".join(sources),
            ]
        )
    return pd.DataFrame(rows, columns=LANGUAGE_COLUMNS)


def text_index(pairs: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every distinct sentence once, and where each pair's two sides are in that list.

    The English sides repeat across languages (158,078 distinct sentences in the 177,754 of
    the 112 pairs), so encoding the distinct ones saves a tenth of the encoder's time.

    Returns:
        ``(texts, xxx_index, eng_index)``: the distinct sentences in first-seen order (``text``
        column, then ``eng``), and per pair row the positions of its two sides.
    """
    codes, uniques = pd.factorize(pd.concat([pairs["text"], pairs["eng"]], ignore_index=True))
    n = len(pairs)
    return [str(t) for t in uniques], codes[:n].astype(np.int64), codes[n:].astype(np.int64)
