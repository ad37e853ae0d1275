"""``qe``: WMT20 QE test sets + MLQE-PE/FLoRes corpus → embed → centering, DREAM, MEAT, SEED → Pearson; report.

The shared body is ``pipelines/similarity.create_similarity_pipeline``; this file adds the
QE corpus reader, whose archive inputs follow ``qe.corpus`` in ``conf/base/parameters_qe.yml``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kedro.pipeline import Pipeline, node

from language_agnostic.corpora.wmt_qe import QE_PAIRS
from language_agnostic.pipelines.project_config import load_parameters
from language_agnostic.pipelines.qe import nodes
from language_agnostic.pipelines.similarity import create_similarity_pipeline

DEFAULT_CORPUS: dict[str, Any] = {"pairs": list(QE_PAIRS), "mlqe_pe_splits": ["train", "dev"]}


def create_pipeline(
    corpus: Mapping[str, Any] | None = None,
    qe_pairs: list[str] | None = None,
    ablations: Mapping[str, Any] | None = None,
) -> Pipeline:
    """Build ``qe`` from ``qe.corpus`` (pairs and MLQE-PE splits decide which archives are read).

    Arguments given here replace the configuration (tests build small pipelines this way).
    """
    if corpus is None:
        corpus = (load_parameters().get("qe") or {}).get("corpus") or DEFAULT_CORPUS
    archives = nodes.mlqe_pe_archive_names(corpus["pairs"], corpus["mlqe_pe_splits"])
    candidates = node(
        nodes.build_qe_candidates,
        inputs=["params:qe.corpus", "flores_v1_archive", *archives],
        outputs="qe_corpus_candidates",
        name="build_qe_candidates_node",
    )
    return create_similarity_pipeline("qe", candidates, qe_pairs, ablations)
