"""Scoring the QE and STS pipelines: Pearson of cosine against gold, and language-leakage probes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from language_agnostic.encoders.extraction import vectors_of
from language_agnostic.evaluation.correlation import paired_cosine, pearson
from language_agnostic.evaluation.leakage import language_probe_accuracy
from language_agnostic.evaluation.rows import metric_row
from language_agnostic.methods.centering import center
from language_agnostic.methods.registry import load_trained

Encoded = dict[tuple[str, str], np.ndarray]  # (method, embedding) -> vectors
SCORE_COLUMNS = ["method", "embedding", "pair", "item", "cosine", "gold"]


def head_name(head: Mapping[str, Any]) -> str:
    """A trained head's name in rows and reports: its ablation name, else its method (older files have no name)."""
    return str(head.get("name", head["method"]))


def encode_all(
    vectors: Mapping[str, np.ndarray],
    languages: Sequence[str],
    centering: Mapping[str, Any],
    heads: Sequence[Mapping[str, Any]],
) -> Encoded:
    """Raw, centred and every head's meaning and language embeddings of one set of sentences.

    Args:
        vectors: ``{"cls": ..., "mean": ...}`` raw sentence vectors.
        languages: Each row's language (for centering).
        centering: From :func:`fit_centering`.
        heads: Trained heads from :func:`train_head`.
    """
    out: Encoded = {("raw", "cls"): vectors["cls"], ("raw", "mean"): vectors["mean"]}
    pooling = centering["pooling"]
    means = {lang: m.numpy() for lang, m in centering["state_dict"].items()}
    out[("centering", pooling)] = center(vectors[pooling], languages, means)
    for head in heads:
        method, model = load_trained(head)
        with torch.no_grad():
            encoded = method.encode(
                model, torch.from_numpy(np.array(vectors[head["pooling"]], dtype=np.float32))
            )  # a copy: store arrays are read-only
        name = head_name(head)
        out[(name, "meaning")], out[(name, "language")] = encoded["meaning"].numpy(), encoded["language"].numpy()
    return out


def evaluate_similarity(
    manifest: Mapping[str, Any],
    test: pd.DataFrame,
    identity: Mapping[str, Any],
    report: Mapping[str, Any],
    centering: Mapping[str, Any],
    *heads: Mapping[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pearson of the cosine of every embedding with the gold scores, per evaluation pair.

    Returns:
        The rows: ``raw/cls``, ``raw/mean``, ``centering/<pooling>`` and ``<method>/meaning`` for
        each head, one per pair (``source``/``target`` = the pair's column languages, ``dataset`` =
        ``<dataset>:<pair>``), metric ``pearson``. And the scores behind them (:data:`SCORE_COLUMNS`:
        one cosine per embedding and test item, with its gold score), which the claims' paired
        tests resample.
    """
    sides = []
    for column, lang in (("text1", "lang1"), ("text2", "lang2")):
        vectors = {p: vectors_of(manifest, f"test.{column}", p) for p in ("cls", "mean")}
        sides.append(encode_all(vectors, test[lang].tolist(), centering, heads))
    rows, scores, encoder = [], [], str(identity.get("name"))
    task, pipeline = str(report["task"]), str(report["pipeline"])
    gold = test["gold"].to_numpy(dtype=np.float64)
    for (method, embedding), first in sides[0].items():
        if embedding == "language":
            continue
        cosine = paired_cosine(first, sides[1][(method, embedding)])
        scores.append(
            pd.DataFrame(
                {
                    "method": method,
                    "embedding": embedding,
                    "pair": test["pair"].to_numpy(),
                    "item": np.arange(len(test)),
                    "cosine": cosine,
                    "gold": gold,
                }
            )
        )
        for pair, part in test.groupby("pair", sort=False):
            index = part.index.to_numpy()
            rows.append(
                metric_row(
                    pipeline,
                    method,
                    embedding,
                    task,
                    f"{part['dataset'].iloc[0]}:{pair}",
                    part["lang1"].iloc[0],
                    part["lang2"].iloc[0],
                    "pearson",
                    pearson(cosine[index], gold[index]),
                    encoder,
                )
            )
    return pd.DataFrame(rows), pd.concat(scores, ignore_index=True)[SCORE_COLUMNS]


def _probe_sample(
    manifest: Mapping[str, Any], corpus: pd.DataFrame, split: str, per_language: int, seed: int
) -> tuple[dict[str, np.ndarray], list[str]]:
    """Up to ``per_language`` sentences per language from both sides of a corpus split (seeded)."""
    rows = corpus[corpus["split"] == split].reset_index(drop=True)
    langs = np.concatenate([rows["source_lang"].to_numpy(), rows["target_lang"].to_numpy()])
    rng = np.random.default_rng(seed)
    chosen = np.sort(
        np.concatenate([rng.permutation(np.flatnonzero(langs == lang))[:per_language] for lang in np.unique(langs)])
    )
    vectors = {
        p: np.concatenate([vectors_of(manifest, f"{split}.source", p), vectors_of(manifest, f"{split}.target", p)])[
            chosen
        ]
        for p in ("cls", "mean")
    }
    return vectors, langs[chosen].tolist()


def language_leakage(
    manifest: Mapping[str, Any],
    corpus: pd.DataFrame,
    identity: Mapping[str, Any],
    report: Mapping[str, Any],
    leakage: Mapping[str, Any],
    centering: Mapping[str, Any],
    *heads: Mapping[str, Any],
) -> pd.DataFrame:
    """Language-ID accuracy of a logistic-regression probe on each embedding (trained on train, scored on validation).

    Low on meaning embeddings = little language left in them; high on language embeddings =
    the language went where it belongs. The raw and centred vectors give the reference points.
    """
    seed = int(leakage.get("seed", 0))
    train_vectors, train_langs = _probe_sample(
        manifest, corpus, "train", int(leakage.get("train_per_language", 1000)), seed
    )
    test_vectors, test_langs = _probe_sample(
        manifest, corpus, "validation", int(leakage.get("test_per_language", 500)), seed
    )
    fitted = encode_all(train_vectors, train_langs, centering, heads)
    scored = encode_all(test_vectors, test_langs, centering, heads)
    rows, encoder = [], str(identity.get("name"))
    for key in tqdm(list(fitted), desc="language probes"):
        accuracy = language_probe_accuracy(
            fitted[key], train_langs, scored[key], test_langs, seed=seed, max_iter=int(leakage.get("max_iter", 2000))
        )
        rows.append(
            metric_row(
                str(report["pipeline"]),
                key[0],
                key[1],
                "language_leakage",
                f"{report['pipeline']}_corpus:validation",
                "all",
                "all",
                "probe_accuracy",
                accuracy,
                encoder,
            )
        )
    return pd.DataFrame(rows)
