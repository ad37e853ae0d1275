"""fp32 against bf16 training of the ``fmda`` pipeline's models, on MASSIVE **dev**: the paired test behind
``fmda.training.mixed_precision: auto``.

Reads the models two ``kedro run --pipelines=fmda`` runs left in ``<run>/data/06_models/<pair>/`` (one run
trained with ``mixed_precision: no``, the other with ``auto`` = bf16 on a CPU with native bf16), and for
every model both runs have, scores its meaning embedding (``m`` for FMDA, the head's meaning for DREAM and
the controls) on the pair's dev split: accuracy@1 of cross-lingual retrieval in both directions, and the
exact McNemar test of the two runs' per-query outcomes (4,066 queries per pair: 2,033 each way). The dev
inputs are read from the first run's store (both runs encode the same texts with the same encoder).

Usage (from the project root)::

    .venv/bin/python -u experiments/precision_dev_check.py --fp32 /path/to/run_fp32 --bf16 /path/to/run_bf16
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pandas as pd

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.evaluation.intent_nn import mcnemar
from language_agnostic.evaluation.retrieval import retrieval_hits
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.fmda import encode_with_fmda
from language_agnostic.methods.registry import load_trained
from language_agnostic.methods.trained import read_artifact


def meaning(artifact: dict, entry) -> np.ndarray:  # noqa: ANN001 - an EmbeddingSet
    """The model's meaning embedding of every text of a store entry."""
    _, model = load_trained(artifact)
    if "pooling" in artifact:  # a head over pooled vectors
        return control_meaning(model, np.asarray(entry.vectors(artifact["pooling"])), str(artifact["method"]))
    return encode_with_fmda(model, entry)["m"]


def hits(artifact: dict, manifest: dict) -> np.ndarray:
    """Right or wrong per dev query, source→target then target→source."""
    a = meaning(artifact, manifest["sets"]["dev.source.utt"])
    b = meaning(artifact, manifest["sets"]["dev.target.utt"])
    return np.concatenate([retrieval_hits(a, b), retrieval_hits(b, a)])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--fp32", required=True, type=Path, help="project root of the fp32 run")
    parser.add_argument("--bf16", required=True, type=Path, help="project root of the bf16 run")
    parser.add_argument("--pairs", nargs="+", default=["en_de", "en_es", "en_ja"])
    parser.add_argument("--out", default=None, help="also write the table to this CSV")
    args = parser.parse_args()
    rows = []
    os.chdir(args.fp32)  # the manifests name store paths relative to their project
    for pair in args.pairs:
        manifest = EmbeddingManifestDataset(f"data/04_feature/{pair}/fmda_inputs.json").load()
        for path in sorted((args.fp32 / "data" / "06_models" / pair).glob("*.safetensors")):
            other = args.bf16 / "data" / "06_models" / pair / path.name
            if not other.is_file():
                continue
            fp32, bf16 = read_artifact(path), read_artifact(other)
            a, b = hits(fp32, manifest), hits(bf16, manifest)
            rows.append(
                {
                    "pair": pair,
                    "model": path.stem,
                    "fp32_dev_acc1": round(float(a.mean()), 4),
                    "bf16_dev_acc1": round(float(b.mean()), 4),
                    "delta": round(float(b.mean() - a.mean()), 4),
                    "mcnemar_p": float(f"{mcnemar(b, a).pvalue:.3g}"),
                    "fp32_epochs": fp32.get("stage_epochs") or fp32.get("epochs_run"),
                    "bf16_epochs": bf16.get("stage_epochs") or bf16.get("epochs_run"),
                }
            )
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    print(table.to_markdown(index=False))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
