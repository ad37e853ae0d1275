"""``conf/base/parameters_headline.yml``: the README's headline table and figure, one row per paper's main claim."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from language_agnostic.parameters._rules import NonEmpty
from language_agnostic.parameters.base import Section


class Verdict(Section):
    """``headline.rows[i].verdict``: the claims rows (``reporting/claims.py``'s layout) a headline row summarises."""

    reports: Annotated[list[NonEmpty], Field(min_length=1)]
    """Reports of data/08_reporting/, preferred first: the first with the rows is used."""
    method: NonEmpty
    """The method as the claims table names it (e.g. fmda/m)."""
    baseline: NonEmpty
    """The baseline as the claims table names it (e.g. centering/mean)."""
    where: NonEmpty | None = None
    """Selects the claims rows whose "on" column contains it (e.g. en-zh); null: all."""
    percent: bool = False
    """The claims table is in % (shown as a fraction)."""


class Row(Section):
    """``headline.rows[i]``: one paper's main claim, holding or not."""

    paper: NonEmpty
    """The paper (or "<paper>, beyond the paper")."""
    claim: NonEmpty
    """The claim, in words."""
    measure: NonEmpty
    """What is measured, on which data."""
    paper_figure: NonEmpty
    """The paper's own figure, its backbone first ("—": none)."""
    claims: NonEmpty
    """A markdown link to the page with the claims table."""
    verdict: Verdict
    """The claims rows behind the row's numbers and verdict."""


class Headline(Section):
    """``headline``: the README's table (``make readme``, or ``kedro run --pipelines=headline``)."""

    rows: list[Row] = []
    """The table's rows, in order."""


SECTIONS: dict[str, type[Section]] = {"headline": Headline}
