"""Nodes of the ``slu`` pipeline: thin adapters over ``corpora/massive_slu.py``, ``training/slu.py``,
``evaluation/slu.py`` and ``reporting/slu.py``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pandas as pd

from language_agnostic.corpora.massive_slu import slu_table
from language_agnostic.datasets.muse import MuseDirectory
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.slu import slu_scores
from language_agnostic.reporting.slu import slu_rows, slu_tables, summary
from language_agnostic.reporting.tracking import log_child_metrics, log_child_run, metric_key
from language_agnostic.training.loop import history_metrics
from language_agnostic.training.lajmcl import lajmcl_artifact, predict_lajmcl, rebuild_lajmcl, train_lajmcl
from language_agnostic.training.slu import (SluData, method_kind, method_settings, predict_slu, rebuild_slu, slu_artifact,
                                            train_slu)

logger = logging.getLogger(__name__)


def parse_slu_locales(archive: Mapping[str, Any], locales: list[str], data: Mapping[str, Any], ingest: Mapping[str, Any]
                      ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The MASSIVE utterances of ``slu.locales`` (the ``massive`` stage's parser and checks), rejects and counts.

    Raises:
        CorpusFormatError: ``slu.locales`` empty, a locale the archive lacks, or the training
            locale (``slu.data.training_locale``) not among them.
    """
    from language_agnostic.corpora.errors import CorpusFormatError
    from language_agnostic.pipelines.massive.nodes import parse_massive

    locales = list(locales or [])
    if not locales:
        raise CorpusFormatError("slu.locales: the list of test locales is empty (e.g. [en-US, de-DE, es-ES])")
    training_locale = str(data.get("training_locale", SluData.training_locale))
    if training_locale not in locales:
        raise CorpusFormatError(f"slu.data.training_locale {training_locale!r} is not in slu.locales {locales}")
    utterances, rejects, counts = parse_massive(archive, locales, {}, ingest, where="slu.locales")
    metrics = {f"slu.massive.{locale}.{k}": {"value": float(v), "step": 0} for locale, c in counts.items() for k, v in c.items()}
    return utterances, rejects, metrics


def build_slu_rows(utterances: pd.DataFrame, ingest: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Words and BIO labels of every MASSIVE utterance (ja/zh split into characters), rejects and counts."""
    table, rejects, counts = slu_table(utterances, on_bad_row=str(ingest.get("on_bad_row", "error")))
    logger.info("slu rows: %d in, %d out, %d rejected", counts["all"]["rows_in"], counts["all"]["rows_out"],
                counts["all"]["rejected"])
    metrics = {f"slu.rows.{locale}.{k}": {"value": float(v), "step": 0} for locale, c in counts.items() for k, v in c.items()}
    return table.assign(words=table["words"].map(list), labels=table["labels"].map(list)), rejects, metrics


def test_locales(rows: pd.DataFrame, locales: list[str] | None) -> list[str]:
    """``slu.locales`` ([]: every locale of the data read), checked against the data."""
    present = list(dict.fromkeys(rows["locale"]))
    wanted = list(locales or present)
    missing = sorted(set(wanted) - set(present))
    if missing:
        raise ValueError(f"slu.locales: {missing} are not in the MASSIVE data read ({present})")
    return wanted


def code_switch_languages(code_switch: Mapping[str, Any], rows: pd.DataFrame, muse: MuseDirectory) -> list[str]:
    """``slu.code_switch.languages``, or ([]) the MUSE languages that are also configured locales (their language part)."""
    configured = list(code_switch.get("languages") or [])
    if configured:
        return configured
    locales = {loc.split("-")[0] for loc in rows["locale"]} - {"en"}
    return [lang for lang in muse.languages() if lang in locales]


def load_dictionaries(muse: MuseDirectory, code_switch: Mapping[str, Any], rows: pd.DataFrame
                      ) -> tuple[dict[str, dict[str, list[str]]], dict[str, Any]]:
    """The MUSE dictionaries of the code-switching languages, and their sizes for MLflow."""
    languages = code_switch_languages(code_switch, rows, muse)
    dictionaries, metrics = {}, {}
    for lang in languages:
        dictionaries[lang], counts = muse.read(lang)
        metrics.update({f"slu.muse.{lang}.{k}": {"value": float(v), "step": 0} for k, v in counts.items()})
    logger.info("code-switching dictionaries: %s", {lang: len(d) for lang, d in dictionaries.items()})
    return dictionaries, metrics


def train_slu_variant(rows: pd.DataFrame, encoder: LoadedEncoder, spec: Mapping[str, Any], data: Mapping[str, Any],
                      code_switch: Mapping[str, Any], training: Mapping[str, Any], extraction: Mapping[str, Any],
                      dictionaries: Mapping[str, Mapping[str, list[str]]] | None, name: str
                      ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fine-tune the model of one ``slu.methods`` entry (``method: slu`` the joint baseline, ``lajoint`` LAJoint /
    LAJ-MCL; ``code_switch: true`` = trained on code-switched English); the artifact."""
    method, training_overrides, data_overrides = method_settings(name, {k: v for k, v in spec.items() if k != "code_switch"})
    data = {**dict(data), **data_overrides}
    if spec.get("code_switch"):
        # slu.code_switch, then the method's own data.code_switch (e.g. keep_source: false for a control)
        data["code_switch"] = {"languages": list(dictionaries or {}), **{k: v for k, v in code_switch.items() if k != "languages"},
                               **dict(data_overrides.get("code_switch") or {})}
    training = {**dict(training), **training_overrides}
    lajoint = method_kind(spec, name) == "lajoint"
    trainer, saver = (train_lajmcl, lajmcl_artifact) if lajoint else (train_slu, slu_artifact)
    model, result, info = trainer(rows, encoder, method, data, training, extraction, dictionaries, name)
    run_id = log_child_run(f"slu/{name}", {"name": name, **method, **training, **data}, result.history)
    artifact = saver(model, encoder, method=name, base_encoder=dict(encoder.identity), mlflow_run_id=run_id,
                     **{k: v for k, v in info.items() if k not in ("n_truncated",)},
                     n_truncated={k: int(v) for k, v in info["n_truncated"].items()})
    return artifact, history_metrics(result.history, f"slu.{name}")


def evaluate_slu_variant(rows: pd.DataFrame, encoder: LoadedEncoder, artifact: Mapping[str, Any], locales: list[str] | None,
                         extraction: Mapping[str, Any], identity: Mapping[str, Any]) -> pd.DataFrame:
    """Intent accuracy, slot F1 and exact match on the test split of every test locale."""
    lajoint = artifact["build"]["method"] == "lajoint"
    model = rebuild_lajmcl(encoder, artifact) if lajoint else rebuild_slu(encoder, artifact)
    scores = {}
    for locale in test_locales(rows, locales):
        test = rows[(rows["locale"] == locale) & (rows["partition"] == "test")]
        if lajoint:
            intents, labels = predict_lajmcl(model, test, encoder, list(artifact["intents"]), list(artifact["labels"]),
                                             len(artifact["slots"]), extraction)
        else:
            intents, labels = predict_slu(model, test, encoder, list(artifact["intents"]), list(artifact["labels"]), extraction)
        scores[locale] = slu_scores(test["intent"].tolist(), intents, [list(x) for x in test["labels"]], labels)
        logger.info("slu %s on %s: %s", artifact["method"], locale, {k: round(v, 4) for k, v in scores[locale].items()})
    table = slu_rows(scores, str(artifact["method"]), str(identity.get("name")), str(artifact.get("training_locale", "en-US")))
    log_child_metrics(artifact.get("mlflow_run_id"), table)
    return table


def report_slu(data: Mapping[str, Any], *tables: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any], str]:
    """All rows: the metrics table, MLflow metrics (and the averages) and the markdown tables."""
    rows = pd.concat(tables, ignore_index=True)
    training_locale = str(data.get("training_locale", SluData.training_locale))
    metrics = {metric_key(r): {"value": float(r.value), "step": 0} for r in rows.itertuples()}
    for method, values in summary(rows, training_locale).items():
        metrics.update({f"slu.{method}.avg_non_{training_locale.split('-')[0]}.{k}": {"value": v, "step": 0}
                        for k, v in values.items() if v == v})
    return rows, metrics, slu_tables(rows, training_locale)
