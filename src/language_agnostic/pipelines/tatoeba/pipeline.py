"""``tatoeba``: Tatoeba pairs + the trained models in ``data/06_models`` → embed once (cached) →
bitext retrieval → report.

``kedro run --pipelines=tatoeba`` (``conf/base/parameters_tatoeba.yml``): every model the
configured ``qe``, ``sts``, ``fmda`` and ``emu`` pipelines train is evaluated when its file is
present and skipped with a warning (naming the file and the command that makes it) when not.
"""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline, node

from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.project_config import TRAINED_MODEL_PARAMS
from language_agnostic.pipelines.tatoeba import nodes


def create_pipeline() -> Pipeline:
    """The ``tatoeba`` pipeline (its shape does not depend on the configuration: models are found when it runs)."""
    return Pipeline(
        [
            load_encoder_pipeline(),
            node(
                nodes.plan_tatoeba_models,
                inputs=["params:tatoeba.models", *TRAINED_MODEL_PARAMS],
                outputs="tatoeba_model_plan",
                name="plan_tatoeba_models_node",
            ),
            node(
                nodes.ingest_tatoeba_pairs,
                inputs=["tatoeba_files", "params:tatoeba.ingest", "tatoeba_model_plan"],
                outputs=["tatoeba_pairs", "tatoeba_rejects", "tatoeba_languages", "tatoeba_ingest_counts"],
                name="ingest_tatoeba_node",
            ),
            node(
                nodes.load_tatoeba_models,
                inputs=["models_directory", "tatoeba_model_plan", "encoder_identity"],
                outputs="tatoeba_models",
                name="load_tatoeba_models_node",
            ),
            *_embedding_nodes(),
            *_report_nodes(),
        ],
        tags="tatoeba",
    )


def _embedding_nodes() -> list[Node]:
    """Embed the pairs' texts with the encoder and with every fine-tuned encoder, then score the retrieval."""
    return [
        node(
            nodes.embed_tatoeba_texts,
            inputs=[
                "tatoeba_pairs",
                "encoder",
                "embedding_store",
                "params:embeddings.extraction",
                "tatoeba_models",
            ],
            outputs="tatoeba_embeddings",
            name="embed_tatoeba_texts_node",
        ),
        node(
            nodes.embed_tatoeba_finetuned,
            inputs=[
                "tatoeba_pairs",
                "models_directory",
                "embedding_store",
                "params:embeddings.extraction",
                "tatoeba_models",
            ],
            outputs="tatoeba_finetuned_embeddings",
            name="embed_tatoeba_finetuned_node",
        ),
        node(
            nodes.evaluate_tatoeba_node,
            inputs=[
                "tatoeba_pairs",
                "tatoeba_embeddings",
                "tatoeba_finetuned_embeddings",
                "tatoeba_models",
                "params:tatoeba.evaluation",
            ],
            outputs="tatoeba_scores",
            name="evaluate_tatoeba_node",
        ),
    ]


def _report_nodes() -> list[Node]:
    """The report's tables and its figure."""
    return [
        node(
            nodes.report_tatoeba,
            inputs=[
                "tatoeba_scores",
                "tatoeba_languages",
                "tatoeba_models",
                "tatoeba_ingest_counts",
                "encoder_identity",
                "params:tatoeba.evaluation",
                "params:tatoeba.report",
            ],
            outputs=["tatoeba_metrics_table", "tatoeba_metrics", "tatoeba_report_markdown", "tatoeba_per_language"],
            name="report_tatoeba_node",
        ),
        node(
            nodes.plot_tatoeba_node,
            inputs=["tatoeba_scores", "tatoeba_languages", "tatoeba_models", "params:tatoeba.figure"],
            outputs="tatoeba_figure",
            name="plot_tatoeba_node",
        ),
    ]
