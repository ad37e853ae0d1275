"""The extraction backends against torch, in one run on one machine: throughput and the accuracy kept.

For each configuration (``embeddings.extraction.backend`` and ``dtype``), the bundled encoder with
no training, mean pooling, the ``query:`` prefix, through the extraction stage and a fresh store:

- **throughput**: texts per second of ``extract_embeddings`` (tokenising, the forward passes,
  pooling, the store's writes) on ``--n-speed`` MASSIVE test utterances (en-US and de-DE), median
  of ``--repeats`` runs, each into an empty store; the one-time export is timed apart;
- **MASSIVE EN→DE accuracy@1** on the 2,974 parallel test utterances, McNemar against the reference;
- **WMT20 QE average Pearson** of cosine(source, MT) with the z-mean scores over the six test pairs
  (6,000 pairs), paired bootstrap (per language pair) against the reference;
- **Tatoeba accuracy@1** (xxx→eng and eng→xxx pooled) over ``--tatoeba`` languages, McNemar against
  the reference.

The reference is the pipelines' default (``torch``, ``dtype: auto``: bf16 on a CPU with native bf16).
Reads the pipelines' primary tables (``data/03_primary``: run ``kedro run --pipelines=massive,qe``
once) and the Tatoeba files under the raw-data root.

Usage (from the project root, nothing else running)::

    .venv/bin/python -u benchmarks/backends.py > backends.log 2>&1
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from language_agnostic.corpora.errors import RejectLog
from language_agnostic.corpora.tatoeba import read_tatoeba_pair, tatoeba_files
from language_agnostic.encoders.backends import prepare_backend
from language_agnostic.encoders.extraction import (
    BACKENDS_DIR,
    EmbeddingStore,
    ExtractionSettings,
    extract_embeddings,
    namespace_inputs,
)
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.evaluation.claims import paired_correlation
from language_agnostic.evaluation.correlation import paired_cosine
from language_agnostic.evaluation.intent_nn import mcnemar
from language_agnostic.evaluation.retrieval import retrieval_hits

PROJECT = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("LANGUAGE_AGNOSTIC_DATA_ROOT", PROJECT.parent / "shared" / "data"))
# label: (backend, dtype); the first is the reference (the pipelines' default); "auto": bf16 where native
CONFIGS = {
    "torch": ("torch", "auto"),
    "torch-fp32": ("torch", "float32"),
    "onnx": ("onnx", "auto"),
    "onnx-int8": ("onnx-int8", "auto"),
    "openvino": ("openvino", "auto"),
    "openvino-fp32": ("openvino", "float32"),
    "openvino-int8": ("openvino-int8", "auto"),
}


def tatoeba_pairs(languages: list[str]) -> list[tuple[str, list[str], list[str]]]:
    """``(language, xxx sentences, English sentences)`` per language, read as the tatoeba pipeline reads them."""
    out = []
    for lang in languages:
        xxx_file, eng_file = tatoeba_files(lang)
        texts = [(ROOT / "tatoeba" / "v1" / name).read_text(encoding="utf-8") for name in (xxx_file, eng_file)]
        pairs = read_tatoeba_pair(*texts, lang, (xxx_file, eng_file), RejectLog(policy="skip"))
        out.append((lang, [x for _, x, _ in pairs], [e for _, _, e in pairs]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--n-speed", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tatoeba", default="ara,cmn,deu,fra,hin,jpn,kor,rus,spa,swh,tur,vie")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--limit", type=int, default=None, help="pairs per set and language (a quick check)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="backends-"))
    exports = work / "exports"
    exports.mkdir()

    pairs = pd.read_parquet(PROJECT / "data/03_primary/en_de/massive_pairs.parquet")
    test = pairs[pairs["partition"] == "test"]
    en, de = test["source_utt"].tolist()[: args.limit], test["target_utt"].tolist()[: args.limit]
    speed_texts = list(dict.fromkeys(en + de))[: args.n_speed]
    qe = pd.read_parquet(PROJECT / "data/03_primary/qe_test_pairs.parquet").groupby("pair").head(args.limit)
    tatoeba = [(lang, x[: args.limit], e[: args.limit]) for lang, x, e in tatoeba_pairs(args.tatoeba.split(","))]
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch threads "
        f"{torch.get_num_threads()}; MASSIVE en-de test {len(en)} pairs, QE {len(qe)} pairs, Tatoeba "
        f"{len(tatoeba)} languages ({sum(len(x) for _, x, _ in tatoeba)} pairs); {len(speed_texts)} speed texts",
        flush=True,
    )
    encoder = load_encoder("bundled")
    base = ExtractionSettings(progress=False)
    results, reference = [], None
    for label in args.configs:
        backend, dtype = CONFIGS[label]
        settings = replace(base, backend=backend, dtype=dtype)
        precision = namespace_inputs(encoder, settings)["dtype"]
        tick = time.perf_counter()
        prepare_backend(encoder, backend, exports)
        export_s = time.perf_counter() - tick

        def store(name: str) -> EmbeddingStore:
            root = work / name
            root.mkdir()
            (root / BACKENDS_DIR).symlink_to(exports, target_is_directory=True)
            return EmbeddingStore(root)

        rates = []
        for repeat in range(args.repeats):
            s = store(f"{label}-speed{repeat}")
            tick = time.perf_counter()
            extract_embeddings(encoder, speed_texts, settings, s)
            rates.append(len(speed_texts) / (time.perf_counter() - tick))
            shutil.rmtree(s.root)
        s = store(f"{label}-acc")

        def vectors(texts: list[str], store: EmbeddingStore = s, settings: ExtractionSettings = settings) -> np.ndarray:
            return np.asarray(extract_embeddings(encoder, texts, settings, store).vectors("mean"), dtype=np.float32)

        massive = retrieval_hits(vectors(en), vectors(de))
        qe_scores = paired_cosine(vectors(qe["text1"].tolist()), vectors(qe["text2"].tolist()))
        tatoeba_hits = []
        for _, xxx, eng in tatoeba:
            a, b = vectors(xxx), vectors(eng)
            tatoeba_hits += [retrieval_hits(a, b), retrieval_hits(b, a)]
        row = {
            "config": label,
            "precision": precision,
            "export_s": export_s,
            "texts_per_s": statistics.median(rates),
            "rates": rates,
            "massive": massive,
            "qe": qe_scores,
            "tatoeba": np.concatenate(tatoeba_hits),
        }
        reference = reference or row
        gold, groups = qe["gold"].to_numpy(), qe["pair"].to_numpy()
        qe_test = paired_correlation(qe_scores, reference["qe"], gold, groups, args.resamples)
        row.update(
            speedup=row["texts_per_s"] / reference["texts_per_s"],
            massive_acc=float(massive.mean()),
            massive_p=mcnemar(massive, reference["massive"]).pvalue,
            qe_avg=qe_test.method,
            qe_p=qe_test.pvalue,
            tatoeba_acc=float(row["tatoeba"].mean()),
            tatoeba_p=mcnemar(row["tatoeba"], reference["tatoeba"]).pvalue,
        )
        print(
            f"{label:22s} {precision:22s} export {export_s:5.0f} s  {row['texts_per_s']:6.1f} texts/s "
            f"(runs {', '.join(f'{r:.1f}' for r in rates)}; ×{row['speedup']:.2f})  MASSIVE {row['massive_acc']:.4f} "
            f"(p {row['massive_p']:.3g})  QE {row['qe_avg']:.4f} (p {row['qe_p']:.3g})  Tatoeba "
            f"{row['tatoeba_acc']:.4f} (p {row['tatoeba_p']:.3g})",
            flush=True,
        )
        results.append(row)
        shutil.rmtree(s.root)
    print("\n| backend | computes in | texts/s | × torch | MASSIVE EN→DE acc@1 | QE avg Pearson | Tatoeba acc@1 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['config']} | {r['precision']} | {r['texts_per_s']:.0f} | {r['speedup']:.2f} | "
            f"{r['massive_acc']:.4f} (p {r['massive_p']:.2g}) | {r['qe_avg']:.4f} (p {r['qe_p']:.2g}) | "
            f"{r['tatoeba_acc']:.4f} (p {r['tatoeba_p']:.2g}) |"
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
