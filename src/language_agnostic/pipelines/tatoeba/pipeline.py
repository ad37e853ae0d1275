"""``tatoeba``: Tatoeba pairs + the trained models in ``data/06_models`` → embed once (cached) →
bitext retrieval → report.

``kedro run --pipelines=tatoeba`` (``conf/base/parameters_tatoeba.yml``): every model the
configured ``qe``, ``sts``, ``fmda`` and ``emu`` pipelines train is evaluated when its file is
present and skipped with a warning (naming the file and the command that makes it) when not.
"""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline, node

from language_agnostic.pipelines.node_factories import trained_model_plan
from language_agnostic.pipelines.tatoeba import nodes


def create_pipeline() -> Pipeline:
    """The ``tatoeba`` pipeline (its shape does not depend on the configuration: models are found when it runs)."""
    return Pipeline(
        [
            trained_model_plan(
                nodes.plan_tatoeba_models, "params:tatoeba.models", "tatoeba_model_plan", "plan_tatoeba_models_node"
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
    # {node: (function, where its encoders come from, the vectors)}: the same texts and cache for both
    embeddings = {
        "embed_tatoeba_texts_node": (nodes.embed_tatoeba_texts, "encoder", "tatoeba_embeddings"),
        "embed_tatoeba_finetuned_node": (
            nodes.embed_tatoeba_finetuned,
            "models_directory",
            "tatoeba_finetuned_embeddings",
        ),
    }
    return [
        *[
            node(
                embed,
                inputs=["tatoeba_pairs", encoders, "embedding_store", "params:embeddings.extraction", "tatoeba_models"],
                outputs=vectors,
                name=name,
            )
            for name, (embed, encoders, vectors) in embeddings.items()
        ],
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
