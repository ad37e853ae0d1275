"""``embeddings``: load the encoder once, embed each pair's texts (cached), evaluate the raw encoder."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from language_agnostic.pipelines.embeddings import nodes
from language_agnostic.pipelines.massive.pipeline import configured_pairs, in_pair_namespace

SHARED_PARAMS = ["params:embeddings.extraction", "params:embeddings.partitions", "params:embeddings.poolings"]


def create_pair_pipeline() -> Pipeline:
    """Per language pair: embed both sides, evaluate raw retrieval."""
    return Pipeline(
        [
            node(
                nodes.embed_pair_texts,
                inputs=[
                    "massive_pairs",
                    "encoder",
                    "embedding_store",
                    "params:embeddings.extraction",
                    "params:embeddings.partitions",
                ],
                outputs="massive_pair_embeddings",
                name="embed_pair_texts_node",
            ),
            node(
                nodes.evaluate_raw_retrieval,
                inputs=["massive_pair_embeddings", "params:embeddings.poolings", "encoder_identity"],
                outputs="raw_retrieval_rows",
                name="evaluate_raw_retrieval_node",
            ),
        ]
    )


def load_encoder_pipeline() -> Pipeline:
    """The one node that loads the encoder; every pipeline that embeds includes it (Kedro merges the copies)."""
    return Pipeline(
        [
            node(
                nodes.load_encoder_node,
                inputs="params:embeddings.encoder",
                outputs=["encoder", "encoder_identity"],
                name="load_encoder_node",
            )
        ]
    )


def create_pipeline(pairs: list[str] | None = None) -> Pipeline:
    """Build the ``embeddings`` pipeline over the language pairs of ``massive.pairs``."""
    pairs = configured_pairs(pairs)
    load = load_encoder_pipeline()
    shared = {"encoder", "embedding_store", "encoder_identity", *SHARED_PARAMS}
    per_pair = [in_pair_namespace(create_pair_pipeline(), name, shared, ["raw_retrieval_rows"]) for name in pairs]
    report = node(
        nodes.report_raw_retrieval,
        inputs=["encoder_identity", *[f"raw_retrieval_rows_{name}" for name in pairs]],
        outputs=["metrics_table", "embeddings_metrics", "raw_encoder_retrieval_markdown"],
        name="report_raw_retrieval_node",
    )
    return Pipeline([load, *per_pair, report], tags="embeddings")
