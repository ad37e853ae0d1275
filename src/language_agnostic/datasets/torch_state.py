"""Trained heads on disk: weights as safetensors, everything else as JSON metadata in the same file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kedro.io import AbstractDataset


class TrainedHeadDataset(AbstractDataset[dict[str, Any], dict[str, Any]]):
    """``{"state_dict": {name: tensor}, <other JSON-able keys>}`` ↔ one ``.safetensors`` file."""

    def __init__(self, filepath: str, metadata: dict[str, Any] | None = None) -> None:
        self._filepath = Path(filepath)
        self.metadata = metadata

    def load(self) -> dict[str, Any]:
        from safetensors import safe_open

        with safe_open(str(self._filepath), framework="pt") as handle:
            state = {key: handle.get_tensor(key) for key in handle.keys()}
            info = json.loads((handle.metadata() or {}).get("info", "{}"))
        return {**info, "state_dict": state}

    def save(self, data: dict[str, Any]) -> None:
        from safetensors.torch import save_file

        info = {k: v for k, v in data.items() if k != "state_dict"}
        self._filepath.parent.mkdir(parents=True, exist_ok=True)
        state = {k: v.contiguous() for k, v in data["state_dict"].items()}
        save_file(state, str(self._filepath), metadata={"info": json.dumps(info)})

    def _exists(self) -> bool:
        return self._filepath.is_file()

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._filepath)}
