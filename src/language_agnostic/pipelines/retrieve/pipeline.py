"""``retrieve``: read the user's queries and corpus, load the trained model, embed both, write the top-k neighbours.

``kedro run --pipelines=retrieve --params=retrieve.queries.path=q.txt,retrieve.corpus.path=c.txt``
(``conf/base/parameters_retrieve.yml``); the result is ``data/07_model_output/retrieve_neighbours.csv``.
"""

from __future__ import annotations

from kedro.pipeline import Node, Pipeline, node

from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.project_config import bind
from language_agnostic.pipelines.retrieve import nodes

# each side of the search: {parameter section and texts: its vectors}
SIDES = {"queries": "retrieve_query_vectors", "corpus": "retrieve_corpus_vectors"}


def create_pipeline() -> Pipeline:
    """The ``retrieve`` pipeline (its shape does not depend on the configuration)."""
    return Pipeline(
        [
            load_encoder_pipeline(),
            node(
                nodes.load_model,
                inputs=["params:retrieve.model", "params:retrieve.mode", "encoder_identity"],
                outputs="retrieve_model",
                name="load_retrieve_model_node",
            ),
            *[step for side in SIDES for step in _side_nodes(side)],
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


def _side_nodes(side: str) -> list[Node]:
    """Read the texts of ``retrieve.<side>`` and embed them with the model (queries and corpus alike)."""
    return [
        node(
            bind(nodes.read_texts, where=f"retrieve.{side}"),
            inputs=f"params:retrieve.{side}",
            outputs=f"retrieve_{side}",
            name=f"read_retrieve_{side}_node",
        ),
        node(
            nodes.embed_texts,
            inputs=[
                f"retrieve_{side}",
                "retrieve_model",
                "encoder",
                "embedding_store",
                "params:embeddings.extraction",
                "params:retrieve.raw_pooling",
            ],
            outputs=SIDES[side],
            name=f"embed_retrieve_{side}_node",
        ),
    ]
