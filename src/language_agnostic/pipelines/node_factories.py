"""Node groups that several pipelines build the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kedro.pipeline import Node, Pipeline, node

from language_agnostic.encoders.extraction import TOKENISATION_KEYS
from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.project_config import TRAINED_MODEL_PARAMS, bind
from language_agnostic.training.reuse import Naming, reusable


def train_and_evaluate(
    key: str,
    *,
    reads: list[str],
    train: Callable[..., Any],
    train_inputs: list[str],
    trained: list[str],
    evaluate: Callable[..., Any],
    evaluate_inputs: list[str],
    rows: str | list[str],
    naming: Naming | None = None,
) -> list[Node]:
    """One trained model's two nodes (emu's methods, slu's, fmda's variants and heads).

    ``train_<key>_node`` runs ``train`` on ``reads`` (the data, and the encoder where it is
    fine-tuned) and ``train_inputs``, and writes ``trained``: the model and its history (a model
    stored with the same fingerprint is reused instead, ``training/reuse.py``).
    ``evaluate_<key>_node`` runs ``evaluate`` on ``reads``, the model and ``evaluate_inputs``, and
    writes ``rows``. ``naming``: where the model's name shows in what ``train`` returns (the name is then
    not part of its fingerprint: a renamed variant reuses its model).
    """
    inputs = [*reads, *train_inputs]
    # a fine-tuning reads only how texts are tokenised of embeddings.extraction: an extraction option
    # (progress, batch size, processes) then retrains nothing
    cut = {i: TOKENISATION_KEYS for i, name in enumerate(inputs) if name == "params:embeddings.extraction"}
    return [
        node(reusable(train, reads=cut, naming=naming), inputs=inputs, outputs=trained, name=f"train_{key}_node"),
        node(evaluate, inputs=[*reads, trained[0], *evaluate_inputs], outputs=rows, name=f"evaluate_{key}_node"),
    ]


def trained_model_plan(plan: Callable[..., Any], params: str, output: str, name: str) -> Pipeline:
    """The start of a pipeline over the trained models in ``data/06_models`` (``export``, ``tatoeba``): the
    encoder, and the node ``name`` where ``plan`` reads ``params`` and the parameter sections that say which
    models exist (``TRAINED_MODEL_PARAMS``) and writes the plan, ``output``.
    """
    return Pipeline(
        [
            load_encoder_pipeline(),
            node(plan, inputs=[params, *TRAINED_MODEL_PARAMS], outputs=output, name=name),
        ]
    )


def figure_node(pipeline: str, plot: Callable[..., Any], names: list[str], inputs: list[str]) -> Node:
    """``plot_<pipeline>_figure_node`` (emu's Figure 2, slu's Figure 3): ``plot`` of the methods ``names``,
    reading ``params:<pipeline>.figure`` and ``inputs`` (each method's figure data), writes ``<pipeline>_figure``.
    """
    return node(
        bind(plot, names=names),
        inputs=[f"params:{pipeline}.figure", *inputs],
        outputs=f"{pipeline}_figure",
        name=f"plot_{pipeline}_figure_node",
    )
