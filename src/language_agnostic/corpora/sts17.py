"""SemEval-2017 Task 1 (STS) test sets: inputs in ``Sts2017.eval.v1.1.zip``, gold in ``Sts2017.gs.zip``.

Column order differs between files: ar-en, tr-en and track 4b put English first, track 4a
puts Spanish first. Track 6 (tr-en) has 500 input lines but 250 gold scores, which belong
to the first 250 lines. Each track's column languages are declared here and checked on the
text (script or accented letters), so a swapped file fails loudly instead of mislabelling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog

STS17_URL = "https://alt.qcri.org/semeval2017/task1/index.php?id=data-and-tools"
INPUT_DIR = "STS2017.eval.v1.1"
GOLD_DIR = "STS2017.gs"


@dataclass(frozen=True)
class StsTrack:
    """One STS 2017 file pair.

    Attributes:
        track: The file's track id (``1``, ``4a``, ...).
        name: The language pair in the file name (``ar-en``).
        first: Language of column 1.
        second: Language of column 2.
        gold_prefix_only: Gold scores cover only the first lines of the input (track 6).
    """

    track: str
    name: str
    first: str
    second: str
    gold_prefix_only: bool = False

    @property
    def input_member(self) -> str:
        return f"{INPUT_DIR}/STS.input.track{self.track}.{self.name}.txt"

    @property
    def gold_member(self) -> str:
        return f"{GOLD_DIR}/STS.gs.track{self.track}.{self.name}.txt"


TRACKS = {
    "ar-ar": StsTrack("1", "ar-ar", "ar", "ar"),
    "ar-en": StsTrack("2", "ar-en", "en", "ar"),
    "es-es": StsTrack("3", "es-es", "es", "es"),
    "es-en": StsTrack("4a", "es-en", "es", "en"),
    "es-en-wmt": StsTrack("4b", "es-en", "en", "es"),
    "en-en": StsTrack("5", "en-en", "en", "en"),
    "tr-en": StsTrack("6", "tr-en", "en", "tr", gold_prefix_only=True),
}

_MARKERS = {
    "ar": re.compile(r"[\u0600-\u06FF]"),
    "tr": re.compile(r"[çğışöüÇĞİŞÖÜ]"),
    "es": re.compile(r"[áéíóúñ¿¡ÁÉÍÓÚÑ]"),
}


def _marker_rate(texts: list[str], lang: str) -> float:
    pattern = _MARKERS.get(lang)
    return sum(bool(pattern.search(t)) for t in texts) / max(len(texts), 1) if pattern else 0.0


def check_column_languages(first: list[str], second: list[str], track: StsTrack, source: str) -> None:
    """Fail when the text contradicts the declared column order of a cross-lingual track.

    The non-English column must show its language's marks (Arabic script; Turkish or Spanish
    letters) clearly more often than the English one.
    """
    if track.first == track.second:
        return
    other = track.second if track.first == "en" else track.first
    english_col, other_col = (first, second) if track.first == "en" else (second, first)
    if _marker_rate(other_col, other) <= _marker_rate(english_col, other) + 0.1:
        raise CorpusFormatError(
            f"{source}: the columns do not look like {track.first} then {track.second} "
            f"({other} marks in {_marker_rate(other_col, other):.0%} of the {other} column vs "
            f"{_marker_rate(english_col, other):.0%} of the English one); is the file's column order swapped?"
        )


def read_sts_track(
    input_text: str, gold_text: str, track: StsTrack, source: str, rejects: RejectLog
) -> list[dict[str, Any]]:
    """Pair each input line with its gold score.

    Args:
        input_text: ``STS.input.track*.txt``.
        gold_text: ``STS.gs.track*.txt``.
        track: Its declaration from ``TRACKS``.
        source: The archive, for messages.
        rejects: Where bad rows go (or raise).

    Returns:
        Rows with ``track, pair, lang1, lang2, sentence1, sentence2, score``.
    """
    inputs = [line for line in input_text.split("\n")]
    while inputs and not inputs[-1].strip():
        inputs.pop()
    golds = [line for line in gold_text.split("\n")]
    while golds and not golds[-1].strip():
        golds.pop()
    where_in, where_gold = f"{source}:{track.input_member}", f"{source}:{track.gold_member}"
    if len(golds) > len(inputs) or (len(golds) != len(inputs) and not track.gold_prefix_only):
        raise CorpusFormatError(
            f"{where_gold}: {len(golds)} gold scores for {len(inputs)} input lines in {track.input_member}"
        )
    rows: list[dict[str, Any]] = []
    for number, (line, gold) in enumerate(zip(inputs, golds), start=1):
        fields = line.rstrip("\r").split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            rejects.reject(
                where_in,
                number,
                "bad_input_line",
                f"expected two non-empty tab-separated sentences, got {len(fields)} field(s)",
                content=line,
            )
            continue
        try:
            score = float(gold)
        except ValueError:
            rejects.reject(where_gold, number, "bad_score", f"gold score {gold!r} is not a number", content=gold)
            continue
        if not 0.0 <= score <= 5.0:
            rejects.reject(where_gold, number, "bad_score", f"gold score {score} is outside 0-5", content=gold)
            continue
        rows.append(
            {
                "track": track.track,
                "pair": track.name,
                "lang1": track.first,
                "lang2": track.second,
                "sentence1": fields[0].strip(),
                "sentence2": fields[1].strip(),
                "score": score,
            }
        )
    check_column_languages([r["sentence1"] for r in rows], [r["sentence2"] for r in rows], track, where_in)
    return rows
