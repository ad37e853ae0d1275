"""``sts`` pipeline: meaning embeddings judged on SemEval-2017 semantic textual similarity."""

from language_agnostic.pipelines.sts.pipeline import create_pipeline

__all__ = ["create_pipeline"]
