"""``fmda``: per language pair, embed → train FMDA and DREAM → evaluate → one report."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.fmda import nodes
from language_agnostic.pipelines.massive.pipeline import DEFAULT_PAIRS
from language_agnostic.pipelines.project_config import configured_namespaces

SHARED_INPUTS = {"massive_masked_texts", "massive_template_retrieval_single", "massive_template_retrieval_multi",
                 "massive_negative_pools", "encoder", "embedding_store", "encoder_identity"}
SHARED_PARAMS = {"params:embeddings.extraction", "params:fmda.model", "params:fmda.variant", "params:fmda.training",
                 "params:fmda.dream"}


def create_pair_pipeline() -> Pipeline:
    """One language pair (instantiated per namespace)."""
    return Pipeline([
        node(nodes.embed_fmda_inputs,
             inputs=["massive_masked_texts", "massive_template_retrieval_single", "massive_template_retrieval_multi",
                     "params:pair", "encoder", "embedding_store", "params:embeddings.extraction"],
             outputs="fmda_inputs", name="embed_fmda_inputs_node"),
        node(nodes.train_fmda,
             inputs=["fmda_inputs", "massive_negative_pools", "params:fmda.model", "params:fmda.variant", "params:fmda.training"],
             outputs=["fmda_model", "fmda_history"], name="train_fmda_node"),
        node(nodes.train_dream_baseline, inputs=["fmda_inputs", "params:fmda.dream"],
             outputs=["dream_model", "dream_history"], name="train_dream_node"),
        node(nodes.evaluate_fmda, inputs=["fmda_inputs", "fmda_model", "dream_model", "encoder_identity"],
             outputs="fmda_rows", name="evaluate_fmda_node"),
    ])


def create_pipeline(pairs: list[str] | None = None) -> Pipeline:
    """Build ``fmda`` over the language pairs of ``massive.pairs``."""
    if pairs is None:
        pairs = configured_namespaces("massive", "pairs", DEFAULT_PAIRS)
    load = load_encoder_pipeline()
    per_pair = [
        Pipeline(create_pair_pipeline(), namespace=name, inputs=SHARED_INPUTS,
                 outputs={"fmda_rows": f"fmda_rows_{name}"},
                 parameters={**{p: p for p in SHARED_PARAMS}, "params:pair": f"params:massive.pairs.{name}"})
        for name in pairs
    ]
    report = node(nodes.report_fmda, inputs=[f"fmda_rows_{name}" for name in pairs],
                  outputs=["fmda_metrics_table", "fmda_metrics", "fmda_tables_markdown"], name="report_fmda_node")
    return Pipeline([load, *per_pair, report], tags="fmda")
