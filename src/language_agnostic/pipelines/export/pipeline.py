"""``export``: ``kedro run --pipelines=export`` writes every trained meaning model that ``data/06_models``
holds (the heads over pooled vectors: DREAM, MEAT, SEED, the InfoNCE controls; FMDA's variants; EMU's
encoders) as an MLflow model holding a sentence-transformers model
(``conf/base/parameters_export.yml``; ``docs/export.md``)."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.export import nodes
from language_agnostic.pipelines.project_config import TRAINED_MODEL_PARAMS


def create_pipeline() -> Pipeline:
    """The ``export`` pipeline (its shape does not depend on the configuration: models are found when it runs)."""
    return Pipeline(
        [
            load_encoder_pipeline(),
            node(
                nodes.plan_exports,
                inputs=["params:export", *TRAINED_MODEL_PARAMS],
                outputs="export_plan",
                name="plan_exports_node",
            ),
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
