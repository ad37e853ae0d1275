"""Figures: FMDA's Figure 4, EMU's Figure 2 and LAJ-MCL's Figure 3 (t-SNE), and the PCA of a head's
meaning and language embeddings (SEED Fig. 1, DREAM Fig. 5).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.extraction import EmbeddingSet, vectors_of
from language_agnostic.methods.registry import load_trained
from language_agnostic.reporting.fmda import short_locale

logger = logging.getLogger(__name__)


def _fmda_outputs(model_dict: Mapping[str, Any], entry: EmbeddingSet, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The language (``lang``), meaning (``m``) and template (``tp``) embeddings of a saved FMDA model."""
    _, model = load_trained(model_dict)
    states, mask = entry.token_states(rows)
    with torch.no_grad():
        out = model(torch.from_numpy(np.asarray(states, dtype=np.float32)), torch.from_numpy(mask))
    return {k: out[k].numpy() for k in ("lang", "m", "tp")}


def _plot_pair_panels(
    axes: Sequence[Any], a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], src: str, tgt: str, seed: int
) -> None:
    """Figure 4's panels a and b: t-SNE of both sides' language and meaning embeddings, one colour a locale."""
    from sklearn.manifold import TSNE

    for ax, key, title in ((axes[0], "lang", "(a) language embeddings"), (axes[1], "m", "(b) meaning embeddings")):
        both = np.concatenate([a[key], b[key]])
        points = TSNE(random_state=seed, init="pca", perplexity=min(30.0, len(both) - 1.0)).fit_transform(both)
        n = len(a[key])
        ax.scatter(*points[:n].T, s=4, label=short_locale(src))
        ax.scatter(*points[n:].T, s=4, label=short_locale(tgt))
        ax.set_title(f"{title}, {n} {short_locale(src)}-{short_locale(tgt)} test pairs")
        ax.legend()


def _plot_template_panels(
    axes: Sequence[Any], panels: Sequence[tuple[np.ndarray, str]], picked: pd.DataFrame, what: str, seed: int
) -> list[str]:
    """Figure 4's panels c and d: t-SNE of each panel's vectors of ``picked``, one colour a template; the templates."""
    from sklearn.manifold import TSNE

    templates = list(dict.fromkeys(picked["template"]))
    per = int((picked["template"] == templates[0]).sum())
    for ax, (vectors, title) in zip(axes, panels):
        points = TSNE(random_state=seed, init="pca", perplexity=min(5.0, len(picked) - 1.0)).fit_transform(vectors)
        for t in templates:
            where = (picked["template"] == t).to_numpy()
            ax.scatter(*points[where].T, s=30, label=t if len(t) <= 45 else t[:44] + "…")
        ax.set_title(f"{title}\n{what}: {len(templates)} templates × {per}", fontsize=10)
        # below the points, not over them
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.04), ncol=1, frameon=False)
    return templates


def plot_embeddings(
    manifest: Mapping[str, Any],
    fmda: Mapping[str, Any],
    template_model: Mapping[str, Any],
    utterances: pd.DataFrame,
    masked: pd.DataFrame,
    params: Mapping[str, Any],
) -> Any:
    """Figure 4: t-SNE of FMDA's language and meaning embeddings of test pairs, and of template
    embeddings of one intent.

    Args:
        manifest: The pair's FMDA inputs (test token states).
        fmda: The all-together model (panels a, b).
        template_model: The model whose template embeddings panel c shows (two-stage in the paper).
        utterances: ``massive_utterances`` (intents); masked: ``massive_masked_texts`` (templates).
        params: ``fmda.figure``: ``n_pairs``, ``split``, ``intent``, ``n_templates``, ``per_template``, ``seed``.

    Returns:
        A matplotlib figure: (a) language and (b) meaning embeddings of test pairs, (c) template
        embeddings of several templates of one intent (:func:`template_sample`) and (d) the raw
        encoder's vectors of the same utterances, for contrast.

    Raises:
        ValueError: the configured intent / split cannot give two templates (:func:`template_sample`).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seed = int(params.get("seed", 0))
    rng = np.random.default_rng(seed)
    sets, ids = manifest["sets"], np.array(manifest["ids"]["test"])
    src, tgt = manifest["source_locale"], manifest["target_locale"]
    chosen = np.sort(rng.choice(len(ids), size=min(int(params.get("n_pairs", 800)), len(ids)), replace=False))
    a = _fmda_outputs(fmda, sets["test.source.utt"], chosen)
    b = _fmda_outputs(fmda, sets["test.target.utt"], chosen)
    fig, axes = plt.subplots(1, 4, figsize=(24, 7))
    _plot_pair_panels(axes[:2], a, b, src, tgt, seed)
    # panels c and d: several templates of one intent (utterances with the same template-masked
    # text), by the template embedding, and the raw encoder's vectors of the same utterances beside it
    split = str(params.get("split", "test"))
    intent, picked = template_sample(
        utterances,
        masked,
        src,
        manifest["ids"],
        split,
        params.get("intent", "auto"),
        int(params.get("n_templates", 4)),
        int(params.get("per_template", 3)),
        seed,
    )
    position = {i: n for n, i in enumerate(manifest["ids"][split])}
    rows = np.array([position[i] for i in picked["id"]])
    template_vectors = _fmda_outputs(template_model, sets[f"{split}.source.utt"], rows)["tp"]
    raw_vectors = sets[f"{split}.source.utt"].vectors("mean")[rows]
    panels = (
        (template_vectors, f"(c) template embeddings ({template_model.get('method', 'fmda')})"),
        (raw_vectors, "(d) the raw encoder (mean pooling)"),
    )
    templates = _plot_template_panels(axes[2:], panels, picked, f"{short_locale(src)} {split} {intent}", seed)
    fig.tight_layout()
    logger.info("figure 4: %d pairs, %d templates of %s (%s)", len(chosen), len(templates), intent, split)
    return fig


def template_sample(
    utterances: pd.DataFrame,
    masked: pd.DataFrame,
    locale: str,
    ids: Mapping[str, Sequence[str]],
    split: str,
    intent: str,
    n_templates: int,
    per_template: int,
    seed: int,
) -> tuple[str, pd.DataFrame]:
    """Figure 4(c)'s utterances: ``per_template`` utterances of each of up to ``n_templates`` templates of one intent.

    A template is an utterance's template-masked text (slot values replaced); only utterances of
    the pair's ``split`` (``ids[split]``) count. ``intent: auto`` takes the intent with the most
    templates that have ``per_template`` utterances (ties: more utterances, then the name), so the
    default always draws a picture whatever the data.

    Returns:
        ``(intent, rows)``: rows with ``id``, ``utt`` and ``template``, grouped by template.

    Raises:
        ValueError: A bad ``split``, or fewer than two templates with ``per_template`` utterances
            (naming the ``fmda.figure`` parameters to change).
    """
    if split not in ids:
        raise ValueError(f"fmda.figure.split must be one of {sorted(ids)}, got {split!r}")
    if n_templates < 2 or per_template < 1:
        raise ValueError(
            f"fmda.figure.n_templates must be >= 2 and per_template >= 1, got {n_templates}, {per_template}"
        )
    known = set(ids[split])
    rows = utterances[
        (utterances["locale"] == locale) & (utterances["partition"] == split) & utterances["id"].isin(known)
    ]
    templates = masked[(masked["locale"] == locale) & (masked["partition"] == split)].set_index("id")["template_text"]
    rows = rows.assign(template=templates.reindex(rows["id"]).to_numpy()).dropna(subset=["template"])
    sizes = rows.groupby(["intent", "template"]).size()
    usable = sizes[sizes >= per_template]
    if intent == "auto":
        if usable.empty:
            raise ValueError(
                f"fmda.figure: no intent of {locale} {split} has a template with per_template={per_template} "
                "utterances; lower fmda.figure.per_template or choose another split"
            )
        score = usable.groupby(level="intent").agg(["size", "sum"])
        intent = sorted(score.index, key=lambda t: (-score.loc[t, "size"], -score.loc[t, "sum"], t))[0]
    intent = str(intent)
    if intent not in usable.index.get_level_values("intent") or len(usable.loc[intent]) < 2:
        have = int(len(usable.loc[intent])) if intent in usable.index.get_level_values("intent") else 0
        raise ValueError(
            f"fmda.figure.intent {intent!r} has {have} template(s) with per_template={per_template} "
            f"utterances in the {locale} {split} split; the figure needs 2 or more: set fmda.figure.intent "
            "to auto, lower per_template or choose another split"
        )
    # the templates with the most utterances first (ties by text), then per_template of each, seeded
    chosen = sorted(usable.loc[intent].index, key=lambda t: (-usable.loc[intent][t], t))[:n_templates]
    mine = rows[rows["intent"] == intent]
    picked = [mine[mine["template"] == t].sample(per_template, random_state=seed) for t in chosen]
    return intent, pd.concat(picked)[["id", "utt", "template"]].reset_index(drop=True)


def plot_meaning_language(
    manifest: Mapping[str, Any], test: pd.DataFrame, head: Mapping[str, Any], params: Mapping[str, Any]
) -> Any:
    """PCA of one head's meaning and language embeddings of an evaluation pair's sentences (SEED Fig. 1, DREAM Fig. 5).

    Args:
        manifest: The embedded test columns.
        test: The evaluation table.
        head: A trained head (SEED in the paper's figure).
        params: ``<pipeline>.figure``: ``pair``, ``n_pairs``, ``seed``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.decomposition import PCA

    pair = str(params["pair"])
    index = test.index[test["pair"] == pair].to_numpy()
    if not len(index):
        raise ValueError(f"figure.pair {pair!r} is not an evaluation pair; have {sorted(test['pair'].unique())}")
    rng = np.random.default_rng(int(params.get("seed", 0)))
    index = np.sort(rng.permutation(index)[: int(params.get("n_pairs", 1000))])
    method, model = load_trained(head)
    sides = []
    with torch.no_grad():
        for column in ("text1", "text2"):
            encoded = method.encode(
                model, torch.from_numpy(vectors_of(manifest, f"test.{column}", head["pooling"])[index])
            )
            sides.append((encoded["meaning"], encoded["language"]))
    langs = (test.loc[index[0], "lang1"], test.loc[index[0], "lang2"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5))
    for ax, k, title in ((axes[0], 0, "meaning"), (axes[1], 1, "language")):
        points = PCA(n_components=2, random_state=0).fit_transform(
            np.concatenate([sides[0][k].numpy(), sides[1][k].numpy()])
        )
        ax.scatter(*points[: len(index)].T, s=4, alpha=0.6, label=f"{langs[0]} (column 1)")
        ax.scatter(*points[len(index) :].T, s=4, alpha=0.6, label=f"{langs[1]} (column 2)")
        ax.set_title(f"{head['method']} {title} embeddings, {len(index)} {pair} pairs (PCA)")
        ax.legend()
    fig.tight_layout()
    return fig


def figure_sample(
    intents: Mapping[str, Sequence[str]], ids: Mapping[str, Sequence[str]], n_intents: int, per_intent: int, seed: int
) -> dict[str, np.ndarray]:
    """Rows of each locale's test set for EMU's Figure 2: the same MASSIVE ids in every locale.

    The ``n_intents`` intents most frequent among the ids every locale has (ties by name), and
    up to ``per_intent`` ids of each, seeded; every locale's rows are those ids' positions.
    """
    locales = list(ids)
    common = set(ids[locales[0]]).intersection(*(set(ids[loc]) for loc in locales[1:]))
    intent_of = {i: str(t) for i, t in zip(ids[locales[0]], intents[locales[0]]) if i in common}
    counts = pd.Series(intent_of).value_counts()
    chosen = sorted(counts.index, key=lambda t: (-counts[t], t))[:n_intents]
    rng = np.random.default_rng(seed)
    picked: list[str] = []
    for intent in chosen:
        members = sorted(i for i, t in intent_of.items() if t == intent)
        picked += list(rng.choice(members, size=min(per_intent, len(members)), replace=False))
    return {loc: np.array([list(ids[loc]).index(i) for i in picked], dtype=np.int64) for loc in locales}


def plot_intent_tsne(panels: Mapping[str, Mapping[str, Any]], params: Mapping[str, Any]) -> Any:
    """EMU's Figure 2: t-SNE of the test sentences of two (or more) locales, one panel per method, colour = intent.

    Args:
        panels: ``{method: {locale: LocaleSet}}`` (vectors, ids, intents of each locale's test
            split), in panel order; every method has the same locales.
        params: ``emu.figure``: ``n_intents``, ``per_intent``, ``seed``.

    Returns:
        A matplotlib figure; markers distinguish the locales (○ the first, × the second, as the paper).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.manifold import TSNE

    if not panels:
        raise ValueError("emu.figure: no method to plot")
    seed = int(params.get("seed", 0))
    first = next(iter(panels.values()))
    locales = list(first)
    rows = figure_sample(
        {loc: first[loc].intents for loc in locales},
        {loc: first[loc].ids for loc in locales},
        int(params.get("n_intents", 10)),
        int(params.get("per_intent", 20)),
        seed,
    )
    labels = np.asarray(first[locales[0]].intents, dtype=object)[rows[locales[0]]]
    intents = sorted(set(labels), key=list(labels).index)
    colours = plt.get_cmap("tab10" if len(intents) <= 10 else "tab20")
    markers = ["o", "x", "^", "s", "+"]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 5.5), squeeze=False)
    n = len(labels)
    for ax, (name, sets) in zip(axes[0], panels.items()):
        both = np.concatenate([np.asarray(sets[loc].vectors)[rows[loc]] for loc in locales])
        points = TSNE(random_state=seed, init="pca", perplexity=min(30.0, len(both) - 1.0)).fit_transform(both)
        for k in range(len(locales)):
            part = points[k * n : (k + 1) * n]
            for c, intent in enumerate(intents):
                where = labels == intent
                marker, colour = markers[k % len(markers)], colours(c % colours.N)
                style = {"facecolors": "none", "edgecolors": [colour]} if marker == "o" else {"c": [colour]}
                ax.scatter(*part[where].T, s=14, marker=marker, label=intent if k == 0 else None, **style)
        ax.set_title(f"{name}: {' ○ / × '.join(locales)}")
        ax.set_xticks([]), ax.set_yticks([])
    axes[0][-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    logger.info("EMU figure 2: %d methods, %d sentences per locale, %d intents", len(panels), n, len(intents))
    return fig


def parallel_intent_sample(
    rows: pd.DataFrame, locales: Sequence[str], intent: str, n: int, seed: int, source: str
) -> list[str]:
    """LAJ-MCL Figure 3's utterances: ``n`` parallel test utterances of one intent, the same MASSIVE ids
    in every locale.

    The ids of ``source``'s test utterances of ``intent`` that every locale of ``locales`` has
    in its test split with the same intent; ``n`` of them drawn with ``seed`` (all if fewer), sorted.

    Args:
        rows: SLU rows (``locale, id, partition, intent``).
        locales: The figure's locales.
        intent: ``slu.figure.intent``.
        n: ``slu.figure.n_utterances`` (the paper's 100).
        seed: ``slu.figure.seed``.
        source: The locale whose test split is sampled (the training locale).

    Raises:
        ValueError: no such utterance, or a locale without test rows, naming the parameter.
    """
    test = rows[rows["partition"] == "test"]
    ids = None
    for locale in dict.fromkeys([source, *locales]):
        mine = test[(test["locale"] == locale) & (test["intent"] == intent)]
        if not (test["locale"] == locale).any():
            raise ValueError(f"slu.figure.locales: {locale!r} has no test utterances here")
        ids = set(mine["id"].astype(str)) if ids is None else ids & set(mine["id"].astype(str))
    common = sorted(ids or (), key=lambda i: (len(i), i))
    if not common:
        raise ValueError(
            f"slu.figure.intent {intent!r}: no test utterance of that intent in every one of {list(locales)}"
        )
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(common), size=min(int(n), len(common)), replace=False)
    return [common[i] for i in sorted(picked)]


def plot_parallel_tsne(panels: Mapping[str, Mapping[str, np.ndarray]], params: Mapping[str, Any]) -> Any:
    """LAJ-MCL Figure 3: t-SNE of the ``[CLS]`` vectors of parallel utterances of one intent, one panel per
    method, one colour per locale (the same utterances in every panel and locale).

    Args:
        panels: ``{method: {locale: vectors (n, D)}}`` in panel order, row ``i`` the same utterance in every locale.
        params: ``slu.figure``: ``intent``, ``seed``.

    Returns:
        A matplotlib figure.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.manifold import TSNE

    if not panels:
        raise ValueError("slu.figure: no method to plot")
    seed = int(params.get("seed", 0))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 5), squeeze=False)
    colours = plt.get_cmap("tab10")
    for ax, (name, sets) in zip(axes[0], panels.items()):
        locales = list(sets)
        both = np.concatenate([np.asarray(sets[loc], dtype=np.float32) for loc in locales])
        points = TSNE(random_state=seed, init="pca", perplexity=min(30.0, len(both) - 1.0)).fit_transform(both)
        start = 0
        for k, loc in enumerate(locales):
            n = len(sets[loc])
            ax.scatter(*points[start : start + n].T, s=8, color=colours(k % colours.N), label=loc)
            start += n
        ax.set_title(f"{name}: {len(sets[locales[0]])} utterances × {len(locales)} locales")
        ax.set_xticks([]), ax.set_yticks([])
    axes[0][-1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle(f"[CLS] of parallel test utterances of {params.get('intent')} (t-SNE)")
    fig.tight_layout()
    logger.info("slu figure 3: %d methods, %d locales", len(panels), len(next(iter(panels.values()))))
    return fig
