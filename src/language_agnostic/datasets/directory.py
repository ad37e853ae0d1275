"""Directories as datasets: raw text files read in place, and the trained models other pipelines
leave in ``data/06_models``.

Both load a small object that reads on demand, so a node asks only for what its parameters
name and nothing is read up front (as ``ArchiveMembers`` does for archives).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kedro.io import AbstractDataset, DatasetError

from language_agnostic.corpora.errors import MissingRawDataError, decode_text, missing_raw_data_message
from language_agnostic.datasets.archive import KeepsInitSettings, LazyTexts
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.trained import read_artifact

T = TypeVar("T")


class DirectoryFiles(LazyTexts):
    """File name → a function that reads that file of the directory ``source`` as text."""

    def _read(self, name: str) -> str:
        return decode_text((Path(self.source) / name).read_bytes(), f"{self.source}/{name}", self._encoding)


class TextDirectoryDataset(AbstractDataset[None, DirectoryFiles]):
    """A read-only directory of upstream text files (``pattern`` picks them), read lazily.

    Example catalog entry::

        tatoeba_files:
          type: language_agnostic.datasets.directory.TextDirectoryDataset
          path: ${globals:raw_data_root}/tatoeba/v1
          pattern: "tatoeba.*-eng.*"
          description: LASER Tatoeba test sets (v1)
          source_url: https://github.com/facebookresearch/LASER/tree/main/data/tatoeba/v1
    """

    def __init__(
        self,
        path: str,
        pattern: str = "*",
        description: str = "directory",
        source_url: str = "",
        encoding: str = "utf-8",
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self._path = str(path)
        self._pattern = pattern
        self._description = description
        self._source_url = source_url
        self._encoding = encoding
        self.metadata = metadata

    def load(self) -> DirectoryFiles:
        """List the matching files; a missing directory is an error naming it and where to download it."""
        path = Path(self._path)
        if not path.is_dir():
            raise MissingRawDataError(missing_raw_data_message(str(path), self._description, self._source_url))
        names = sorted(p.name for p in path.glob(self._pattern) if p.is_file())
        return DirectoryFiles(str(path), names, self._encoding)

    def save(self, data: DirectoryFiles) -> None:
        raise DatasetError(f"{self._description} at '{self._path}' is raw data and read-only")

    def _exists(self) -> bool:
        return Path(self._path).is_dir()

    def _describe(self) -> dict[str, Any]:
        return {"path": self._path, "pattern": self._pattern, "description": self._description}


class ModelShelf:
    """The trained models under one directory (``data/06_models``), read on demand by relative path.

    Heads are ``.safetensors`` files (``methods/trained.py:read_artifact``); fine-tuned encoders
    are ``save_pretrained`` directories (``encoders/loading.py:load_encoder``).
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"ModelShelf({str(self.root)!r})"

    def path(self, relative: str) -> Path:
        """Where ``relative`` is (whether or not it exists)."""
        return self.root / relative

    def has_artifact(self, relative: str) -> bool:
        return self.path(relative).is_file()

    def has_encoder(self, relative: str) -> bool:
        return (self.path(relative) / "config.json").is_file()

    def artifact(self, relative: str) -> dict[str, Any]:
        """The trained model in ``relative`` (a ``.safetensors`` file)."""

        return read_artifact(self.path(relative))

    def provenance(self, relative: str) -> dict[str, Any]:
        """The ``finetuned.json`` a fine-tuned encoder directory records (``{}`` when it has none)."""
        import json

        path = self.path(relative) / "finetuned.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def encoder(self, relative: str) -> Any:
        """The fine-tuned encoder in ``relative`` (a ``save_pretrained`` directory) as a ``LoadedEncoder``."""

        return load_encoder(str(self.path(relative)))


class DirectoryHandleDataset(KeepsInitSettings, AbstractDataset[None, T]):
    """A directory handed to nodes as one object that reads (and writes) it itself, never saved whole.

    A subclass names the object (``opens``, called with the path) and why the catalog does not
    save it (``not_saved``).
    """

    opens: Callable[[str], T]
    not_saved: str

    def __init__(self, path: str, metadata: dict[str, Any] | None = None) -> None:
        self._path = path
        self.metadata = metadata

    def load(self) -> T:
        return type(self).opens(self._path)

    def save(self, data: T) -> None:
        raise DatasetError(self.not_saved)

    def _describe(self) -> dict[str, Any]:
        return {"path": self._path}


class TrainedModelsDataset(DirectoryHandleDataset[ModelShelf]):
    """``data/06_models`` as a :class:`ModelShelf`; an absent directory is an empty shelf (a fresh clone has none)."""

    opens = ModelShelf
    not_saved = "trained models are written by the pipelines that train them, not saved as a shelf"
