"""Dev check: a trained FMDA's ``emb_m`` against mean centring on MASSIVE **dev**, per direction.

Reads the pair's FMDA inputs and a trained model (default: the pair's all-together FMDA from the
last ``kedro run --pipeline=fmda``), encodes the dev split, and prints dev accuracy@1 in both
directions for ``fmda/m`` and for ``centering/mean`` (language means of the train split, as
the pipeline's baseline). No test data is read.

Usage::

    .venv/bin/python -u benchmarks/fmda_dev_directions.py --pair en_ja
"""

from __future__ import annotations

import argparse

import numpy as np

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.datasets.torch_state import TrainedHeadDataset
from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1
from language_agnostic.methods.centering import center, fit_language_means
from language_agnostic.methods.registry import load_trained
from language_agnostic.training.fmda_data import encode_with_fmda


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pair", default="en_ja")
    parser.add_argument("--model", default=None, help="default: data/06_models/<pair>/fmda_all_together.safetensors")
    args = parser.parse_args()
    manifest = EmbeddingManifestDataset(f"data/04_feature/{args.pair}/fmda_inputs.json").load()
    sets, src, tgt = manifest["sets"], manifest["source_locale"], manifest["target_locale"]
    _, model = load_trained(TrainedHeadDataset(args.model or f"data/06_models/{args.pair}/fmda_all_together.safetensors").load())
    a, b = (encode_with_fmda(model, sets[f"dev.{side}.utt"])["m"] for side in ("source", "target"))
    train = [np.asarray(sets[f"train.{side}.utt"].vectors("mean")) for side in ("source", "target")]
    means = fit_language_means(np.concatenate(train), [src] * len(train[0]) + [tgt] * len(train[1]))
    da, db = (np.asarray(sets[f"dev.{side}.utt"].vectors("mean")) for side in ("source", "target"))
    ca, cb = center(da, [src] * len(da), means), center(db, [tgt] * len(db), means)
    print(f"| MASSIVE dev | {src}->{tgt} | {tgt}->{src} |")
    print("|---|---:|---:|")
    print(f"| fmda/m | {retrieval_accuracy_at_1(a, b):.4f} | {retrieval_accuracy_at_1(b, a):.4f} |")
    print(f"| centering/mean | {retrieval_accuracy_at_1(ca, cb):.4f} | {retrieval_accuracy_at_1(cb, ca):.4f} |")


if __name__ == "__main__":
    main()
