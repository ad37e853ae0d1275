"""How far the per-text store's outputs are from the earlier per-list cache's, on a real run's inputs.

The store batches texts of one token count (no padding), the earlier cache padded length-sorted
batches; the numbers differ in the last bits. For each pair namespace this reads both runs'
``fmda_inputs`` manifests (the earlier one in its own format, read here directly), compares every
set's cls and mean vectors and token states, and scores the untrained baselines (raw cls, raw
mean, mean centring) on both, listing every metric cell that moved.

Usage::

    .venv/bin/python experiments/store_equivalence.py BEFORE/data AFTER/data --pairs en_de en_es en_ja
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.evaluation.fmda import evaluate_baselines


class PerListEntry:
    """An entry of the earlier per-list cache (format 1), with the reading interface of ``EmbeddingSet``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.meta: dict[str, Any] = json.loads((self.directory / "meta.json").read_text())

    def __len__(self) -> int:
        return int(self.meta["n_texts"])

    @property
    def dim(self) -> int:
        return int(self.meta["dim"])

    @property
    def lengths(self) -> np.ndarray:
        return np.load(self.directory / "lengths.npy")

    def vectors(self, pooling: str) -> np.ndarray:
        return np.load(self.directory / f"{pooling}.npy")

    def token_states(self, index: Any) -> tuple[np.ndarray, np.ndarray]:
        flat = np.load(self.directory / "tokens.npy", mmap_mode="r")
        starts = np.load(self.directory / "token_starts.npy")
        index = np.asarray(index, dtype=np.int64)
        lengths = self.lengths[index]
        width = int(lengths.max()) if len(index) else 0
        mask = np.arange(width)[None, :] < lengths[:, None]
        states = np.asarray(flat[np.where(mask, starts[index][:, None] + np.arange(width)[None, :], 0)])
        states[~mask] = 0
        return states, mask


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", help="the earlier run's data/ folder")
    parser.add_argument("after", help="this run's data/ folder")
    parser.add_argument("--pairs", nargs="+", default=["en_de", "en_es", "en_ja"])
    args = parser.parse_args()
    rows, cells = [], []
    for pair in args.pairs:
        old = json.loads((Path(args.before) / "04_feature" / pair / "fmda_inputs.json").read_text())
        old = {
            **old,
            "sets": {
                k: PerListEntry(Path(args.before).parent / v if not Path(v).is_absolute() else v)
                for k, v in old["sets"].items()
            },
        }
        new = EmbeddingManifestDataset(str(Path(args.after) / "04_feature" / pair / "fmda_inputs.json")).load()
        for name, entry in new["sets"].items():
            before = old["sets"][name]
            record = {"pair": pair, "set": name, "texts": len(entry)}
            for pooling in ("cls", "mean"):
                a, b = np.asarray(before.vectors(pooling)), np.asarray(entry.vectors(pooling))
                record[f"{pooling} max |diff|"] = float(np.abs(a - b).max())
                record[f"{pooling} min cosine"] = float(_cosines(a, b).min())
            if entry.meta.get("token_states"):
                index = np.arange(len(entry))
                (a, mask), (b, _) = before.token_states(index), entry.token_states(index)
                record["tokens max |diff|"] = float(
                    np.abs(a[mask].astype(np.float32) - b[mask].astype(np.float32)).max()
                )
            rows.append(record)
        identity = {"name": new["sets"]["train.source.utt"].meta["identity"]["name"]}
        keys = ["method", "embedding", "task", "dataset", "source", "target", "metric"]
        scored = evaluate_baselines(old, identity).merge(
            evaluate_baselines(new, identity), on=keys, suffixes=("_before", "_after")
        )
        scored["change"] = scored["value_after"] - scored["value_before"]
        cells.append(scored[keys + ["value_before", "value_after", "change"]])
    table = pd.DataFrame(rows)
    cells = pd.concat(cells, ignore_index=True)
    with pd.option_context("display.width", 250, "display.max_rows", 500, "display.max_columns", 20):
        print(table.to_string(index=False))
        print(
            f"\nbaseline metric cells: {len(cells)}; identical: {int((cells['change'] == 0).sum())}; "
            f"largest move {cells['change'].abs().max():.6f}; "
            f"moved by more than 0.002: {int((cells['change'].abs() > 0.002).sum())}"
        )
        moved = cells[cells["change"] != 0].sort_values("change", key=abs, ascending=False)
        if len(moved):
            print(moved.to_string(index=False))


if __name__ == "__main__":
    main()
