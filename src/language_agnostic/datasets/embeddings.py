"""Catalog access to the embedding cache: the store itself, and manifests that point into it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kedro.io import AbstractDataset, DatasetError

from language_agnostic.datasets.directory import DirectoryHandleDataset
from language_agnostic.encoders.extraction import EmbeddingSet, EmbeddingStore


class EmbeddingStoreDataset(DirectoryHandleDataset[EmbeddingStore]):
    """The embedding cache directory (``data/04_feature/embeddings``) as an ``EmbeddingStore``.

    Extraction nodes take the store as an input and decide themselves what to encode: an
    entry whose key matches is reused, so a rerun with unchanged inputs encodes nothing.
    """

    opens = EmbeddingStore
    not_saved = "the embedding store is written by extraction nodes, not saved as a whole"


def _where(directory: Path, here: Path) -> str:
    """A list's directory as a manifest in ``here`` names it: relative where both lie in one folder up to
    two levels above ``here`` (the catalog's ``data/04_feature``), so a moved or copied ``data/`` opens
    its own store's lists, not those at the old place; absolute for a store elsewhere, which stays put
    when the project moves."""
    directory = directory.resolve()
    if directory.is_relative_to(here.parent.parent):
        return os.path.relpath(directory, here)
    return str(directory)


class EmbeddingManifestDataset(AbstractDataset[dict[str, Any], dict[str, Any]]):
    """A small JSON file naming store entries: ``{"sets": {name: EmbeddingSet}, ...}`` (see :func:`_where`).

    Saving writes each set's directory (and any other JSON-able keys); loading opens the sets
    again, so downstream nodes receive ``EmbeddingSet`` objects and do no file I/O.
    """

    def __init__(self, filepath: str, metadata: dict[str, Any] | None = None) -> None:
        self._filepath = Path(filepath)
        self.metadata = metadata

    def load(self) -> dict[str, Any]:
        manifest = json.loads(self._filepath.read_text())
        try:
            # relative to this file (an absolute path, as older manifests hold, is read as it is)
            sets = {name: EmbeddingSet(self._filepath.parent / path) for name, path in manifest["sets"].items()}
        except FileNotFoundError as exc:
            raise DatasetError(
                f"{self._filepath} points to a missing embedding entry ({exc}); rerun the extraction"
            ) from exc
        return {**manifest, "sets": sets}

    def save(self, data: dict[str, Any]) -> None:
        self._filepath.parent.mkdir(parents=True, exist_ok=True)
        here = self._filepath.parent.resolve()
        manifest = {**data, "sets": {name: _where(s.directory, here) for name, s in data["sets"].items()}}
        self._filepath.write_text(json.dumps(manifest, indent=2))

    def _exists(self) -> bool:
        return self._filepath.is_file()

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._filepath)}
