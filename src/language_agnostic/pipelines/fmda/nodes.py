"""Nodes of the ``fmda`` pipeline: thin adapters over ``methods``, ``training`` and ``evaluation``.

Per language pair: embed the pair's utterances (token states) and masked texts (first-token
states) and the template-retrieval sets; train FMDA and the DREAM baseline on train with early
stopping on dev; evaluate raw, mean-centred, DREAM and FMDA embeddings on cross-lingual
semantic retrieval (test pairs) and monolingual template retrieval (accuracy@1 and MAP).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.extraction import EmbeddingSet, EmbeddingStore, extract_embeddings
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1
from language_agnostic.evaluation.template import mean_average_precision, template_accuracy_at_1
from language_agnostic.methods.centering import center, fit_language_means
from language_agnostic.methods.dream import Dream, dream_losses
from language_agnostic.methods.fmda import ABLATIONS, Fmda, FmdaConfig, fmda_losses
from language_agnostic.pipelines.embeddings.nodes import extraction_settings
from language_agnostic.pipelines.project_config import settings_from_params
from language_agnostic.training.data import QuadrupletBatches
from language_agnostic.training.fmda_data import FmdaBatches, encode_with_fmda
from language_agnostic.training.loop import TrainSettings, history_metrics, train

logger = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")


def _split_rows(masked: pd.DataFrame, locale: str, split: str) -> pd.DataFrame:
    rows = masked[(masked["locale"] == locale) & (masked["partition"] == split)]
    return rows.sort_values("id", key=lambda ids: ids.astype(int)).reset_index(drop=True)


def embed_fmda_inputs(
    masked: pd.DataFrame, single: pd.DataFrame, multi: pd.DataFrame, pair: Mapping[str, str],
    encoder: LoadedEncoder, store: EmbeddingStore, extraction: Mapping[str, Any],
) -> dict[str, Any]:
    """Everything FMDA and its baselines read, via the embedding cache.

    Returns:
        A manifest: ``sets`` (``<split>.<side>.utt`` with token states, ``<split>.<side>.tp`` /
        ``.rs`` first-token states of the masked texts for train/dev, ``template.<set>.<side>.
        source/target`` with token states), ``ids`` per split, the locales, and the template
        sets' sizes.
    """
    tokens, sentence = extraction_settings(extraction, token_states=True), extraction_settings(extraction)
    locales = {"source": pair["source"], "target": pair["target"]}
    sets: dict[str, EmbeddingSet] = {}
    ids: dict[str, list[str]] = {}
    for split in SPLITS:
        rows = {side: _split_rows(masked, locale, split) for side, locale in locales.items()}
        if rows["source"]["id"].tolist() != rows["target"]["id"].tolist():
            raise ValueError(f"{split}: ids of {locales['source']} and {locales['target']} do not align")
        ids[split] = rows["source"]["id"].tolist()
        for side, table in rows.items():
            sets[f"{split}.{side}.utt"] = extract_embeddings(encoder, table["utt"].tolist(), tokens, store)
            if split != "test":
                sets[f"{split}.{side}.tp"] = extract_embeddings(encoder, table["template_text"].tolist(), sentence, store)
                sets[f"{split}.{side}.rs"] = extract_embeddings(encoder, table["residual_text"].tolist(), sentence, store)
    sizes = {}
    for name, table in (("single", single), ("multi", multi)):
        for side, locale in locales.items():
            rows = table[table["locale"] == locale].sort_values(["source_id", "target_index"], key=lambda c: c.astype(int))
            if rows.empty:
                logger.warning("no %s template-retrieval set for %s: not evaluated", name, locale)
                continue
            sources = rows.drop_duplicates("source_id")["source_utt"].tolist()
            sets[f"template.{name}.{side}.source"] = extract_embeddings(encoder, sources, tokens, store)
            sets[f"template.{name}.{side}.target"] = extract_embeddings(encoder, rows["target_utt"].tolist(), tokens, store)
            sizes[f"{name}.{side}"] = len(sources)
    logger.info("fmda inputs for %s-%s: %s pairs (train/dev/test), template sets %s",
                locales["source"], locales["target"], [len(ids[s]) for s in SPLITS], sizes)
    return {"sets": sets, "ids": ids, "source_locale": locales["source"], "target_locale": locales["target"],
            "template_sizes": sizes}


def _training_settings(params: Mapping[str, Any], where: str) -> tuple[TrainSettings, int]:
    params = dict(params)
    batch_size = int(params.pop("batch_size", 512))
    return settings_from_params(TrainSettings, params, where), batch_size


def _fmda_batches(manifest: Mapping[str, Any], split: str, pools: pd.DataFrame | None, batch_size: int,
                  shuffle: bool) -> FmdaBatches:
    sets, ids = manifest["sets"], np.array(manifest["ids"][split])
    pool = {}
    for side in ("source", "target"):
        locale = manifest[f"{side}_locale"]
        pooled = np.flatnonzero(np.isin(ids, pools.loc[pools["locale"] == locale, "id"])) if pools is not None else np.arange(len(ids))
        pool[side] = pooled
    targets = {f"{s[0]}_{kind}": np.asarray(sets[f"{split}.{s}.{kind}"].vectors("cls")) for s in ("source", "target") for kind in ("tp", "rs")}
    return FmdaBatches(sets[f"{split}.source.utt"], sets[f"{split}.target.utt"], targets, 0, 1,
                       pool["source"], pool["target"], batch_size, shuffle=shuffle)


def train_fmda(manifest: Mapping[str, Any], pools: pd.DataFrame, model_params: Mapping[str, Any],
               variant: Mapping[str, Any], training: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Train FMDA on the pair's train split, early stopping on dev (§4.2).

    Args:
        manifest: From :func:`embed_fmda_inputs`.
        pools: ``massive_negative_pools``; train negatives come from them, dev negatives from
            all dev utterances (the pools are built from train only).
        model_params: ``FmdaConfig`` fields other than ``dim``/``n_languages``.
        variant: ``ablation`` (a key of ``ABLATIONS``) and extra ``loss_weights``.
        training: ``TrainSettings`` fields and ``batch_size``.

    Returns:
        ``(model, metrics)``: the trained weights and config, and per-epoch losses for MLflow.
    """
    settings, batch_size = _training_settings(training, "fmda.training")
    ablation = str(variant.get("ablation", "full"))
    if ablation not in ABLATIONS:
        raise ValueError(f"fmda.variant.ablation must be one of {sorted(ABLATIONS)}, got {ablation!r}")
    weights = {**ABLATIONS[ablation], **dict(variant.get("loss_weights") or {})}
    dim = manifest["sets"]["train.source.utt"].dim
    config = settings_from_params(FmdaConfig, model_params, "fmda.model", dim=dim, n_languages=2)
    torch.manual_seed(settings.seed)
    model = Fmda(config)
    result = train(model, lambda m, b: fmda_losses(m, b, weights),
                   _fmda_batches(manifest, "train", pools, batch_size, True),
                   _fmda_batches(manifest, "dev", None, batch_size, False), settings)
    logger.info("FMDA (%s): best dev epoch %d of %d", ablation, result.best_epoch, result.epochs_run)
    trained = {"state_dict": result.state_dict, "config": config.__dict__, "ablation": ablation,
               "best_epoch": result.best_epoch, "epochs_run": result.epochs_run}
    return trained, history_metrics(result.history, "fmda")


def train_dream_baseline(manifest: Mapping[str, Any], dream: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """DREAM (Tiyajamorn et al. 2021) on the same pairs, over pooled sentence vectors.

    Args:
        manifest: From :func:`embed_fmda_inputs`.
        dream: ``pooling`` (``cls`` as in the paper), ``activation``, ``loss_weights`` and
            ``training`` (``TrainSettings`` fields and ``batch_size``).
    """
    settings, batch_size = _training_settings(dream["training"], "fmda.dream.training")
    pooling = str(dream.get("pooling", "cls"))
    sets = manifest["sets"]

    def batches(split: str, shuffle: bool) -> QuadrupletBatches:
        s = np.asarray(sets[f"{split}.source.utt"].vectors(pooling))
        t = np.asarray(sets[f"{split}.target.utt"].vectors(pooling))
        return QuadrupletBatches(s, t, np.zeros(len(s)), np.ones(len(t)), batch_size, shuffle=shuffle)

    torch.manual_seed(settings.seed)
    model = Dream(sets["train.source.utt"].dim, 2, str(dream.get("activation", "none")))
    weights = dict(dream.get("loss_weights") or {})
    result = train(model, lambda m, b: dream_losses(m, b["s"], b["t"], b["s2"], b["t2"], b["s_lang"], b["t_lang"], weights),
                   batches("train", True), batches("dev", False), settings)
    trained = {"state_dict": result.state_dict, "pooling": pooling, "activation": str(dream.get("activation", "none")),
               "best_epoch": result.best_epoch, "epochs_run": result.epochs_run}
    return trained, history_metrics(result.history, "dream")


def _row(manifest: Mapping[str, Any], embedding: str, method: str, task: str, dataset: str, source: str,
         target: str, metric: str, value: float, encoder: str) -> dict[str, Any]:
    return {"pipeline": "fmda", "method": method, "embedding": embedding, "task": task, "dataset": dataset,
            "source": source, "target": target, "metric": metric, "value": round(float(value), 6), "encoder": encoder}


def evaluate_fmda(manifest: Mapping[str, Any], fmda: Mapping[str, Any], dream: Mapping[str, Any],
                  identity: Mapping[str, Any]) -> pd.DataFrame:
    """Semantic retrieval (both directions) and template retrieval (accuracy@1, MAP) for every embedding.

    Embeddings: raw first-token (``raw/cls``), raw mean (``raw/mean``), per-language mean
    centring of the mean vectors fitted on train (``centering/mean``), DREAM's meaning
    (``dream/meaning``), FMDA's meaning, template and residual (``fmda/m``, ``fmda/tp``,
    ``fmda/rs``).
    """
    sets = manifest["sets"]
    src, tgt = manifest["source_locale"], manifest["target_locale"]
    encoder = str(identity.get("name"))
    model = Fmda(FmdaConfig(**fmda["config"]))
    model.load_state_dict(fmda["state_dict"])
    dream_model = Dream(sets["train.source.utt"].dim, 2, dream["activation"])
    dream_model.load_state_dict(dream["state_dict"])
    dream_model.eval()
    train_mean = np.concatenate([np.asarray(sets["train.source.utt"].vectors("mean")), np.asarray(sets["train.target.utt"].vectors("mean"))])
    means = fit_language_means(train_mean, [src] * len(sets["train.source.utt"]) + [tgt] * len(sets["train.target.utt"]))

    def embeddings(entry: EmbeddingSet, locale: str) -> dict[tuple[str, str], np.ndarray]:
        out = {("raw", "cls"): np.asarray(entry.vectors("cls")), ("raw", "mean"): np.asarray(entry.vectors("mean"))}
        out[("centering", "mean")] = center(out[("raw", "mean")], [locale] * len(entry), means)
        with torch.no_grad():
            out[("dream", "meaning")] = dream_model(torch.from_numpy(np.array(entry.vectors(dream["pooling"]))))[0].numpy()
        for key, value in encode_with_fmda(model, entry).items():
            if key != "lang":
                out[("fmda", key)] = value
        return out

    rows = []
    test = {side: embeddings(sets[f"test.{side}.utt"], loc) for side, loc in (("source", src), ("target", tgt))}
    for (method, emb), a in test["source"].items():
        b = test["target"][(method, emb)]
        rows.append(_row(manifest, emb, method, "cross_lingual_retrieval", "massive_test", src, tgt, "accuracy@1", retrieval_accuracy_at_1(a, b), encoder))
        rows.append(_row(manifest, emb, method, "cross_lingual_retrieval", "massive_test", tgt, src, "accuracy@1", retrieval_accuracy_at_1(b, a), encoder))
    for side, locale in (("source", src), ("target", tgt)):
        if f"template.single.{side}.source" not in sets or f"template.multi.{side}.source" not in sets:
            continue
        single_src = embeddings(sets[f"template.single.{side}.source"], locale)
        single_tgt = embeddings(sets[f"template.single.{side}.target"], locale)
        multi_src = embeddings(sets[f"template.multi.{side}.source"], locale)
        multi_tgt = embeddings(sets[f"template.multi.{side}.target"], locale)
        k = len(sets[f"template.multi.{side}.target"]) // len(sets[f"template.multi.{side}.source"])
        for key in single_src:
            method, emb = key
            # the trained pair is part of the row: EN is evaluated once per training pair
            pair = f"{src}>{tgt}"
            rows.append(_row(manifest, emb, method, "template_retrieval", f"massive_template_single:{pair}", locale, locale,
                             "accuracy@1", template_accuracy_at_1(single_src[key], single_tgt[key]), encoder))
            rows.append(_row(manifest, emb, method, "template_retrieval", f"massive_template_multi:{pair}", locale, locale,
                             "MAP", mean_average_precision(multi_src[key], multi_tgt[key], k), encoder))
    table = pd.DataFrame(rows)
    logger.info("fmda %s-%s evaluated: %d metric rows", src, tgt, len(table))
    return table


EMBEDDING_ORDER = [("raw", "cls"), ("raw", "mean"), ("centering", "mean"), ("dream", "meaning"),
                   ("fmda", "m"), ("fmda", "tp"), ("fmda", "rs")]


def _markdown_table(part: pd.DataFrame, keys: list[tuple[str, str]], label: Any) -> list[str]:
    """Rows = embeddings (in ``EMBEDDING_ORDER``), columns = ``keys`` in first-seen order."""
    columns = list(dict.fromkeys(keys))
    cells = {(r.method, r.embedding, key): r.value for r, key in zip(part.itertuples(), keys)}
    lines = ["| embedding | " + " | ".join(label(c) for c in columns) + " |", "|---|" + "---:|" * len(columns)]
    for method, emb in EMBEDDING_ORDER:
        if any((method, emb, c) in cells for c in columns):
            lines.append(f"| {method}/{emb} | " + " | ".join(f"{cells.get((method, emb, c), float('nan')):.3f}" for c in columns) + " |")
    return lines


def report_fmda(*tables: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any], str]:
    """All pairs' rows: the metrics table, MLflow metrics and markdown views (paper Tables 2, 3 and 6)."""
    rows = pd.concat(tables, ignore_index=True)
    metrics = {
        f"{r.task}.{r.method}.{r.embedding}.{r.dataset.split(':')[-1]}.{r.source}_to_{r.target}.{r.metric}"
        .replace("-", "_").replace(">", "__").replace("@", "at"): {"value": float(r.value), "step": 0}
        for r in rows.itertuples()
    }
    semantic = rows[rows["task"] == "cross_lingual_retrieval"]
    lines = ["# FMDA on MASSIVE (bundled encoder; see docs/results.md)", "",
             "## Cross-lingual semantic retrieval, accuracy@1 (Table 2)", ""]
    lines += _markdown_table(semantic, list(zip(semantic["source"], semantic["target"])),
                             lambda key: f"{key[0].split('-')[0]}→{key[1].split('-')[0]}")
    for metric, title in (("accuracy@1", "Monolingual template retrieval, accuracy@1 (Table 3)"),
                          ("MAP", "Monolingual template retrieval, MAP over five targets (Table 6)")):
        part = rows[(rows["task"] == "template_retrieval") & (rows["metric"] == metric)]
        lines += ["", f"## {title}", ""]
        lines += _markdown_table(part, list(zip(part["dataset"].str.split(":").str[-1], part["source"])),
                                 lambda key: f"{key[1].split('-')[0]} ({key[0].replace('>', '→')})")
    return rows, metrics, "\n".join(lines) + "\n"
