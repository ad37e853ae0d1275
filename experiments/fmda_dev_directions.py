"""A trained FMDA's ``emb_m`` against mean centring and raw mean pooling, per direction, with McNemar's test.

Reads the pair's FMDA inputs and a trained model (default: the pair's all-together FMDA from the
last ``kedro run --pipelines=fmda``), encodes one split, and prints accuracy@1 in both
directions for ``fmda/m``, ``centering/mean`` (language means of the train split, as the
pipeline's baseline) and ``raw/mean``, and the exact McNemar test of ``fmda/m`` against each
baseline on the same queries (``evaluation/intent_nn.py:mcnemar``): how many queries only one
of the two gets right, and the two-sided p-value.

The default split is **dev**, the one choices are made on. ``--split test`` reads the test
split: it recomputes the pipeline's reported test cells (they must match
``data/08_reporting/metrics.csv``) and says whether a difference between two of them is more
than chance. It is never used to choose anything.

Usage::

    .venv/bin/python -u experiments/fmda_dev_directions.py --pair en_ja
    .venv/bin/python -u experiments/fmda_dev_directions.py --pair en_ja --split test
"""

from __future__ import annotations

import argparse

import numpy as np

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.datasets.torch_state import TrainedHeadDataset
from language_agnostic.evaluation.fmda import centering_of
from language_agnostic.evaluation.intent_nn import mcnemar
from language_agnostic.evaluation.retrieval import retrieval_hits
from language_agnostic.methods.fmda import encode_with_fmda
from language_agnostic.methods.registry import load_trained


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pair", default="en_ja")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--model", default=None, help="default: data/06_models/<pair>/fmda_all_together.safetensors")
    args = parser.parse_args()
    manifest = EmbeddingManifestDataset(f"data/04_feature/{args.pair}/fmda_inputs.json").load()
    sets, src, tgt = manifest["sets"], manifest["source_locale"], manifest["target_locale"]
    _, model = load_trained(
        TrainedHeadDataset(args.model or f"data/06_models/{args.pair}/fmda_all_together.safetensors").load()
    )
    centred = centering_of(manifest)  # the pipeline's own centring/mean baseline
    raw = {side: np.asarray(sets[f"{args.split}.{side}.utt"].vectors("mean")) for side in ("source", "target")}
    embeddings = {
        "fmda/m": {
            side: encode_with_fmda(model, sets[f"{args.split}.{side}.utt"])["m"] for side in ("source", "target")
        },
        "centering/mean": {
            side: centred(sets[f"{args.split}.{side}.utt"], loc) for side, loc in (("source", src), ("target", tgt))
        },
        "raw/mean": raw,
    }
    directions = {f"{src}->{tgt}": ("source", "target"), f"{tgt}->{src}": ("target", "source")}
    hits = {(name, d): retrieval_hits(e[q], e[k]) for name, e in embeddings.items() for d, (q, k) in directions.items()}
    n = len(raw["source"])
    print(f"MASSIVE {args.split}, {n} parallel utterances\n")
    print("| embedding | " + " | ".join(directions) + " |")
    print("|---|" + "---:|" * len(directions))
    for name in embeddings:
        print(f"| {name} | " + " | ".join(f"{hits[(name, d)].mean():.4f}" for d in directions) + " |")
    print("\nMcNemar, fmda/m against each baseline: queries only fmda/m gets right / only the baseline / p\n")
    print("| against | " + " | ".join(directions) + " |")
    print("|---|" + "---:|" * len(directions))
    for name in ("centering/mean", "raw/mean"):
        cells = []
        for d in directions:
            test = mcnemar(hits[("fmda/m", d)], hits[(name, d)])
            cells.append(f"{test.only_a} / {test.only_b} / p={test.pvalue:.3g}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
