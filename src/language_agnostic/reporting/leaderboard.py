"""One leaderboard over the long metrics table: every method against every task, per encoder.

Rows are ``method/embedding``. A column is a *group*, one task, one dataset family (the dataset
name before ``:``, so the template sets of every training pair form one family) and one metric,
over one *direction set*: the ``source>target`` directions (per dataset) a cell averages over.
Methods are not all evaluated on the same directions (the Table 4 ablations run on en-de only,
the EMU language study on en/de/fr), and a mean over other directions is not comparable, so a
group has one column per direction set that at least two methods were evaluated on (and one for
a method sharing none); a method's cell is its mean over exactly that set, ``—`` if it lacks one
of them. Every cell of a column is thus comparable, and the best one (highest at
:data:`DECIMALS` decimals; ties all) is bold.

Left out: confidence bounds and p-values (``*_ci_low``, ``*_ci_high``, ``mcnemar_p_*``: they
qualify a score, they are not one) and ``language_leakage`` (a probe's accuracy, where higher is
better for a language embedding and worse for a meaning one, so no cell is "best"). Every
metric kept is higher-is-better.
"""

from __future__ import annotations

import pandas as pd

from language_agnostic.reporting.markdown import table

# the tasks in reading order (the papers' main tasks first); others follow alphabetically
TASK_ORDER = (
    "cross_lingual_retrieval",
    "bitext_retrieval",
    "template_retrieval",
    "intent_nn",
    "intent_classification",
    "slu",
    "quality_estimation",
    "semantic_textual_similarity",
)
EXCLUDED_TASKS = frozenset({"language_leakage"})
LEADERBOARD_COLUMNS = [
    "encoder",
    "method",
    "embedding",
    "task",
    "dataset",
    "metric",
    "languages",
    "n_directions",
    "directions",
    "value",
    "best",
]
DECIMALS = 3
# a column over more languages than this names their number, not each one (Tatoeba has 113)
MAX_LISTED_LANGUAGES = 12


def _is_score(metric: str) -> bool:
    return not (metric.endswith(("_ci_low", "_ci_high")) or metric.startswith("mcnemar_p"))


def _direction(dataset: str, source: str, target: str) -> str:
    # the part after ":" names the evaluation set within the family (e.g. the training pair)
    within = dataset.split(":", 1)[1] if ":" in dataset else ""
    return f"{within}:{source}>{target}" if within else f"{source}>{target}"


def _languages(directions: tuple[str, ...]) -> str:
    ends = {end for d in directions for end in d.rsplit(":", 1)[-1].split(">")}
    return ", ".join(sorted(ends)) if len(ends) <= MAX_LISTED_LANGUAGES else f"{len(ends)} languages"


def _column_sets(coverage: pd.Series) -> list[tuple[str, ...]]:
    """The direction sets a group is shown over: those at least two rows cover, plus any row's own if it covers none."""
    candidates = sorted(set(coverage), key=lambda s: (-len(s), s))
    kept = [s for s in candidates if sum(set(s) <= set(c) for c in coverage) >= 2]
    for own in coverage:
        if not any(set(s) <= set(own) for s in kept):
            kept.append(own)
    return sorted(set(kept), key=lambda s: (-len(s), s))


def leaderboard_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard in long form: one row per (encoder, method, embedding, column).

    Args:
        metrics: The long metrics table (``datasets/metrics.py:METRIC_COLUMNS``).

    Returns:
        Columns :data:`LEADERBOARD_COLUMNS`: ``dataset`` is the family, ``directions`` the
        column's direction set (space-separated ``[<dataset part>:]source>target``),
        ``languages`` its languages, ``value`` the method's mean over exactly those directions,
        ``best`` whether it is the column's best. Sorted by encoder, task (:data:`TASK_ORDER`),
        dataset, metric, direction set (largest first), method, embedding.

    Raises:
        ValueError: The table lacks a column the leaderboard reads (named).
    """
    needed = ["method", "embedding", "task", "dataset", "source", "target", "metric", "value", "encoder"]
    missing = [c for c in needed if c not in metrics.columns]
    if missing:
        raise ValueError(f"metrics table lacks column(s) {missing} for the leaderboard")
    keep = metrics["metric"].astype(str).map(_is_score).astype(bool) & ~metrics["task"].isin(EXCLUDED_TASKS)
    rows = metrics[keep].astype({c: str for c in needed if c != "value"})
    rows = rows.assign(
        value=pd.to_numeric(rows["value"]),
        family=rows["dataset"].str.split(":").str[0],
        direction=[_direction(*r) for r in zip(rows["dataset"], rows["source"], rows["target"], strict=True)],
    )
    order = {task: i for i, task in enumerate(TASK_ORDER)}
    out = []
    for (encoder, task, family, metric), group in rows.groupby(["encoder", "task", "family", "metric"], sort=False):
        # a direction evaluated twice (two pipelines) counts once, at its mean
        values = group.groupby(["method", "embedding", "direction"])["value"].mean()
        coverage = values.reset_index().groupby(["method", "embedding"])["direction"].agg(lambda d: tuple(sorted(d)))
        for directions in _column_sets(coverage):
            cells = [
                (method, embedding, float(values.loc[(method, embedding)].loc[list(directions)].mean()))
                for (method, embedding), own in coverage.items()
                if set(directions) <= set(own)
            ]
            top = max(round(v, DECIMALS) for *_, v in cells)
            out += [
                {
                    "encoder": encoder,
                    "method": method,
                    "embedding": embedding,
                    "task": task,
                    "dataset": family,
                    "metric": metric,
                    "languages": _languages(directions),
                    "n_directions": len(directions),
                    "directions": " ".join(directions),
                    "value": value,
                    "best": round(value, DECIMALS) == top,
                    "_task": (order.get(task, len(order)), task),
                }
                for method, embedding, value in cells
            ]
    if not out:
        return pd.DataFrame(columns=LEADERBOARD_COLUMNS)
    board = pd.DataFrame(out).assign(_size=lambda b: -b["n_directions"])
    board = board.sort_values(["encoder", "_task", "dataset", "metric", "_size", "directions", "method", "embedding"])
    return board[LEADERBOARD_COLUMNS].reset_index(drop=True)


def leaderboard_markdown(board: pd.DataFrame, methods: pd.DataFrame | None = None) -> str:
    """The leaderboard as markdown: one table per encoder, rows ``method/embedding``, one column per
    group and direction set.

    Args:
        board: From :func:`leaderboard_table`.
        methods: ``encoder``, ``method``, ``embedding`` rows to list even without a cell (the
            metrics table's, so every method of it is named); default: the board's.

    Returns:
        The document; a cell is the value at :data:`DECIMALS` decimals, ``**bold**`` when best,
        ``—`` when the method was not evaluated on every direction of the column.
    """
    lines = [
        "# Leaderboard",
        "",
        "Every method of `metrics.csv` against every task, built by `reporting/leaderboard.py` whenever a "
        "pipeline saves `metrics.csv`. A column is task / dataset / metric over one set of directions "
        "(source → target; its languages and count in the header); a cell is the method's mean over exactly "
        "those directions, `—` when it was not evaluated on all of them; **bold**: the column's best. "
        "Left out: confidence bounds, p-values and language-leakage probes (no higher-is-better reading).",
        "",
    ]
    listed = (
        board[["encoder", "method", "embedding"]] if methods is None else methods[["encoder", "method", "embedding"]]
    )
    if listed.empty:
        return "\n".join([*lines, "No metric rows yet.", ""])
    for encoder in sorted(set(listed["encoder"].astype(str))):
        mine = board[board["encoder"] == encoder]
        columns = list(
            dict.fromkeys(zip(mine["task"], mine["dataset"], mine["metric"], mine["directions"], strict=True))
        )
        labels = {
            (
                r.task,
                r.dataset,
                r.metric,
                r.directions,
            ): f"{r.task} / {r.dataset} / {r.metric} ({r.languages}: {r.n_directions})"
            for r in mine.itertuples()
        }
        cells = {
            (r.method, r.embedding, (r.task, r.dataset, r.metric, r.directions)): _cell(r.value, r.best)
            for r in mine.itertuples()
        }
        rows = listed[listed["encoder"].astype(str) == encoder]
        names = sorted(set(zip(rows["method"].astype(str), rows["embedding"].astype(str), strict=True)))
        body = [
            [method, embedding, *(cells.get((method, embedding, c), "—") for c in columns)]
            for method, embedding in names
        ]
        lines += [
            f"## Encoder `{encoder}`",
            "",
            *table(["method", "embedding", *(labels[c] for c in columns)], body, left=2),
            "",
        ]
    return "\n".join(lines)


def _cell(value: float, best: bool) -> str:
    text = f"{value:.{DECIMALS}f}"
    return f"**{text}**" if best else text
