"""``headline``: the reports' claims tables → the README's table (csv, markdown) and figure."""

from __future__ import annotations

from typing import Any

from kedro.pipeline import Pipeline, node

from language_agnostic.reporting.headline import headline_figure, headline_markdown, headline_table


def build_headline(reports: dict[str, Any], params: dict[str, Any]) -> Any:
    """The headline rows of ``headline.rows`` from the claims tables of the reports
    (``data/08_reporting/*.md``, loaded lazily: only those a row names are read)."""
    rows = params.get("rows") or []
    named = {name for row in rows for name in ((row.get("verdict") or {}).get("reports") or [])}
    return headline_table(rows, {name: reports[name]() for name in named if name in reports})


def create_pipeline(**_: Any) -> Pipeline:
    """Three nodes: the table, its markdown and its figure."""
    return Pipeline(
        [
            node(build_headline, ["report_markdowns", "params:headline"], "headline_table", name="headline_node"),
            node(headline_markdown, "headline_table", "headline_markdown", name="headline_markdown_node"),
            node(headline_figure, "headline_table", "headline_figure", name="headline_figure_node"),
        ]
    )
