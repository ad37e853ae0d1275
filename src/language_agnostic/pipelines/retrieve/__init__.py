"""``retrieve``: a trained FMDA (or head, or the raw encoder) applied to a user's own utterances."""

from language_agnostic.pipelines.retrieve.pipeline import create_pipeline

__all__ = ["create_pipeline"]
