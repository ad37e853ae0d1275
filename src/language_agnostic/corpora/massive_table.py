"""The MASSIVE archive as tables: every configured locale parsed and validated, with counts and
rejects, and the parallel utterances of a language pair joined by MASSIVE ``id``.

Bad input stops with a message naming the file and line (or the parameter), or, under
``on_bad_row: skip``, is counted and reported; nothing is dropped silently.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pandas as pd

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog
from language_agnostic.corpora.massive import (
    PARTITIONS,
    ParseOptions,
    check_locale_code,
    iter_massive_rows,
    massive_member,
)

logger = logging.getLogger(__name__)

REJECT_COLUMNS = ["locale", "source", "line", "key", "kind", "reason", "content"]


def locale_tag(locale: str) -> str:
    """MLflow-friendly metric segment for a locale (``en-US`` → ``en_US``)."""
    return locale.replace("-", "_")


def validate_massive_config(
    locales: list[str], pairs: Mapping[str, Mapping[str, str]], available: list[str], where: str = "massive.locales"
) -> None:
    """Fail early, naming the parameter, on locales and pairs the archive cannot serve.

    Args:
        locales: ``massive.locales``.
        pairs: ``massive.pairs``: ``{namespace: {"source": locale, "target": locale}}`` (both keys: the run's
            parameters are validated by ``parameters.massive.Massive`` when it starts).
        available: Locales that have a file in the archive.
        where: The parameter that lists ``locales``, for messages (``slu.locales`` for the SLU pipeline).

    Raises:
        CorpusFormatError: on a malformed locale code, a locale without a file in the
            archive, or a pair that names a locale not listed in ``massive.locales``.
    """
    if not locales:
        raise CorpusFormatError(f"{where}: the list of locales is empty")
    for i, locale in enumerate(locales):
        check_locale_code(locale, f"{where}[{i}]")
        if locale not in available:
            raise CorpusFormatError(
                f"{where}[{i}]: the archive has no file {massive_member(locale)!r} (locales in it: {sorted(available)})"
            )
    for name, pair in pairs.items():
        for side in ("source", "target"):
            locale = pair[side]
            check_locale_code(locale, f"massive.pairs.{name}.{side}")
            if locale not in locales:
                raise CorpusFormatError(
                    f"massive.pairs.{name}.{side}: locale {locale!r} is not in {where} "
                    f"{list(locales)}; add it there (the archive has {sorted(available)})"
                )


def parse_massive(
    archive: Mapping[str, Any],
    locales: list[str],
    pairs: Mapping[str, Mapping[str, str]],
    ingest: Mapping[str, Any],
    where: str = "massive.locales",
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Read, validate and parse the configured locales of the MASSIVE 1.1 archive.

    Args:
        archive: Member name → loader (``TarArchiveDataset``), with a ``source`` attribute.
        locales: ``massive.locales``, e.g. ``["en-US", "de-DE"]``.
        pairs: ``massive.pairs`` (checked here so a bad pair fails before any work).
        ingest: ``massive.ingest``: ``on_bad_row`` (``error``/``skip``) and
            ``whitespace_insensitive_locales``.
        where: The parameter that lists ``locales``, for messages.

    Returns:
        ``(utterances, rejects, counts)``: one row per good utterance (tokens, BIO labels,
        slots, token offsets in ``utt``); one row per rejected line with its reason; counts
        per locale and partition.
    """
    source = str(getattr(archive, "source", "MASSIVE archive"))
    available = sorted(
        name.rsplit("/", 1)[-1].removesuffix(".jsonl")
        for name in archive
        if name.startswith("1.1/data/") and name.endswith(".jsonl")
    )
    validate_massive_config(list(locales), pairs, available, where)
    insensitive = set(ingest.get("whitespace_insensitive_locales", []))
    policy = ingest.get("on_bad_row", "error")
    rows: list[dict[str, Any]] = []
    rejects: list[dict[str, Any]] = []
    counts: dict[str, Any] = {}
    for locale in locales:
        member = massive_member(locale)
        text = archive[member]()
        log = RejectLog(policy=policy, logger=logger)
        options = ParseOptions(whitespace_insensitive=locale in insensitive, on_bad_row=policy)
        parsed = list(iter_massive_rows(text, f"{source}:{member}", locale, options, log))
        lines_in = sum(1 for line in text.splitlines() if line.strip())
        rows.extend(parsed)
        rejects.extend({"locale": locale, **r} for r in log.rows)
        per_partition = {p: sum(1 for r in parsed if r["partition"] == p) for p in PARTITIONS}
        counts[locale_tag(locale)] = {
            "rows_in": lines_in,
            "rows_out": len(parsed),
            "rejected": len(log.rows),
            **{f"rejected_{k}": v for k, v in log.counts().items()},
            **per_partition,
        }
        logger.info(
            "MASSIVE %s: %d rows in, %d out (%s), %d rejected %s",
            locale,
            lines_in,
            len(parsed),
            ", ".join(f"{p} {n}" for p, n in per_partition.items()),
            len(log.rows),
            log.counts() or "",
        )
    utterances = pd.DataFrame(rows)
    return utterances, pd.DataFrame(rejects, columns=REJECT_COLUMNS), counts


def _stop_on_unpaired(
    merged: pd.DataFrame, both: pd.DataFrame, disagree: pd.Series, src_locale: str, tgt_locale: str
) -> None:
    """``on_bad_row: error``: raise on the first id without a partner (or disagreeing), naming both files."""
    files = {loc: massive_member(loc) for loc in (src_locale, tgt_locale)}
    hint = "(massive.ingest.on_bad_row: error; 'skip' counts and reports such ids instead)"
    for side, here, there in (("left_only", src_locale, tgt_locale), ("right_only", tgt_locale, src_locale)):
        ids = merged.loc[merged["_merge"] == side, "id"]
        if len(ids):
            raise CorpusFormatError(
                f"{files[here]}: id {ids.iloc[0]!r} has no parallel row in {files[there]} ({len(ids)} such ids) {hint}"
            )
    if disagree.any():
        first = both.loc[disagree].iloc[0]
        raise CorpusFormatError(
            f"{files[src_locale]} and {files[tgt_locale]}: id {first['id']!r} disagrees on partition or "
            f"intent ({first['partition_src']}/{first['intent_src']} against "
            f"{first['partition_tgt']}/{first['intent_tgt']}) {hint}"
        )


def _warn_unpaired(
    both: pd.DataFrame, disagree: pd.Series, only_src: int, only_tgt: int, src_locale: str, tgt_locale: str
) -> None:
    """Log the ids that disagree across the locales and those found on one side only (skipped, not raised)."""
    if disagree.any():
        logger.warning(
            "pair %s-%s: %d ids disagree on partition or intent across locales; rejected (first: %s)",
            src_locale,
            tgt_locale,
            int(disagree.sum()),
            both.loc[disagree, "id"].head(5).tolist(),
        )
    if only_src or only_tgt:
        logger.warning(
            "pair %s-%s: %d ids only in %s, %d only in %s; rejected",
            src_locale,
            tgt_locale,
            only_src,
            src_locale,
            only_tgt,
            tgt_locale,
        )


def _pair_rows(good: pd.DataFrame, src_locale: str, tgt_locale: str) -> pd.DataFrame:
    """The pair table's columns from the merged rows of the ids found (and agreeing) in both locales."""
    return pd.DataFrame(
        {
            "id": good["id"],
            "partition": good["partition_src"],
            "scenario": good["scenario_src"],
            "intent": good["intent_src"],
            "source_locale": src_locale,
            "target_locale": tgt_locale,
            "source_utt": good["utt_src"],
            "target_utt": good["utt_tgt"],
        }
    ).reset_index(drop=True)


def build_pair_table(
    utterances: pd.DataFrame, pair: Mapping[str, str], ingest: Mapping[str, Any] | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Parallel utterances of one language pair, joined by MASSIVE ``id``.

    Args:
        utterances: Output of :func:`parse_massive`.
        pair: ``{"source": "en-US", "target": "de-DE"}``.
        ingest: ``massive.ingest``; under ``on_bad_row: error`` (the default) an id found in one
            locale only, or disagreeing on partition or intent, stops the run naming both files
            and the id; under ``skip`` it is counted and logged.

    Returns:
        ``(pairs, counts)``: one row per id present in both locales with ``id, partition,
        scenario, intent, source_locale, target_locale, source_utt, target_utt``; counts per
        partition and of ids found on one side only or disagreeing on partition/intent.
    """
    src_locale, tgt_locale = pair["source"], pair["target"]
    keep = ["id", "partition", "scenario", "intent", "utt"]
    src = utterances.loc[utterances["locale"] == src_locale, keep]
    tgt = utterances.loc[utterances["locale"] == tgt_locale, keep]
    for locale, side in ((src_locale, src), (tgt_locale, tgt)):
        if side.empty:
            raise CorpusFormatError(f"language pair {src_locale}->{tgt_locale}: no parsed utterances for {locale!r}")
    merged = src.merge(tgt, on="id", how="outer", suffixes=("_src", "_tgt"), indicator=True)
    only_src = int((merged["_merge"] == "left_only").sum())
    only_tgt = int((merged["_merge"] == "right_only").sum())
    both = merged[merged["_merge"] == "both"]
    disagree = (both["partition_src"] != both["partition_tgt"]) | (both["intent_src"] != both["intent_tgt"])
    if (ingest or {}).get("on_bad_row", "error") == "error":
        _stop_on_unpaired(merged, both, disagree, src_locale, tgt_locale)
    _warn_unpaired(both, disagree, only_src, only_tgt, src_locale, tgt_locale)
    table = _pair_rows(both[~disagree], src_locale, tgt_locale)
    per_partition = {p: int((table["partition"] == p).sum()) for p in PARTITIONS}
    counts = {
        f"{locale_tag(src_locale)}__{locale_tag(tgt_locale)}": {
            "rows_in_source": len(src),
            "rows_in_target": len(tgt),
            "pairs_out": len(table),
            "rejected_only_source": only_src,
            "rejected_only_target": only_tgt,
            "rejected_disagreeing": int(disagree.sum()),
            **per_partition,
        }
    }
    logger.info(
        "pair %s-%s: %d + %d rows in, %d pairs out (%s), %d rejected",
        src_locale,
        tgt_locale,
        len(src),
        len(tgt),
        len(table),
        ", ".join(f"{p} {n}" for p, n in per_partition.items()),
        only_src + only_tgt + int(disagree.sum()),
    )
    return table, counts
