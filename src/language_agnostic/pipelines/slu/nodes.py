"""Nodes of the ``slu`` pipeline: thin adapters over ``corpora/massive_slu.py``, ``training/slu.py``,
``evaluation/slu.py`` and ``reporting/slu.py``."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from typing import Any

import pandas as pd

from language_agnostic.corpora.errors import CorpusFormatError
from language_agnostic.corpora.massive_slu import slu_table
from language_agnostic.corpora.massive_table import parse_massive
from language_agnostic.datasets.muse import MuseDirectory
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.slu import exact_match_correct, slot_error_statistics, slu_scores
from language_agnostic.methods.registry import load_trained
from language_agnostic.reporting.figures import parallel_intent_sample, plot_parallel_tsne
from language_agnostic.reporting.slu import slu_rows, slu_tables, summary
from language_agnostic.text.code_switch import code_switch_languages
from language_agnostic.tracking import log_child_metrics, log_child_run, metric_key
from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.lajmcl import MclData
from language_agnostic.training.loop import history_metrics
from language_agnostic.training.slu import SluData
from language_agnostic.training.slu_methods import method_kind, method_settings, trainer

logger = logging.getLogger(__name__)


METHOD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]*")


def method_key(name: str) -> str:
    """A ``slu.methods`` name as node and dataset names hold it: ``-`` → ``_``, ``+`` → ``_plus_``
    (Kedro node names allow letters, digits, ``-``, ``_`` and ``.`` only), e.g. ``lajoint-cs+ucl`` →
    ``lajoint_cs_plus_ucl``. The rows keep the name as configured (``method=lajoint-cs+ucl``).

    Raises:
        ValueError: a name with other characters (``.`` would split ``params:slu.methods.<name>``).
    """
    if not METHOD_NAME.fullmatch(str(name)):
        raise ValueError(f"slu.methods: {name!r} is not a method name: letters, digits, '_', '-' and '+' only")
    return str(name).replace("-", "_").replace("+", "_plus_")


def metric_name(name: str) -> str:
    """A method's name as MLflow metric keys write it (MLflow takes no ``+``)."""
    return str(name).replace("+", "_plus_")


def metric_prefix(name: str) -> str:
    """``slu.<name>`` as an MLflow metric prefix."""
    return f"slu.{metric_name(name)}"


def grid_methods(methods: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """LAJ-MCL Table 6's cells: ``{name: (p_s, p_v)}`` of the ``lajoint`` methods whose ``options.mcl`` sets
    ``p_s`` or ``p_v`` (the other from :class:`~language_agnostic.training.lajmcl.MclData`); ``{}`` when
    fewer than two do (no grid to show)."""
    defaults = MclData()
    grid = {}
    for name, spec in methods.items():
        spec = dict(spec or {})
        mcl = dict(dict(spec.get("options") or {}).get("mcl") or {})
        if spec.get("method") == "lajoint" and ("p_s" in mcl or "p_v" in mcl):
            grid[str(name)] = (int(mcl.get("p_s", defaults.p_s)), int(mcl.get("p_v", defaults.p_v)))
    return grid if len(grid) >= 2 else {}


def parse_slu_locales(
    archive: Mapping[str, Any], locales: list[str], data: Mapping[str, Any], ingest: Mapping[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The MASSIVE utterances of ``slu.locales`` (the ``massive`` stage's parser and checks), rejects and counts.

    Raises:
        CorpusFormatError: ``slu.locales`` empty, a locale the archive lacks, or the training
            locale (``slu.data.training_locale``) not among them.
    """

    locales = list(locales or [])
    if not locales:
        raise CorpusFormatError("slu.locales: the list of test locales is empty (e.g. [en-US, de-DE, es-ES])")
    training_locale = str(data.get("training_locale", SluData.training_locale))
    if training_locale not in locales:
        raise CorpusFormatError(f"slu.data.training_locale {training_locale!r} is not in slu.locales {locales}")
    utterances, rejects, counts = parse_massive(archive, locales, {}, ingest, where="slu.locales")
    metrics = {
        f"slu.massive.{locale}.{k}": {"value": float(v), "step": 0}
        for locale, c in counts.items()
        for k, v in c.items()
    }
    return utterances, rejects, metrics


def build_slu_rows(
    utterances: pd.DataFrame, ingest: Mapping[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Words and BIO labels of every MASSIVE utterance (ja/zh split into characters), rejects and counts."""
    table, rejects, counts = slu_table(utterances, on_bad_row=str(ingest.get("on_bad_row", "error")))
    logger.info(
        "slu rows: %d in, %d out, %d rejected",
        counts["all"]["rows_in"],
        counts["all"]["rows_out"],
        counts["all"]["rejected"],
    )
    metrics = {
        f"slu.rows.{locale}.{k}": {"value": float(v), "step": 0} for locale, c in counts.items() for k, v in c.items()
    }
    return table.assign(words=table["words"].map(list), labels=table["labels"].map(list)), rejects, metrics


def test_locales(rows: pd.DataFrame, locales: list[str] | None) -> list[str]:
    """``slu.locales`` ([]: every locale of the data read), checked against the data."""
    present = list(dict.fromkeys(rows["locale"]))
    wanted = list(locales or present)
    missing = sorted(set(wanted) - set(present))
    if missing:
        raise ValueError(f"slu.locales: {missing} are not in the MASSIVE data read ({present})")
    return wanted


def load_dictionaries(
    muse: MuseDirectory, code_switch: Mapping[str, Any], rows: pd.DataFrame
) -> tuple[dict[str, dict[str, list[str]]], dict[str, Any]]:
    """The MUSE dictionaries of the code-switching languages, and their sizes for MLflow."""
    languages = code_switch_languages(code_switch, rows["locale"], muse.languages())
    dictionaries, metrics = {}, {}
    for lang in languages:
        dictionaries[lang], counts = muse.read(lang)
        metrics.update({f"slu.muse.{lang}.{k}": {"value": float(v), "step": 0} for k, v in counts.items()})
    logger.info("code-switching dictionaries: %s", {lang: len(d) for lang, d in dictionaries.items()})
    return dictionaries, metrics


def train_slu_variant(
    rows: pd.DataFrame,
    encoder: LoadedEncoder,
    spec: Mapping[str, Any],
    data: Mapping[str, Any],
    code_switch: Mapping[str, Any],
    training: Mapping[str, Any],
    extraction: Mapping[str, Any],
    dictionaries: Mapping[str, Mapping[str, list[str]]] | None,
    name: str,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fine-tune the model of one ``slu.methods`` entry (``method: slu`` the joint baseline, ``lajoint`` LAJoint /
    LAJ-MCL; ``code_switch: true`` = trained on code-switched English); the artifact."""
    method, training_overrides, data_overrides = method_settings(
        name, {k: v for k, v in spec.items() if k != "code_switch"}
    )
    data = {**dict(data), **data_overrides}
    if spec.get("code_switch"):
        # slu.code_switch, then the method's own data.code_switch (e.g. keep_source: false for a control)
        data["code_switch"] = {
            "languages": list(dictionaries or {}),
            **{k: v for k, v in code_switch.items() if k != "languages"},
            **dict(data_overrides.get("code_switch") or {}),
        }
    training = {**dict(training), **training_overrides}
    kind = trainer(method_kind(spec))
    model, result, info = kind.train(rows, encoder, FineTuning(name, method, data, training, extraction), dictionaries)
    run_id = log_child_run(f"slu/{name}", {"name": name, **method, **training, **data}, result.history)
    artifact = kind.artifact(
        model,
        encoder,
        method=name,
        base_encoder=dict(encoder.identity),
        mlflow_run_id=run_id,
        **{k: v for k, v in info.items() if k not in ("n_truncated",)},
        n_truncated={k: int(v) for k, v in info["n_truncated"].items()},
    )
    metrics = history_metrics(result.history, metric_prefix(name))
    # the kept checkpoint's dev scores and the training's pace, the same for both kinds (Table 10's training column)
    metrics.update(
        {
            f"{metric_prefix(name)}.kept.{k}": {"value": float(info[k]), "step": int(info["best_epoch"])}
            for k in ("dev_exact_match", "dev_intent_accuracy", "dev_slot_f1")
        }
    )
    metrics[f"{metric_prefix(name)}.train_seconds_per_epoch"] = {
        "value": float(info["train_seconds_per_epoch"]),
        "step": 0,
    }
    return artifact, metrics


def evaluate_slu_variant(
    rows: pd.DataFrame,
    encoder: LoadedEncoder,
    artifact: Mapping[str, Any],
    locales: list[str] | None,
    extraction: Mapping[str, Any],
    identity: Mapping[str, Any],
    figure: Mapping[str, Any] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Intent accuracy, slot F1 and exact match on the test split of every test locale, and the details the
    tables and the figure read. Predicted under the artifact's ``mixed_precision`` (the training's), as dev was.

    Returns:
        ``(rows, details)``: the metric rows, and ``{method, train_seconds_per_epoch, epochs_run,
        inference_seconds, n_test, slot_errors, outcomes}`` (per locale: Table 10's inference column and
        Table 5's counts; ``outcomes``: per test utterance, exact match right or wrong, for the claims'
        paired tests) with ``figure``: ``{ids, vectors: {locale: (n, D)}}`` of Figure 3's
        utterances when ``figure`` (``slu.figure``) is given, else ``None``.
    """
    kind = trainer(str(artifact["build"]["method"]))
    _, model = load_trained(artifact, encoder)  # over a copy of the base encoder
    name = str(artifact["method"])
    wanted = test_locales(rows, locales)
    # as the kept checkpoint's dev score was computed: under its training's autocast (bf16 on a CPU with native bf16)
    precision = str(artifact.get("mixed_precision", "no"))
    scores, seconds, n_test, errors, outcomes = {}, {}, {}, {}, []
    for locale in wanted:
        test = rows[(rows["locale"] == locale) & (rows["partition"] == "test")]
        start = time.perf_counter()
        intents, labels = kind.predict(model, test, encoder, artifact, extraction, precision)
        seconds[locale], n_test[locale] = time.perf_counter() - start, len(test)
        gold = [list(x) for x in test["labels"]]
        scores[locale] = slu_scores(test["intent"].tolist(), intents, gold, labels)
        outcomes.append(
            pd.DataFrame(
                {
                    "pipeline": "slu",
                    "method": name,
                    "task": "slu_exact_match",
                    "source": "",
                    "target": locale,
                    "query": test["id"].astype(str).to_numpy(),
                    "correct": exact_match_correct(test["intent"].tolist(), intents, gold, labels),
                }
            )
        )
        errors[locale] = slot_error_statistics(gold, labels)
        logger.info("slu %s on %s: %s", name, locale, {k: round(v, 4) for k, v in scores[locale].items()})
    training_locale = str(artifact.get("training_locale", "en-US"))
    table = slu_rows(scores, name, str(identity.get("name")), training_locale)
    log_child_metrics(artifact.get("mlflow_run_id"), table)
    details: dict[str, Any] = {
        "method": name,
        "train_seconds_per_epoch": artifact.get("train_seconds_per_epoch"),
        "epochs_run": artifact.get("epochs_run"),
        "inference_seconds": seconds,
        "n_test": n_test,
        "slot_errors": errors,
        "figure": None,
        "outcomes": pd.concat(outcomes, ignore_index=True),
    }
    if figure is not None:
        details["figure"] = figure_vectors(rows, encoder, model, artifact, extraction, figure, wanted, training_locale)
    return table, details


def figure_vectors(
    rows: pd.DataFrame,
    encoder: LoadedEncoder,
    model: Any,
    artifact: Mapping[str, Any],
    extraction: Mapping[str, Any],
    figure: Mapping[str, Any],
    locales: list[str],
    training_locale: str,
) -> dict[str, Any]:
    """Figure 3's ``[CLS]`` vectors: the same ``slu.figure.n_utterances`` test utterances of ``slu.figure.intent``
    (seeded) in every locale of ``slu.figure.locales`` ([]: the test locales)."""
    figure_locales = list(figure.get("locales") or locales)
    ids = parallel_intent_sample(
        rows,
        figure_locales,
        str(figure.get("intent", "play_music")),
        int(figure.get("n_utterances", 100)),
        int(figure.get("seed", 0)),
        training_locale,
    )
    vectors = {}
    for locale in figure_locales:
        test = rows[(rows["locale"] == locale) & (rows["partition"] == "test")]
        picked = test.set_index(test["id"].astype(str)).loc[ids].reset_index(drop=True)
        vectors[locale] = trainer(str(artifact["build"]["method"])).intent_vectors(
            model, picked, encoder, artifact, extraction
        )
    return {"ids": ids, "vectors": vectors}


def plot_slu_figure(figure: Mapping[str, Any], *details: Mapping[str, Any], names: list[str]) -> Any:
    """LAJ-MCL Figure 3: one t-SNE panel per method of ``names`` (those of ``slu.figure.methods``
    that were run), in that order.
    """
    return plot_parallel_tsne({name: d["figure"]["vectors"] for name, d in zip(names, details, strict=True)}, figure)


def report_slu(
    data: Mapping[str, Any],
    earlier: pd.DataFrame,
    earlier_outcomes: pd.DataFrame,
    *parts: Any,
    names: list[str],
    grid: Mapping[str, tuple[int, int]] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any], str, pd.DataFrame]:
    """All rows: the metrics table, MLflow metrics (the averages, seconds and slot error counts too), the markdown
    tables and this run's per-utterance exact-match outcomes.

    Args:
        data: ``slu.data``.
        earlier: The long metrics table before this run: the claims section takes the rows of methods
            this run did not train from it (``reporting/slu.py:claims_table``).
        earlier_outcomes: The per-utterance outcomes stored before this run: the paired tests of those methods.
        parts: Each method's metric rows, then each method's details, in ``names`` order
            (:func:`evaluate_slu_variant`).
        names: The methods.
        grid: Table 6's ``{method: (p_s, p_v)}`` (:func:`grid_methods`).
    """
    if len(parts) != 2 * len(names):
        raise ValueError(f"report_slu: {len(parts)} inputs for {len(names)} methods (rows and details of each)")
    tables, details = parts[: len(names)], parts[len(names) :]
    rows = pd.concat(tables, ignore_index=True)
    training_locale = str(data.get("training_locale", SluData.training_locale))
    metrics = {metric_key(r): {"value": float(r.value), "step": 0} for r in rows.itertuples()}
    for method, values in summary(rows, training_locale).items():
        metrics.update(
            {
                f"{metric_prefix(method)}.avg_non_{training_locale.split('-')[0]}.{k}": {"value": v, "step": 0}
                for k, v in values.items()
                if v == v
            }
        )
    for d in details:
        prefix = metric_prefix(d["method"])
        for locale, value in d["inference_seconds"].items():
            metrics[f"{prefix}.{locale}.inference_seconds"] = {"value": float(value), "step": 0}
        for locale, counts in d["slot_errors"].items():
            metrics.update(
                {f"{prefix}.{locale}.slot_errors.{k}": {"value": float(v), "step": 0} for k, v in counts.items()}
            )
    mine = pd.concat([d["outcomes"] for d in details if d.get("outcomes") is not None], ignore_index=True)
    older = (
        earlier_outcomes[
            (earlier_outcomes["pipeline"] == "slu") & ~earlier_outcomes["method"].isin(set(mine["method"]))
        ]
        if len(earlier_outcomes)
        else earlier_outcomes
    )
    outcomes = pd.concat([mine, older], ignore_index=True)
    return (
        rows,
        metrics,
        slu_tables(rows, training_locale, details=details, grid=grid, earlier=earlier, outcomes=outcomes),
        mine,
    )
