"""Scoring FMDA, its baselines and controls on a MASSIVE pair: cross-lingual retrieval and template retrieval.

Every trained meaning embedding (``fmda*/m``, ``<head>/meaning``) is also tested against mean
centring on the same test queries: the exact McNemar p-value of each retrieval direction
(``mcnemar_p_vs_centering``), so a table cell that is above or below the strongest untrained
baseline says whether that is more than chance. A two-stage variant (§4.6) is also tested against
its all-together twin (the variant trained with the same settings in one stage), embedding by
embedding, on the cross-lingual and the single-target template queries
(``mcnemar_p_vs_all_together``): Table 5's claims compare exactly these two.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.encoders.extraction import EmbeddingSet
from language_agnostic.evaluation.intent_nn import mcnemar
from language_agnostic.evaluation.retrieval import retrieval_hits
from language_agnostic.evaluation.rows import metric_row
from language_agnostic.evaluation.template import mean_average_precision
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.centering import center, fit_language_means
from language_agnostic.methods.fmda import encode_with_fmda
from language_agnostic.methods.registry import load_trained

logger = logging.getLogger(__name__)


def evaluate_head(manifest: Mapping[str, Any], head: Mapping[str, Any], identity: Mapping[str, Any]) -> pd.DataFrame:
    """A head over pooled vectors (``fmda.methods``: DREAM, a control) on the pair's test sets,
    as ``<method>/meaning`` rows.
    """
    _, model = load_trained(head)
    method = str(head["method"])

    def embed(entry: EmbeddingSet, locale: str) -> dict[tuple[str, str], np.ndarray]:
        del locale
        vectors = np.asarray(entry.vectors(head["pooling"]))
        return {(method, "meaning"): control_meaning(model, vectors, method)}

    return _score(manifest, embed, str(identity.get("name")), against_centering="meaning")


Embedder = Callable[[EmbeddingSet, str], dict[tuple[str, str], np.ndarray]]
# an embedding name (``m``, ``tp``, ``rs``) to its vectors, for the twin a variant is tested against
TwinEmbedder = Callable[[EmbeddingSet], dict[str, np.ndarray]]
AGAINST_CENTERING = "mcnemar_p_vs_centering"
AGAINST_ALL_TOGETHER = "mcnemar_p_vs_all_together"
# the residual embedding against the same model's meaning embedding on the same queries
RESIDUAL_AGAINST_MEANING = "mcnemar_p_rs_vs_m"


def centering_of(manifest: Mapping[str, Any]) -> Callable[[EmbeddingSet, str], np.ndarray]:
    """Mean centring as the ``centering/mean`` baseline does it: mean vectors less their language's train mean."""
    sets = manifest["sets"]
    src, tgt = manifest["source_locale"], manifest["target_locale"]
    train_mean = np.concatenate(
        [np.asarray(sets["train.source.utt"].vectors("mean")), np.asarray(sets["train.target.utt"].vectors("mean"))]
    )
    means = fit_language_means(
        train_mean, [src] * len(sets["train.source.utt"]) + [tgt] * len(sets["train.target.utt"])
    )
    return lambda entry, locale: center(np.asarray(entry.vectors("mean")), [locale] * len(entry), means)


Add = Callable[[str, str, str, str, str, str, str, float], None]
# adds one row: (embedding, method, task, dataset, source, target, metric, value)


def _score(
    manifest: Mapping[str, Any],
    embed: Embedder,
    encoder: str,
    against_centering: str | None = None,
    twin: TwinEmbedder | None = None,
) -> pd.DataFrame:
    """Semantic retrieval (both directions) and template retrieval (accuracy@1, MAP) of every embedding ``embed`` gives.

    ``against_centering``: the embedding (``m``, ``meaning``) whose test retrieval is also compared
    with mean centring's on the same queries, as ``mcnemar_p_vs_centering`` rows. ``twin``: another
    model's embeddings by name; each embedding both have is compared with the twin's on the same
    cross-lingual and single-target template queries, as ``mcnemar_p_vs_all_together`` rows.
    """
    src, tgt = manifest["source_locale"], manifest["target_locale"]
    rows: list[dict[str, Any]] = []

    def add(
        emb: str, method: str, task: str, dataset: str, source: str, target: str, metric: str, value: float
    ) -> None:
        rows.append(metric_row("fmda", method, emb, task, dataset, source, target, metric, value, encoder))

    _semantic_rows(manifest, embed, add, against_centering, twin)
    _template_rows(manifest, embed, add, twin)
    table = pd.DataFrame(rows)
    logger.info("%s-%s evaluated: %d metric rows", src, tgt, len(table))
    return table


def _semantic_rows(
    manifest: Mapping[str, Any],
    embed: Embedder,
    add: Add,
    against_centering: str | None,
    twin: TwinEmbedder | None,
) -> None:
    """Cross-lingual retrieval on the test split, both directions (:func:`_score`), with its paired tests."""
    sets = manifest["sets"]
    src, tgt = manifest["source_locale"], manifest["target_locale"]
    test = {side: embed(sets[f"test.{side}.utt"], loc) for side, loc in (("source", src), ("target", tgt))}
    reference = {}
    if against_centering is not None:
        centred = centering_of(manifest)
        a, b = centred(sets["test.source.utt"], src), centred(sets["test.target.utt"], tgt)
        reference = {(src, tgt): retrieval_hits(a, b), (tgt, src): retrieval_hits(b, a)}
    twin_test: dict[str, dict[str, np.ndarray]] = {src: {}, tgt: {}}
    if twin is not None:
        twin_test = {loc: twin(sets[f"test.{side}.utt"]) for side, loc in (("source", src), ("target", tgt))}
    semantic_hits: dict[tuple[str, str, str, str], np.ndarray] = {}
    for (method, emb), a in test["source"].items():
        b = test["target"][(method, emb)]
        for (query, key), (q, k) in (((src, tgt), (a, b)), ((tgt, src), (b, a))):
            hits = semantic_hits[(method, emb, query, key)] = retrieval_hits(q, k)
            semantic = (emb, method, "cross_lingual_retrieval", "massive_test", query, key)
            add(*semantic, "accuracy@1", int(hits.sum()) / len(hits))
            if emb == against_centering:
                add(*semantic, AGAINST_CENTERING, mcnemar(hits, reference[(query, key)]).pvalue)
            if emb in twin_test[query]:
                twin_hits = retrieval_hits(twin_test[query][emb], twin_test[key][emb])
                add(*semantic, AGAINST_ALL_TOGETHER, mcnemar(hits, twin_hits).pvalue)
    # an FMDA model's residual embedding against its own meaning embedding, per direction
    for (method, emb, query, key), hits in semantic_hits.items():
        if emb == "rs" and (meaning := semantic_hits.get((method, "m", query, key))) is not None:
            semantic = (emb, method, "cross_lingual_retrieval", "massive_test", query, key)
            add(*semantic, RESIDUAL_AGAINST_MEANING, mcnemar(hits, meaning).pvalue)


def _template_rows(manifest: Mapping[str, Any], embed: Embedder, add: Add, twin: TwinEmbedder | None) -> None:
    """Template retrieval of each side that has template sets (:func:`_score`): single-target
    accuracy@1 (with its paired test against ``twin``) and multi-target MAP."""
    sets = manifest["sets"]
    src, tgt = manifest["source_locale"], manifest["target_locale"]
    # the trained pair is part of the row: EN is evaluated once per training pair
    pair = f"{src}>{tgt}"
    for side, locale in (("source", src), ("target", tgt)):
        if f"template.single.{side}.source" not in sets or f"template.multi.{side}.source" not in sets:
            continue
        single = [embed(sets[f"template.single.{side}.{end}"], locale) for end in ("source", "target")]
        multi = [embed(sets[f"template.multi.{side}.{end}"], locale) for end in ("source", "target")]
        k = len(sets[f"template.multi.{side}.target"]) // len(sets[f"template.multi.{side}.source"])
        twin_single = (
            [twin(sets[f"template.single.{side}.{end}"]) for end in ("source", "target")] if twin else [{}, {}]
        )
        for method, emb in single[0]:
            key = (method, emb)
            template = (emb, method, "template_retrieval", f"massive_template_single:{pair}", locale, locale)
            # single-target template accuracy@1 is retrieval accuracy (template_accuracy_at_1): the
            # hits are computed once, for the accuracy and for the paired test against the twin
            hits = retrieval_hits(single[0][key], single[1][key])
            add(*template, "accuracy@1", int(hits.sum()) / len(hits))
            if emb in twin_single[0]:
                twin_hits = retrieval_hits(twin_single[0][emb], twin_single[1][emb])
                add(*template, AGAINST_ALL_TOGETHER, mcnemar(hits, twin_hits).pvalue)
            multi_template = (emb, method, "template_retrieval", f"massive_template_multi:{pair}", locale, locale)
            add(*multi_template, "MAP", mean_average_precision(multi[0][key], multi[1][key], k))


def evaluate_baselines(manifest: Mapping[str, Any], identity: Mapping[str, Any]) -> pd.DataFrame:
    """The untrained baselines on the pair's test retrieval and template sets.

    Embeddings: raw first-token (``raw/cls``), raw mean (``raw/mean``) and per-language mean
    centring of the mean vectors fitted on train (``centering/mean``). The trained heads over
    pooled vectors (DREAM, the controls) are scored by :func:`evaluate_head`.
    """
    centred = centering_of(manifest)

    def embed(entry: EmbeddingSet, locale: str) -> dict[tuple[str, str], np.ndarray]:
        return {
            ("raw", "cls"): np.asarray(entry.vectors("cls")),
            ("raw", "mean"): np.asarray(entry.vectors("mean")),
            ("centering", "mean"): centred(entry, locale),
        }

    return _score(manifest, embed, str(identity.get("name")))


def evaluate_fmda(
    manifest: Mapping[str, Any],
    fmda: Mapping[str, Any],
    identity: Mapping[str, Any],
    all_together: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """An FMDA variant's meaning (``m``), template (``tp``) and residual (``rs``) embeddings,
    as ``fmda[-<variant>]`` rows.

    ``all_together``: for a two-stage variant, its all-together twin's saved model; each of the
    three embeddings is then McNemar-tested against the twin's (``mcnemar_p_vs_all_together``).
    """
    _, model = load_trained(fmda)
    method = str(fmda.get("method", "fmda"))

    def embed(entry: EmbeddingSet, locale: str) -> dict[tuple[str, str], np.ndarray]:
        del locale
        return {(method, key): value for key, value in encode_with_fmda(model, entry).items() if key != "lang"}

    twin = None
    if all_together is not None:
        _, twin_model = load_trained(all_together)

        def twin(entry: EmbeddingSet) -> dict[str, np.ndarray]:
            return {key: value for key, value in encode_with_fmda(twin_model, entry).items() if key != "lang"}

    return _score(manifest, embed, str(identity.get("name")), against_centering="m", twin=twin)
