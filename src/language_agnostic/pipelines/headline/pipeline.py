"""``headline``: metrics.csv → the README's table (csv, markdown) and figure; ``make readme`` copies them."""

from __future__ import annotations

from typing import Any

from kedro.pipeline import Pipeline, node

from language_agnostic.reporting.headline import headline_figure, headline_markdown, headline_table


def build_headline(metrics: Any, params: dict[str, Any]) -> Any:
    """The headline rows of ``headline.rows`` over the metrics table."""
    return headline_table(metrics, params.get("rows") or [])


def create_pipeline(**_: Any) -> Pipeline:
    """Three nodes: the table, its markdown and its figure."""
    return Pipeline(
        [
            node(build_headline, ["metrics_table", "params:headline"], "headline_table", name="headline_node"),
            node(headline_markdown, "headline_table", "headline_markdown", name="headline_markdown_node"),
            node(headline_figure, "headline_table", "headline_figure", name="headline_figure_node"),
        ]
    )
