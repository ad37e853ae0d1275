"""The ``massive`` pipeline: MASSIVE 1.1 ingestion and the texts FMDA trains and is judged on."""

from language_agnostic.pipelines.massive.pipeline import create_pipeline

__all__ = ["create_pipeline"]
