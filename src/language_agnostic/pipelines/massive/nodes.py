"""Nodes of the ``massive`` pipeline: thin adapters from the catalog to ``corpora`` and ``text``.

Every node is a pure function of its inputs and parameters; every node logs the rows it
took in, the rows it gave out and the rows it rejected, and returns those counts.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog
from language_agnostic.corpora.massive import (
    PARTITIONS,
    ParseOptions,
    check_locale_code,
    iter_massive_rows,
    massive_member,
)
from language_agnostic.encoders.loading import load_tokenizer
from language_agnostic.reporting.massive import summary_markdown
from language_agnostic.text.masking import template_and_residual
from language_agnostic.text.negative_pool import BleuSettings, negative_pool_mask
from language_agnostic.text.templates import build_template_set

logger = logging.getLogger(__name__)

REJECT_COLUMNS = ["locale", "source", "line", "key", "kind", "reason", "content"]


def _locale_tag(locale: str) -> str:
    """MLflow-friendly metric segment for a locale (``en-US`` → ``en_US``)."""
    return locale.replace("-", "_")


def validate_massive_config(
    locales: list[str], pairs: Mapping[str, Mapping[str, str]], available: list[str], where: str = "massive.locales"
) -> None:
    """Fail early, naming the parameter, on locales and pairs the archive cannot serve.

    Args:
        locales: ``massive.locales``.
        pairs: ``massive.pairs``: ``{namespace: {"source": locale, "target": locale}}``.
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
            locale = pair.get(side) if isinstance(pair, Mapping) else None
            if locale is None:
                raise CorpusFormatError(f"massive.pairs.{name}: missing '{side}' locale")
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
        counts[_locale_tag(locale)] = {
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
    good = both[~disagree]
    table = pd.DataFrame(
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
    per_partition = {p: int((table["partition"] == p).sum()) for p in PARTITIONS}
    counts = {
        f"{_locale_tag(src_locale)}__{_locale_tag(tgt_locale)}": {
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


def resolve_mask_token(masking: Mapping[str, Any], encoder: Mapping[str, Any]) -> str:
    """The mask token to use: ``massive.masking.mask_token``, or the encoder's own for ``auto``.

    Args:
        masking: ``massive.masking``.
        encoder: ``embeddings.encoder`` (``name``, ``bundled_dir``), read only for ``auto``.

    Raises:
        CorpusFormatError: when ``auto`` meets a tokenizer without a mask token.
    """
    token = str(masking.get("mask_token", "auto"))
    if token != "auto":
        return token

    tokenizer = load_tokenizer(
        str(encoder["name"]), encoder.get("bundled_dir", "data/06_models/encoders/multilingual-e5-small-q4")
    )
    if not tokenizer.mask_token:
        raise CorpusFormatError(
            f"massive.masking.mask_token is 'auto' but encoder {encoder['name']!r} has no mask token; "
            "set one explicitly"
        )
    logger.info("mask token from encoder %s: %r", encoder["name"], tokenizer.mask_token)
    return str(tokenizer.mask_token)


def build_masked_texts(
    utterances: pd.DataFrame, masking: Mapping[str, Any], mask_token: str
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """FMDA's template (slots masked) and residual (carrier masked) texts for every utterance.

    Args:
        utterances: Output of :func:`parse_massive`.
        masking: ``massive.masking``: ``unit`` (``token``/``span``).
        mask_token: From :func:`resolve_mask_token`.

    Returns:
        ``(texts, counts)`` with ``locale, id, partition, utt, template_text, residual_text,
        n_slot_tokens``.
    """
    unit = masking.get("unit", "token")
    records = []
    for row in utterances.itertuples(index=False):
        template, residual = template_and_residual(row.utt, row.token_starts, row.token_ends, row.bio, mask_token, unit)
        records.append(
            {
                "locale": row.locale,
                "id": row.id,
                "partition": row.partition,
                "utt": row.utt,
                "template_text": template,
                "residual_text": residual,
                "n_slot_tokens": int(sum(label != "O" for label in row.bio)),
            }
        )
    texts = pd.DataFrame(records)
    counts = {
        "masked_texts": {
            "rows_in": len(utterances),
            "rows_out": len(texts),
            "without_slots": int((texts["n_slot_tokens"] == 0).sum()) if len(texts) else 0,
        }
    }
    logger.info(
        "masked texts: %d utterances in, %d out (%d have no slot: template text = utterance)",
        len(utterances),
        len(texts),
        counts["masked_texts"]["without_slots"],
    )
    return texts, counts


def _template_sets(
    utterances: pd.DataFrame,
    partition: str,
    value_partitions: list[str],
    n_targets: int,
    seed: int,
    name: str,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Template sets of ``n_targets`` per source for every locale (see ``text.templates``)."""
    frames = []
    counts: dict[str, Any] = {}
    for locale, group in utterances.groupby("locale", sort=False):
        records = group.to_dict("records")
        sources = [r for r in records if r["partition"] == partition]
        values = [r for r in records if r["partition"] in value_partitions]
        out, c = build_template_set(sources, values, n_targets, seed, name)
        frames.append(pd.DataFrame(out))
        counts[_locale_tag(str(locale))] = c
        logger.info(
            "template set %r %s: %d %s utterances in, %d sets of %d out; skipped %d without "
            "slots, %d without enough other values",
            name,
            locale,
            c["sources_in"],
            partition,
            c["sets_out"],
            n_targets,
            c.get("skipped_no_slot", 0),
            c.get("skipped_no_alternative", 0),
        )
    return pd.concat(frames, ignore_index=True), counts


def build_template_retrieval_sets(
    utterances: pd.DataFrame, params: Mapping[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Single-target (accuracy@1) and multi-target (MAP) template-retrieval evaluation sets.

    Args:
        utterances: Output of :func:`parse_massive`.
        params: ``massive.template_retrieval``: ``partition``, ``value_partitions``,
            ``n_targets`` (``{single: 1, multi: 5}``) and ``seed``.

    Returns:
        ``(single, multi, counts)``.
    """
    n_targets = params["n_targets"]
    args = (params["partition"], list(params["value_partitions"]))
    single, c1 = _template_sets(utterances, *args, int(n_targets["single"]), int(params["seed"]), "single")
    multi, c5 = _template_sets(utterances, *args, int(n_targets["multi"]), int(params["seed"]), "multi")
    return single, multi, {"template_single": c1, "template_multi": c5}


def build_template_train_pairs(
    utterances: pd.DataFrame, params: Mapping[str, Any]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Monolingual template pairs from the train split, for FMDA's two-stage training (§4.6).

    Args:
        utterances: Output of :func:`parse_massive`.
        params: ``massive.template_pairs``: ``partition``, ``value_partitions``, ``seed``.

    Returns:
        ``(pairs, counts)``.
    """
    pairs, counts = _template_sets(
        utterances,
        params["partition"],
        list(params["value_partitions"]),
        1,
        int(params["seed"]),
        "train_pairs",
    )
    return pairs, {"template_train_pairs": counts}


def build_negative_pools(utterances: pd.DataFrame, params: Mapping[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per-locale, per-partition negative pools: utterances with no similar other utterance of the same partition.

    FMDA draws training negatives from the train pool (§4.2); the dev pool, built by the same
    rule among dev utterances, gives the dev loss negatives of the same kind, so early stopping
    measures what training optimises.

    Args:
        utterances: Output of :func:`parse_massive`.
        params: ``massive.negative_pool``: ``partitions`` (default ``[train, dev]``),
            ``threshold`` (BLEU 0–1 scale), ``direction``, ``smooth_method``, ``smooth_value``,
            ``effective_order``, ``lowercase``, ``tokenize`` (``{default: 13a, ja-JP: ja-mecab,
            ...}``), ``block_size``.

    Returns:
        ``(pool, counts)``: ``locale, partition, id, utt`` of every pooled utterance, and pool
        sizes per locale and partition (``{locale: {partition: {in, pool_out, pool_fraction}}}``).
    """
    tokenize = params.get("tokenize", {})
    if isinstance(tokenize, str):
        tokenize = {"default": tokenize}
    partitions = params.get("partitions", [params["partition"]] if "partition" in params else ["train", "dev"])
    if isinstance(partitions, str) or not partitions:
        raise ValueError(f"massive.negative_pool.partitions must be a non-empty list, got {partitions!r}")
    frames = []
    counts: dict[str, Any] = {}
    for locale, group in utterances.groupby("locale", sort=False):
        settings = BleuSettings(
            tokenize=str(tokenize.get(locale, tokenize.get("default", "13a"))),
            smooth_method=str(params.get("smooth_method", "none")),
            smooth_value=params.get("smooth_value"),
            effective_order=bool(params.get("effective_order", True)),
            lowercase=bool(params.get("lowercase", False)),
        )
        for partition in partitions:
            rows = group[group["partition"] == partition]
            if rows.empty:
                raise ValueError(f"massive.negative_pool.partitions: no {partition!r} utterances of {locale}")
            mask = negative_pool_mask(
                rows["utt"].tolist(),
                threshold=float(params["threshold"]),
                direction=params.get("direction", "both"),
                settings=settings,
                block_size=int(params.get("block_size", 1024)),
            )
            pooled = rows.loc[np.asarray(mask), ["locale", "partition", "id", "utt"]]
            frames.append(pooled)
            counts.setdefault(_locale_tag(str(locale)), {})[str(partition)] = {
                "in": len(rows),
                "pool_out": len(pooled),
                "pool_fraction": round(len(pooled) / max(len(rows), 1), 4),
            }
            logger.info(
                "negative pool %s %s (tokenize=%s, smooth=%s, threshold=%s, direction=%s): %d "
                "utterances in, %d in the pool (%.1f %%)",
                locale,
                partition,
                settings.tokenize,
                settings.smooth_method,
                params["threshold"],
                params.get("direction", "both"),
                len(rows),
                len(pooled),
                100 * len(pooled) / max(len(rows), 1),
            )
    return pd.concat(frames, ignore_index=True), {"negative_pool": counts}


def _flatten(prefix: str, value: Any, out: dict[str, float]) -> None:
    if isinstance(value, Mapping):
        for key, sub in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), sub, out)
    else:
        out[prefix] = float(value)


def summarise_massive(*counts: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Merge every node's counts: MLflow metrics, a JSON summary and a markdown table.

    Args:
        *counts: The count dicts returned by the other nodes.

    Returns:
        ``(metrics, summary, markdown)``; metrics are ``{"ingest.en_US.train": {"value", "step"}, ...}``.
    """
    ingest, *rest = counts
    summary: dict[str, Any] = {"ingest": dict(ingest), "pairs": {}}
    for c in rest:
        for key, value in c.items():
            if "__" in key:
                summary["pairs"][key] = value
            else:
                summary[key] = value
    flat: dict[str, float] = {}
    _flatten("", summary, flat)  # MLflow prefixes the dataset name: massive_metrics.ingest...
    metrics = {k: {"value": v, "step": 0} for k, v in flat.items()}
    return metrics, summary, summary_markdown(summary)
