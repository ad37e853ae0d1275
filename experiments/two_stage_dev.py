"""Dev-only curve of two-stage FMDA's stage 1 (§4.6): held-out template-pair loss and retrieval per epoch.

Stage 1 trains the template losses on monolingual template pairs
(``data/04_feature/<pair>/fmda_template_pairs.json``, written by ``kedro run --pipelines=fmda``) and
holds out ``fmda.template_pairs_holdout.dev_fraction`` of them. This script trains stage 1 for
``--max-epochs`` with no early stopping and prints, per epoch, the held-out ``total`` loss and the
held-out template retrieval accuracy@1 of ``emb_tp`` (:func:`template_dev_retrieval`), the two
candidate stopping criteria. No MASSIVE dev or test utterance is read.

Usage::

    .venv/bin/python -u experiments/two_stage_dev.py --pair en_de --max-epochs 60
"""

from __future__ import annotations

import argparse
import time

import pandas as pd
import yaml

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.methods.fmda import fmda_losses, two_stage_weights
from language_agnostic.training import fmda as core
from language_agnostic.training.loop import train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="en_de")
    parser.add_argument("--max-epochs", type=int, default=60)
    parser.add_argument("--variant", default="two_stage", help="an fmda.variants entry (its loss overrides)")
    args = parser.parse_args()

    params = yaml.safe_load(open("conf/base/parameters_fmda.yml"))["fmda"]
    pools = pd.read_parquet("data/03_primary/massive_negative_pools.parquet")
    manifest = EmbeddingManifestDataset(filepath=f"data/04_feature/{args.pair}/fmda_inputs.json").load()
    pairs = EmbeddingManifestDataset(filepath=f"data/04_feature/{args.pair}/fmda_template_pairs.json").load()
    spec = params["variants"][args.variant]
    training = {**params["training"], "max_epochs": args.max_epochs, "patience": args.max_epochs, "progress": False}
    training, settings, batch_size, buckets, extra, contrastive = core._variant_setup(training, spec, params["loss"])
    negatives = contrastive.contrastive == "pairwise"
    model = core._new_model(manifest, params["model"], 2, settings.seed)
    weights = {**two_stage_weights(1), **{k: v for k, v in extra.items() if k in core.TEMPLATE_LOSSES}}
    start = time.perf_counter()
    result = train(
        model,
        lambda m, b: fmda_losses(m, b, weights, contrastive),
        core._template_pair_batches(pairs, "train", pools, batch_size, True, buckets, negatives),
        core._template_pair_batches(pairs, "dev", pools, batch_size, False, False, negatives),
        settings,
        lambda m: core.template_dev_retrieval(m, pairs),
    )
    seconds = time.perf_counter() - start
    print(f"{args.pair} {args.variant}: {len(result.history)} epochs in {seconds:.0f} s")
    print("| epoch | held-out loss | held-out template accuracy@1 |\n|---:|---:|---:|")
    for record in result.history:
        print(f"| {record['epoch']} | {record['dev_total']:.5f} | {record['dev_score']:.4f} |")
    best_loss = min(result.history, key=lambda r: r["dev_total"])
    best_score = max(result.history, key=lambda r: r["dev_score"])
    print(
        f"lowest held-out loss: epoch {best_loss['epoch']}; best held-out accuracy: epoch {best_score['epoch']} "
        f"({best_score['dev_score']:.4f})"
    )


if __name__ == "__main__":
    main()
