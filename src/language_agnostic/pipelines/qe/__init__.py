"""``qe`` pipeline: meaning embeddings judged on WMT20 sentence-level quality estimation."""

from language_agnostic.pipelines.qe.pipeline import create_pipeline

__all__ = ["create_pipeline"]
