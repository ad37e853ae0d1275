"""Why FMDA's residual embedding ``rs`` retrieves across languages about as well as its meaning embedding ``m``.

On MASSIVE **dev** (no test figure), for each pair's all-together models (the configured seed and
the ``seed<N>`` variants of ``--env=fmda_seeds``): accuracy@1 in both directions of the encoder's
mean vectors (``raw/mean``), mean centring (``centering/mean``), FMDA's template ``tp``, residual
``rs``, their sum ``tp + rs`` (what the meaning MLP reads: ``m = MLP_m(tp + rs)``) and ``m``; the exact
McNemar p of ``rs`` against ``m``; and the mean cosine between each utterance's ``rs`` and its raw mean
vector (how far ``rs`` is from the encoder's own pooling). Needs a finished
``kedro run --pipelines=fmda --env=fmda_seeds`` (its models and ``data/04_feature/<pair>/fmda_inputs.json``)::

    .venv/bin/python experiments/fmda_residual_dev.py --pairs en_de en_es en_ja --variants all_together seed1 seed2
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.datasets.torch_state import TrainedHeadDataset
from language_agnostic.evaluation.fmda import centering_of
from language_agnostic.evaluation.intent_nn import mcnemar
from language_agnostic.evaluation.retrieval import retrieval_hits
from language_agnostic.methods.fmda import encode_with_fmda
from language_agnostic.methods.registry import load_trained

COLUMNS = ["raw/mean", "centering/mean", "tp", "rs", "tp + rs", "m"]


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def pair_rows(pair: str, variants: list[str]) -> list[str]:
    """Markdown rows: one per variant and direction."""
    manifest = EmbeddingManifestDataset(f"data/04_feature/{pair}/fmda_inputs.json").load()
    sets, src, tgt = manifest["sets"], manifest["source_locale"], manifest["target_locale"]
    dev = {side: sets[f"dev.{side}.utt"] for side in ("source", "target")}
    centred = centering_of(manifest)
    fixed = {
        "raw/mean": {side: np.asarray(dev[side].vectors("mean")) for side in dev},
        "centering/mean": {"source": centred(dev["source"], src), "target": centred(dev["target"], tgt)},
    }
    rows = []
    for variant in variants:
        path = Path(f"data/06_models/{pair}/fmda_{variant}.safetensors")
        if not path.exists():
            continue
        _, model = load_trained(TrainedHeadDataset(str(path)).load())
        out = {side: encode_with_fmda(model, dev[side]) for side in dev}
        vectors = dict(fixed)
        for name in ("tp", "rs", "m"):
            vectors[name] = {side: out[side][name] for side in dev}
        vectors["tp + rs"] = {side: out[side]["tp"] + out[side]["rs"] for side in dev}
        closeness = np.mean(
            [float(np.mean(np.sum(_unit(out[side]["rs"]) * _unit(fixed["raw/mean"][side]), axis=1))) for side in dev]
        )
        for (query, key), (qs, ks) in (((src, tgt), ("source", "target")), ((tgt, src), ("target", "source"))):
            hits = {name: retrieval_hits(v[qs], v[ks]) for name, v in vectors.items()}
            p = mcnemar(hits["rs"], hits["m"]).pvalue
            cells = " | ".join(f"{hits[name].mean():.4f}" for name in COLUMNS)
            rows.append(
                f"| {pair} | {variant} | {query}→{key} | {cells} | {hits['rs'].mean() - hits['m'].mean():+.4f} "
                f"| {p:.2g} | {closeness:.3f} |"
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", nargs="+", default=["en_de", "en_es", "en_ja"])
    parser.add_argument("--variants", nargs="+", default=["all_together", "seed1", "seed2"])
    args = parser.parse_args()
    print(
        "| pair | variant | direction | "
        + " | ".join(COLUMNS)
        + " | rs − m | McNemar p (rs vs m) | cos(rs, raw mean) |"
    )
    print("|---|---|---|" + "---:|" * (len(COLUMNS) + 3))
    for pair in args.pairs:
        for row in pair_rows(pair, args.variants):
            print(row, flush=True)


if __name__ == "__main__":
    main()
