"""``massive``: archive → parsed utterances → pairs, masked texts, template sets, negative pools."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from language_agnostic.corpora.massive_table import build_pair_table, parse_massive
from language_agnostic.pipelines.massive import nodes
from language_agnostic.pipelines.project_config import configured_namespaces

DEFAULT_PAIRS = ["en_de", "en_es", "en_ja"]


def configured_pairs(pairs: list[str] | None = None) -> list[str]:
    """``pairs``, or (None) the language-pair namespaces of ``massive.pairs`` in ``conf/``."""
    return configured_namespaces("massive", "pairs", DEFAULT_PAIRS) if pairs is None else pairs


def in_pair_namespace(pipe: Pipeline, pair: str, shared: set[str], plain_outputs: list[str] | None = None) -> Pipeline:
    """``pipe`` in the namespace of the language pair ``pair`` (massive, embeddings and fmda build one per pair).

    The datasets and parameters of ``shared`` that it reads stay outside the namespace (one for
    every pair), its ``params:pair`` is ``params:massive.pairs.<pair>``, and each of
    ``plain_outputs`` leaves it as ``<output>_<pair>``: under a plain name, as a dotted one read
    outside the namespace would make Kedro warn about dataset names.
    """
    used = pipe.inputs()
    parameters = {name: name for name in shared & used if name.startswith("params:")}
    if "params:pair" in used:
        parameters["params:pair"] = f"params:massive.pairs.{pair}"
    return Pipeline(
        pipe,
        namespace=pair,
        inputs={name for name in shared & used if not name.startswith("params:")},
        outputs={name: f"{name}_{pair}" for name in plain_outputs or []},
        parameters=parameters,
    )


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
    pairs = configured_pairs(pairs)
    locale_level = _locale_pipeline()
    pair_level = [
        in_pair_namespace(
            create_pair_pipeline(), name, {"massive_utterances", "params:massive.ingest"}, ["massive_pair_counts"]
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
