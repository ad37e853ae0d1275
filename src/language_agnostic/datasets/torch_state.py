"""Trained heads on disk: weights as safetensors, everything else as JSON metadata in the same file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kedro.io import AbstractDataset

from language_agnostic.methods.trained import read_artifact, write_artifact


class TrainedHeadDataset(AbstractDataset[dict[str, Any], dict[str, Any]]):
    """``{"state_dict": {name: tensor}, <other JSON-able keys>}`` ↔ one ``.safetensors`` file."""

    def __init__(self, filepath: str, metadata: dict[str, Any] | None = None) -> None:
        self._filepath = Path(filepath)
        self.metadata = metadata

    def load(self) -> dict[str, Any]:
        return read_artifact(self._filepath)

    def save(self, data: dict[str, Any]) -> None:
        write_artifact(data, self._filepath)

    def _exists(self) -> bool:
        return self._filepath.is_file()

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._filepath)}
