"""``massive``: archive → parsed utterances → pairs, masked texts, template sets, negative pools."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from language_agnostic.corpora.massive_table import build_pair_table, parse_massive
from language_agnostic.pipelines.massive import nodes
from language_agnostic.pipelines.project_config import configured_namespaces

DEFAULT_PAIRS = ["en_de", "en_es", "en_ja"]


def create_pair_pipeline() -> Pipeline:
    """The per-language-pair part; instantiated once per namespace (``en_de``, ...)."""
    return Pipeline(
        [
            node(
                build_pair_table,
                inputs=["massive_utterances", "params:pair", "params:massive.ingest"],
                outputs=["massive_pairs", "massive_pair_counts"],
                name="build_pair_table_node",
            )
        ]
    )


def create_pipeline(pairs: list[str] | None = None) -> Pipeline:
    """Build the ``massive`` pipeline.

    Args:
        pairs: Language-pair namespaces; default: the keys of ``massive.pairs`` in ``conf/``.

    Returns:
        The pipeline.
    """
    if pairs is None:
        pairs = configured_namespaces("massive", "pairs", DEFAULT_PAIRS)
    locale_level = _locale_pipeline()
    pair_level = [
        Pipeline(
            create_pair_pipeline(),
            namespace=name,
            inputs={"massive_utterances"},
            # counts leave the namespace under a plain name: a dotted input outside the
            # namespace would make Kedro warn about dataset names
            outputs={"massive_pair_counts": f"massive_pair_counts_{name}"},
            parameters={
                "params:pair": f"params:massive.pairs.{name}",
                "params:massive.ingest": "params:massive.ingest",
            },
        )
        for name in pairs
    ]
    summary = node(
        nodes.summarise_massive,
        inputs=[
            "massive_ingest_counts",
            "massive_masking_counts",
            "massive_template_retrieval_counts",
            "massive_template_pair_counts",
            "massive_negative_pool_counts",
            *[f"massive_pair_counts_{name}" for name in pairs],
        ],
        outputs=["massive_metrics", "massive_summary", "massive_summary_markdown"],
        name="summarise_massive_node",
    )
    return Pipeline([locale_level, *pair_level, summary], tags="massive")


def _locale_pipeline() -> Pipeline:
    """The per-locale part: parse the archive, then masked texts, template sets and negative pools."""
    return Pipeline(
        [
            node(
                parse_massive,
                inputs=[
                    "massive_archive",
                    "params:massive.locales",
                    "params:massive.pairs",
                    "params:massive.ingest",
                ],
                outputs=["massive_utterances", "massive_rejects", "massive_ingest_counts"],
                name="parse_massive_node",
            ),
            node(
                nodes.resolve_mask_token,
                inputs=["params:massive.masking", "params:embeddings.encoder"],
                outputs="massive_mask_token",
                name="resolve_mask_token_node",
            ),
            node(
                nodes.build_masked_texts,
                inputs=["massive_utterances", "params:massive.masking", "massive_mask_token"],
                outputs=["massive_masked_texts", "massive_masking_counts"],
                name="build_masked_texts_node",
            ),
            node(
                nodes.build_template_retrieval_sets,
                inputs=["massive_utterances", "params:massive.template_retrieval"],
                outputs=[
                    "massive_template_retrieval_single",
                    "massive_template_retrieval_multi",
                    "massive_template_retrieval_counts",
                ],
                name="build_template_retrieval_sets_node",
            ),
            node(
                nodes.build_template_train_pairs,
                inputs=["massive_utterances", "params:massive.template_pairs"],
                outputs=["massive_template_train_pairs", "massive_template_pair_counts"],
                name="build_template_train_pairs_node",
            ),
            node(
                nodes.build_negative_pools,
                inputs=["massive_utterances", "params:massive.negative_pool"],
                outputs=["massive_negative_pools", "massive_negative_pool_counts"],
                name="build_negative_pools_node",
            ),
        ]
    )
