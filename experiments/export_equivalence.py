"""How close an exported model's vectors are to the project's own, on real MASSIVE test utterances.

Loads an exported MLflow model (``kedro run --pipelines=export``) with ``mlflow.pyfunc`` and
compares its ``predict`` with the project's vectors of the same texts: the extraction stage over
the configured bundled encoder in fp32 and in the pipelines' default precision (``dtype: auto``:
bf16 where the CPU computes it natively), then the saved head (for FMDA: its meaning ``m`` over the
stored token states). Prints the smallest and mean cosine
and the largest element difference for each.

Usage::

    .venv/bin/python experiments/export_equivalence.py --model data/06_models/exported/qe/seed \\
        --head data/06_models/qe/seed.safetensors --per-locale 100
    .venv/bin/python experiments/export_equivalence.py --model data/06_models/exported/en_de/fmda \
        --head data/06_models/en_de/fmda_all_together.safetensors --per-locale 100
    .venv/bin/python experiments/export_equivalence.py --model data/06_models/exported/massive/emu \\
        --encoder data/06_models/emu/encoders/emu --per-locale 100
"""

from __future__ import annotations

import argparse
import json
import tarfile
import tempfile
from pathlib import Path

import mlflow.pyfunc
import numpy as np

from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.apply import control_meaning
from language_agnostic.methods.export import over_token_states
from language_agnostic.methods.fmda import encode_with_fmda
from language_agnostic.methods.registry import load_trained
from language_agnostic.methods.trained import read_artifact

MASSIVE = Path("../shared/data/massive/amazon-massive-dataset-1.1.tar.gz")


def massive_test(archive: Path, locales: list[str], per_locale: int) -> list[str]:
    """The first ``per_locale`` test utterances of each locale."""
    texts = []
    with tarfile.open(archive) as tar:
        for locale in locales:
            rows = [
                json.loads(line) for line in tar.extractfile(f"1.1/data/{locale}.jsonl").read().decode().splitlines()
            ]
            texts += [r["utt"] for r in rows if r["partition"] == "test"][:per_locale]
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="an exported MLflow model directory")
    parser.add_argument("--head", help="the .safetensors head (or FMDA model) it was exported from")
    parser.add_argument("--encoder", help="or: the fine-tuned encoder directory it was exported from (EMU)")
    parser.add_argument("--pooling", default="mean", help="with --encoder: its pooling")
    parser.add_argument("--massive", type=Path, default=MASSIVE)
    parser.add_argument("--locales", nargs="+", default=["en-US", "de-DE", "ja-JP"])
    parser.add_argument("--per-locale", type=int, default=100)
    args = parser.parse_args()
    texts = massive_test(args.massive, args.locales, args.per_locale)
    if bool(args.head) == bool(args.encoder):
        parser.error("give one of --head and --encoder")
    if args.head:
        saved = read_artifact(args.head)
        _, head = load_trained(saved)
        method, pooling = str(saved["build"]["method"]), str(saved.get("pooling", "mean"))
    else:
        saved, head, method, pooling = {}, None, "", args.pooling
    tokens = bool(saved) and over_token_states(saved)
    theirs = np.asarray(mlflow.pyfunc.load_model(args.model).predict(texts))
    encoder = load_encoder(args.encoder or "bundled")
    for dtype in ("float32", "auto"):
        settings = ExtractionSettings(dtype=dtype, token_states=tokens, progress=False)
        entry = extract_embeddings(encoder, texts, settings, EmbeddingStore(tempfile.mkdtemp()))
        if tokens:
            ours = encode_with_fmda(head, entry)["m"]
        elif head is not None:
            ours = control_meaning(head, np.asarray(entry.vectors(pooling)), method)
        else:
            ours = np.asarray(entry.vectors(pooling))
        cosine = (theirs * ours).sum(1) / np.linalg.norm(theirs, axis=1) / np.linalg.norm(ours, axis=1)
        print(
            f"{len(texts)} texts, project dtype {dtype}: min cosine {cosine.min():.8f}, mean {cosine.mean():.8f}, "
            f"largest difference {np.abs(theirs - ours).max():.2g}"
        )


if __name__ == "__main__":
    main()
