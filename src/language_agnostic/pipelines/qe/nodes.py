"""Nodes of the ``qe`` pipeline that are specific to it: the QE training corpus.

Everything else (evaluation sets, cleaning, embedding, training, scoring, reports) is shared
with ``sts`` in ``pipelines/similarity.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from language_agnostic.corpora.evaluation_sets import CORPUS_COLUMNS, read_member
from language_agnostic.corpora.parallel import mlqe_pe_pairs, read_line_aligned
from language_agnostic.datasets.archive import ArchiveMembers

logger = logging.getLogger(__name__)

FLORES_DIR = "wikipedia_en_ne_si_test_sets"


def mlqe_pe_archive_names(pairs: Sequence[str], splits: Sequence[str]) -> list[str]:
    """Catalog names of the MLQE-PE tarballs, in the order :func:`build_qe_candidates` reads them."""
    return [f"mlqe_pe_{split}_{pair}" for pair in pairs for split in splits]


def _frame(pairs: list[tuple[str, str]], pair: str, origin: str) -> pd.DataFrame:
    src, tgt = pair.split("-")
    return pd.DataFrame(
        {
            "pair": pair,
            "source_lang": src,
            "target_lang": tgt,
            "source": [s for s, _ in pairs],
            "target": [t for _, t in pairs],
            "origin": origin,
        }
    )[CORPUS_COLUMNS]


def build_qe_candidates(params: Mapping[str, Any], flores: ArchiveMembers, *mlqe: ArchiveMembers) -> pd.DataFrame:
    """Candidate training pairs: MLQE-PE source + human post-edit (detokenised), plus FLoRes v1 for ne/si.

    Args:
        params: ``qe.corpus``: ``pairs``, ``mlqe_pe_splits`` (``train``, ``dev``), ``flores``
            (``pairs`` and ``splits``).
        flores: ``wikipedia_en_ne_si_test_sets.tgz``.
        *mlqe: The MLQE-PE tarballs, in :func:`mlqe_pe_archive_names` order.

    Returns:
        :data:`CORPUS_COLUMNS` rows (``origin`` = ``mlqe-pe:<split>`` or ``flores-v1:<split>``),
        before deduplication and overlap removal.
    """
    pairs, splits = [str(p) for p in params["pairs"]], [str(s) for s in params["mlqe_pe_splits"]]
    if len(mlqe) != len(pairs) * len(splits):
        raise ValueError(f"qe.corpus: expected {len(pairs) * len(splits)} MLQE-PE archives, got {len(mlqe)}")
    frames = []
    archives = iter(mlqe)
    for pair in pairs:
        for split in splits:
            archive = next(archives)
            base = f"{pair}-{split}/{split}"
            where = f"{getattr(archive, 'source', pair)}:{base}.src/.pe"
            found = mlqe_pe_pairs(
                read_member(archive, f"{base}.src", "MLQE-PE sources"),
                read_member(archive, f"{base}.pe", "MLQE-PE post-edits"),
                pair,
                where,
            )
            frames.append(_frame(found, pair, f"mlqe-pe:{split}"))
    flores_params = dict(params.get("flores") or {})
    for pair in flores_params.get("pairs", []):
        src, tgt = str(pair).split("-")
        for split in flores_params.get("splits", ["dev", "devtest"]):
            base = f"{FLORES_DIR}/wikipedia.{split}.{pair}"
            found = read_line_aligned(
                read_member(flores, f"{base}.{src}", "FLoRes v1"),
                read_member(flores, f"{base}.{tgt}", "FLoRes v1"),
                f"{getattr(flores, 'source', 'flores')}:{base}",
            )
            frames.append(_frame(found, str(pair), f"flores-v1:{split}"))
    table = pd.concat(frames, ignore_index=True)
    logger.info("QE corpus candidates: %s", table.groupby(["pair", "origin"]).size().to_dict())
    return table
