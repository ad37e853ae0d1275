"""``export``: the trained meaning models of ``data/06_models`` as sentence-transformers models."""

from language_agnostic.pipelines.export.pipeline import create_pipeline

__all__ = ["create_pipeline"]
