"""Nodes shared by the ``qe`` and ``sts`` pipelines: disentangle meaning from language, judge by Pearson.

Both pipelines do the same thing on different data (DREAM §4, SEED §3): read the evaluation
sets (WMT20 QE, SemEval-2017 STS), build a parallel training corpus that shares no sentence
with any evaluation set, embed everything once with the frozen encoder, train mean centering,
DREAM, MEAT and SEED multilingually on all pairs together (early stopping on the validation
split only), and score ``Pearson(cos(meaning_1, meaning_2), gold)`` per evaluation pair. Only
the corpus readers differ (``pipelines/qe`` and ``pipelines/sts``).

Every evaluation set is normalised to one table (:data:`EVAL_COLUMNS`), so scoring, leakage
probes, reports and plots are written once.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from kedro.pipeline import Node, Pipeline, node

from language_agnostic.corpora.evaluation_sets import clean_and_split, ingest_qe_test, ingest_sts_test
from language_agnostic.corpora.wmt_qe import QE_PAIRS
from language_agnostic.encoders.extraction import EmbeddingStore, extract_embedding_sets, extraction_settings
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.similarity import evaluate_similarity, head_name, language_leakage
from language_agnostic.methods.registry import TRAINED_METHODS, check_ablations
from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.project_config import bind, load_parameters
from language_agnostic.reporting.figures import plot_meaning_language
from language_agnostic.reporting.similarity import similarity_markdown
from language_agnostic.tracking import log_child_metrics, metric_key
from language_agnostic.training.heads import fit_centering, train_ablation, train_head
from language_agnostic.training.reuse import reusable


def embed_similarity_inputs(
    corpus: pd.DataFrame,
    test: pd.DataFrame,
    encoder: LoadedEncoder,
    store: EmbeddingStore,
    extraction: Mapping[str, Any],
) -> dict[str, Any]:
    """Sentence vectors (both poolings) of the corpus splits and both test columns, via the cache.

    Returns:
        A manifest with ``sets``: ``train.source``, ``train.target``, ``validation.source``,
        ``validation.target``, ``test.text1``, ``test.text2`` (rows in table order).
    """
    settings = extraction_settings(extraction)
    jobs = [
        (f"{split}.{side}", corpus.loc[corpus["split"] == split, side].tolist())
        for split in ("train", "validation")
        for side in ("source", "target")
    ]
    jobs += [(f"test.{column}", test[column].tolist()) for column in ("text1", "text2")]
    # one pass over every list: a sentence in several lists (or already in the store) is encoded once
    sets = extract_embedding_sets(encoder, dict(jobs), settings, store)
    return {"sets": sets, "sizes": {name: len(texts) for name, texts in jobs}}


# ---------------------------------------------------------------- reports


def report_similarity(
    report: Mapping[str, Any],
    ablations: Mapping[str, Any] | None,
    sizes: pd.DataFrame,
    ingest: Mapping[str, Any],
    scores: pd.DataFrame | None,
    *tables: pd.DataFrame,
) -> tuple[pd.DataFrame, dict[str, Any], str]:
    """The metrics-table rows, MLflow metrics and the markdown report in the papers' layouts.

    Args:
        report: ``<pipeline>.report``: ``pipeline``, ``title``, ``tables`` (``{title: [pairs]}``:
            one Pearson table each, e.g. SEED Table 1), ``ablation_tables`` (``{method: title}``,
            e.g. SEED Table 5 over the first table's pairs) and ``paper_corpus_sizes``
            (``{paper: {pair: size}}``).
        ablations: ``<pipeline>.ablations`` (see :func:`check_ablations`).
        sizes: From :func:`clean_and_split`.
        ingest: The evaluation set's ingestion counts.
        scores: The per-item cosines from :func:`evaluate_similarity` (the claims' paired tests).
        *tables: Row tables from :func:`evaluate_similarity` and :func:`language_leakage`.
    """
    ablations = check_ablations(ablations, str(report["pipeline"]))
    rows = pd.concat(tables, ignore_index=True)
    metrics = {metric_key(r): {"value": float(r.value), "step": 0} for r in rows.itertuples()}
    for pair, counts in ingest.items():
        for name, value in counts.items():
            metrics[f"{report['pipeline']}.ingest.{pair}.{name}".replace("-", "_")] = {"value": float(value), "step": 0}
    return rows, metrics, similarity_markdown(report, ablations, rows, sizes, ingest, scores)


# ---------------------------------------------------------------- pipeline assembly


def configured(pipeline: str, key: str, default: Sequence[str]) -> list[str]:
    """``<pipeline>.test.<key>`` from ``conf/`` when pipelines are built (defaults without a project)."""
    params = load_parameters()
    value = ((params.get(pipeline) or {}).get("test") or {}).get(key) if params else None
    return [str(v) for v in (value if value is not None else default)]


def evaluation_sets_pipeline(qe_pairs: Sequence[str] | None = None) -> Pipeline:
    """Ingest every evaluation set (QE and STS): both pipelines need both, for overlap removal."""
    qe_pairs = configured("qe", "pairs", QE_PAIRS) if qe_pairs is None else list(qe_pairs)
    return Pipeline(
        [
            node(
                ingest_qe_test,
                inputs=["params:qe.test", *[f"wmt20_qe_test_{p}" for p in qe_pairs]],
                outputs=["qe_test_pairs", "qe_test_rejects", "qe_test_counts"],
                name="ingest_qe_test_node",
            ),
            node(
                ingest_sts_test,
                inputs=["params:sts.test", "sts17_input_archive", "sts17_gold_archive"],
                outputs=["sts_test_pairs", "sts_test_rejects", "sts_test_counts"],
                name="ingest_sts_test_node",
            ),
        ]
    )


def evaluate_and_log(*inputs: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`evaluate_similarity` as a node, on its inputs (``manifest, test, identity, report, centering,
    *heads``): its rows and scores, each head's rows also logged to its MLflow child run (evaluation returns
    numbers only)."""
    table, scores = evaluate_similarity(*inputs)
    for head in inspect.signature(evaluate_similarity).bind(*inputs).arguments.get("heads", ()):
        log_child_metrics(head.get("mlflow_run_id"), table[table["method"] == head_name(head)])
    return table, scores


def create_similarity_pipeline(
    name: str, candidates: node, qe_pairs: Sequence[str] | None = None, ablations: Mapping[str, Any] | None = None
) -> Pipeline:
    """The shared body of ``qe`` and ``sts``: corpus → embed → train → evaluate → report.

    Args:
        name: ``qe`` or ``sts``: prefix of every dataset and parameter group.
        candidates: The node that reads the raw corpus into ``<name>_corpus_candidates``.
        qe_pairs: QE test pairs (default: ``qe.test.pairs`` from ``conf/``).
        ablations: Extra heads, one training node each (default: ``<name>.ablations`` from
            ``conf/``; see :func:`check_ablations`).
    """
    if ablations is None:
        ablations = (load_parameters().get(name) or {}).get("ablations") or {}
    ablations = check_ablations(ablations, name)
    nodes_ = [candidates, *_corpus_nodes(name), *_training_nodes(name, ablations), *_evaluation_nodes(name, ablations)]
    return Pipeline([load_encoder_pipeline(), evaluation_sets_pipeline(qe_pairs), *nodes_], tags=name)


def _corpus_nodes(name: str) -> list[Node]:
    """Clean and split the training corpus, embed it with the test pairs, and fit mean centering."""
    test = f"{name}_test_pairs"
    return [
        node(
            clean_and_split,
            inputs=[
                f"{name}_corpus_candidates",
                "qe_test_pairs",
                "sts_test_pairs",
                "laser_tatoeba",
                f"params:{name}.corpus",
            ],
            outputs=[f"{name}_corpus", f"{name}_corpus_sizes"],
            name=f"clean_and_split_{name}_node",
        ),
        node(
            embed_similarity_inputs,
            inputs=[f"{name}_corpus", test, "encoder", "embedding_store", "params:embeddings.extraction"],
            outputs=f"{name}_embeddings",
            name=f"embed_{name}_inputs_node",
        ),
        node(
            fit_centering,
            inputs=[f"{name}_embeddings", f"{name}_corpus", f"params:{name}.pooling"],
            outputs=f"{name}_centering_model",
            name=f"fit_{name}_centering_node",
        ),
    ]


def _training_nodes(name: str, ablations: Mapping[str, Any]) -> list[Node]:
    """One training node for each similarity head of the method registry and each ablation."""
    # (model, training function, its parameter sections): an ablation reads its method's and its own
    heads: list[tuple[str, Any, list[str]]] = [
        (method, bind(train_head, method=method, pipeline=name), [f"params:{name}.methods.{method}"])
        for method in TRAINED_METHODS
    ]
    heads += [
        (
            ablation,
            bind(train_ablation, name=ablation, pipeline=name),
            [f"params:{name}.methods.{spec['method']}", f"params:{name}.ablations.{ablation}"],
        )
        for ablation, spec in ablations.items()
    ]
    return [
        node(
            reusable(train),
            inputs=[
                f"{name}_embeddings",
                f"{name}_corpus",
                *sections,
                f"params:{name}.training",
                f"params:{name}.pooling",
            ],
            outputs=[f"{name}_{head}_model", f"{name}_{head}_history"],
            name=f"train_{name}_{head}_node",
        )
        for head, train, sections in heads
    ]


def _evaluation_nodes(name: str, ablations: Mapping[str, Any]) -> list[Node]:
    """Pearson per test pair, the language-leakage probe, the report and the figure, over every model."""
    test = f"{name}_test_pairs"
    models = [f"{name}_{m}_model" for m in (*TRAINED_METHODS, *ablations)]
    return [
        node(
            evaluate_and_log,
            inputs=[
                f"{name}_embeddings",
                test,
                "encoder_identity",
                f"params:{name}.report",
                f"{name}_centering_model",
                *models,
            ],
            outputs=[f"{name}_pearson_rows", f"{name}_similarity_scores"],
            name=f"evaluate_{name}_node",
        ),
        node(
            language_leakage,
            inputs=[
                f"{name}_embeddings",
                f"{name}_corpus",
                "encoder_identity",
                f"params:{name}.report",
                f"params:{name}.leakage",
                f"{name}_centering_model",
                *models,
            ],
            outputs=f"{name}_leakage_rows",
            name=f"{name}_language_leakage_node",
        ),
        node(
            report_similarity,
            inputs=[
                f"params:{name}.report",
                f"params:{name}.ablations",
                f"{name}_corpus_sizes",
                f"{name}_test_counts",
                f"{name}_similarity_scores",
                f"{name}_pearson_rows",
                f"{name}_leakage_rows",
            ],
            outputs=[f"{name}_metrics_table", f"{name}_metrics", f"{name}_report_markdown"],
            name=f"report_{name}_node",
        ),
        node(
            plot_meaning_language,
            inputs=[f"{name}_embeddings", test, f"{name}_seed_model", f"params:{name}.figure"],
            outputs=f"{name}_figure",
            name=f"plot_{name}_embeddings_node",
        ),
    ]
