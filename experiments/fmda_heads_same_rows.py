"""Check: retrain FMDA's heads over pooled vectors and re-score the baselines; compare with the stored rows.

Retrains every ``fmda.methods`` entry (DREAM, the controls) on each pair with the current code
and configuration, scores it and the raw / centring baselines on MASSIVE test exactly as the
pipeline does, and compares every cell with the ``fmda`` rows of
``data/08_reporting/metrics.csv`` (from the last ``kedro run --pipelines=fmda``). Used to show a
refactoring leaves the tables cell for cell as they were (issue #14).

Usage::

    .venv/bin/python -u experiments/fmda_heads_same_rows.py [--metrics data/08_reporting/metrics.csv]
"""

from __future__ import annotations

import argparse

import pandas as pd
import yaml

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset
from language_agnostic.evaluation.fmda import evaluate_baselines, evaluate_head
from language_agnostic.training.fmda import train_pooled_head

KEY = ["method", "embedding", "task", "dataset", "source", "target", "metric"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metrics", default="data/08_reporting/metrics.csv")
    args = parser.parse_args()
    params = yaml.safe_load(open("conf/base/parameters_fmda.yml"))["fmda"]
    pairs = yaml.safe_load(open("conf/base/parameters_massive.yml"))["massive"]["pairs"]
    stored = pd.read_csv(args.metrics, keep_default_na=False)
    stored = stored[stored["pipeline"] == "fmda"]
    total = differ = 0
    for pair in pairs:
        manifest = EmbeddingManifestDataset(f"data/04_feature/{pair}/fmda_inputs.json").load()
        tables = [evaluate_baselines(manifest, {"name": "check"})]
        for name, spec in params["methods"].items():
            trained, _ = train_pooled_head(
                manifest, spec, {**params["training"], "progress": False}, params["loss"], name
            )
            tables.append(evaluate_head(manifest, trained, {"name": "check"}))
        new = pd.concat(tables)
        merged = new.merge(stored, on=KEY, suffixes=("_new", "_stored"))
        if len(merged) != len(new):
            raise SystemExit(f"{pair}: {len(new) - len(merged)} new rows have no stored counterpart")
        bad = merged[(merged["value_new"] - merged["value_stored"]).abs() > 1e-9]
        total, differ = total + len(merged), differ + len(bad)
        print(f"{pair}: {len(merged)} cells, {len(bad)} differ")
        if len(bad):
            print(bad[KEY + ["value_new", "value_stored"]].to_string(index=False))
    print(f"total {total} cells, {total - differ} identical")


if __name__ == "__main__":
    main()
