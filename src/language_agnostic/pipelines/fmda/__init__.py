"""``fmda``: FMDA and its baselines on MASSIVE, per language pair."""

from language_agnostic.pipelines.fmda.pipeline import create_pipeline

__all__ = ["create_pipeline"]
