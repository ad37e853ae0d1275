"""``conf/base/parameters_retrieve.yml``: a trained model applied to a user's own utterances."""

from __future__ import annotations

import inspect
from typing import Annotated, Literal

from pydantic import Field, model_validator

from language_agnostic.encoders.pooling import POOLINGS
from language_agnostic.evaluation.neighbours import MODES, SEARCHES, faiss_top_k
from language_agnostic.parameters._rules import NonEmpty, error_at
from language_agnostic.parameters.base import Blank, Section

Mode = Literal[MODES]
Search = Literal[SEARCHES]
Pooling = Literal[POOLINGS]
Count = Annotated[int, Field(ge=1)]
_FAISS = inspect.signature(faiss_top_k).parameters  # its defaults are those of a key left out


class Texts(Section):
    """``retrieve.queries`` / ``retrieve.corpus``: a text file (one utterance per line) or a .csv file."""

    path: NonEmpty
    """A .csv file (with a header), or UTF-8 text with one utterance per line."""
    column: NonEmpty | None = None
    """The .csv file's column of utterances; null for a text file."""
    id_column: NonEmpty | None = None
    """The .csv column of ids; null: the row (or line) number."""

    @model_validator(mode="after")
    def _format(self) -> Texts:
        """A .csv file names its column of texts; a text file names none (``corpora/user_text.py``)."""
        csv = self.path.lower().endswith(".csv")
        if csv and self.column is None:
            raise error_at(
                ("column",), f"{self.path} is a CSV file; name the column that holds the utterances", self.column
            )
        if not csv and (self.column is not None or self.id_column is not None):
            raise error_at(
                ("column",),
                f"{self.path} is not a .csv file (one utterance per line); leave column and id_column empty",
                self.column if self.column is not None else self.id_column,
            )
        return self


class Model(Section):
    """``retrieve.model``: the trained model, a file or an MLflow run's artifact (unused in raw mode)."""

    path: Blank = ""
    """A trained model file (.safetensors); empty: from run_id."""
    run_id: NonEmpty | None = None
    """An MLflow run id whose artifact is the model; null: path is."""
    artifact: Blank = ""
    """The run_id's artifact holding the model."""


class Faiss(Section):
    """``retrieve.faiss``: the approximate HNSW index of ``search: faiss``."""

    hnsw_m: Count = _FAISS["hnsw_m"].default
    """Neighbours per node of the HNSW graph."""
    ef_search: Count = _FAISS["ef_search"].default
    """Candidates kept while searching (more: nearer exact, slower)."""


class Retrieve(Section):
    """``retrieve``: nearest neighbours of each query among the corpus utterances (docs/retrieve.md)."""

    queries: Texts
    """The queries."""
    corpus: Texts
    """The utterances searched, any language."""
    model: Model
    """The trained model (one of path and run_id, unless mode is raw)."""
    mode: Mode
    """meaning (cross-lingual / paraphrase), template (FMDA only) or raw (the encoder alone)."""
    raw_pooling: Pooling
    """The raw mode's pooling: cls or mean."""
    top_k: Count
    """Neighbours listed per query."""
    search: Search
    """exact (ties to the lower index) or faiss (approximate HNSW; pip install faiss-cpu)."""
    faiss: Faiss
    """The faiss search's index."""

    @model_validator(mode="after")
    def _one_model(self) -> Retrieve:
        """A trained mode reads exactly one of ``model.path`` and ``model.run_id`` (``pipelines/retrieve/nodes.py``)."""
        if self.mode != "raw" and bool(self.model.path) == bool(self.model.run_id):
            raise error_at(
                ("model",),
                "give exactly one of path (a trained model file) and run_id (an MLflow run)",
                {"path": self.model.path, "run_id": self.model.run_id},
            )
        return self


SECTIONS: dict[str, type[Section]] = {"retrieve": Retrieve}
