"""Nodes shared by the ``qe`` and ``sts`` pipelines: disentangle meaning from language, judge by Pearson.

Both pipelines do the same thing on different data (DREAM §4, SEED §3): read the evaluation
sets (WMT20 QE, SemEval-2017 STS), build a parallel training corpus that shares no sentence
with any evaluation set, embed everything once with the frozen encoder, train mean centering,
DREAM, MEAT and SEED multilingually on all pairs together (early stopping on the validation
split only), and score ``Pearson(cos(meaning_1, meaning_2), gold)`` per evaluation pair. Only
the corpus readers differ (``pipelines/qe`` and ``pipelines/sts``).

Every evaluation set is normalised to one table (:data:`EVAL_COLUMNS`), so scoring, leakage
probes, reports and plots are written once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from kedro.pipeline import Pipeline, node
from tqdm.auto import tqdm

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog
from language_agnostic.corpora.parallel import clean_pairs, laser_tatoeba_files, train_validation_split
from language_agnostic.corpora.sts17 import TRACKS, read_sts_track
from language_agnostic.corpora.wmt_qe import QE_PAIRS, qe_member, read_qe_tsv
from language_agnostic.datasets.archive import ArchiveMembers
from language_agnostic.encoders.extraction import EmbeddingStore, extract_embeddings
from language_agnostic.encoders.loading import LoadedEncoder
from language_agnostic.evaluation.correlation import paired_cosine, pearson
from language_agnostic.evaluation.leakage import language_probe_accuracy
from language_agnostic.methods.centering import center, fit_language_means
from language_agnostic.methods.registry import build, build_spec, get_method, load_trained
from language_agnostic.pipelines.embeddings.nodes import extraction_settings
from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.project_config import bind, load_parameters, settings_from_params
from language_agnostic.reporting.similarity import similarity_markdown
from language_agnostic.pipelines.tracking import log_child_metrics, log_child_run, metric_key
from language_agnostic.training.data import InterleavedBatches, QuadrupletBatches
from language_agnostic.training.loop import TrainSettings, history_metrics, train

logger = logging.getLogger(__name__)

EVAL_COLUMNS = ["dataset", "pair", "lang1", "lang2", "text1", "text2", "gold"]
CORPUS_COLUMNS = ["pair", "source_lang", "target_lang", "source", "target", "origin"]
REJECT_COLUMNS = ["source", "line", "key", "kind", "reason", "content"]
TRAINED_METHODS = ("dream", "meat", "seed")
STS_DEFAULT_TRACKS = ("ar-en", "es-en", "tr-en", "ar-ar", "es-es", "en-en")
Members = Mapping[str, Callable[[], str]]


def read_member(archive: Members, member: str, what: str) -> str:
    if member not in archive:
        source = getattr(archive, "source", "the archive")
        raise CorpusFormatError(f"{source}: no member {member!r} ({what}); it has {sorted(archive)[:8]}...")
    return archive[member]()


def _rejects_frame(rejects: RejectLog) -> pd.DataFrame:
    return pd.DataFrame(rejects.rows, columns=REJECT_COLUMNS).astype({"line": "Int64"})


# ---------------------------------------------------------------- evaluation sets


def ingest_qe_test(params: Mapping[str, Any], *archives: ArchiveMembers) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The WMT20 QE test sets (gold ``z_mean``) as one evaluation table.

    Args:
        params: ``qe.test``: ``pairs`` (order of ``archives``) and ``on_bad_row`` (``error`` | ``skip``).
        *archives: One ``<pair>_test.tar.gz`` per pair.

    Returns:
        ``(table, rejects, counts)``: the rows (:data:`EVAL_COLUMNS`), the rejected rows, and
        ``{pair: {rows_in, rows_out, rejected}}``.
    """
    pairs = [str(p) for p in params.get("pairs", QE_PAIRS)]
    if len(pairs) != len(archives):
        raise ValueError(f"qe.test.pairs lists {len(pairs)} pairs but {len(archives)} archives were given")
    rejects = RejectLog(str(params.get("on_bad_row", "error")))
    tables, counts = [], {}
    for pair, archive in zip(pairs, archives):
        member = qe_member(pair)
        text = read_member(archive, member, f"WMT20 QE test set of {pair}")
        before = len(rejects.rows)
        rows = read_qe_tsv(text, f"{getattr(archive, 'source', pair)}:{member}", pair, rejects)
        n_in = sum(1 for line in text.split("\n")[1:] if line.strip())
        counts[pair] = {"rows_in": n_in, "rows_out": len(rows), "rejected": len(rejects.rows) - before}
        tables.append(pd.DataFrame({"dataset": "wmt20_qe_test", "pair": pair,
                                    "lang1": [r["source_lang"] for r in rows], "lang2": [r["target_lang"] for r in rows],
                                    "text1": [r["source"] for r in rows], "text2": [r["translation"] for r in rows],
                                    "gold": [r["z_mean"] for r in rows]}))
    logger.info("WMT20 QE test sets: %s", counts)
    return pd.concat(tables, ignore_index=True)[EVAL_COLUMNS], _rejects_frame(rejects), counts


def ingest_sts_test(params: Mapping[str, Any], inputs: ArchiveMembers, gold: ArchiveMembers
                    ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The SemEval-2017 STS tracks (gold 0-5) as one evaluation table.

    Args:
        params: ``sts.test``: ``tracks`` (keys of ``corpora.sts17.TRACKS``; ``es-en`` is track
            4a) and ``on_bad_row``.
        inputs: ``Sts2017.eval.v1.1.zip``.
        gold: ``Sts2017.gs.zip``.

    Returns:
        ``(table, rejects, counts)``; ``counts[track]`` has ``input_lines`` (500 for tr-en, whose
        gold covers the first 250), ``gold_lines``, ``rows_out`` and ``rejected``.
    """
    rejects = RejectLog(str(params.get("on_bad_row", "error")))
    tables, counts = [], {}
    for name in params.get("tracks", STS_DEFAULT_TRACKS):
        if name not in TRACKS:
            raise ValueError(f"sts.test.tracks: unknown track {name!r}; known: {sorted(TRACKS)}")
        track = TRACKS[name]
        input_text = read_member(inputs, track.input_member, f"STS17 input of {name}")
        gold_text = read_member(gold, track.gold_member, f"STS17 gold of {name}")
        before = len(rejects.rows)
        rows = read_sts_track(input_text, gold_text, track, getattr(inputs, "source", "sts17"), rejects)
        counts[name] = {"input_lines": len(input_text.rstrip("\n").split("\n")),
                        "gold_lines": len(gold_text.rstrip("\n").split("\n")),
                        "rows_out": len(rows), "rejected": len(rejects.rows) - before}
        tables.append(pd.DataFrame({"dataset": "sts17", "pair": name, "lang1": track.first, "lang2": track.second,
                                    "text1": [r["sentence1"] for r in rows], "text2": [r["sentence2"] for r in rows],
                                    "gold": [r["score"] for r in rows]}))
    logger.info("STS17 tracks: %s", counts)
    return pd.concat(tables, ignore_index=True)[EVAL_COLUMNS], _rejects_frame(rejects), counts


def laser_tatoeba_sentences(files: Members, languages: str | Sequence[str]) -> list[str]:
    """Every sentence (both sides) of the LASER Tatoeba test sets of ``languages`` (``"all"``: every file)."""
    if languages == "all":
        names = sorted(files)
        if not names:
            raise CorpusFormatError("the LASER Tatoeba folder (tatoeba/v1) holds no files")
    else:
        names = [name for lang in languages for name in laser_tatoeba_files(str(lang))]
    sentences = []
    for name in names:
        if name not in files:
            raise CorpusFormatError(f"LASER Tatoeba test file {name!r} not found under tatoeba/v1")
        sentences += [line for line in files[name]().split("\n") if line.strip()]
    return sentences


# ---------------------------------------------------------------- training corpus


def clean_and_split(candidates: pd.DataFrame, qe_test: pd.DataFrame, sts_test: pd.DataFrame, laser: Members,
                    params: Mapping[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Deduplicate each pair's candidates, drop test overlap, split 90/10 (seeded).

    A pair is dropped when its source or target appears (after NFKC, case folding and space
    normalisation) in any QE or STS test set or any LASER Tatoeba test set of
    ``params["laser_tatoeba"]``.

    Args:
        candidates: :data:`CORPUS_COLUMNS` rows from a corpus reader.
        qe_test: The QE evaluation table.
        sts_test: The STS evaluation table.
        laser: The LASER Tatoeba files (``tatoeba/v1``, a partitioned dataset).
        params: ``validation_fraction``, ``seed``, ``laser_tatoeba`` (``all`` or 3-letter codes).

    Returns:
        ``(corpus, sizes)``: the kept pairs with a ``split`` column, and per pair the counts
        ``in, empty, duplicate, test_overlap, out, train, validation``.
    """
    banned = [*qe_test["text1"], *qe_test["text2"], *sts_test["text1"], *sts_test["text2"],
              *laser_tatoeba_sentences(laser, params.get("laser_tatoeba", "all"))]
    fraction, seed = float(params.get("validation_fraction", 0.1)), int(params.get("seed", 0))
    parts, sizes = [], []
    for pair, rows in candidates.groupby("pair", sort=False):
        kept, counts = clean_pairs(list(zip(rows["source"], rows["target"])), banned)
        train_part, validation = train_validation_split(kept, fraction, seed)
        sizes.append({"pair": pair, **counts, "train": len(train_part), "validation": len(validation)})
        first = rows.iloc[0]
        for split, chosen in (("train", train_part), ("validation", validation)):
            parts.append(pd.DataFrame({"pair": pair, "source_lang": first["source_lang"], "target_lang": first["target_lang"],
                                       "source": [s for s, _ in chosen], "target": [t for _, t in chosen], "split": split}))
    table = pd.DataFrame(sizes)
    logger.info("training corpus:\n%s", table.to_string(index=False))
    return pd.concat(parts, ignore_index=True), table


# ---------------------------------------------------------------- embeddings


def embed_similarity_inputs(corpus: pd.DataFrame, test: pd.DataFrame, encoder: LoadedEncoder, store: EmbeddingStore,
                            extraction: Mapping[str, Any]) -> dict[str, Any]:
    """Sentence vectors (both poolings) of the corpus splits and both test columns, via the cache.

    Returns:
        A manifest with ``sets``: ``train.source``, ``train.target``, ``validation.source``,
        ``validation.target``, ``test.text1``, ``test.text2`` (rows in table order).
    """
    settings = extraction_settings(extraction)
    jobs = [(f"{split}.{side}", corpus.loc[corpus["split"] == split, side].tolist())
            for split in ("train", "validation") for side in ("source", "target")]
    jobs += [(f"test.{column}", test[column].tolist()) for column in ("text1", "text2")]
    sets = {name: extract_embeddings(encoder, texts, settings, store) for name, texts in tqdm(jobs, desc="embedding sets")}
    return {"sets": sets, "sizes": {name: len(texts) for name, texts in jobs}}


def _vectors(manifest: Mapping[str, Any], name: str, pooling: str) -> np.ndarray:
    return np.asarray(manifest["sets"][name].vectors(pooling), dtype=np.float32)


# ---------------------------------------------------------------- training


def corpus_languages(corpus: pd.DataFrame) -> list[str]:
    """The languages of the corpus, sorted: index = language id of every head."""
    return sorted(set(corpus["source_lang"]) | set(corpus["target_lang"]))


def fit_centering(manifest: Mapping[str, Any], corpus: pd.DataFrame, pooling: str) -> dict[str, Any]:
    """Per-language means of the training split (both sides), for mean centering."""
    train_rows = corpus[corpus["split"] == "train"]
    vectors = np.concatenate([_vectors(manifest, "train.source", pooling), _vectors(manifest, "train.target", pooling)])
    means = fit_language_means(vectors, [*train_rows["source_lang"], *train_rows["target_lang"]])
    return {"state_dict": {lang: torch.from_numpy(m.astype(np.float32)) for lang, m in means.items()},
            "method": "centering", "pooling": pooling}


def _batches(manifest: Mapping[str, Any], corpus: pd.DataFrame, split: str, pooling: str, languages: list[str],
             batch_size: int, shuffle: bool) -> InterleavedBatches:
    """One quadruplet source per language pair, so that partners s', t' share the language of s, t."""
    rows = corpus[corpus["split"] == split].reset_index(drop=True)
    source, target = _vectors(manifest, f"{split}.source", pooling), _vectors(manifest, f"{split}.target", pooling)
    if len(source) != len(rows):
        raise ValueError(f"{split}: {len(source)} embeddings for {len(rows)} corpus rows; re-run the embedding node")
    sources = []
    for _, part in rows.groupby("pair", sort=True):
        index = part.index.to_numpy()
        ids = [np.full(len(index), languages.index(part[c].iloc[0])) for c in ("source_lang", "target_lang")]
        sources.append(QuadrupletBatches(source[index], target[index], ids[0], ids[1], batch_size, shuffle=shuffle))
    return InterleavedBatches(sources)


def head_options(method: str, activation: str) -> dict[str, Any]:
    """The registry options of a QE/STS head: DREAM's ``activation``; the others take none."""
    if method not in TRAINED_METHODS:
        raise ValueError(f"unknown method {method!r}; known: {list(TRAINED_METHODS)}")
    return {"activation": activation} if "activation" in get_method(method).options else {}


def train_head(manifest: Mapping[str, Any], corpus: pd.DataFrame, spec: Mapping[str, Any], training: Mapping[str, Any],
               pooling: str, method: str = "seed", pipeline: str = "qe", name: str | None = None
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Train one method on every pair together; keep the weights of the best validation epoch.

    Args:
        manifest: From :func:`embed_similarity_inputs`.
        corpus: The split corpus (languages and pairs of each row).
        spec: ``<pipeline>.methods.<method>``: ``loss_weights``, ``activation`` (DREAM) and
            ``training`` overrides (``lr``, ``patience``, ...).
        training: ``<pipeline>.training``: ``TrainSettings`` fields and ``batch_size``.
        pooling: Which sentence vector the heads read (``mean`` | ``cls``).
        method: ``dream`` | ``meat`` | ``seed``.
        pipeline: For run names and metric keys.
        name: The head's name in rows, runs and reports (default: ``method``; an ablation's
            name otherwise).

    Returns:
        ``(model, history)``: weights and metadata, and per-epoch losses for MLflow.
    """
    name = name or method
    params = {**dict(training), **dict(spec.get("training") or {})}
    batch_size = int(params.pop("batch_size", 512))
    settings = settings_from_params(TrainSettings, params, f"{pipeline}.training")
    languages = corpus_languages(corpus)
    activation = str(spec.get("activation", "none"))
    torch.manual_seed(settings.seed)
    options, weights = head_options(method, activation), dict(spec.get("loss_weights") or {})
    dim = manifest["sets"]["train.source"].dim
    model = build(method, dim, len(languages), options)
    result = train(model, lambda m, b: get_method(method).losses(m, b, weights, options),
                   _batches(manifest, corpus, "train", pooling, languages, batch_size, True),
                   _batches(manifest, corpus, "validation", pooling, languages, batch_size, False), settings)
    logger.info("%s %s: best validation epoch %d of %d", pipeline, name, result.best_epoch, result.epochs_run)
    run_id = log_child_run(f"{pipeline}/{name}", {"method": method, "pooling": pooling, **dict(spec), **params,
                                                  "batch_size": batch_size}, result.history)
    trained = {"state_dict": result.state_dict, "build": build_spec(method, dim, len(languages), options),
               "method": method, "name": name, "languages": languages,
               "pooling": pooling, "activation": activation, "loss_weights": dict(spec.get("loss_weights") or {}),
               "best_epoch": result.best_epoch, "epochs_run": result.epochs_run, "mlflow_run_id": run_id}
    return trained, history_metrics(result.history, f"{pipeline}.{name}")


def check_ablations(ablations: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Validate ``<pipeline>.ablations``: ``{name: {method, loss_weights}}`` (SEED Table 5, DREAM Table 6).

    Raises:
        ValueError: A name that clashes with a method or the baselines, an unknown method, or
            no loss weight changed.
    """
    out: dict[str, dict[str, Any]] = {}
    for name, spec in dict(ablations or {}).items():
        spec = dict(spec or {})
        if name in (*TRAINED_METHODS, "raw", "centering") or not name.replace("_", "").isalnum():
            raise ValueError(f"ablation name {name!r} must be a new identifier (letters, digits, _), not a method name")
        if spec.get("method") not in TRAINED_METHODS:
            raise ValueError(f"ablation {name!r}: method must be one of {list(TRAINED_METHODS)}, got {spec.get('method')!r}")
        if not spec.get("loss_weights"):
            raise ValueError(f"ablation {name!r}: give the loss_weights it changes (e.g. {{meaning: 0}})")
        out[name] = {"method": str(spec["method"]), "loss_weights": {str(k): float(v) for k, v in dict(spec["loss_weights"]).items()}}
    return out


def train_ablation(manifest: Mapping[str, Any], corpus: pd.DataFrame, spec: Mapping[str, Any], ablation: Mapping[str, Any],
                   training: Mapping[str, Any], pooling: str, name: str, pipeline: str = "qe"
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A method retrained with the ablation's loss weights over its own (``spec``); otherwise as :func:`train_head`."""
    weights = {**dict(spec.get("loss_weights") or {}), **dict(ablation["loss_weights"])}
    return train_head(manifest, corpus, {**dict(spec), "loss_weights": weights}, training, pooling,
                      method=str(ablation["method"]), pipeline=pipeline, name=name)


# ---------------------------------------------------------------- evaluation


Encoded = dict[tuple[str, str], np.ndarray]  # (method, embedding) -> vectors


def head_name(head: Mapping[str, Any]) -> str:
    """A trained head's name in rows and reports: its ablation name, else its method (older files have no name)."""
    return str(head.get("name", head["method"]))


def encode_all(vectors: Mapping[str, np.ndarray], languages: Sequence[str], centering: Mapping[str, Any],
               heads: Sequence[Mapping[str, Any]]) -> Encoded:
    """Raw, centred and every head's meaning and language embeddings of one set of sentences.

    Args:
        vectors: ``{"cls": ..., "mean": ...}`` raw sentence vectors.
        languages: Each row's language (for centering).
        centering: From :func:`fit_centering`.
        heads: Trained heads from :func:`train_head`.
    """
    out: Encoded = {("raw", "cls"): vectors["cls"], ("raw", "mean"): vectors["mean"]}
    pooling = centering["pooling"]
    means = {lang: m.numpy() for lang, m in centering["state_dict"].items()}
    out[("centering", pooling)] = center(vectors[pooling], languages, means)
    for head in heads:
        method, model = load_trained(head)
        with torch.no_grad():
            encoded = method.encode(model, torch.from_numpy(np.asarray(vectors[head["pooling"]], dtype=np.float32)))
        name = head_name(head)
        out[(name, "meaning")], out[(name, "language")] = encoded["meaning"].numpy(), encoded["language"].numpy()
    return out


def _row(pipeline: str, method: str, embedding: str, task: str, dataset: str, source: str, target: str,
         metric: str, value: float, encoder: str) -> dict[str, Any]:
    return {"pipeline": pipeline, "method": method, "embedding": embedding, "task": task, "dataset": dataset,
            "source": source, "target": target, "metric": metric, "value": round(float(value), 6), "encoder": encoder}


def evaluate_similarity(manifest: Mapping[str, Any], test: pd.DataFrame, identity: Mapping[str, Any],
                        report: Mapping[str, Any], centering: Mapping[str, Any], *heads: Mapping[str, Any]) -> pd.DataFrame:
    """Pearson of the cosine of every embedding with the gold scores, per evaluation pair.

    Rows: ``raw/cls``, ``raw/mean``, ``centering/<pooling>`` and ``<method>/meaning`` for each
    head, one per pair (``source``/``target`` = the pair's column languages, ``dataset`` =
    ``<dataset>:<pair>``), metric ``pearson``.
    """
    sides = []
    for column, lang in (("text1", "lang1"), ("text2", "lang2")):
        vectors = {p: _vectors(manifest, f"test.{column}", p) for p in ("cls", "mean")}
        sides.append(encode_all(vectors, test[lang].tolist(), centering, heads))
    rows, encoder = [], str(identity.get("name"))
    task, pipeline = str(report["task"]), str(report["pipeline"])
    for (method, embedding), first in sides[0].items():
        if embedding == "language":
            continue
        cosine = paired_cosine(first, sides[1][(method, embedding)])
        for pair, part in test.groupby("pair", sort=False):
            index = part.index.to_numpy()
            rows.append(_row(pipeline, method, embedding, task, f"{part['dataset'].iloc[0]}:{pair}", part["lang1"].iloc[0],
                             part["lang2"].iloc[0], "pearson", pearson(cosine[index], part["gold"].to_numpy()), encoder))
    table = pd.DataFrame(rows)
    for head in heads:
        log_child_metrics(head.get("mlflow_run_id"), table[table["method"] == head_name(head)])
    return table


def _probe_sample(manifest: Mapping[str, Any], corpus: pd.DataFrame, split: str, per_language: int, seed: int
                  ) -> tuple[dict[str, np.ndarray], list[str]]:
    """Up to ``per_language`` sentences per language from both sides of a corpus split (seeded)."""
    rows = corpus[corpus["split"] == split].reset_index(drop=True)
    langs = np.concatenate([rows["source_lang"].to_numpy(), rows["target_lang"].to_numpy()])
    rng = np.random.default_rng(seed)
    chosen = np.sort(np.concatenate([rng.permutation(np.flatnonzero(langs == lang))[:per_language] for lang in np.unique(langs)]))
    vectors = {p: np.concatenate([_vectors(manifest, f"{split}.source", p), _vectors(manifest, f"{split}.target", p)])[chosen]
               for p in ("cls", "mean")}
    return vectors, langs[chosen].tolist()


def language_leakage(manifest: Mapping[str, Any], corpus: pd.DataFrame, identity: Mapping[str, Any],
                     report: Mapping[str, Any], leakage: Mapping[str, Any], centering: Mapping[str, Any],
                     *heads: Mapping[str, Any]) -> pd.DataFrame:
    """Language-ID accuracy of a logistic-regression probe on each embedding (trained on train, scored on validation).

    Low on meaning embeddings = little language left in them; high on language embeddings =
    the language went where it belongs. The raw and centred vectors give the reference points.
    """
    seed = int(leakage.get("seed", 0))
    train_vectors, train_langs = _probe_sample(manifest, corpus, "train", int(leakage.get("train_per_language", 1000)), seed)
    test_vectors, test_langs = _probe_sample(manifest, corpus, "validation", int(leakage.get("test_per_language", 500)), seed)
    fitted = encode_all(train_vectors, train_langs, centering, heads)
    scored = encode_all(test_vectors, test_langs, centering, heads)
    rows, encoder = [], str(identity.get("name"))
    for key in tqdm(list(fitted), desc="language probes"):
        accuracy = language_probe_accuracy(fitted[key], train_langs, scored[key], test_langs, seed=seed,
                                           max_iter=int(leakage.get("max_iter", 2000)))
        rows.append(_row(str(report["pipeline"]), key[0], key[1], "language_leakage", f"{report['pipeline']}_corpus:validation",
                         "all", "all", "probe_accuracy", accuracy, encoder))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- reports


def report_similarity(report: Mapping[str, Any], ablations: Mapping[str, Any] | None, sizes: pd.DataFrame,
                      ingest: Mapping[str, Any], *tables: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any], str]:
    """The metrics-table rows, MLflow metrics and the markdown report in the papers' layouts.

    Args:
        report: ``<pipeline>.report``: ``pipeline``, ``title``, ``tables`` (``{title: [pairs]}``:
            one Pearson table each, e.g. SEED Table 1), ``ablation_tables`` (``{method: title}``,
            e.g. SEED Table 5 over the first table's pairs) and ``paper_corpus_sizes``
            (``{paper: {pair: size}}``).
        ablations: ``<pipeline>.ablations`` (see :func:`check_ablations`).
        sizes: From :func:`clean_and_split`.
        ingest: The evaluation set's ingestion counts.
        *tables: Row tables from :func:`evaluate_similarity` and :func:`language_leakage`.
    """
    ablations = check_ablations(ablations)
    rows = pd.concat(tables, ignore_index=True)
    metrics = {metric_key(r): {"value": float(r.value), "step": 0} for r in rows.itertuples()}
    for pair, counts in ingest.items():
        for name, value in counts.items():
            metrics[f"{report['pipeline']}.ingest.{pair}.{name}".replace("-", "_")] = {"value": float(value), "step": 0}
    return rows, metrics, similarity_markdown(report, ablations, rows, sizes, ingest)


def plot_meaning_language(manifest: Mapping[str, Any], test: pd.DataFrame, head: Mapping[str, Any],
                          params: Mapping[str, Any]) -> Any:
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
            encoded = method.encode(model, torch.from_numpy(_vectors(manifest, f"test.{column}", head["pooling"])[index]))
            sides.append((encoded["meaning"], encoded["language"]))
    langs = (test.loc[index[0], "lang1"], test.loc[index[0], "lang2"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5))
    for ax, k, title in ((axes[0], 0, "meaning"), (axes[1], 1, "language")):
        points = PCA(n_components=2, random_state=0).fit_transform(np.concatenate([sides[0][k].numpy(), sides[1][k].numpy()]))
        ax.scatter(*points[: len(index)].T, s=4, alpha=0.6, label=f"{langs[0]} (column 1)")
        ax.scatter(*points[len(index):].T, s=4, alpha=0.6, label=f"{langs[1]} (column 2)")
        ax.set_title(f"{head['method']} {title} embeddings, {len(index)} {pair} pairs (PCA)")
        ax.legend()
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- pipeline assembly


def configured(pipeline: str, key: str, default: Sequence[str]) -> list[str]:
    """``<pipeline>.test.<key>`` from ``conf/`` when pipelines are built (defaults without a project)."""
    params = load_parameters()
    value = ((params.get(pipeline) or {}).get("test") or {}).get(key) if params else None
    return [str(v) for v in (value if value is not None else default)]


def evaluation_sets_pipeline(qe_pairs: Sequence[str] | None = None) -> Pipeline:
    """Ingest every evaluation set (QE and STS): both pipelines need both, for overlap removal."""
    qe_pairs = configured("qe", "pairs", QE_PAIRS) if qe_pairs is None else list(qe_pairs)
    return Pipeline([
        node(ingest_qe_test, inputs=["params:qe.test", *[f"wmt20_qe_test_{p}" for p in qe_pairs]],
             outputs=["qe_test_pairs", "qe_test_rejects", "qe_test_counts"], name="ingest_qe_test_node"),
        node(ingest_sts_test, inputs=["params:sts.test", "sts17_input_archive", "sts17_gold_archive"],
             outputs=["sts_test_pairs", "sts_test_rejects", "sts_test_counts"], name="ingest_sts_test_node"),
    ])


def create_similarity_pipeline(name: str, candidates: node, qe_pairs: Sequence[str] | None = None,
                               ablations: Mapping[str, Any] | None = None) -> Pipeline:
    """The shared body of ``qe`` and ``sts``: corpus → embed → train → evaluate → report.

    Args:
        name: ``qe`` or ``sts``: prefix of every dataset and parameter group.
        candidates: The node that reads the raw corpus into ``<name>_corpus_candidates``.
        qe_pairs: QE test pairs (default: ``qe.test.pairs`` from ``conf/``).
        ablations: Extra heads, one training node each (default: ``<name>.ablations`` from
            ``conf/``; see :func:`check_ablations`).
    """
    test = f"{name}_test_pairs"
    if ablations is None:
        ablations = (load_parameters().get(name) or {}).get("ablations") or {}
    ablations = check_ablations(ablations)
    models = [f"{name}_{m}_model" for m in (*TRAINED_METHODS, *ablations)]
    nodes_ = [
        candidates,
        node(clean_and_split, inputs=[f"{name}_corpus_candidates", "qe_test_pairs", "sts_test_pairs", "laser_tatoeba",
                                      f"params:{name}.corpus"],
             outputs=[f"{name}_corpus", f"{name}_corpus_sizes"], name=f"clean_and_split_{name}_node"),
        node(embed_similarity_inputs, inputs=[f"{name}_corpus", test, "encoder", "embedding_store", "params:embeddings.extraction"],
             outputs=f"{name}_embeddings", name=f"embed_{name}_inputs_node"),
        node(fit_centering, inputs=[f"{name}_embeddings", f"{name}_corpus", f"params:{name}.pooling"],
             outputs=f"{name}_centering_model", name=f"fit_{name}_centering_node"),
    ]
    for method in TRAINED_METHODS:
        nodes_.append(node(bind(train_head, method=method, pipeline=name),
                           inputs=[f"{name}_embeddings", f"{name}_corpus", f"params:{name}.methods.{method}",
                                   f"params:{name}.training", f"params:{name}.pooling"],
                           outputs=[f"{name}_{method}_model", f"{name}_{method}_history"], name=f"train_{name}_{method}_node"))
    for ablation, spec in ablations.items():
        nodes_.append(node(bind(train_ablation, name=ablation, pipeline=name),
                           inputs=[f"{name}_embeddings", f"{name}_corpus", f"params:{name}.methods.{spec['method']}",
                                   f"params:{name}.ablations.{ablation}", f"params:{name}.training", f"params:{name}.pooling"],
                           outputs=[f"{name}_{ablation}_model", f"{name}_{ablation}_history"],
                           name=f"train_{name}_{ablation}_node"))
    nodes_ += [
        node(evaluate_similarity, inputs=[f"{name}_embeddings", test, "encoder_identity", f"params:{name}.report",
                                          f"{name}_centering_model", *models],
             outputs=f"{name}_pearson_rows", name=f"evaluate_{name}_node"),
        node(language_leakage, inputs=[f"{name}_embeddings", f"{name}_corpus", "encoder_identity", f"params:{name}.report",
                                       f"params:{name}.leakage", f"{name}_centering_model", *models],
             outputs=f"{name}_leakage_rows", name=f"{name}_language_leakage_node"),
        node(report_similarity, inputs=[f"params:{name}.report", f"params:{name}.ablations", f"{name}_corpus_sizes", f"{name}_test_counts",
                                        f"{name}_pearson_rows", f"{name}_leakage_rows"],
             outputs=[f"{name}_metrics_table", f"{name}_metrics", f"{name}_report_markdown"], name=f"report_{name}_node"),
        node(plot_meaning_language, inputs=[f"{name}_embeddings", test, f"{name}_seed_model", f"params:{name}.figure"],
             outputs=f"{name}_figure", name=f"plot_{name}_embeddings_node"),
    ]
    return Pipeline([load_encoder_pipeline(), evaluation_sets_pipeline(qe_pairs), *nodes_], tags=name)
