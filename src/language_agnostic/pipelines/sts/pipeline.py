"""``sts``: SemEval-2017 STS tracks + OPUS-MT Tatoeba corpus → embed → centering, DREAM, MEAT, SEED → Pearson; report.

The shared body is ``pipelines/similarity.create_similarity_pipeline``; this file adds the
Tatoeba corpus reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kedro.pipeline import Pipeline, node

from language_agnostic.pipelines.similarity import create_similarity_pipeline
from language_agnostic.pipelines.sts import nodes


def create_pipeline(qe_pairs: list[str] | None = None, ablations: Mapping[str, Any] | None = None) -> Pipeline:
    """Build ``sts`` (``qe_pairs``: the QE test sets read for overlap removal; ``ablations``: extra heads;
    defaults from ``conf/``).
    """
    candidates = node(
        nodes.build_tatoeba_candidates,
        inputs=["params:sts.corpus", "opus_mt_testsets"],
        outputs=["sts_corpus_candidates", "sts_corpus_label_counts"],
        name="build_tatoeba_candidates_node",
    )
    return create_similarity_pipeline("sts", candidates, qe_pairs, ablations)
