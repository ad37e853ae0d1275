"""Template-retrieval sets: same carrier phrase, other slot values (FMDA §4.3.2, App. A, §4.6).

For an utterance with at least one slot, a *target* keeps every character of the carrier
phrase and replaces each slot value by another value of the same slot type seen in that
language. The single-target set (accuracy@1) has one target per source; the five-target set
(MAP) has five distinct targets per source. The same generator applied to the train split
gives the monolingual template pairs of FMDA's two-stage training.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def slot_surface(row: Mapping[str, Any], slot: Mapping[str, Any]) -> str:
    """A slot's value as it is written in ``utt`` (no annotation spaces for ja/zh)."""
    return str(row["utt"])[int(slot["char_start"]) : int(slot["char_end"])]


def build_value_inventory(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Every distinct surface value per slot type, in a deterministic order.

    Values that differ only in case are one value (the first spelling seen is kept), so that
    a replacement never differs from the original by case alone.

    Args:
        rows: Parsed MASSIVE rows (with ``utt`` and ``slots``) of one locale.

    Returns:
        ``{slot_type: [value, ...]}`` sorted by the case-folded value.
    """
    seen: dict[str, dict[str, str]] = {}
    for row in rows:
        for slot in row["slots"]:
            value = slot_surface(row, slot)
            seen.setdefault(str(slot["slot"]), {}).setdefault(value.casefold(), value)
    return {slot: [by_key[k] for k in sorted(by_key)] for slot, by_key in sorted(seen.items())}


def template_signature(row: Mapping[str, Any]) -> str:
    """The utterance with each slot value replaced by ``[slot_type]``, e.g. ``"wake me up at [time]"``."""
    return replace_slots(row, ["[" + str(s["slot"]) + "]" for s in row["slots"]])


def replace_slots(row: Mapping[str, Any], values: Sequence[str]) -> str:
    """``utt`` with the i-th slot's characters replaced by ``values[i]``; the rest is untouched."""
    utt = str(row["utt"])
    slots = list(row["slots"])
    if len(values) != len(slots):
        raise ValueError(f"{len(values)} values for {len(slots)} slots in {utt!r}")
    pieces: list[str] = []
    cursor = 0
    for slot, value in zip(slots, values):
        start, end = int(slot["char_start"]), int(slot["char_end"])
        pieces.append(utt[cursor:start])
        pieces.append(value)
        cursor = end
    pieces.append(utt[cursor:])
    return "".join(pieces)


def make_targets(
    row: Mapping[str, Any],
    inventory: Mapping[str, Sequence[str]],
    n_targets: int,
    rng: random.Random,
    max_tries: int = 1000,
) -> tuple[list[str], str | None]:
    """Generate ``n_targets`` distinct same-template variants of one utterance.

    Every slot gets a value of the same type that differs (case-insensitively) from the
    source's value, so each target shares the template and differs in every slot value.

    Args:
        row: A parsed MASSIVE row with at least one slot.
        inventory: Values per slot type (see :func:`build_value_inventory`).
        n_targets: How many distinct targets to make.
        rng: The seeded random generator (consumed in a fixed order).
        max_tries: Draws allowed before giving up on finding ``n_targets`` distinct targets.

    Returns:
        ``(targets, None)`` on success, else ``([], reason)``.
    """
    slots = list(row["slots"])
    if not slots:
        return [], "no slot"
    choices: list[list[str]] = []
    for slot in slots:
        own = slot_surface(row, slot).casefold()
        options = [v for v in inventory.get(str(slot["slot"]), []) if v.casefold() != own]
        if not options:
            return [], f"no other value of slot type '{slot['slot']}'"
        choices.append(options)
    n_combinations = math.prod(len(c) for c in choices)
    if n_combinations < n_targets:
        return [], f"only {n_combinations} distinct value combination(s) for {n_targets} targets"
    picked: list[tuple[str, ...]] = []
    seen: set[tuple[str, ...]] = set()
    for _ in range(max_tries):
        combo = tuple(rng.choice(options) for options in choices)
        if combo not in seen:
            seen.add(combo)
            picked.append(combo)
            if len(picked) == n_targets:
                return [replace_slots(row, list(c)) for c in picked], None
    return [], f"fewer than {n_targets} distinct targets after {max_tries} draws"


def build_template_set(
    rows: Sequence[Mapping[str, Any]],
    value_rows: Iterable[Mapping[str, Any]],
    n_targets: int,
    seed: int,
    name: str,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Template-retrieval rows for one locale and one partition.

    Args:
        rows: The source utterances (one locale, one partition), in a fixed order.
        value_rows: Utterances whose slot values may be used as replacements (same locale).
        n_targets: Targets per source (1 for accuracy@1, 5 for MAP).
        seed: Base seed; the generator is seeded with ``(seed, locale, name)`` so that sets
            and locales do not share random streams.
        name: The set's name (part of the seed), e.g. ``"single"``.

    Returns:
        ``(records, counts)``: one record per (source, target) with ``locale, source_id,
        target_index, template, source_utt, target_utt``; counts of sources in, sets out and
        sources skipped per reason.
    """
    inventory = build_value_inventory(value_rows)
    locale = str(rows[0]["locale"]) if rows else ""
    rng = random.Random(f"{seed}:{locale}:{name}")
    records: list[dict[str, Any]] = []
    counts: dict[str, int] = {"sources_in": len(rows), "sets_out": 0}
    for row in rows:
        targets, reason = make_targets(row, inventory, n_targets, rng)
        if reason is not None:
            key = "skipped_no_slot" if reason == "no slot" else "skipped_no_alternative"
            counts[key] = counts.get(key, 0) + 1
            continue
        counts["sets_out"] += 1
        signature = template_signature(row)
        for index, target in enumerate(targets):
            records.append(
                {
                    "locale": locale,
                    "source_id": str(row["id"]),
                    "target_index": index,
                    "template": signature,
                    "source_utt": str(row["utt"]),
                    "target_utt": target,
                }
            )
    return records, counts
