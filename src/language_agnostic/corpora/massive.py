"""MASSIVE 1.1 (FitzGerald et al., 2022): jsonl rows and the ``annot_utt`` slot markup.

``annot_utt`` marks slots as ``[slot_type : value]``, e.g.
``wake me up at [time : nine am] on [date : friday]``. This module turns it into
whitespace tokens, BIO labels and slot spans, and aligns the tokens with the character
offsets of ``utt`` so that later stages can mask or replace slots *in the surface text the
encoder sees* (for ja-JP and zh-CN the annotation adds spaces around brackets that ``utt``
does not have).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog

MASSIVE_URL = "https://amazon-massive-nlu-dataset.s3.amazonaws.com/amazon-massive-dataset-1.1.tar.gz"
PARTITIONS = ("train", "dev", "test")
REQUIRED_FIELDS = ("id", "locale", "partition", "scenario", "intent", "utt", "annot_utt")
LOCALE_PATTERN = re.compile(r"^[a-z]{2,3}-[A-Z]{2}$")


def massive_member(locale: str) -> str:
    """Path of a locale's jsonl file inside the official MASSIVE 1.1 tarball."""
    return f"1.1/data/{locale}.jsonl"


class AnnotationError(ValueError):
    """``annot_utt`` markup that cannot be parsed (the message says why and where)."""


@dataclass(frozen=True)
class SlotSpan:
    """One slot of an utterance.

    Attributes:
        slot: The slot type, e.g. ``"date"``.
        value: The value as written in the annotation (tokens joined by single spaces).
        start: Index of the slot's first token.
        end: Index one past its last token.
    """

    slot: str
    value: str
    start: int
    end: int


@dataclass(frozen=True)
class Annotation:
    """A parsed ``annot_utt``: tokens, one BIO label per token, and slot spans."""

    tokens: tuple[str, ...]
    bio: tuple[str, ...]
    spans: tuple[SlotSpan, ...]

    @property
    def text(self) -> str:
        """The de-bracketed annotation: tokens joined by single spaces."""
        return " ".join(self.tokens)


def parse_annot_utt(annot: str) -> Annotation:
    """Parse MASSIVE's ``annot_utt`` markup.

    Tokens are the whitespace-separated words of the de-bracketed text; slot boundaries are
    token boundaries (a bracket glued to a word, as in ``[x : a]'s``, splits that word).

    Args:
        annot: e.g. ``"wake me up at [time : nine am] on [date : friday]"``.

    Returns:
        The tokens, BIO labels (``B-time``, ``I-time``, ``O``) and slot spans.

    Raises:
        AnnotationError: unbalanced or nested brackets, a slot without the ``:`` separator,
            an empty slot type or value, or an utterance with no tokens at all.
    """
    tokens: list[str] = []
    bio: list[str] = []
    spans: list[SlotSpan] = []
    pos = 0
    n = len(annot)
    while pos < n:
        open_at = annot.find("[", pos)
        close_at = annot.find("]", pos)
        if close_at != -1 and (open_at == -1 or close_at < open_at):
            raise AnnotationError(f"unbalanced ']' at character {close_at + 1} in {annot!r}")
        outside = annot[pos:] if open_at == -1 else annot[pos:open_at]
        for word in outside.split():
            tokens.append(word)
            bio.append("O")
        if open_at == -1:
            break
        close_at = annot.find("]", open_at + 1)
        nested = annot.find("[", open_at + 1)
        if close_at == -1:
            raise AnnotationError(f"unbalanced '[' at character {open_at + 1} in {annot!r}")
        if nested != -1 and nested < close_at:
            raise AnnotationError(f"nested '[' at character {nested + 1} in {annot!r}")
        body = annot[open_at + 1 : close_at]
        if ":" not in body:
            raise AnnotationError(f"slot without ' : ' separator at character {open_at + 1} in {annot!r}")
        slot, value = (part.strip() for part in body.split(":", 1))
        if not slot or any(c.isspace() for c in slot):
            raise AnnotationError(f"bad slot type {slot!r} at character {open_at + 1} in {annot!r}")
        words = value.split()
        if not words:
            raise AnnotationError(f"empty value for slot '{slot}' in {annot!r}")
        start = len(tokens)
        for i, word in enumerate(words):
            tokens.append(word)
            bio.append(("B-" if i == 0 else "I-") + slot)
        spans.append(SlotSpan(slot=slot, value=" ".join(words), start=start, end=len(tokens)))
        pos = close_at + 1
    if not tokens:
        raise AnnotationError(f"no tokens in annotation {annot!r}")
    return Annotation(tokens=tuple(tokens), bio=tuple(bio), spans=tuple(spans))


def align_tokens(tokens: Iterable[str], utt: str) -> list[tuple[int, int]] | None:
    """Character span of every token in ``utt``, ignoring whitespace.

    Args:
        tokens: Tokens whose concatenation, without whitespace, should spell ``utt``.
        utt: The surface utterance.

    Returns:
        ``[(start, end), ...]`` offsets into ``utt``, or ``None`` when the tokens do not spell
        ``utt`` once whitespace is ignored.
    """
    spans: list[tuple[int, int]] = []
    i = 0
    n = len(utt)
    for token in tokens:
        while i < n and utt[i].isspace():
            i += 1
        start = i
        for k, ch in enumerate(token):
            # utt may have a space where the annotation has none (ja/zh); the token's
            # surface span then includes it
            while k > 0 and i < n and utt[i].isspace():
                i += 1
            if i >= n or utt[i] != ch:
                return None
            i += 1
        spans.append((start, i))
    if utt[i:].strip():
        return None
    return spans


@dataclass(frozen=True)
class ParseOptions:
    """How to read one locale file.

    Attributes:
        whitespace_insensitive: Compare the de-bracketed annotation with ``utt`` ignoring
            whitespace (ja-JP, zh-CN) instead of exactly.
        on_bad_row: ``"error"`` (stop at the first bad row) or ``"skip"`` (log, count, go on).
    """

    whitespace_insensitive: bool = False
    on_bad_row: str = "error"


def iter_massive_rows(
    text: str, source: str, locale: str, options: ParseOptions, rejects: RejectLog
) -> Iterator[dict[str, Any]]:
    """Validate and parse the rows of one MASSIVE locale file.

    Args:
        text: The whole jsonl file.
        source: Its name for messages, e.g. ``"amazon-massive-dataset-1.1.tar.gz:1.1/data/en-US.jsonl"``.
        locale: The locale the file must contain.
        options: Parse options.
        rejects: Where bad rows go (or which raises, by its policy).

    Yields:
        One dict per good row: the upstream fields plus ``tokens``, ``bio``, ``slots``
        (list of ``{"slot", "value", "start", "end", "char_start", "char_end"}``), and
        ``token_starts`` / ``token_ends`` (character offsets of each token in ``utt``).
    """
    seen_ids: set[str] = set()
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row, error = _json_object(line)
        if row is None:
            rejects.reject(source, line_no, "malformed_json", error, "", line)
            continue
        fault = _field_fault(row, locale, seen_ids)
        if fault is None:
            ann, offsets, fault = _aligned_annotation(row, options)
        if fault is not None:
            reason, message = fault
            rejects.reject(source, line_no, reason, message, str(row.get("id", "")), line)
            continue
        assert ann is not None and offsets is not None
        seen_ids.add(str(row["id"]))
        yield _parsed_row(row, locale, ann, offsets)


def _json_object(line: str) -> tuple[dict[str, Any] | None, str]:
    """The row's JSON object, or ``None`` and why the line is not one."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON ({exc.msg})"
    if not isinstance(row, dict):
        return None, "a row must be a JSON object"
    return row, ""


def _field_fault(row: dict[str, Any], locale: str, seen_ids: set[str]) -> tuple[str, str] | None:
    """The reject reason and message of the first bad field of ``row``, or ``None`` if all are good."""
    missing = [f for f in REQUIRED_FIELDS if f not in row]
    if missing:
        return "missing_field", f"missing field(s) {missing}"
    key = str(row["id"])
    if row["locale"] != locale:
        return "wrong_locale", f"locale {row['locale']!r} in the file for {locale!r}"
    if row["partition"] not in PARTITIONS:
        return "unknown_partition", f"unknown partition {row['partition']!r} (expected one of {list(PARTITIONS)})"
    if key in seen_ids:
        return "duplicate_id", f"duplicate id {key!r}"
    utt = row["utt"]
    if not isinstance(utt, str) or not utt.strip():
        return "empty_utterance", "empty utterance"
    return None


def _aligned_annotation(
    row: dict[str, Any], options: ParseOptions
) -> tuple[Annotation | None, list[tuple[int, int]] | None, tuple[str, str] | None]:
    """``annot_utt`` parsed and its tokens' character offsets in ``utt``, or the reject reason and message."""
    try:
        ann = parse_annot_utt(row["annot_utt"])
    except AnnotationError as exc:
        return None, None, ("bad_annotation", f"annot_utt: {exc}")
    utt = row["utt"]
    mismatch = _utt_mismatch(ann, utt, options.whitespace_insensitive)
    offsets = align_tokens(ann.tokens, utt) if mismatch is None else None
    if mismatch is None and offsets is None:
        mismatch = "annotation tokens cannot be aligned with utt"
    if mismatch is not None:
        return None, None, ("utt_mismatch", mismatch)
    return ann, offsets, None


def _parsed_row(row: dict[str, Any], locale: str, ann: Annotation, offsets: list[tuple[int, int]]) -> dict[str, Any]:
    """The row :func:`iter_massive_rows` yields: upstream fields, tokens, BIO tags, slots and offsets."""
    return {
        "id": str(row["id"]),
        "locale": locale,
        "partition": row["partition"],
        "scenario": row["scenario"],
        "intent": row["intent"],
        "utt": row["utt"],
        "annot_utt": row["annot_utt"],
        "tokens": list(ann.tokens),
        "bio": list(ann.bio),
        "token_starts": [s for s, _ in offsets],
        "token_ends": [e for _, e in offsets],
        "slots": [
            {
                "slot": sp.slot,
                "value": sp.value,
                "start": sp.start,
                "end": sp.end,
                "char_start": offsets[sp.start][0],
                "char_end": offsets[sp.end - 1][1],
            }
            for sp in ann.spans
        ],
    }


def _utt_mismatch(ann: Annotation, utt: str, whitespace_insensitive: bool) -> str | None:
    """Why the de-bracketed annotation differs from ``utt``, or ``None`` if it does not."""
    if whitespace_insensitive:
        if "".join(ann.tokens) == "".join(utt.split()):
            return None
        return f"de-bracketed annot_utt {ann.text!r} != utt {utt!r} (ignoring whitespace)"
    if ann.text == utt:
        return None
    return f"de-bracketed annot_utt {ann.text!r} != utt {utt!r}"


def check_locale_code(locale: str, where: str) -> None:
    """Raise a clear error for a locale that is not of MASSIVE's ``xx-YY`` form.

    Args:
        locale: e.g. ``"en-US"``.
        where: The parameter path to name in the message.
    """
    if not isinstance(locale, str) or not LOCALE_PATTERN.match(locale):
        raise CorpusFormatError(f"{where}: {locale!r} is not a MASSIVE locale code (expected e.g. 'en-US', 'ja-JP')")
