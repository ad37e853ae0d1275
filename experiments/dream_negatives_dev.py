"""Where FMDA's DREAM baseline draws its negatives, on several training seeds, chosen on MASSIVE dev.

``fmda.methods.dream.negatives``: ``all`` (DREAM's own rule: partners drawn from every utterance of
the split) or ``pool`` (FMDA's BLEU negative pool, "our data" in the FMDA paper). For each seed, both
are trained with the pipeline's own ``train_pooled_head`` (DREAM selects its epoch on its own dev
loss), and their meaning embeddings are compared on the same dev queries in both directions:
accuracy@1 and the exact McNemar p of the difference. No test figure is computed.

Needs the pair's FMDA inputs (``data/04_feature/<pair>/fmda_inputs.json``) and the negative pools,
which any ``kedro run --pipelines=fmda`` writes::

    .venv/bin/python -u experiments/dream_negatives_dev.py --pair en_de --seeds 2021 1 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import yaml

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.evaluation.intent_nn import mcnemar
from language_agnostic.evaluation.retrieval import retrieval_hits
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.registry import load_trained
from language_agnostic.training import fmda as nodes


def dev_hits(manifest: dict, trained: dict) -> dict[str, np.ndarray]:
    """The kept model's meaning-embedding retrieval hits on dev, per direction (``en-US->de-DE``)."""
    _, model = load_trained(trained)
    sets, src, tgt = manifest["sets"], manifest["source_locale"], manifest["target_locale"]
    a, b = (
        control_meaning(model, np.asarray(sets[f"dev.{side}.utt"].vectors(trained["pooling"])), "dream")
        for side in ("source", "target")
    )
    return {f"{src}->{tgt}": retrieval_hits(a, b), f"{tgt}->{src}": retrieval_hits(b, a)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pair", default="en_de")
    parser.add_argument("--seeds", type=int, nargs="+", default=[2021, 1, 2])
    args = parser.parse_args()
    params = yaml.safe_load(open("conf/base/parameters_fmda.yml"))["fmda"]
    manifest = EmbeddingManifestDataset(f"data/04_feature/{args.pair}/fmda_inputs.json").load()
    pools = pd.read_parquet("data/03_primary/massive_negative_pools.parquet")
    dream = params["methods"]["dream"]
    print(f"DREAM on {args.pair}, MASSIVE dev, meaning embedding accuracy@1 (each run kept on its own dev loss)")
    print(
        "| seed | direction | `all` | `pool` | Δ pool − all | McNemar p | kept epochs all / pool | seconds all / pool |"
    )
    print("|---:|---|---:|---:|---:|---:|---|---|")
    for seed in args.seeds:
        hits, epochs, seconds = {}, {}, {}
        for negatives in ("all", "pool"):
            spec = {
                **dream,
                "negatives": negatives,
                "training": {**(dream.get("training") or {}), "seed": seed, "progress": False},
            }
            start = time.perf_counter()
            trained, _ = nodes.train_pooled_head(manifest, pools, spec, params["training"], params.get("loss"), "dream")
            seconds[negatives] = time.perf_counter() - start
            epochs[negatives] = trained["best_epoch"]
            hits[negatives] = dev_hits(manifest, trained)
        for direction in hits["all"]:
            x, y = hits["all"][direction], hits["pool"][direction]
            print(
                f"| {seed} | {direction} | {x.mean():.4f} | {y.mean():.4f} | {y.mean() - x.mean():+.4f} "
                f"| {mcnemar(y, x).pvalue:.2g} | {epochs['all']} / {epochs['pool']} "
                f"| {seconds['all']:.0f} / {seconds['pool']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
