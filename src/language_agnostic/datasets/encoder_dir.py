"""A fine-tuned encoder on disk as a ``save_pretrained`` directory, which ``embeddings.encoder.name`` accepts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kedro.io import AbstractDataset

from language_agnostic.encoders.loading import LoadedEncoder, load_encoder, save_encoder


class EncoderDirectoryDataset(AbstractDataset[LoadedEncoder, LoadedEncoder]):
    """Saves a :class:`LoadedEncoder` with :func:`save_encoder` (weights, tokenizer, ``finetuned.json``);
    loads it back.
    """

    def __init__(self, path: str, metadata: dict[str, Any] | None = None) -> None:
        self._path = Path(path)
        self.metadata = metadata

    def load(self) -> LoadedEncoder:
        return load_encoder(str(self._path))

    def save(self, data: LoadedEncoder) -> None:
        save_encoder(data, self._path, {k: v for k, v in data.identity.items() if k != "base"})

    def _exists(self) -> bool:
        return (self._path / "config.json").is_file()

    def _describe(self) -> dict[str, Any]:
        return {"path": str(self._path)}
