"""LAJ-MCL's claims section (``reporting.slu.claims_table``) recomputed from ``data/08_reporting/metrics.csv``.

The ``slu`` report writes this section on every run; this reads the metrics table as it stands, so a
claim whose method and baseline come from different runs (the default run's ``lajoint-cs`` and the
``slu_ablations`` run's ``lajoint-cs+ucl``) can be re-read after both, or after the claim list grew.
"This run" is ``--run`` (an MLflow run id or its prefix); default: the run with the most SLU methods.

Usage::

    .venv/bin/python benchmarks/slu_claims.py [--run RUN_ID] [--metrics data/08_reporting/metrics.csv]
"""

from __future__ import annotations

import argparse

import pandas as pd

from language_agnostic.reporting.slu import claims_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metrics", default="data/08_reporting/metrics.csv")
    parser.add_argument("--run", default=None, help="MLflow run id (prefix) whose rows are 'this run'")
    parser.add_argument("--training-locale", default="en-US")
    args = parser.parse_args()
    table = pd.read_csv(args.metrics, dtype={"run_id": str})
    slu = table[table["task"] == "slu"]
    if not len(slu):
        raise SystemExit(f"{args.metrics}: no task=slu rows; run `kedro run --pipeline=slu` first")
    run = args.run or slu.groupby("run_id")["method"].nunique().idxmax()
    mine = slu[slu["run_id"].astype(str).str.startswith(run)]
    if not len(mine):
        raise SystemExit(f"--run {run!r}: no task=slu rows of that run in {args.metrics}")
    print(f"this run: {mine['run_id'].iloc[0]} ({', '.join(dict.fromkeys(mine['method']))})\n")
    print("\n".join(claims_table(mine.drop(columns="run_id"), args.training_locale, earlier=table)))


if __name__ == "__main__":
    main()
