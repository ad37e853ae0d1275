"""LAJ-MCL's claims section (``reporting.slu.claims_table``) recomputed from ``data/08_reporting/metrics.csv``.

The ``slu`` report writes this section on every run; this reads the metrics table as it stands, so a
claim whose method and baseline come from different runs (the default run's ``lajoint-cs`` and the
``slu_ablations`` run's ``lajoint-cs+ucl``) can be re-read after both, or after the claim list grew.
"This run" is ``--run`` (an MLflow run id or its prefix); default: the run with the most SLU methods.

``--pair METHOD BASELINE`` (repeatable) prints instead the McNemar comparison of two methods' stored
per-utterance exact match (``data/07_model_output/outcomes.parquet``) over the non-training locales'
test utterances: the test the claims section runs, for any two methods (e.g. one seed of a claim).

Usage::

    .venv/bin/python experiments/slu_claims.py [--run RUN_ID] [--metrics data/08_reporting/metrics.csv]
    .venv/bin/python experiments/slu_claims.py --pair lajoint-seed2023 lajoint-no_compressor-seed2023
"""

from __future__ import annotations

import argparse

import pandas as pd

from language_agnostic.evaluation.claims import outcomes_of, paired
from language_agnostic.reporting.slu import claims_table


def print_pairs(pairs: list[list[str]], outcomes_path: str, training_locale: str) -> None:
    """Each pair's exact match (%), difference and McNemar p on the shared non-training-locale test utterances."""
    outcomes = pd.read_parquet(outcomes_path)
    em = outcomes[
        (outcomes["pipeline"] == "slu")
        & (outcomes["task"] == "slu_exact_match")
        & (outcomes["target"] != training_locale)
    ]
    print(
        "| method | baseline | method % | baseline % | Δ (points) | McNemar p | utterances |\n"
        "|---|---|---:|---:|---:|---:|---:|"
    )
    for method, baseline in pairs:
        test = paired(outcomes_of(em, method), outcomes_of(em, baseline))
        if test is None:
            raise SystemExit(f"{outcomes_path}: no shared outcomes for {method!r} and {baseline!r}")
        delta = 100 * (test.method - test.baseline)
        print(
            f"| {method} | {baseline} | {100 * test.method:.2f} | {100 * test.baseline:.2f} | {delta:+.2f} | "
            f"{test.pvalue:.2g} | {test.n} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--metrics", default="data/08_reporting/metrics.csv")
    parser.add_argument("--run", default=None, help="MLflow run id (prefix) whose rows are 'this run'")
    parser.add_argument("--training-locale", default="en-US")
    parser.add_argument("--pair", nargs=2, action="append", metavar=("METHOD", "BASELINE"), default=[])
    parser.add_argument("--outcomes", default="data/07_model_output/outcomes.parquet")
    args = parser.parse_args()
    if args.pair:
        print_pairs(args.pair, args.outcomes, args.training_locale)
        return
    table = pd.read_csv(args.metrics, dtype={"run_id": str})
    slu = table[table["task"] == "slu"]
    if not len(slu):
        raise SystemExit(f"{args.metrics}: no task=slu rows; run `kedro run --pipelines=slu` first")
    run = args.run or slu.groupby("run_id")["method"].nunique().idxmax()
    mine = slu[slu["run_id"].astype(str).str.startswith(run)]
    if not len(mine):
        raise SystemExit(f"--run {run!r}: no task=slu rows of that run in {args.metrics}")
    print(f"this run: {mine['run_id'].iloc[0]} ({', '.join(dict.fromkeys(mine['method']))})\n")
    print("\n".join(claims_table(mine.drop(columns="run_id"), args.training_locale, earlier=table)))


if __name__ == "__main__":
    main()
