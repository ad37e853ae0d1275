"""``retrieve``: read the user's queries and corpus, load the trained model, embed both, write the top-k neighbours.

``kedro run --pipelines=retrieve --params=retrieve.queries.path=q.txt,retrieve.corpus.path=c.txt``
(``conf/base/parameters_retrieve.yml``); the result is ``data/07_model_output/retrieve_neighbours.csv``.
"""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.project_config import bind
from language_agnostic.pipelines.retrieve import nodes


def create_pipeline() -> Pipeline:
    """The ``retrieve`` pipeline (its shape does not depend on the configuration)."""
    embed_inputs = [
        "retrieve_model",
        "encoder",
        "embedding_store",
        "params:embeddings.extraction",
        "params:retrieve.raw_pooling",
    ]
    return Pipeline(
        [
            load_encoder_pipeline(),
            node(
                bind(nodes.read_texts, where="retrieve.queries"),
                inputs="params:retrieve.queries",
                outputs="retrieve_queries",
                name="read_retrieve_queries_node",
            ),
            node(
                bind(nodes.read_texts, where="retrieve.corpus"),
                inputs="params:retrieve.corpus",
                outputs="retrieve_corpus",
                name="read_retrieve_corpus_node",
            ),
            node(
                nodes.load_model,
                inputs=["params:retrieve.model", "params:retrieve.mode", "encoder_identity"],
                outputs="retrieve_model",
                name="load_retrieve_model_node",
            ),
            node(
                nodes.embed_texts,
                inputs=["retrieve_queries", *embed_inputs],
                outputs="retrieve_query_vectors",
                name="embed_retrieve_queries_node",
            ),
            node(
                nodes.embed_texts,
                inputs=["retrieve_corpus", *embed_inputs],
                outputs="retrieve_corpus_vectors",
                name="embed_retrieve_corpus_node",
            ),
            node(
                nodes.find_neighbours,
                inputs=[
                    "retrieve_queries",
                    "retrieve_query_vectors",
                    "retrieve_corpus",
                    "retrieve_corpus_vectors",
                    "params:retrieve.top_k",
                    "params:retrieve.search",
                    "params:retrieve.faiss",
                ],
                outputs="retrieve_neighbours",
                name="find_neighbours_node",
            ),
        ],
        tags="retrieve",
    )
