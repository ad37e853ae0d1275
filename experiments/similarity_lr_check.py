"""Validation-only check of the learning rate and epoch cap of the ``qe`` / ``sts`` heads.

For each learning rate, trains one method with the pipeline's own node (``train_head``) on the
pipeline's corpus and prints the lowest mean **validation** loss, the epoch it came from, the
epochs run and the seconds taken. Only the validation split of the training corpus is used;
no evaluation (QE / STS) figure is computed. The losses of different learning rates are the
same function of the same validation pairs, so the lowest one is the better-fitted head.

Needs the pipeline's corpus and embeddings (``data/03_primary/<name>_corpus.parquet``,
``data/04_feature/<name>_embeddings.json``), which any ``kedro run --pipelines=<name>`` writes.

Usage::

    .venv/bin/python -u experiments/similarity_lr_check.py --pipeline qe --method dream --lrs 1e-4 1e-3 --max-epochs 300
    .venv/bin/python -u experiments/similarity_lr_check.py --pipeline qe --method meat --lrs 1e-5 1e-4 --patience 10
"""

from __future__ import annotations

import argparse
import logging
import time

import pandas as pd
import yaml

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.methods.registry import TRAINED_METHODS
from language_agnostic.training.heads import train_head


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pipeline", choices=["qe", "sts"], default="qe")
    parser.add_argument("--method", choices=list(TRAINED_METHODS), default="dream")
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-4, 1e-3])
    parser.add_argument("--max-epochs", type=int, default=300)
    parser.add_argument("--patience", type=int, default=None, help="override the method's patience")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    params = yaml.safe_load(open(f"conf/base/parameters_{args.pipeline}.yml"))[args.pipeline]
    manifest = EmbeddingManifestDataset(f"data/04_feature/{args.pipeline}_embeddings.json").load()
    corpus = pd.read_parquet(f"data/03_primary/{args.pipeline}_corpus.parquet")
    spec = params["methods"][args.method]
    if args.patience is not None:
        spec = {**spec, "training": {**spec.get("training", {}), "patience": args.patience}}
    print(
        f"{args.pipeline} {args.method}: validation-only selection, max {args.max_epochs} epochs, "
        f"patience {spec.get('training', {}).get('patience', params['training']['patience'])}"
    )
    print("| lr | best validation total | best epoch | epochs run | seconds |")
    print("|---|---:|---:|---:|---:|")
    for lr in args.lrs:
        run_spec = {**spec, "training": {**spec.get("training", {}), "lr": lr, "max_epochs": args.max_epochs}}
        training = {**params["training"], "max_epochs": args.max_epochs, "progress": False}
        start = time.perf_counter()
        trained, history = train_head(
            manifest, corpus, run_spec, training, params["pooling"], method=args.method, pipeline=args.pipeline
        )
        seconds = time.perf_counter() - start
        dev = [point["value"] for point in history[f"{args.pipeline}.{args.method}.dev_total"]]
        print(
            f"| {lr:g} | {min(dev):.4f} | {trained['best_epoch']} | {trained['epochs_run']} | {seconds:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
