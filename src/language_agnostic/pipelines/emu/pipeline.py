"""``emu``: fine-tune the encoder with EMU, its ablations and the baseline losses → evaluate every locale → report.

The methods trained (``emu.methods``) are read from ``conf/`` when the pipeline is built, so a
variant is a YAML edit and kedro-viz shows each. Every method reads the ``massive`` stage's
utterances: labelled sentences of the training locale's train split, the other locales' train
utterances unlabelled for EMU's critic, the training locale's dev split for selection, and the
test split of every locale for the evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kedro.pipeline import Node, Pipeline, node

from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.emu import nodes
from language_agnostic.pipelines.node_factories import figure_node, train_and_evaluate
from language_agnostic.pipelines.project_config import bind, configuration_error_pipeline, load_parameters
from language_agnostic.training.reuse import Naming

DEFAULT_METHODS: dict[str, Any] = {"emu": {"method": "emu", "loss": "emu"}}


def create_pipeline(
    methods: Mapping[str, Any] | None = None,
    save_encoders: list[str] | None = None,
    figure: Mapping[str, Any] | None = None,
) -> Pipeline:
    """Build ``emu`` from ``emu.methods``, ``emu.save_encoders`` and ``emu.figure``
    (arguments given here replace the configuration; with ``methods`` given and no ``figure``,
    no figure is drawn).

    A configuration error gives :func:`configuration_error_pipeline`, so the other pipelines
    still build and ``kedro run --pipelines=emu`` stops naming the parameter.
    """
    if methods is None and save_encoders is None:
        try:
            return _create_pipeline()
        except ValueError as exc:
            return configuration_error_pipeline("emu", exc)
    return _create_pipeline(methods, save_encoders, figure)


# what the raw evaluation and every method read
SHARED_INPUTS = ["massive_utterances", "encoder", "params:emu.data"]


def _create_pipeline(
    methods: Mapping[str, Any] | None = None,
    save_encoders: list[str] | None = None,
    figure: Mapping[str, Any] | None = None,
) -> Pipeline:
    params = load_parameters().get("emu") or {} if methods is None or save_encoders is None else {}
    if methods is None:
        methods = _configured_methods(params)
    if save_encoders is None:
        save_encoders = [str(n) for n in params.get("save_encoders") or [] if n in methods]
    missing = sorted(set(save_encoders) - set(methods))
    if missing:
        raise ValueError(f"emu.save_encoders: {missing} not in emu.methods ({sorted(methods)})")
    if figure is None:
        figure = dict(params.get("figure") or {})
    figure_methods = [str(n) for n in figure.get("methods") or [] if n == "raw" or n in methods]
    parts = [
        node(
            nodes.evaluate_raw,
            inputs=[
                *SHARED_INPUTS,
                "params:embeddings.extraction",
                "encoder_identity",
                "params:emu.evaluation",
                "params:emu.figure",
                "params:emu.training",  # raw is encoded under the methods' autocast
            ],
            outputs=["emu_rows_raw", "emu_raw_correct", "emu_figure_sets_raw", "emu_outcomes_raw"],
            name="evaluate_emu_raw_node",
        )
    ]
    for name in methods:
        parts += _method_nodes(name, save_encoder=name in save_encoders)
    parts += _report_nodes(list(methods), figure_methods, figure)
    return Pipeline([load_encoder_pipeline(), *parts], tags="emu")


def _configured_methods(params: Mapping[str, Any]) -> dict[str, Any]:
    """``emu.methods`` (default: EMU alone), limited to ``emu.only`` when that is set.

    Raises:
        ValueError: ``emu.only`` names a method that is not in ``emu.methods``.
    """
    methods = dict(params.get("methods") or DEFAULT_METHODS)
    # `--params=emu.only=emu`: train and report only these methods (and raw); null = all
    only = params.get("only")
    if only:
        only = [only] if isinstance(only, str) else [str(n) for n in only]
        unknown = sorted(set(only) - set(methods))
        if unknown:
            raise ValueError(f"emu.only: {unknown} not in emu.methods ({sorted(methods)})")
        methods = {n: spec for n, spec in methods.items() if n in only}
    return methods


def _method_nodes(name: str, save_encoder: bool) -> list[Node]:
    """Train one method of ``emu.methods``, evaluate it, and (``save_encoder``) save its fine-tuned encoder."""
    key = name.replace("-", "_")  # dataset names: emu-no_ld -> emu_no_ld
    model = f"emu_model_{key}"
    parts = train_and_evaluate(
        key,
        reads=SHARED_INPUTS[:2],
        train=bind(nodes.train_emu_variant, name=name),
        train_inputs=[
            f"params:emu.methods.{name}",
            "params:emu.data",
            "params:emu.training",
            "params:embeddings.extraction",
        ],
        trained=[model, f"emu_history_{key}"],
        evaluate=nodes.evaluate_emu_variant,
        evaluate_inputs=[
            "params:emu.data",
            "params:embeddings.extraction",
            "emu_raw_correct",
            "encoder_identity",
            "params:emu.evaluation",
            "params:emu.figure",
        ],
        rows=[f"emu_rows_{key}", f"emu_figure_sets_{key}", f"emu_outcomes_{key}"],
        naming=Naming("name", {"method": str, "name": str}),
    )
    if save_encoder:
        parts.append(
            node(
                nodes.tuned_encoder,
                inputs=["encoder", model],
                outputs=f"emu_encoder_{key}",
                name=f"save_{key}_encoder_node",
            )
        )
    return parts


def _report_nodes(methods: list[str], figure_methods: list[str], figure: Mapping[str, Any]) -> list[Node]:
    """The report over raw and every method, and Figure 2 when ``emu.figure`` asks for it."""
    keys = ["raw", *[n.replace("-", "_") for n in methods]]
    parts = [
        node(
            nodes.report_emu,
            inputs=[
                "params:emu.data",
                "emu_outcomes_before",
                *[f"emu_rows_{k}" for k in keys],
                *[f"emu_outcomes_{k}" for k in keys],
            ],
            outputs=["emu_metrics_table", "emu_metrics", "emu_tables_markdown", "emu_outcomes"],
            name="report_emu_node",
        )
    ]
    if figure_methods and figure.get("locales"):  # Figure 2; emu.figure.methods: [] = no figure
        sets = [f"emu_figure_sets_{n.replace('-', '_')}" for n in figure_methods]
        parts.append(figure_node("emu", nodes.plot_emu_figure, figure_methods, sets))
    return parts
