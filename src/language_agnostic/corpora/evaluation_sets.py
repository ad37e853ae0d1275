"""The evaluation sets of the QE and STS pipelines, and their training corpus.

Every evaluation set (WMT20 QE, SemEval-2017 STS) is normalised to one table
(:data:`EVAL_COLUMNS`), so scoring, leakage probes, reports and plots are written once; the
parallel training corpus shares no sentence with any evaluation set (:func:`clean_and_split`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog
from language_agnostic.corpora.parallel import clean_pairs, laser_tatoeba_files, train_validation_split
from language_agnostic.corpora.sts17 import TRACKS, read_sts_track
from language_agnostic.corpora.wmt_qe import QE_PAIRS, qe_member, read_qe_tsv

logger = logging.getLogger(__name__)

EVAL_COLUMNS = ["dataset", "pair", "lang1", "lang2", "text1", "text2", "gold"]
CORPUS_COLUMNS = ["pair", "source_lang", "target_lang", "source", "target", "origin"]
REJECT_COLUMNS = ["source", "line", "key", "kind", "reason", "content"]
STS_DEFAULT_TRACKS = ("ar-en", "es-en", "tr-en", "ar-ar", "es-es", "en-en")
Members = Mapping[str, Callable[[], str]]


def read_member(archive: Members, member: str, what: str) -> str:
    if member not in archive:
        source = getattr(archive, "source", "the archive")
        raise CorpusFormatError(f"{source}: no member {member!r} ({what}); it has {sorted(archive)[:8]}...")
    return archive[member]()


def _rejects_frame(rejects: RejectLog) -> pd.DataFrame:
    return pd.DataFrame(rejects.rows, columns=REJECT_COLUMNS).astype({"line": "Int64"})


def ingest_qe_test(params: Mapping[str, Any], *archives: Members) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The WMT20 QE test sets (gold ``z_mean``) as one evaluation table.

    Args:
        params: ``qe.test``: ``pairs`` (order of ``archives``) and ``on_bad_row`` (``error`` | ``skip``).
        *archives: One ``<pair>_test.tar.gz`` per pair.

    Returns:
        ``(table, rejects, counts)``: the rows (:data:`EVAL_COLUMNS`), the rejected rows, and
        ``{pair: {rows_in, rows_out, rejected}}``.
    """
    pairs = [str(p) for p in params.get("pairs", QE_PAIRS)]
    if len(pairs) != len(archives):
        raise ValueError(f"qe.test.pairs lists {len(pairs)} pairs but {len(archives)} archives were given")
    rejects = RejectLog(str(params.get("on_bad_row", "error")))
    tables, counts = [], {}
    for pair, archive in zip(pairs, archives):
        member = qe_member(pair)
        text = read_member(archive, member, f"WMT20 QE test set of {pair}")
        before = len(rejects.rows)
        rows = read_qe_tsv(text, f"{getattr(archive, 'source', pair)}:{member}", pair, rejects)
        n_in = sum(1 for line in text.split("\n")[1:] if line.strip())
        counts[pair] = {"rows_in": n_in, "rows_out": len(rows), "rejected": len(rejects.rows) - before}
        tables.append(
            pd.DataFrame(
                {
                    "dataset": "wmt20_qe_test",
                    "pair": pair,
                    "lang1": [r["source_lang"] for r in rows],
                    "lang2": [r["target_lang"] for r in rows],
                    "text1": [r["source"] for r in rows],
                    "text2": [r["translation"] for r in rows],
                    "gold": [r["z_mean"] for r in rows],
                }
            )
        )
    logger.info("WMT20 QE test sets: %s", counts)
    return pd.concat(tables, ignore_index=True)[EVAL_COLUMNS], _rejects_frame(rejects), counts


def ingest_sts_test(
    params: Mapping[str, Any], inputs: Members, gold: Members
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The SemEval-2017 STS tracks (gold 0-5) as one evaluation table.

    Args:
        params: ``sts.test``: ``tracks`` (keys of ``corpora.sts17.TRACKS``; ``es-en`` is track
            4a) and ``on_bad_row``.
        inputs: ``Sts2017.eval.v1.1.zip``.
        gold: ``Sts2017.gs.zip``.

    Returns:
        ``(table, rejects, counts)``; ``counts[track]`` has ``input_lines`` (500 for tr-en, whose
        gold covers the first 250), ``gold_lines``, ``rows_out`` and ``rejected``.
    """
    rejects = RejectLog(str(params.get("on_bad_row", "error")))
    tables, counts = [], {}
    for name in params.get("tracks", STS_DEFAULT_TRACKS):
        if name not in TRACKS:
            raise ValueError(f"sts.test.tracks: unknown track {name!r}; known: {sorted(TRACKS)}")
        track = TRACKS[name]
        input_text = read_member(inputs, track.input_member, f"STS17 input of {name}")
        gold_text = read_member(gold, track.gold_member, f"STS17 gold of {name}")
        before = len(rejects.rows)
        rows = read_sts_track(input_text, gold_text, track, getattr(inputs, "source", "sts17"), rejects)
        counts[name] = {
            "input_lines": len(input_text.rstrip("\n").split("\n")),
            "gold_lines": len(gold_text.rstrip("\n").split("\n")),
            "rows_out": len(rows),
            "rejected": len(rejects.rows) - before,
        }
        tables.append(
            pd.DataFrame(
                {
                    "dataset": "sts17",
                    "pair": name,
                    "lang1": track.first,
                    "lang2": track.second,
                    "text1": [r["sentence1"] for r in rows],
                    "text2": [r["sentence2"] for r in rows],
                    "gold": [r["score"] for r in rows],
                }
            )
        )
    logger.info("STS17 tracks: %s", counts)
    return pd.concat(tables, ignore_index=True)[EVAL_COLUMNS], _rejects_frame(rejects), counts


def laser_tatoeba_sentences(files: Members, languages: str | Sequence[str]) -> list[str]:
    """Every sentence (both sides) of the LASER Tatoeba test sets of ``languages`` (``"all"``: every file)."""
    if languages == "all":
        names = sorted(files)
        if not names:
            raise CorpusFormatError("the LASER Tatoeba folder (tatoeba/v1) holds no files")
    else:
        names = [name for lang in languages for name in laser_tatoeba_files(str(lang))]
    sentences = []
    for name in names:
        if name not in files:
            raise CorpusFormatError(f"LASER Tatoeba test file {name!r} not found under tatoeba/v1")
        sentences += [line for line in files[name]().split("\n") if line.strip()]
    return sentences


def clean_and_split(
    candidates: pd.DataFrame, qe_test: pd.DataFrame, sts_test: pd.DataFrame, laser: Members, params: Mapping[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Deduplicate each pair's candidates, drop test overlap, split 90/10 (seeded).

    A pair is dropped when its source or target appears (after NFKC, case folding and space
    normalisation) in any QE or STS test set or any LASER Tatoeba test set of
    ``params["laser_tatoeba"]``.

    Args:
        candidates: :data:`CORPUS_COLUMNS` rows from a corpus reader.
        qe_test: The QE evaluation table.
        sts_test: The STS evaluation table.
        laser: The LASER Tatoeba files (``tatoeba/v1``, a partitioned dataset).
        params: ``validation_fraction``, ``seed``, ``laser_tatoeba`` (``all`` or 3-letter codes).

    Returns:
        ``(corpus, sizes)``: the kept pairs with a ``split`` column, and per pair the counts
        ``in, empty, duplicate, test_overlap, out, train, validation``.
    """
    banned = [
        *qe_test["text1"],
        *qe_test["text2"],
        *sts_test["text1"],
        *sts_test["text2"],
        *laser_tatoeba_sentences(laser, params.get("laser_tatoeba", "all")),
    ]
    fraction, seed = float(params.get("validation_fraction", 0.1)), int(params.get("seed", 0))
    parts, sizes = [], []
    for pair, rows in candidates.groupby("pair", sort=False):
        kept, counts = clean_pairs(list(zip(rows["source"], rows["target"])), banned)
        train_part, validation = train_validation_split(kept, fraction, seed)
        sizes.append({"pair": pair, **counts, "train": len(train_part), "validation": len(validation)})
        first = rows.iloc[0]
        for split, chosen in (("train", train_part), ("validation", validation)):
            parts.append(
                pd.DataFrame(
                    {
                        "pair": pair,
                        "source_lang": first["source_lang"],
                        "target_lang": first["target_lang"],
                        "source": [s for s, _ in chosen],
                        "target": [t for _, t in chosen],
                        "split": split,
                    }
                )
            )
    table = pd.DataFrame(sizes)
    logger.info("training corpus:\n%s", table.to_string(index=False))
    return pd.concat(parts, ignore_index=True), table
