"""``slu``: zero-shot cross-lingual intent detection and slot filling on MASSIVE (ZSJoint, CoSDA-ML)."""

from language_agnostic.pipelines.slu.pipeline import create_pipeline

__all__ = ["create_pipeline"]
