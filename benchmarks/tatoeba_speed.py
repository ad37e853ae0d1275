"""Benchmark: the ``tatoeba`` pipeline's stages on a few real languages, extrapolated to the 112.

On the LASER Tatoeba pairs of ``--languages`` (default: three of different sizes), with the
configured encoder and the trained models of ``--models`` (default ``data/06_models``):

- **encode**: ``extract_embeddings`` of their distinct sentences into a fresh cache (token
  states kept when an FMDA model is present, as the pipeline does), then once more (warm: a
  cache hit);
- **fine-tuned encode**: the same for each fine-tuned encoder found (EMU);
- **FMDA tables**: each FMDA model's meaning of every distinct sentence (cold; cached after);
- **evaluate**: ``evaluate_tatoeba`` over every model found, FMDA tables cached (the heads, the
  similarity and margin matrices): what a warm rerun spends.

The extrapolation scales encoding and FMDA tables by the number of distinct sentences of all
112 pairs (158,078) and evaluation by the number of pairs (88,877), so it is a planning
figure, not a measurement of the full run.

Usage (from the project root)::

    .venv/bin/python benchmarks/tatoeba_speed.py
    .venv/bin/python benchmarks/tatoeba_speed.py --languages deu,afr,amh --models ../other/data/06_models
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path

import yaml

from language_agnostic.corpora.tatoeba import ingest_tatoeba, text_index
from language_agnostic.datasets.directory import ModelShelf, TextDirectoryDataset
from language_agnostic.encoders.extraction import EmbeddingStore, extract_embeddings, extraction_settings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.evaluation.tatoeba import evaluate_tatoeba
from language_agnostic.methods.apply import expected_models, fmda_meaning_table, load_models, training_languages

PROJECT = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("LANGUAGE_AGNOSTIC_DATA_ROOT", PROJECT.parent / "shared" / "data"))
ALL_TEXTS, ALL_PAIRS = 158_078, 88_877  # distinct sentences and pairs of the 112 LASER Tatoeba languages


def conf() -> dict:
    params: dict = {"fmda_paper": {"variants": {}, "unified": {"pairs": []}}}
    for name in ("qe", "sts", "massive", "fmda", "emu", "embeddings", "tatoeba"):
        params.update(yaml.safe_load((PROJECT / "conf" / "base" / f"parameters_{name}.yml").read_text()))
    return params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--languages", default="deu,afr,amh")
    parser.add_argument("--models", default=str(PROJECT / "data" / "06_models"))
    parser.add_argument(
        "--bundled-dir", default=None, help="where the bundled encoder is converted (default: the configured)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    params = conf()
    files = TextDirectoryDataset(str(ROOT / "tatoeba" / "v1"), pattern="tatoeba.*-eng.*").load()
    pairs, _, _, _ = ingest_tatoeba(files, {"languages": args.languages.split(",")})
    texts, _, _ = text_index(pairs)
    encoder = load_encoder(
        params["embeddings"]["encoder"]["name"], args.bundled_dir or params["embeddings"]["encoder"]["bundled_dir"]
    )
    shelf = ModelShelf(args.models)
    loaded, skipped = load_models(shelf, expected_models(params), training_languages(params), encoder.identity)
    fmda = any(m.spec.kind == "fmda" for m in loaded)
    extraction = {**params["embeddings"]["extraction"], "progress": False}
    print(
        f"{len(pairs)} pairs, {len(texts)} distinct sentences ({args.languages}); {len(loaded)} models found, "
        f"{len(skipped)} missing; torch threads {os.environ.get('OMP_NUM_THREADS', 'default')}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = EmbeddingStore(tmp)
        start = time.perf_counter()
        raw = extract_embeddings(encoder, texts, extraction_settings(extraction, token_states=fmda), store)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        extract_embeddings(encoder, texts, extraction_settings(extraction, token_states=fmda), store)
        warm = time.perf_counter() - start
        print(
            f"encode (token states: {fmda}): {cold:.1f} s cold ({len(texts) / cold:.0f} sentences/s), "
            f"{warm:.2f} s warm; "
            f"112 languages: about {ALL_TEXTS / (len(texts) / cold) / 60:.1f} min"
        )
        finetuned = {}
        for model in loaded:
            if model.spec.kind == "encoder":
                start = time.perf_counter()
                finetuned[model.spec.name] = extract_embeddings(
                    shelf.encoder(model.spec.path), texts, extraction_settings(extraction), store
                )
                took = time.perf_counter() - start
                print(
                    f"encode {model.spec.name} (load included): {took:.1f} s; 112 languages: about "
                    f"{ALL_TEXTS / (len(texts) / took) / 60:.1f} min"
                )
        fmda_models = [m for m in loaded if m.spec.kind == "fmda"]
        start = time.perf_counter()
        for model in fmda_models:
            fmda_meaning_table(model, raw)
        took = time.perf_counter() - start
        print(
            f"FMDA meaning tables of {len(fmda_models)} models (cold; cached after): {took:.1f} s; "
            "112 languages: about "
            f"{took * ALL_TEXTS / len(texts) / 60:.1f} min"
        )
        start = time.perf_counter()
        scores = evaluate_tatoeba(pairs, raw, finetuned, loaded, ["mean", "cls"], 4, progress=False)
        took = time.perf_counter() - start
        n_methods = scores[["method", "embedding"]].drop_duplicates().shape[0]
        print(
            f"evaluate {n_methods} methods (FMDA tables cached): {took:.1f} s; "
            f"112 languages: about {took * ALL_PAIRS / len(pairs) / 60:.1f} min"
        )


if __name__ == "__main__":
    main()
