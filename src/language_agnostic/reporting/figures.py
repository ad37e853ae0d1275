"""Figures: the PCA of a head's meaning and language embeddings (SEED Fig. 1, DREAM Fig. 5)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.methods.registry import load_trained
from language_agnostic.training.heads import vectors_of


def plot_meaning_language(manifest: Mapping[str, Any], test: pd.DataFrame, head: Mapping[str, Any],
                          params: Mapping[str, Any]) -> Any:
    """PCA of one head's meaning and language embeddings of an evaluation pair's sentences (SEED Fig. 1, DREAM Fig. 5).

    Args:
        manifest: The embedded test columns.
        test: The evaluation table.
        head: A trained head (SEED in the paper's figure).
        params: ``<pipeline>.figure``: ``pair``, ``n_pairs``, ``seed``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.decomposition import PCA

    pair = str(params["pair"])
    index = test.index[test["pair"] == pair].to_numpy()
    if not len(index):
        raise ValueError(f"figure.pair {pair!r} is not an evaluation pair; have {sorted(test['pair'].unique())}")
    rng = np.random.default_rng(int(params.get("seed", 0)))
    index = np.sort(rng.permutation(index)[: int(params.get("n_pairs", 1000))])
    method, model = load_trained(head)
    sides = []
    with torch.no_grad():
        for column in ("text1", "text2"):
            encoded = method.encode(model, torch.from_numpy(vectors_of(manifest, f"test.{column}", head["pooling"])[index]))
            sides.append((encoded["meaning"], encoded["language"]))
    langs = (test.loc[index[0], "lang1"], test.loc[index[0], "lang2"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5))
    for ax, k, title in ((axes[0], 0, "meaning"), (axes[1], 1, "language")):
        points = PCA(n_components=2, random_state=0).fit_transform(np.concatenate([sides[0][k].numpy(), sides[1][k].numpy()]))
        ax.scatter(*points[: len(index)].T, s=4, alpha=0.6, label=f"{langs[0]} (column 1)")
        ax.scatter(*points[len(index):].T, s=4, alpha=0.6, label=f"{langs[1]} (column 2)")
        ax.set_title(f"{head['method']} {title} embeddings, {len(index)} {pair} pairs (PCA)")
        ax.legend()
    fig.tight_layout()
    return fig
