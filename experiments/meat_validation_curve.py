"""Validation-only diagnostic of MEAT on the ``qe`` / ``sts`` corpus: every loss part, per epoch, and meaning retrieval.

Trains MEAT with the pipeline's own batches and loss for a fixed number of epochs (no early
stopping) and prints, per epoch, the mean **validation** loss parts (``total`` = what early
stopping reads, its adversarial ``uniform`` term, the non-adversarial rest) and the accuracy@1
of retrieving each validation pair's translation by the cosine of meaning embeddings (per
language pair, then averaged). Only the validation split of the training corpus is read: no
QE or STS figure is computed.

Usage::

    .venv/bin/python -u experiments/meat_validation_curve.py --pipeline qe --lr 1e-4 --epochs 40
"""

from __future__ import annotations

import argparse
import logging

import numpy as np
import pandas as pd
import torch
import yaml

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.encoders.extraction import vectors_of
from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1
from language_agnostic.methods.registry import build, get_method
from language_agnostic.training.heads import corpus_languages, pair_batches
from language_agnostic.training.loop import TrainSettings, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pipeline", choices=["qe", "sts"], default="qe")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    params = yaml.safe_load(open(f"conf/base/parameters_{args.pipeline}.yml"))[args.pipeline]
    manifest = EmbeddingManifestDataset(f"data/04_feature/{args.pipeline}_embeddings.json").load()
    corpus = pd.read_parquet(f"data/03_primary/{args.pipeline}_corpus.parquet")
    pooling, languages = params["pooling"], corpus_languages(corpus)
    batch_size, seed = int(params["training"]["batch_size"]), int(params["training"]["seed"])
    validation = corpus[corpus["split"] == "validation"].reset_index(drop=True)
    source, target = (
        vectors_of(manifest, "validation.source", pooling),
        vectors_of(manifest, "validation.target", pooling),
    )

    def retrieval(model: torch.nn.Module) -> float:
        model.eval()
        with torch.no_grad():
            a, b = (model(torch.from_numpy(np.array(x)))[0].numpy() for x in (source, target))
        scores = [
            (retrieval_accuracy_at_1(a[i], b[i]) + retrieval_accuracy_at_1(b[i], a[i])) / 2
            for i in validation.groupby("pair").indices.values()
        ]
        return float(np.mean(scores))

    torch.manual_seed(seed)
    model = build("meat", manifest["sets"]["train.source"].dim, len(languages))
    print(f"untrained: validation meaning retrieval {retrieval(model):.4f}")
    settings = TrainSettings(lr=args.lr, max_epochs=args.epochs, patience=args.epochs, seed=seed, progress=False)
    result = train(
        model,
        lambda m, b: get_method("meat").losses(m, b, {}, {}),
        pair_batches(manifest, corpus, "train", pooling, languages, batch_size, True),
        pair_batches(manifest, corpus, "validation", pooling, languages, batch_size, False),
        settings,
        retrieval,
    )
    print(f"{args.pipeline} MEAT, lr {args.lr:g}, {args.epochs} epochs, no early stopping; validation split only")
    print("| epoch | total | uniform | total − uniform | adversary (discriminator CE) | meaning retrieval acc@1 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in result.history:
        print(
            f"| {int(r['epoch'])} | {r['dev_total']:.4f} | {r['dev_uniform']:.4f} "
            f"| {r['dev_total'] - r['dev_uniform']:.4f} "
            f"| {r['dev_adversary']:.4f} | {r['dev_score']:.4f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
