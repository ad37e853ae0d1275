"""The ``retrieve`` pipeline on a tiny encoder and a tiny FMDA written here: exact neighbours and the errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from language_agnostic.datasets.embeddings import EmbeddingStoreDataset
from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.evaluation.neighbours import exact_top_k, neighbours_table, recall_at_k
from language_agnostic.methods.fmda import encode_with_fmda
from language_agnostic.methods.registry import artifact, build
from language_agnostic.methods.trained import check_encoder, read_artifact, write_artifact
from language_agnostic.pipelines.retrieve import create_pipeline, nodes

EXTRACTION = {"prefix": "", "dtype": "float32", "device": "cpu", "batch_size": 4, "progress": False}
CORPUS = ["weck mich um neun", "spiel jazz musik", "wie ist das wetter", "wake me up at nine", "play some jazz music"]
QUERIES = ["play some jazz music", "", "wake me up at nine"]  # the blank line is skipped; ids are line numbers


def _fmda(identity: dict[str, Any] | None, dim: int = 16) -> dict[str, Any]:
    torch.manual_seed(0)
    options = {
        "ffn_layers": 1,
        "mlp_layers": 1,
        "activation": "gelu",
        "attention_scale": "sqrt_d",
        "utterance_target": "mean",
        "init": "pytorch",
    }
    return {**artifact("fmda", build("fmda", dim, 2, options), dim, 2, options, encoder=identity), "method": "fmda"}


def _files(tmp_path: Path) -> tuple[Path, Path]:
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(QUERIES) + "\n", encoding="utf-8")
    corpus = tmp_path / "corpus.csv"
    pd.DataFrame({"key": [f"c{i}" for i in range(len(CORPUS))], "utt": CORPUS}).to_csv(corpus, index=False)
    return queries, corpus


def _catalog(
    tmp_path: Path, model_dir: Path, model: dict[str, Any], mode: str = "meaning", top_k: int = 3
) -> DataCatalog:
    queries, corpus = _files(tmp_path)
    params = {
        "params:embeddings.encoder": {"name": str(model_dir)},
        "params:embeddings.extraction": EXTRACTION,
        "params:retrieve.queries": {"path": str(queries)},
        "params:retrieve.corpus": {"path": str(corpus), "column": "utt", "id_column": "key"},
        "params:retrieve.model": model,
        "params:retrieve.mode": mode,
        "params:retrieve.raw_pooling": "mean",
        "params:retrieve.top_k": top_k,
        "params:retrieve.search": "exact",
        "params:retrieve.faiss": {},
    }
    return DataCatalog(
        {
            "embedding_store": EmbeddingStoreDataset(str(tmp_path / "store")),
            "encoder": MemoryDataset(copy_mode="assign"),
            "retrieve_model": MemoryDataset(copy_mode="assign"),
            **{name: MemoryDataset(value) for name, value in params.items()},
        }
    )


def _expected(model_dir: Path, tmp_path: Path, saved: dict[str, Any] | None, key: str, top_k: int) -> pd.DataFrame:
    """The neighbours recomputed here: the encoder's token states → FMDA (or the mean vector) → cosine, stable sort."""
    from language_agnostic.methods.registry import load_trained

    encoder = load_encoder(str(model_dir))
    settings = ExtractionSettings(**EXTRACTION, token_states=True)
    store = EmbeddingStore(tmp_path / "check")
    texts = {"q": [QUERIES[0], QUERIES[2]], "c": CORPUS}
    entries = {side: extract_embeddings(encoder, t, settings, store) for side, t in texts.items()}
    if saved is None:
        vectors = {side: np.asarray(e.vectors("mean")) for side, e in entries.items()}
    else:
        model = load_trained(saved)[1]
        vectors = {side: encode_with_fmda(model, e)[key] for side, e in entries.items()}
    unit = {side: v / np.linalg.norm(v, axis=1, keepdims=True) for side, v in vectors.items()}
    rows = []
    for qid, query, q in zip(["1", "3"], texts["q"], unit["q"]):
        sims = unit["c"] @ q
        for rank, j in enumerate(np.argsort(-sims, kind="stable")[:top_k], start=1):
            rows.append([qid, query, rank, f"c{j}", CORPUS[j], round(float(sims[j]), 6)])
    return pd.DataFrame(rows, columns=["query_id", "query", "rank", "corpus_id", "text", "score"])


@pytest.mark.parametrize(("mode", "key"), [("meaning", "m"), ("template", "tp"), ("raw", None)])
def test_retrieve_writes_the_exact_neighbours(tiny_hub_model: Path, tmp_path: Path, mode: str, key: str | None):
    identity = load_encoder(str(tiny_hub_model)).identity
    saved = _fmda(identity)
    path = write_artifact(saved, tmp_path / "fmda.safetensors")
    catalog = _catalog(tmp_path, tiny_hub_model, {"path": str(path)}, mode)
    SequentialRunner().run(create_pipeline(), catalog)
    got = catalog["retrieve_neighbours"].load()
    expected = _expected(tiny_hub_model, tmp_path, None if mode == "raw" else read_artifact(path), key or "", 3)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected, check_dtype=False, atol=1e-5)
    # a query that is in the corpus finds itself first, at cosine 1
    top = got[got["rank"] == 1].set_index("query_id")
    assert top.loc["1", "corpus_id"] == "c4" and top.loc["3", "corpus_id"] == "c3"
    assert top["score"].tolist() == pytest.approx([1.0, 1.0], abs=1e-5)


def test_exact_search_breaks_ties_towards_the_lower_index_and_recall():
    queries = np.array([[1.0, 0.0], [0.0, 1.0]])
    corpus = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [1.0, 1.0]])
    indices, scores = exact_top_k(queries, corpus, 3)
    assert indices.tolist() == [[1, 2, 3], [0, 3, 1]]
    assert np.round(scores.astype(float), 6).tolist() == [[1.0, 1.0, 0.707107], [1.0, 0.707107, 0.0]]
    assert exact_top_k(queries, corpus, 9)[0].shape == (2, 4)  # k larger than the corpus
    assert recall_at_k(np.array([[1, 2, 0], [0, 3, 1]]), indices) == pytest.approx(5 / 6)
    table = neighbours_table(
        pd.DataFrame({"id": ["a", "b"], "text": ["x", "y"]}),
        pd.DataFrame({"id": ["0", "1", "2", "3"], "text": list("pqrs")}),
        indices[:, :1],
        scores[:, :1],
    )
    assert table.values.tolist() == [["a", "x", 1, "1", "q", 1.0], ["b", "y", 1, "0", "p", 1.0]]


def test_the_errors_name_the_file_and_the_parameter(tmp_path: Path):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n   \n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^retrieve.queries: {blank} holds no utterance$"):
        nodes.read_texts({"path": str(blank)}, "retrieve.queries")
    _, corpus = _files(tmp_path)
    with pytest.raises(
        ValueError, match=rf"^retrieve.corpus.column: {corpus} has no column 'text'; its columns: \['key', 'utt'\]$"
    ):
        nodes.read_texts({"path": str(corpus), "column": "text"}, "retrieve.corpus")
    with pytest.raises(
        ValueError,
        match=rf"^retrieve.corpus.column: {corpus} is a CSV file; name the column that holds the utterances$",
    ):
        nodes.read_texts({"path": str(corpus)}, "retrieve.corpus")
    with pytest.raises(ValueError, match=rf"^retrieve.corpus.path: file not found: {tmp_path}/nope.txt$"):
        nodes.read_texts({"path": str(tmp_path / "nope.txt")}, "retrieve.corpus")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=rf"^retrieve.corpus: {empty} is empty$"):
        nodes.read_texts({"path": str(empty), "column": "utt"}, "retrieve.corpus")
    identity = {"name": "tiny", "weights_sha256": "a" * 64, "hidden_size": 16}
    with pytest.raises(
        ValueError,
        match=r"^retrieve.model: give exactly one of path \(a trained model file\) and run_id \(an MLflow run\)$",
    ):
        nodes.load_model({"path": "x", "run_id": "y"}, "meaning", identity)
    with pytest.raises(
        ValueError, match=r"^retrieve.mode must be one of \['meaning', 'template', 'raw'\], got 'sense'$"
    ):
        nodes.load_model({"path": str(write_artifact(_fmda(identity), tmp_path / "m.safetensors"))}, "sense", identity)


def test_a_model_of_another_encoder_is_refused(tmp_path: Path):
    ours = {"name": "tiny", "weights_sha256": "a" * 64, "hidden_size": 16}
    other = {"name": "other", "weights_sha256": "b" * 64, "hidden_size": 16}
    path = write_artifact(_fmda(other), tmp_path / "m.safetensors")
    with pytest.raises(
        ValueError,
        match=(
            rf"^retrieve.model: {path} was trained with encoder 'other' \(weights bbbbbbbbbbbb\), "
            r"but embeddings.encoder.name configures 'tiny' \(weights aaaaaaaaaaaa\); "
            r"configure the encoder it was trained with$"
        ),
    ):
        nodes.load_model({"path": str(path)}, "meaning", ours)
    wide = write_artifact(_fmda(ours, dim=32), tmp_path / "wide.safetensors")
    with pytest.raises(
        ValueError,
        match=(
            rf"^retrieve.model: {wide} was trained on 32-dimensional encoder states, but the "
            r"configured encoder 'tiny' \(embeddings.encoder.name\) gives 16; "
            r"configure the encoder it was trained with$"
        ),
    ):
        nodes.load_model({"path": str(wide)}, "meaning", ours)
    # the same encoder passes; so does a model that records none (only the size is checked, with a warning)
    nodes.load_model({"path": str(write_artifact(_fmda(ours), tmp_path / "ok.safetensors"))}, "meaning", ours)
    check_encoder(_fmda(None), ours, "m", "retrieve.model")


def test_a_model_from_an_mlflow_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import json

    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    mlflow.set_experiment("retrieve_test")  # not an experiment id another test's store left active
    ours = {"name": "tiny", "weights_sha256": "a" * 64, "hidden_size": 16}
    other = {"name": "other", "weights_sha256": "b" * 64, "hidden_size": 16}
    (tmp_path / "encoder.json").write_text(json.dumps(other))
    with mlflow.start_run() as parent:
        mlflow.log_artifact(str(tmp_path / "encoder.json"))
        with mlflow.start_run(nested=True) as child:
            pass
        # trained before models recorded their encoder: traced through the training run's parent
        mlflow.log_artifact(
            str(
                write_artifact(
                    {**_fmda(None), "mlflow_run_id": child.info.run_id}, tmp_path / "fmda_all_together.safetensors"
                )
            )
        )
    try:
        with pytest.raises(ValueError, match=r"^retrieve.model.run_id: no MLflow run '0123456789abcdef' in sqlite:///"):
            nodes.load_model(
                {"run_id": "0123456789abcdef", "artifact": "fmda_all_together.safetensors"}, "meaning", ours
            )
        with pytest.raises(
            ValueError,
            match=(
                rf"^retrieve.model.artifact: MLflow run {parent.info.run_id} has no artifact "
                r"'fmda_x.safetensors'; its .safetensors artifacts: \['fmda_all_together.safetensors'\]$"
            ),
        ):
            nodes.load_model({"run_id": parent.info.run_id, "artifact": "fmda_x.safetensors"}, "meaning", ours)
        with pytest.raises(ValueError, match=r"was trained with encoder 'other' \(weights bbbbbbbbbbbb\)"):
            nodes.load_model(
                {"run_id": parent.info.run_id, "artifact": "fmda_all_together.safetensors"}, "meaning", ours
            )
        loaded = nodes.load_model(
            {"run_id": parent.info.run_id, "artifact": "fmda_all_together.safetensors"}, "meaning", other
        )
        assert loaded["source"] == f"MLflow run {parent.info.run_id} (fmda_all_together.safetensors)"
        assert set(loaded["saved"]["state_dict"]) == set(_fmda(None)["state_dict"])
    finally:
        mlflow.end_run()  # the URI and the experiment: conftest's mlflow_tracking_state puts them back


def test_faiss_search_finds_what_exact_search_finds():
    pytest.importorskip("faiss")
    from language_agnostic.evaluation.neighbours import search

    rng = np.random.default_rng(0)
    corpus, queries = (
        rng.standard_normal((300, 16)).astype(np.float32),
        rng.standard_normal((50, 16)).astype(np.float32),
    )
    exact, exact_scores = search(queries, corpus, 5, "exact")
    approximate, scores = search(queries, corpus, 5, "faiss", {"hnsw_m": 16, "ef_search": 300})
    assert approximate.shape == (50, 5) and recall_at_k(approximate, exact) >= 0.98
    assert np.allclose(scores[:, 0], exact_scores[:, 0], atol=1e-5)  # the same cosine scale
    with pytest.raises(ValueError, match=r"^retrieve.search must be one of \['exact', 'faiss'\], got 'annoy'$"):
        search(queries, corpus, 5, "annoy", where="retrieve.search")
