"""Benchmark: exact fast negative pools vs brute-force sentence BLEU (extrapolated).

Brute force calls ``sacrebleu.sentence_bleu`` on every ordered pair of train utterances of
a locale (11,514 x 11,513 = 132.6 M calls). It is timed on a random sample of pairs and
extrapolated; the fast path is timed on the whole locale, median of ``--repeats`` runs.

Usage (from the project root, with the project installed)::

    .venv/bin/python benchmarks/negative_pool.py                       # en-US, de-DE, es-ES, ja-JP
    .venv/bin/python benchmarks/negative_pool.py --locales en-US --repeats 5
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import random
import statistics
import time
from pathlib import Path

from sacrebleu import sentence_bleu

from language_agnostic.corpora.errors import RejectLog
from language_agnostic.corpora.massive import ParseOptions, iter_massive_rows, massive_member
from language_agnostic.datasets import TarArchiveDataset
from language_agnostic.text.negative_pool import BleuSettings, negative_pool_mask

ROOT = Path(
    os.environ.get("LANGUAGE_AGNOSTIC_DATA_ROOT", Path(__file__).resolve().parents[1].parent / "shared" / "data")
)
TOKENIZE = {"ja-JP": "ja-mecab", "zh-CN": "zh"}


def train_utterances(locale: str) -> list[str]:
    """The train utterances of one locale, parsed by the project's own reader."""
    archive = TarArchiveDataset(
        str(ROOT / "massive" / "amazon-massive-dataset-1.1.tar.gz"), "MASSIVE 1.1 tarball"
    ).load()
    text = archive[massive_member(locale)]()
    options = ParseOptions(whitespace_insensitive=locale in ("ja-JP", "zh-CN"))
    rows = iter_massive_rows(text, massive_member(locale), locale, options, RejectLog())
    return [r["utt"] for r in rows if r["partition"] == "train"]


def brute_force_seconds_per_call(
    texts: list[str], settings: BleuSettings, n_pairs: int, seed: int, reuse_metric: bool
) -> float:
    """Median seconds per sentence-BLEU call over 3 timed batches of random pairs.

    ``reuse_metric=False`` calls ``sacrebleu.sentence_bleu`` (which builds a ``BLEU`` object,
    and for ja-mecab a MeCab tagger, on every call); ``True`` builds one ``BLEU`` object and
    calls its ``sentence_score``: the same scores, the fairest brute force.
    """
    rng = random.Random(seed)
    pairs = [tuple(rng.sample(range(len(texts)), 2)) for _ in range(n_pairs)]
    metric = settings.metric()
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        for i, j in pairs:
            if reuse_metric:
                metric.sentence_score(texts[i], [texts[j]])
            else:
                sentence_bleu(
                    texts[i],
                    [texts[j]],
                    smooth_method=settings.smooth_method,
                    tokenize=settings.tokenize,
                    use_effective_order=settings.effective_order,
                )
        timings.append((time.perf_counter() - start) / n_pairs)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locales", nargs="+", default=["en-US", "de-DE", "es-ES", "ja-JP"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--brute-pairs", type=int, default=5000, help="pairs per timed brute-force batch")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    print(
        "| locale | utterances | in pool | fast, median (s) | runs (s) | `sentence_bleu` µs/call "
        "| reused `BLEU` µs/call | brute force, reused `BLEU`, extrapolated (h) | speed-up |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for locale in args.locales:
        texts = train_utterances(locale)
        settings = BleuSettings(tokenize=TOKENIZE.get(locale, "13a"))
        runs, pool = [], None
        for _ in range(args.repeats):
            start = time.perf_counter()
            pool = negative_pool_mask(texts, 0.1, "both", settings, progress=False)
            runs.append(time.perf_counter() - start)
        fast = statistics.median(runs)
        per_call = brute_force_seconds_per_call(texts, settings, args.brute_pairs, args.seed, False)
        reused = brute_force_seconds_per_call(texts, settings, args.brute_pairs, args.seed, True)
        n = len(texts)
        brute = reused * n * (n - 1)
        print(
            f"| {locale} | {n} | {int(pool.sum())} | {fast:.1f} | {', '.join(f'{r:.1f}' for r in runs)} "
            f"| {per_call * 1e6:.0f} | {reused * 1e6:.0f} | {brute / 3600:.1f} | {brute / fast:,.0f}× |",
            flush=True,
        )


if __name__ == "__main__":
    main()
