"""Nodes of the ``sts`` pipeline that are specific to it: the Tatoeba-derived training corpus.

Everything else is shared with ``qe`` in ``pipelines/similarity.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pandas as pd

from language_agnostic.corpora.evaluation_sets import CORPUS_COLUMNS, Members, read_member
from language_agnostic.corpora.parallel import (
    OPUS_TATOEBA_LABELS,
    OPUS_TATOEBA_VERSION,
    filter_by_labels,
    opus_tatoeba_files,
    read_line_aligned,
)

logger = logging.getLogger(__name__)


def build_tatoeba_candidates(params: Mapping[str, Any], files: Members) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Candidate training pairs ``<xx>-en`` from the OPUS-MT Tatoeba test sets.

    Args:
        params: ``sts.corpus``: ``languages`` (``{3-letter code: 2-letter code}``), ``version``
            and ``keep_labels`` (``{code: [labels kept]}``; default: ``OPUS_TATOEBA_LABELS``,
            e.g. only ``ara`` for Arabic, whose file mixes dialects).
        files: ``parallel/opus-mt-testsets/testsets`` as a partitioned dataset.

    Returns:
        ``(candidates, label_counts)``: :data:`CORPUS_COLUMNS` rows, and per language the pairs
        read and the pairs dropped by the ``.labels`` filter.
    """
    version = str(params.get("version", OPUS_TATOEBA_VERSION))
    keep = {**{k: list(v) for k, v in OPUS_TATOEBA_LABELS.items()}, **dict(params.get("keep_labels") or {})}
    frames, counts = [], []
    for lang3, lang2 in dict(params["languages"]).items():
        src_file, eng_file, labels_file = opus_tatoeba_files(str(lang3), version)
        what = f"OPUS-MT Tatoeba {lang3}-eng"
        pairs = read_line_aligned(read_member(files, src_file, what), read_member(files, eng_file, what), src_file)
        dropped = 0
        if lang3 in keep:
            labels_file = labels_file or f"{src_file}.labels"
            pairs, dropped = filter_by_labels(pairs, read_member(files, labels_file, what), keep[lang3], labels_file)
        counts.append({"language": lang3, "read": len(pairs) + dropped, "dropped_by_labels": dropped})
        frames.append(
            pd.DataFrame(
                {
                    "pair": f"{lang2}-en",
                    "source_lang": str(lang2),
                    "target_lang": "en",
                    "source": [s for s, _ in pairs],
                    "target": [t for _, t in pairs],
                    "origin": f"opus-tatoeba:{version}",
                }
            )[CORPUS_COLUMNS]
        )
    table = pd.DataFrame(counts)
    logger.info("Tatoeba candidates:\n%s", table.to_string(index=False))
    return pd.concat(frames, ignore_index=True), table
