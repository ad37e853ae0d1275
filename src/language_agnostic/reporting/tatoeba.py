"""Tatoeba reports: averages over all, seen and unseen languages; where methods differ most;
the per-language figure; metric rows.

A language is *seen* when any configured training source holds it (``tatoeba_languages.seen``,
the same split for every method, so their averages compare); a method's *own* seen languages
are those of its own training data. Averages are over languages of the mean of both
directions (``xxx → eng`` and ``eng → xxx``), each language weighing the same whatever its size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from language_agnostic.reporting.markdown import table

TASK = "bitext_retrieval"
DATASET = "tatoeba"
METRICS = {"cosine": "accuracy@1", "margin": "margin_accuracy@1"}
SUMMARY_COLUMNS = [
    "method",
    "embedding",
    "scoring",
    "trained_on",
    "n_languages",
    "all",
    "xxx_to_eng",
    "eng_to_xxx",
    "seen",
    "unseen",
    "own_seen",
    "own_unseen",
    "n_own_seen",
    "n_own_unseen",
]


def per_language(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per method, embedding, scoring and language: ``xxx_to_eng``, ``eng_to_xxx`` and their
    mean ``accuracy``.
    """
    frame = scores.assign(direction=np.where(scores["target"] == "eng", "xxx_to_eng", "eng_to_xxx"))
    wide = frame.pivot_table(
        index=["method", "embedding", "scoring", "language"], columns="direction", values="accuracy", aggfunc="mean"
    ).reset_index()
    wide.columns.name = None
    for column in ("xxx_to_eng", "eng_to_xxx"):
        if column not in wide:
            wide[column] = np.nan
    wide["accuracy"] = wide[["xxx_to_eng", "eng_to_xxx"]].mean(axis=1)
    wide["error"] = 1 - wide["accuracy"]
    return wide


def summary(scores: pd.DataFrame, languages: pd.DataFrame, trained_on: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Averages per method, embedding and scoring (:data:`SUMMARY_COLUMNS`).

    Args:
        scores: From ``evaluation/tatoeba.py:evaluate_tatoeba``.
        languages: ``tatoeba_languages`` (``language``, ``seen``).
        trained_on: ``{method: [ISO 639-3 codes of its training data]}`` (absent: the raw encoder).

    Returns:
        ``all``: mean over the languages evaluated; ``seen`` / ``unseen``: over those any
        training source holds / none does; ``own_*``: over the method's own training languages
        or the others (NaN for the raw encoder); ``n_*`` their sizes.
    """
    seen = set(languages.loc[languages["seen"].astype(bool), "language"])
    wide = per_language(scores)
    rows = []
    for (method, embedding, scoring), group in wide.groupby(["method", "embedding", "scoring"], sort=False):
        own = set(trained_on.get(method, ()))
        is_seen, is_own = group["language"].isin(seen), group["language"].isin(own)
        rows.append(
            [
                method,
                embedding,
                scoring,
                ", ".join(sorted(own)) if method in trained_on else "",
                len(group),
                group["accuracy"].mean(),
                group["xxx_to_eng"].mean(),
                group["eng_to_xxx"].mean(),
                group.loc[is_seen, "accuracy"].mean(),
                group.loc[~is_seen, "accuracy"].mean(),
                group.loc[is_own, "accuracy"].mean() if method in trained_on else np.nan,
                group.loc[~is_own, "accuracy"].mean() if method in trained_on else np.nan,
                int(is_own.sum()),
                int((~is_own).sum()) if method in trained_on else 0,
            ]
        )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def widest_spread(scores: pd.DataFrame, languages: pd.DataFrame, n: int = 20, scoring: str = "cosine") -> pd.DataFrame:
    """The ``n`` languages where methods differ most: max − min over methods of the mean-of-directions accuracy.

    Only methods evaluated on every language count (centering, defined on a few, would
    otherwise decide the spread of those few). Ties: by language code.
    """
    wide = per_language(scores[scores["scoring"] == scoring])
    wide["label"] = wide["method"] + "/" + wide["embedding"]
    coverage = wide.groupby("label")["language"].nunique()
    full = coverage[coverage == wide["language"].nunique()].index
    wide = wide[wide["label"].isin(full)]
    rows = []
    for language, group in wide.groupby("language"):
        best, worst = group.loc[group["accuracy"].idxmax()], group.loc[group["accuracy"].idxmin()]
        raw = group.loc[group["label"] == "raw/mean", "accuracy"]
        rows.append(
            {
                "language": language,
                "spread": best["accuracy"] - worst["accuracy"],
                "raw_mean": float(raw.iloc[0]) if len(raw) else np.nan,
                "best": best["label"],
                "best_accuracy": best["accuracy"],
                "worst": worst["label"],
                "worst_accuracy": worst["accuracy"],
            }
        )
    if not rows:
        return pd.DataFrame(
            columns=["language", "spread", "raw_mean", "best", "best_accuracy", "worst", "worst_accuracy"]
        )
    out = pd.DataFrame(rows).merge(
        languages[["language", "name", "script", "seen", "pairs"]], on="language", how="left"
    )
    return out.sort_values(["spread", "language"], ascending=[False, True]).head(n).reset_index(drop=True)


def metric_rows(scores: pd.DataFrame, encoder: str) -> pd.DataFrame:
    """Rows of the long metrics table: ``task=bitext_retrieval``, ``dataset=tatoeba``, one per direction.

    ``metric`` is ``accuracy@1`` (cosine) or ``margin_accuracy@1`` (ratio margin); ``source`` is
    the query side, ``target`` the side searched (ISO 639-3). Error rates (LASER's ``1 −
    accuracy``) are not rows: every metric of the table is higher-is-better.
    """
    return pd.DataFrame(
        {
            "pipeline": "tatoeba",
            "method": scores["method"],
            "embedding": scores["embedding"],
            "task": TASK,
            "dataset": DATASET,
            "source": scores["source"],
            "target": scores["target"],
            "metric": scores["scoring"].map(METRICS),
            "value": scores["accuracy"].astype(float).round(6),
            "encoder": encoder,
        }
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _pct(value: float) -> str:
    return "—" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{100 * value:.1f}"


def _summary_lines(rows: pd.DataFrame, raw_unseen: float) -> list[str]:
    header = [
        "method",
        "embedding",
        "languages",
        "all",
        "error (LASER)",
        "xxx→eng",
        "eng→xxx",
        "seen",
        "unseen",
        "Δ unseen vs raw/mean",
        "own seen (n)",
        "own unseen (n)",
    ]
    body = []
    for r in rows.itertuples():
        delta = "—" if np.isnan(r.unseen) or np.isnan(raw_unseen) else f"{100 * (r.unseen - raw_unseen):+.1f}"
        own = f"{_pct(r.own_seen)} ({r.n_own_seen})" if r.trained_on or r.n_own_unseen else "—"
        own_un = f"{_pct(r.own_unseen)} ({r.n_own_unseen})" if r.trained_on or r.n_own_unseen else "—"
        body.append(
            [
                r.method,
                r.embedding,
                r.n_languages,
                _pct(r.all),
                _pct(1 - r.all),
                _pct(r.xxx_to_eng),
                _pct(r.eng_to_xxx),
                _pct(r.seen),
                _pct(r.unseen),
                delta,
                own,
                own_un,
            ]
        )
    return table(header, body, left=2)


def _intro_lines(languages: pd.DataFrame, total: Mapping[str, Any], identity: Mapping[str, Any]) -> list[str]:
    """The report's title and what it measures: encoder, languages and pairs, seen and unseen languages."""
    seen = languages[languages["seen"].astype(bool)]
    return [
        "# Tatoeba: bitext retrieval on the LASER Tatoeba sets",
        "",
        f"Encoder `{identity.get('name')}`; "
        f"{_count(int(total.get('languages', len(languages))), 'language')} paired with English, "
        f"{total.get('pairs', '?')} sentence pairs ({total.get('rejected', 0)} rejected at ingestion). "
        "Accuracy@1 (%) of nearest-neighbour retrieval, the mean of both directions, averaged over languages "
        "(each language weighs the same); LASER's error rate is 100 − accuracy. "
        f"*Seen*: the {_count(len(seen), 'language')} some configured training set holds "
        f"({', '.join(f'{r.language} ({r.seen_by})' for r in seen.itertuples()) or 'none'}); *unseen*: the other "
        f"{len(languages) - len(seen)}. *Own*: the method's own training languages, and the rest. "
        "English is the pivot of every pair and is not counted as a language here.",
        "",
    ]


def _spread_lines(spread: pd.DataFrame) -> list[str]:
    """The table of the languages where the methods differ most (from :func:`widest_spread`)."""
    return [
        f"## The {len(spread)} languages where methods differ most (cosine)",
        "",
        "Spread: best − worst method's accuracy (mean of both directions), "
        "among the methods evaluated on every language.",
        "",
        *table(
            ["language", "name", "script", "seen", "pairs", "spread", "raw/mean", "best", "worst"],
            [
                [
                    r.language,
                    r.name,
                    r.script,
                    "yes" if r.seen else "no",
                    r.pairs,
                    _pct(r.spread),
                    _pct(r.raw_mean),
                    f"{r.best} {_pct(r.best_accuracy)}",
                    f"{r.worst} {_pct(r.worst_accuracy)}",
                ]
                for r in spread.itertuples()
            ],
            left=4,
        ),
        "",
    ]


def _not_evaluated_lines(
    scores: pd.DataFrame,
    languages: pd.DataFrame,
    models: Sequence[Mapping[str, Any]],
    skipped: Sequence[Mapping[str, str]],
) -> list[str]:
    """What was left out: centering's languages without a mean, and the skipped models with the reason."""
    centering = sorted({m["name"] for m in models if m["kind"] == "centering"})
    lines = ["## Not evaluated", ""]
    for name in centering:
        n = scores.loc[scores["method"] == name, "language"].nunique()
        lines.append(
            f"- `{name}`: {n} of {len(languages)} languages. Centering subtracts per-language means of its "
            "training corpus; a language without one (every unseen language) has no such mean, and a mean "
            "taken from the test set would use the answers: not applicable to unseen languages."
        )
    for row in skipped:
        lines.append(f"- `{row['method']}`: {row['reason']}")
    if not centering and not skipped:
        lines.append("Every expected model was evaluated.")
    return lines


def tatoeba_markdown(
    scores: pd.DataFrame,
    languages: pd.DataFrame,
    counts: Mapping[str, Any],
    models: Sequence[Mapping[str, Any]],
    skipped: Sequence[Mapping[str, str]],
    identity: Mapping[str, Any],
    params: Mapping[str, Any],
) -> str:
    """The report: averages (cosine, margin), the languages where methods differ most, what was left out.

    Args:
        scores: From ``evaluate_tatoeba``.
        languages: ``tatoeba_languages``.
        counts: The ingestion counts (``total``: languages, pairs, rejected).
        models: The evaluated models (``methods/apply.py:spec_rows``).
        skipped: The expected models not evaluated, with the reason.
        identity: The encoder's identity.
        params: ``tatoeba.report``: ``spread_languages`` (how many to list), ``margin_k`` (for the text).
    """
    trained_on = {m["name"]: list(m["languages"]) for m in models}
    table_ = summary(scores, languages, trained_on)
    lines = _intro_lines(languages, counts.get("total", {}), identity)
    raw = table_[(table_["method"] == "raw") & (table_["embedding"] == "mean")]
    for scoring, title in (
        ("cosine", "cosine similarity"),
        ("margin", f"ratio margin, k = {params.get('margin_k', 4)} (Artetxe & Schwenk 2019)"),
    ):
        rows = table_[table_["scoring"] == scoring].sort_values(["all", "method"], ascending=[False, True])
        raw_unseen = (
            float(raw.loc[raw["scoring"] == scoring, "unseen"].iloc[0])
            if len(raw[raw["scoring"] == scoring])
            else np.nan
        )
        lines += [f"## Averages, {title}", "", *_summary_lines(rows, raw_unseen), ""]
    lines += _spread_lines(widest_spread(scores, languages, int(params.get("spread_languages", 20))))
    lines += _not_evaluated_lines(scores, languages, models, skipped)
    return "\n".join([*lines, ""])


def mlflow_metrics(
    scores: pd.DataFrame, languages: pd.DataFrame, counts: Mapping[str, Any], models: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, float]]:
    """Counts and averages for MLflow (``tatoeba.ingest.*``,
    ``tatoeba.<method>.<embedding>.<scoring>.<subset>``); not every row.
    """
    out: dict[str, dict[str, float]] = {}
    for language, values in counts.items():
        for name, value in values.items():
            out[f"tatoeba.ingest.{language}.{name}"] = {"value": float(value), "step": 0}
    trained_on = {m["name"]: list(m["languages"]) for m in models}
    for r in summary(scores, languages, trained_on).itertuples():
        for subset in ("all", "seen", "unseen", "own_seen", "own_unseen"):
            value = getattr(r, subset)
            if not np.isnan(value):
                key = f"tatoeba.{r.method}.{r.embedding}.{r.scoring}.{subset}"
                out[key.replace("@", "_at_").replace("+", "_")] = {"value": float(value), "step": 0}
    return out


def auto_figure_methods(scores: pd.DataFrame, models: Sequence[Mapping[str, Any]]) -> list[str]:
    """``raw/mean`` and, per training source, its method of best mean cosine accuracy over all languages."""
    wide = per_language(scores[scores["scoring"] == "cosine"])
    means = wide.assign(label=wide["method"] + "/" + wide["embedding"]).groupby("label")["accuracy"].mean()
    source = {m["name"]: m["source"] for m in models if m["kind"] != "centering"}
    chosen = ["raw/mean"] if "raw/mean" in means else []
    for src in dict.fromkeys(source.values()):
        labels = [label for label in means.index if source.get(label.split("/", 1)[0]) == src]
        if labels:
            chosen.append(max(sorted(labels), key=lambda label: means[label]))
    return chosen


def plot_tatoeba(scores: pd.DataFrame, languages: pd.DataFrame, methods: Sequence[str], scoring: str = "cosine") -> Any:
    """Per-language accuracy of ``methods`` (``method/embedding`` labels), languages by raw mean-pooling accuracy.

    Top panel: accuracy (mean of both directions); bottom: difference to ``raw/mean``. Seen
    languages' labels are bold and marked ``*``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wide = per_language(scores[scores["scoring"] == scoring])
    wide["label"] = wide["method"] + "/" + wide["embedding"]
    grid = wide.pivot_table(index="language", columns="label", values="accuracy")
    methods = [m for m in methods if m in grid.columns]
    order = (
        grid["raw/mean"].sort_values(ascending=False, kind="stable").index
        if "raw/mean" in grid
        else grid.index.sort_values()
    )
    grid = grid.reindex(order)
    seen = set(languages.loc[languages["seen"].astype(bool), "language"])
    x = np.arange(len(grid))
    figure, (top, bottom) = plt.subplots(
        2, 1, figsize=(max(10.0, 0.16 * len(grid) + 2), 8), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    for method in methods:
        top.plot(x, 100 * grid[method].to_numpy(), marker="o", markersize=2.5, linewidth=0.8, label=method)
        if method != "raw/mean" and "raw/mean" in grid:
            bottom.plot(
                x,
                100 * (grid[method] - grid["raw/mean"]).to_numpy(),
                marker="o",
                markersize=2.5,
                linewidth=0.8,
                label=method,
            )
    bottom.axhline(0, color="grey", linewidth=0.6)
    top.set_ylabel(f"accuracy@1 (%), {scoring}")
    bottom.set_ylabel("Δ vs raw/mean (points)")
    top.set_title(f"Tatoeba bitext retrieval per language (mean of both directions; * seen in training, {len(seen)})")
    top.legend(fontsize=7, ncol=2, loc="lower left")
    bottom.set_xticks(x)
    bottom.set_xticklabels([f"{lang}*" if lang in seen else lang for lang in grid.index], rotation=90, fontsize=6)
    for label in bottom.get_xticklabels():
        if label.get_text().endswith("*"):
            label.set_fontweight("bold")
    top.grid(axis="y", linewidth=0.3)
    bottom.grid(axis="y", linewidth=0.3)
    figure.tight_layout()
    return figure
