"""Read members of an upstream ``.tar.gz`` in place, lazily, like ``PartitionedDataset`` does."""

from __future__ import annotations

import inspect
import tarfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kedro.io import AbstractDataset, DatasetError

from language_agnostic.corpora.errors import MissingRawDataError, decode_text, missing_raw_data_message


class LazyTexts(Mapping[str, Callable[[], str]]):
    """Name → a function that reads that text (an archive's member, a directory's file); nothing is read up front.

    Attributes:
        source: Where the texts are (the archive or the directory), for messages.
    """

    def __init__(self, source: str, names: list[str], encoding: str = "utf-8") -> None:
        self.source = source
        self._names = names
        self._encoding = encoding

    def __getitem__(self, name: str) -> Callable[[], str]:
        if name not in self._names:
            raise KeyError(name)
        return lambda: self._read(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def _read(self, name: str) -> str:
        """The text ``name``, decoded (``corpora.errors.decode_text`` names the place of an invalid byte)."""
        raise NotImplementedError


class ArchiveMembers(LazyTexts):
    """Member name → a function that reads that member of a tar or zip archive as text."""

    def __init__(self, source: str, names: list[str], encoding: str = "utf-8", kind: str = "tar") -> None:
        super().__init__(source, names, encoding)
        self._kind = kind

    def _read(self, name: str) -> str:
        if self._kind == "zip":
            with zipfile.ZipFile(self.source) as archive:
                return decode_text(archive.read(name), f"{self.source}:{name}", self._encoding)
        with tarfile.open(self.source, "r:*") as archive:
            handle = archive.extractfile(name)
            if handle is None:
                raise DatasetError(f"'{name}' in '{self.source}' is not a regular file")
            return decode_text(handle.read(), f"{self.source}:{name}", self._encoding)


class KeepsInitSettings:
    """Mixin for a dataset class whose subclasses inherit its ``__init__``.

    Kedro records a dataset's settings (``_init_config``, shown by ``kedro catalog``) by wrapping each
    class's own ``__init__``; an inherited, already wrapped one would be recorded as ``{"args", "kwargs"}``.
    A subclass without its own ``__init__`` gets the original to wrap instead. List it before
    ``AbstractDataset`` among the bases.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "__init__" not in cls.__dict__:
            cls.__init__ = inspect.unwrap(cls.__init__)  # type: ignore[method-assign]
        super().__init_subclass__(**kwargs)


class TarArchiveDataset(KeepsInitSettings, AbstractDataset[None, ArchiveMembers]):
    """A read-only ``.tar``/``.tar.gz`` archive whose members are loaded on demand.

    Example catalog entry::

        massive_archive:
          type: language_agnostic.datasets.TarArchiveDataset
          filepath: ${globals:raw_data_root}/massive/amazon-massive-dataset-1.1.tar.gz
          description: MASSIVE 1.1 tarball
          source_url: https://amazon-massive-nlu-dataset.s3.amazonaws.com/amazon-massive-dataset-1.1.tar.gz
    """

    def __init__(
        self,
        filepath: str,
        description: str = "archive",
        source_url: str = "",
        encoding: str = "utf-8",
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Create the dataset.

        Args:
            filepath: Path of the archive.
            description: What it is, for the missing-file message.
            source_url: Where users download it, for the missing-file message.
            encoding: Text encoding of the members.
            metadata: Free-form metadata (ignored by Kedro).
        """
        self._filepath = str(filepath)
        self._description = description
        self._source_url = source_url
        self._encoding = encoding
        self.metadata = metadata

    def _existing_path(self) -> Path:
        """The archive's path; a clear error (path, what, where to get it) if it is missing."""
        path = Path(self._filepath)
        if not path.is_file():
            raise MissingRawDataError(missing_raw_data_message(str(path), self._description, self._source_url))
        return path

    def load(self) -> ArchiveMembers:
        """List the archive's members; raise a clear error if the archive is missing."""
        path = self._existing_path()
        try:
            with tarfile.open(path, "r:*") as archive:
                names = [m.name for m in archive.getmembers() if m.isfile()]
        except tarfile.TarError as exc:
            raise DatasetError(f"'{path}' is not a readable tar archive: {exc}") from exc
        return ArchiveMembers(str(path), names, self._encoding)

    def save(self, data: ArchiveMembers) -> None:
        """Raw data is read-only."""
        raise DatasetError(f"{self._description} at '{self._filepath}' is raw data and read-only")

    def _exists(self) -> bool:
        return Path(self._filepath).is_file()

    def _describe(self) -> dict[str, Any]:
        return {"filepath": self._filepath, "description": self._description}


class ZipArchiveDataset(TarArchiveDataset):
    """A read-only ``.zip`` archive (e.g. the SemEval-2017 STS zips) whose members are loaded on demand."""

    def load(self) -> ArchiveMembers:
        """List the archive's members; raise a clear error if the archive is missing."""
        path = self._existing_path()
        try:
            with zipfile.ZipFile(path) as archive:
                names = [m.filename for m in archive.infolist() if not m.is_dir()]
        except zipfile.BadZipFile as exc:
            raise DatasetError(f"'{path}' is not a readable zip archive: {exc}") from exc
        return ArchiveMembers(str(path), names, self._encoding, kind="zip")
