"""``conf/base/parameters.yml``: the run-wide settings (worker processes, reuse of trained models), and the
raw-data root that the catalog reads from ``--params`` alone.

The scalars of the top level (``processes``, ``raw_data_root``) are not a section: :data:`SCALARS` gives
their type and description (and :data:`SCALAR_DEFAULTS` their value when absent) for the root model.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from language_agnostic.parameters._rules import NonEmpty
from language_agnostic.parameters.base import Section
from language_agnostic.training.reuse import DEFAULT_STORE


class TrainedModels(Section):
    """``trained_models``: trained models kept by fingerprint, reused by any later run that would train the same one.

    ``python -m language_agnostic.training.reuse report`` lists the store.
    """

    reuse: bool = True
    """Reuse a stored model of the same fingerprint; false retrains and replaces it."""
    store: NonEmpty = DEFAULT_STORE
    """Directory of the stored models."""


SECTIONS: dict[str, type[Section]] = {"trained_models": TrainedModels}

SCALARS: dict[str, tuple[Any, str]] = {
    "processes": (
        Annotated[int, Field(ge=1)],
        "Worker processes for every training and embedding-extraction step (1: this process only; N > 1 starts N "
        "workers through torchrun); a step's own `training.processes` / `embeddings.extraction.processes` "
        "overrides it.",
    ),
    "raw_data_root": (
        NonEmpty,
        "Where the upstream raw data lives, read in place (runtime only: `kedro run --params=raw_data_root=/path`); "
        "absent: conf/base/globals.yml's, i.e. LANGUAGE_AGNOSTIC_DATA_ROOT or ../shared/data.",
    ),
}
"""The top level's scalars: ``{key: (type, one-line description)}``."""

SCALAR_DEFAULTS: dict[str, Any] = {"processes": 1, "raw_data_root": None}
"""Their values when absent (``raw_data_root``: None, the catalog then uses ``globals.yml``'s root)."""
