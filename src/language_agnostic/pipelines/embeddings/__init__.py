"""``embeddings``: frozen-encoder vectors for MASSIVE pair texts, cached; raw-encoder retrieval."""

from language_agnostic.pipelines.embeddings.pipeline import create_pipeline

__all__ = ["create_pipeline"]
