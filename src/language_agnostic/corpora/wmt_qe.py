"""WMT20 sentence-level QE (MLQE) test sets: ``<pair>/test20.<pair>.df.short.tsv`` inside ``<pair>_test.tar.gz``.

The TSV is read with quoting off: 385 text fields start with ``"``, and CSV quoting would
merge rows. The gold score is ``z_mean`` (per-annotator z-normalised direct assessment).
"""

from __future__ import annotations

import math
from typing import Any

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog

QE_PAIRS = ("en-de", "en-zh", "ro-en", "et-en", "ne-en", "si-en")
QE_URL = "https://github.com/facebookresearch/mlqe/tree/main/data"
HEADER = ["index", "original", "translation", "scores", "mean", "z_scores", "z_mean", "model_scores"]


def qe_archive_name(pair: str, split: str = "test20") -> str:
    """The tarball holding a split (``test20`` → ``<pair>_test.tar.gz``)."""
    return f"{pair}_test.tar.gz" if split == "test20" else f"{pair}.tar.gz"


def qe_member(pair: str, split: str = "test20") -> str:
    """The TSV member inside the tarball, e.g. ``ro-en/test20.roen.df.short.tsv``."""
    return f"{pair}/{split}.{pair.replace('-', '')}.df.short.tsv"


def read_qe_tsv(text: str, source: str, pair: str, rejects: RejectLog) -> list[dict[str, Any]]:
    """Parse one MLQE TSV.

    Args:
        text: The file's text.
        source: Its name, for messages (``archive:member``).
        pair: The language pair, e.g. ``"ro-en"``.
        rejects: Where bad rows go (or raise, by its policy).

    Returns:
        Rows with ``pair, source_lang, target_lang, index, source, translation, z_mean``.
    """
    lines = text.split("\n")
    if lines[0].rstrip("\r").split("\t") != HEADER:
        # a wrong header means the wrong file: no row of it can be trusted, whatever the policy
        raise CorpusFormatError(f"{source}:1: header is {lines[0][:120]!r}, expected {chr(9).join(HEADER)!r}")
    src_lang, tgt_lang = pair.split("-")
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.rstrip("\r").split("\t")
        if len(fields) != len(HEADER):
            rejects.reject(
                source,
                number,
                "wrong_field_count",
                f"{len(fields)} tab-separated fields, expected {len(HEADER)}",
                content=line,
            )
            continue
        record = dict(zip(HEADER, fields))
        try:
            z = float(record["z_mean"])
        except ValueError:
            rejects.reject(source, number, "bad_score", f"z_mean {record['z_mean']!r} is not a number", content=line)
            continue
        if not math.isfinite(z):
            rejects.reject(source, number, "bad_score", f"z_mean {record['z_mean']!r} is not finite", content=line)
            continue
        if not record["original"].strip() or not record["translation"].strip():
            rejects.reject(source, number, "empty_text", "empty source or translation", content=line)
            continue
        rows.append(
            {
                "pair": pair,
                "source_lang": src_lang,
                "target_lang": tgt_lang,
                "index": record["index"],
                "source": record["original"],
                "translation": record["translation"],
                "z_mean": z,
            }
        )
    return rows
