"""``slu``: MASSIVE (``slu.locales``) → words + BIO labels → fine-tune the joint intent / slot model on en-US (ZSJoint, CoSDA-ML) →
evaluate on every test locale → report.

The methods trained (``slu.methods``) are read from ``conf/`` when the pipeline is built, so a
variant is a YAML edit and kedro-viz shows each. Strict zero-shot: training and checkpoint
selection read only the training locale (en-US train and dev); the other locales are test only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kedro.pipeline import Pipeline, node

from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.project_config import bind, configuration_error_pipeline, load_parameters
from language_agnostic.pipelines.slu import nodes

DEFAULT_METHODS: dict[str, Any] = {"zsjoint": {"method": "slu"}, "cosda": {"method": "slu", "code_switch": True}}


def create_pipeline(methods: Mapping[str, Any] | None = None) -> Pipeline:
    """Build ``slu`` from ``slu.methods`` (``methods`` given here replaces the configuration).

    A configuration error gives :func:`configuration_error_pipeline`, so the other pipelines
    still build and ``kedro run --pipeline=slu`` stops naming the parameter.
    """
    if methods is None:
        try:
            return _create_pipeline(dict((load_parameters().get("slu") or {}).get("methods") or DEFAULT_METHODS))
        except ValueError as exc:
            return configuration_error_pipeline("slu", exc)
    return _create_pipeline(methods)


def _create_pipeline(methods: Mapping[str, Any]) -> Pipeline:
    for name, spec in methods.items():
        # unknown keys named now, not an hour into the run
        nodes.method_settings(str(name), {k: v for k, v in dict(spec or {}).items() if k != "code_switch"})
    parts = [
        # the SLU locales are read here, not through massive.locales, so that testing on six
        # locales does not change what FMDA and EMU train and evaluate on
        node(nodes.parse_slu_locales, inputs=["massive_archive", "params:slu.locales", "params:slu.data", "params:massive.ingest"],
             outputs=["slu_utterances", "slu_massive_rejects", "slu_ingest_counts"], name="parse_slu_massive_node"),
        node(nodes.build_slu_rows, inputs=["slu_utterances", "params:massive.ingest"],
             outputs=["slu_rows", "slu_rejects", "slu_row_counts"], name="build_slu_rows_node"),
    ]
    if any(dict(spec or {}).get("code_switch") for spec in methods.values()):
        parts.append(node(nodes.load_dictionaries, inputs=["muse_dictionaries", "params:slu.code_switch", "slu_rows"],
                          outputs=["slu_dictionaries", "slu_dictionary_counts"], name="load_muse_dictionaries_node"))
    for name, spec in methods.items():
        key = str(name).replace("-", "_")
        switched = bool(dict(spec or {}).get("code_switch"))
        parts += [
            node(bind(nodes.train_slu_variant, name=str(name)) if switched
                 else bind(nodes.train_slu_variant, name=str(name), dictionaries=None),
                 inputs=["slu_rows", "encoder", f"params:slu.methods.{name}", "params:slu.data", "params:slu.code_switch",
                         "params:slu.training", "params:embeddings.extraction", *(["slu_dictionaries"] if switched else [])],
                 outputs=[f"slu_model_{key}", f"slu_history_{key}"], name=f"train_{key}_node"),
            node(nodes.evaluate_slu_variant,
                 inputs=["slu_rows", "encoder", f"slu_model_{key}", "params:slu.locales", "params:embeddings.extraction",
                         "encoder_identity"],
                 outputs=f"slu_rows_{key}", name=f"evaluate_{key}_node"),
        ]
    parts.append(node(nodes.report_slu, inputs=["params:slu.data", *[f"slu_rows_{str(n).replace('-', '_')}" for n in methods]],
                      outputs=["slu_metrics_table", "slu_metrics", "slu_tables_markdown"], name="report_slu_node"))
    return Pipeline([load_encoder_pipeline(), *parts], tags="slu")
