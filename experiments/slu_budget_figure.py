"""LAJ-MCL's comparisons as the training data grows: each main method's exact match at each SLU budget run.

Reads ``data/08_reporting/metrics.csv`` (the default run's ``zsjoint`` ... ``lajmcl`` on all the en-US
training utterances; ``--env=slu_quick``'s ``*-laj_budget`` on the 2,000 sample) and ``conf/base``'s
``slu.budgets`` (utterances × epochs of each), prints the table (exact match %, mean over the
non-English test locales) and draws it, one line per method, x = English training utterances seen.

Usage::

    .venv/bin/python experiments/slu_budget_figure.py docs/slu_budget.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import yaml

from language_agnostic.pipelines.config_loader import expand_budgets
from language_agnostic.reporting.markdown import table
from language_agnostic.reporting.slu import LAJ_BUDGET, MAIN_METHODS, budget_rows


def utterances_seen(conf: Path, n_train: int) -> dict[str, int]:
    """Budget suffix → utterances × epochs, from ``slu.budgets`` (``max_train: null`` = all ``n_train``)."""
    budgets = expand_budgets(yaml.safe_load(conf.read_text()))["slu"]["budgets"]
    out = {}
    for suffix, name in (("", "all_data"), (LAJ_BUDGET, "laj")):
        budget = budgets[name]
        size = budget["data"].get("max_train") or n_train
        out[suffix] = int(min(size, n_train) * budget["training"]["max_epochs"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("figure", help="where the PNG goes")
    parser.add_argument("--metrics", default="data/08_reporting/metrics.csv")
    parser.add_argument("--rows", default="data/03_primary/massive_slu.parquet", help="the SLU rows (en-US train size)")
    parser.add_argument("--conf", default="conf/base/parameters_slu.yml")
    parser.add_argument("--training-locale", default="en-US")
    args = parser.parse_args()
    metrics = pd.read_csv(args.metrics, dtype={"run_id": str})
    slu_rows = pd.read_parquet(args.rows, columns=["locale", "partition"])
    n_train = int(((slu_rows["locale"] == args.training_locale) & (slu_rows["partition"] == "train")).sum())
    points = budget_rows(
        metrics[metrics["task"] == "slu"], utterances_seen(Path(args.conf), n_train), args.training_locale
    )
    if points.empty:
        raise SystemExit(f"{args.metrics}: no slu rows of the main methods; run `kedro run --pipelines=slu` first")
    print(
        "\n".join(
            table(
                ["method", "run as", "English utterances seen", "EM %"],
                [
                    [MAIN_METHODS[r.method][1], f"`{r.budget}`", f"{r.utterances_seen:,}", f"{r.exact_match:.2f}"]
                    for r in points.itertuples()
                ],
            )
        )
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for method, group in points.groupby("method", sort=False):
        ax.plot(group["utterances_seen"], group["exact_match"], marker="o", label=MAIN_METHODS[method][1])
    ax.set_xscale("log")
    ax.set_xticks(sorted(set(points["utterances_seen"])))
    ax.set_xticklabels([f"{n:,}" for n in sorted(set(points["utterances_seen"]))])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # only the budgets run are labelled
    ax.set_xlabel("English training utterances seen (utterances × epochs)")
    ax.set_ylabel("exact match %, non-English test")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.figure, dpi=120)
    print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()
