"""MUSE bilingual dictionaries read in place: ``<dir>/en-<xx>.txt``, one dictionary per language on demand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kedro.io import AbstractDataset

from language_agnostic.text.code_switch import read_muse


class MuseDirectory:
    """The dictionaries present in one MUSE directory; :meth:`read` parses one (``text.code_switch.read_muse``)."""

    def __init__(self, path: Path, source: str = "en") -> None:
        self.path, self.source = path, source

    def languages(self) -> list[str]:
        """Target languages with a ``<source>-<xx>.txt`` file, sorted."""
        return sorted(p.stem.split("-", 1)[1] for p in self.path.glob(f"{self.source}-*.txt"))

    def read(self, language: str) -> tuple[dict[str, list[str]], dict[str, int]]:
        """``(dictionary, counts)`` of ``<source>-<language>.txt``.

        Raises:
            FileNotFoundError: no dictionary for ``language`` (naming the file and those present).
        """

        path = self.path / f"{self.source}-{language}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"no MUSE dictionary {path}; present: {self.languages()}")
        return read_muse(path)


class MuseDictionariesDataset(AbstractDataset[MuseDirectory, None]):
    """A read-only dataset: the MUSE directory, whose files a node reads for the languages it is configured with."""

    def __init__(self, path: str, source: str = "en", metadata: dict[str, Any] | None = None) -> None:
        self._path, self._source = Path(path), source
        self.metadata = metadata

    def load(self) -> MuseDirectory:
        if not self._path.is_dir():
            raise FileNotFoundError(
                f"MUSE dictionaries not found: {self._path} is not a directory "
                "(raw_data_root, or LANGUAGE_AGNOSTIC_DATA_ROOT)"
            )
        return MuseDirectory(self._path, self._source)

    def save(self, data: None) -> None:
        raise NotImplementedError("the MUSE dictionaries are raw data, read in place")

    def _exists(self) -> bool:
        return self._path.is_dir()

    def _describe(self) -> dict[str, Any]:
        return {"path": str(self._path), "source": self._source}
