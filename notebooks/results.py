# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Results
#
# Everything the pipelines measured, read through the Kedro catalog (the `kedro.ipython`
# extension) and MLflow: the leaderboard of every method against every task, each paper's
# tables, per-locale charts (with confidence intervals where a metric has them) and the figures.
#
# Run it after any pipeline (`kedro run --pipelines=fmda`, ...): it shows whatever
# `data/08_reporting/` holds. `kedro jupyter lab` opens it with the project loaded; the paired
# `notebooks/results.py` (jupytext) is what is reviewed in diffs.

# %% tags=["parameters"]
import os

# The Kedro project to read: this repository, or another root with the same layout
# (tests/notebooks runs this notebook on tiny data that way).
project_path = os.environ.get("LANGUAGE_AGNOSTIC_PROJECT", "..")
max_methods_per_chart = 6

# %%
# relative paths in conf/ (data/, the MLflow store sqlite:///mlruns/mlflow.db) are the project root's, as for `kedro run`
os.chdir(project_path)

# %load_ext kedro.ipython
# %reload_kedro .

# %%
from pathlib import Path

import pandas as pd
from IPython.display import Image, Markdown, display

from language_agnostic.reporting.charts import per_locale_figure, per_locale_table
from language_agnostic.reporting.leaderboard import leaderboard_markdown, leaderboard_table

metrics = catalog.load("metrics_table")  # noqa: F821 - `catalog` is defined by %reload_kedro
print(f"{len(metrics)} metric rows; pipelines: {sorted(metrics['pipeline'].unique())}; "
      f"encoders: {sorted(metrics['encoder'].unique())}")

# %% [markdown]
# ## Leaderboard
#
# Rows: method/embedding; columns: task / dataset / metric over one set of directions; a cell is
# the mean over exactly those directions; bold is the column's best (`reporting/leaderboard.py`).
# Every pipeline's report node rewrites it when it saves `metrics.csv`.

# %%
if catalog.exists("leaderboard_markdown"):  # noqa: F821
    board_text = catalog.load("leaderboard_markdown")  # noqa: F821
else:  # written by older runs' report nodes: build it from the table
    board_text = leaderboard_markdown(leaderboard_table(metrics), metrics)
display(Markdown(board_text))

# %% [markdown]
# The same in long form, to slice: e.g. the best cell of each column.

# %%
board = leaderboard_table(metrics)
board[board["best"]][["task", "dataset", "metric", "languages", "method", "embedding", "value"]]

# %% [markdown]
# ## Each paper's tables
#
# The markdown the report nodes write (each also an artifact of its MLflow run).

# %%
PAPER_TABLES = ["massive_summary_markdown", "raw_encoder_retrieval_markdown", "fmda_tables_markdown",
                "emu_tables_markdown", "slu_tables_markdown", "qe_report_markdown", "sts_report_markdown"]
for name in PAPER_TABLES:
    if catalog.exists(name):  # noqa: F821
        display(Markdown(f"### `{name}`\n\n" + catalog.load(name)))  # noqa: F821
    else:
        print(f"{name}: not written yet (its pipeline has not run)")

# %% [markdown]
# ## Per-locale charts
#
# One chart per task and main metric, for the methods of highest mean; whiskers are the
# confidence intervals where the table holds `<metric>_ci_low` / `_ci_high` rows.

# %%
import io  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402

for (task, metric), _ in metrics.groupby(["task", "metric"]):
    if metric.endswith(("_ci_low", "_ci_high")) or metric.startswith("mcnemar"):
        continue
    table = per_locale_table(metrics, task, metric, max_methods_per_chart)
    if table.empty or table["direction"].nunique() < 2:
        continue
    figure = per_locale_figure(table, f"{task}: {metric}")
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=100)  # as PNG whatever the backend (also headless, in CI)
    plt.close(figure)
    display(Image(data=png.getvalue()))

# %% [markdown]
# ## Figures
#
# The papers' figures as the pipelines drew them (`data/08_reporting/*.png`).

# %%
figures = sorted(Path("data/08_reporting").glob("*.png"))
for path in figures:
    display(Markdown(f"### `{path.name}`"), Image(filename=str(path), width=700))
if not figures:
    print("no figures yet")

# %% [markdown]
# ## MLflow runs
#
# Every `kedro run` is a run of the experiment `language_agnostic`; each trained variant a child
# run (README: comparing the FMDA variants side by side).

# %%
import mlflow  # noqa: E402

try:
    runs = mlflow.search_runs(experiment_names=["language_agnostic"], max_results=200)
except Exception as exc:  # noqa: BLE001 - a notebook without a tracking store still shows the rest
    runs = pd.DataFrame()
    print(f"MLflow: {exc}")
if runs.empty:
    print(f"no MLflow runs in {mlflow.get_tracking_uri()}")
else:
    shown = ["tags.mlflow.runName", "status", "start_time", "tags.mlflow.parentRunId"]
    display(runs[[c for c in shown if c in runs.columns]].head(50))
