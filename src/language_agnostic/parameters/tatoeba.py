"""``conf/base/parameters_tatoeba.yml``: every method's meaning embedding on the LASER Tatoeba bitext retrieval."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from language_agnostic.corpora.errors import OnBadRow
from language_agnostic.encoders.pooling import POOLINGS
from language_agnostic.methods.apply import SOURCES
from language_agnostic.parameters._rules import NonEmpty, matching, word_or_list
from language_agnostic.parameters.base import Section
from language_agnostic.reporting.tatoeba import METRICS

# a language of a tatoeba.<xxx>-eng.<xxx> file (corpora/tatoeba.py)
Language = Annotated[str, matching(r"[a-z]{3}", "an ISO 639-3 code such as 'deu'")]
Source = Literal[SOURCES]
Pooling = Literal[POOLINGS]
Scoring = Literal[tuple(METRICS)]
Count = Annotated[int, Field(ge=1)]


class Ingest(Section):
    """``tatoeba.ingest``: which pairs of tatoeba/v1 (under the raw-data root) are read."""

    languages: word_or_list("all", Language) = "all"
    """all: every tatoeba.<xxx>-eng.<xxx> file; or ISO 639-3 codes (paired with English)."""
    expected_pairs: Count | None = None
    """Languages `all` must find (LASER has 112); null: any number."""
    on_bad_row: OnBadRow = "error"
    """error: stop at an empty sentence (file:line); skip: log, count, write it to tatoeba_rejects.csv."""


class Models(Section):
    """``tatoeba.models``: whose trained models are evaluated (the files follow from those pipelines' parameters)."""

    sources: Annotated[list[Source], Field(min_length=1)] = list(SOURCES)
    """The pipelines whose models are evaluated (they also decide which languages are seen)."""
    only: Annotated[list[NonEmpty], Field(min_length=1)] | None = None
    """Models to evaluate, e.g. [dream@qe, fmda@en_de]; null: every expected one."""


class Evaluation(Section):
    """``tatoeba.evaluation``: what is scored."""

    poolings: Annotated[list[Pooling], Field(min_length=1)] = ["mean", "cls"]
    """The raw encoder's poolings scored."""
    margin_k: Count = 4
    """Ratio margin's neighbours per side (Artetxe & Schwenk: k = 4)."""
    progress: bool = True
    """Show a progress bar."""


class Report(Section):
    """``tatoeba.report``: the markdown report."""

    spread_languages: Count = 20
    """How many languages "where methods differ most" lists."""


class Figure(Section):
    """``tatoeba.figure``: data/08_reporting/tatoeba_per_language.png."""

    methods: word_or_list("auto", NonEmpty) = "auto"
    """auto: raw/mean and each source's best method; or a list, e.g. [raw/mean, dream@qe/meaning]."""
    scoring: Scoring = "cosine"
    """The accuracy drawn: cosine or (ratio) margin."""


class Tatoeba(Section):
    """``tatoeba``: bitext retrieval of the trained models on 112 languages paired with English (trains nothing)."""

    ingest: Ingest
    """Which Tatoeba pairs are read."""
    models: Models
    """Whose models are evaluated."""
    evaluation: Evaluation
    """What is scored."""
    report: Report
    """The markdown report."""
    figure: Figure
    """The per-language figure."""


SECTIONS: dict[str, type[Section]] = {"tatoeba": Tatoeba}
