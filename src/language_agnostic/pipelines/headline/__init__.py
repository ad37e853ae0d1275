"""``headline``: the README's results table and figure, a view of the one metrics table."""

from language_agnostic.pipelines.headline.pipeline import create_pipeline

__all__ = ["create_pipeline"]
