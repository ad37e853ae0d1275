"""``tatoeba``: every method's meaning embedding on the 112-language LASER Tatoeba bitext retrieval,
seen and unseen languages.
"""

from language_agnostic.pipelines.tatoeba.pipeline import create_pipeline

__all__ = ["create_pipeline"]
