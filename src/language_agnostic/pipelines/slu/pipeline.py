"""``slu``: MASSIVE (``slu.locales``) → words + BIO labels → fine-tune the joint intent / slot models
on en-US (ZSJoint, CoSDA-ML, LAJoint, LAJ-MCL and its ablations) → evaluate on every test locale →
report (tables; LAJ-MCL's Figure 3).

The methods trained (``slu.methods``) are read from ``conf/`` when the pipeline is built, so a
variant is a YAML edit and kedro-viz shows each. Strict zero-shot: training and checkpoint
selection read only the training locale (en-US train and dev); the other locales are test only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kedro.pipeline import Node, Pipeline, node

from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.node_factories import figure_node, train_and_evaluate
from language_agnostic.pipelines.project_config import bind, configuration_error_pipeline, load_parameters
from language_agnostic.pipelines.slu import nodes
from language_agnostic.training.reuse import Naming

DEFAULT_METHODS: dict[str, Any] = {"zsjoint": {"method": "slu"}, "cosda": {"method": "slu", "code_switch": True}}


def create_pipeline(methods: Mapping[str, Any] | None = None, figure: Mapping[str, Any] | None = None) -> Pipeline:
    """Build ``slu`` from ``slu.methods`` and ``slu.figure`` (arguments given here replace the configuration;
    with ``methods`` given and no ``figure``, no figure is drawn).

    A configuration error gives :func:`configuration_error_pipeline`, so the other pipelines
    still build and ``kedro run --pipelines=slu`` stops naming the parameter.
    """
    if methods is None:
        try:
            slu = load_parameters().get("slu") or {}
            return _create_pipeline(dict(slu.get("methods") or DEFAULT_METHODS), dict(slu.get("figure") or {}))
        except ValueError as exc:
            return configuration_error_pipeline("slu", exc)
    return _create_pipeline(methods, dict(figure or {}))


def _create_pipeline(methods: Mapping[str, Any], figure: Mapping[str, Any]) -> Pipeline:
    keys = _method_keys(methods)
    # Figure 3: the methods of slu.figure.methods that are run, in that order ([] or none run: no figure)
    figure_methods = [str(n) for n in figure.get("methods") or [] if str(n) in keys]
    parts = _data_nodes(code_switch=any(dict(spec or {}).get("code_switch") for spec in methods.values()))
    for name, spec in methods.items():
        parts += _method_nodes(str(name), spec, keys[str(name)], drawn=str(name) in figure_methods)
    names = [str(n) for n in methods]
    parts.append(
        node(
            bind(nodes.report_slu, names=names, grid=nodes.grid_methods(methods)),
            inputs=[
                "params:slu.data",
                "slu_metrics_before",
                "slu_outcomes_before",
                *[f"slu_rows_{keys[n]}" for n in names],
                *[f"slu_details_{keys[n]}" for n in names],
            ],
            outputs=["slu_metrics_table", "slu_metrics", "slu_tables_markdown", "slu_outcomes"],
            name="report_slu_node",
        )
    )
    if figure_methods:
        details = [f"slu_details_{keys[n]}" for n in figure_methods]
        parts.append(figure_node("slu", nodes.plot_slu_figure, figure_methods, details))
    return Pipeline([load_encoder_pipeline(), *parts], tags="slu")


def _method_keys(methods: Mapping[str, Any]) -> dict[str, str]:
    """``{method: node-name key}`` (a method's settings are checked when the run starts: ``parameters/slu.py``).

    Raises:
        ValueError: a name that is not a node name, or two methods that would get the same node names.
    """
    keys: dict[str, str] = {}
    for name in methods:
        key = nodes.method_key(str(name))
        if key in keys.values():
            other = next(n for n, k in keys.items() if k == key)
            raise ValueError(f"slu.methods: {other!r} and {name!r} both become the node name {key!r}; rename one")
        keys[str(name)] = key
    return keys


def _data_nodes(code_switch: bool) -> list[Node]:
    """Parse the SLU locales, build the words + BIO rows, and (``code_switch``) load the MUSE dictionaries."""
    parts = [
        # the SLU locales are read here, not through massive.locales, so that testing on six
        # locales does not change what FMDA and EMU train and evaluate on
        node(
            nodes.parse_slu_locales,
            inputs=["massive_archive", "params:slu.locales", "params:slu.data", "params:massive.ingest"],
            outputs=["slu_utterances", "slu_massive_rejects", "slu_ingest_counts"],
            name="parse_slu_massive_node",
        ),
        node(
            nodes.build_slu_rows,
            inputs=["slu_utterances", "params:massive.ingest"],
            outputs=["slu_rows", "slu_rejects", "slu_row_counts"],
            name="build_slu_rows_node",
        ),
    ]
    if code_switch:
        parts.append(
            node(
                nodes.load_dictionaries,
                inputs=["muse_dictionaries", "params:slu.code_switch", "slu_rows"],
                outputs=["slu_dictionaries", "slu_dictionary_counts"],
                name="load_muse_dictionaries_node",
            )
        )
    return parts


def _method_nodes(name: str, spec: Any, key: str, drawn: bool) -> list[Node]:
    """Train one method of ``slu.methods`` and evaluate it on every locale (with Figure 3's details if ``drawn``)."""
    switched = bool(dict(spec or {}).get("code_switch"))
    return train_and_evaluate(
        key,
        reads=["slu_rows", "encoder"],
        train=bind(nodes.train_slu_variant, name=name)
        if switched
        else bind(nodes.train_slu_variant, name=name, dictionaries=None),
        train_inputs=[
            f"params:slu.methods.{name}",
            "params:slu.data",
            "params:slu.code_switch",
            "params:slu.training",
            "params:embeddings.extraction",
            *(["slu_dictionaries"] if switched else []),
        ],
        trained=[f"slu_model_{key}", f"slu_history_{key}"],
        evaluate=nodes.evaluate_slu_variant,
        evaluate_inputs=[
            "params:slu.locales",
            "params:embeddings.extraction",
            "encoder_identity",
            *(["params:slu.figure"] if drawn else []),
        ],
        rows=[f"slu_rows_{key}", f"slu_details_{key}"],
        naming=Naming("name", {"method": str, "name": str}, spelling=nodes.metric_name),
    )
