"""``conf/base/parameters_export.yml``: trained meaning models as MLflow models for use outside the project."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from language_agnostic.methods.apply import SOURCES
from language_agnostic.parameters._rules import NonEmpty
from language_agnostic.parameters.base import Section

# the pipelines with trained meaning models (pipelines/export/nodes.py:SOURCES is the same tuple)
Source = Literal[SOURCES]


class Export(Section):
    """``export``: trained meaning models as MLflow models holding a sentence-transformers model (docs/export.md).

    Each model of data/06_models becomes ``<out_dir>/<source>/<method>``.
    """

    sources: Annotated[list[Source], Field(min_length=1)] = list(SOURCES)
    """Whose models: qe, sts, fmda (variants and heads), emu (its save_encoders)."""
    only: Annotated[list[NonEmpty], Field(min_length=1)] | None = None
    """Models to export, e.g. [dream@qe, fmda@en_de]; null: every model found."""
    out_dir: NonEmpty = "data/06_models/exported"
    """Directory of the exports."""
    log_to_mlflow: bool = True
    """Log each export to the MLflow run that trained it (else to this run)."""


SECTIONS: dict[str, type[Section]] = {"export": Export}
