"""``export``: ``kedro run --pipelines=export`` writes every trained meaning model that ``data/06_models``
holds (the heads over pooled vectors: DREAM, MEAT, SEED, the InfoNCE controls; FMDA's variants; EMU's
encoders) as an MLflow model holding a sentence-transformers model
(``conf/base/parameters_export.yml``; ``docs/export.md``)."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from language_agnostic.pipelines.export import nodes
from language_agnostic.pipelines.node_factories import trained_model_plan


def create_pipeline() -> Pipeline:
    """The ``export`` pipeline (its shape does not depend on the configuration: models are found when it runs)."""
    return Pipeline(
        [
            trained_model_plan(nodes.plan_exports, "params:export", "export_plan", "plan_exports_node"),
            node(
                nodes.export_models,
                inputs=[
                    "models_directory",
                    "export_plan",
                    "encoder",
                    "encoder_identity",
                    "params:embeddings.extraction",
                    "params:export",
                ],
                outputs="export_report",
                name="export_models_node",
            ),
        ],
        tags="export",
    )
