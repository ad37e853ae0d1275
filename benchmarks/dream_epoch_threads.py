"""How long one DREAM epoch takes on real MASSIVE EN-DE vectors, with torch's current thread count.

Run it alone and then beside another torch job, with and without ``OMP_NUM_THREADS=1``, to see
what thread oversubscription does on a 2-core machine (docs/benchmarks.md). Needs
``data/04_feature/en_de/fmda_inputs.json`` (any ``kedro run --pipelines=fmda`` writes it).

Usage::

    .venv/bin/python benchmarks/dream_epoch_threads.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/dream_epoch_threads.py
"""

from __future__ import annotations

import time

import numpy as np
import torch

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.methods.dream import Dream, dream_losses
from language_agnostic.training.data import QuadrupletBatches


def main(epochs: int = 3) -> None:
    manifest = EmbeddingManifestDataset("data/04_feature/en_de/fmda_inputs.json").load()
    s = np.asarray(manifest["sets"]["train.source.utt"].vectors("cls"))
    t = np.asarray(manifest["sets"]["train.target.utt"].vectors("cls"))
    batches = QuadrupletBatches(s, t, np.zeros(len(s)), np.ones(len(t)), 512)
    model = Dream(s.shape[1], 2)
    optimiser = torch.optim.Adam(model.parameters(), 1e-4)
    print(f"torch threads: {torch.get_num_threads()}, {len(s)} pairs, batch 512")
    for epoch in range(epochs):
        start = time.perf_counter()
        for batch in batches.batches(epoch, torch.Generator().manual_seed(epoch)):
            losses = dream_losses(model, batch)
            optimiser.zero_grad()
            losses["total"].backward()
            optimiser.step()
        print(f"epoch {epoch + 1}: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
