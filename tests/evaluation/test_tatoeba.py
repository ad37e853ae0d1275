"""Every method per language on hand-built vectors: the raw encoder's average over languages against
a hand computation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from language_agnostic.corpora.tatoeba import text_index
from language_agnostic.encoders.extraction import texts_sha256
from language_agnostic.evaluation.tatoeba import SCORE_COLUMNS, evaluate_tatoeba
from language_agnostic.methods.apply import LoadedModel, ModelSpec
from language_agnostic.reporting.tatoeba import summary

# afr: x→y and y→x 1/3 each (tests/evaluation/test_bitext.py's X, Y); deu: identical sides, 1 and 1;
# xho: swapped, 0 and 0. The average over languages is (1/3 + 1 + 0) / 3 = 4/9 (pooling the 7 pairs would give 3/7).
SIDES = {
    "afr": ([[1, 0], [0, 1], [1, 1]], [[2, 0], [1, 1], [0, 3]]),
    "deu": ([[1, 0], [0, 1]], [[1, 0], [0, 1]]),
    "xho": ([[1, 0], [0, 1]], [[0, 1], [1, 0]]),
}


class FakeEntry:
    """A store entry of hand-built vectors (``mean``; ``cls`` is ``mean`` mirrored)."""

    def __init__(self, texts: list[str], mean: np.ndarray) -> None:
        self.meta = {"texts_sha256": texts_sha256(texts)}
        self.directory = "fake"
        self._vectors = {"mean": mean.astype(np.float32), "cls": mean[:, ::-1].astype(np.float32)}

    def vectors(self, pooling: str) -> np.ndarray:
        return self._vectors[pooling]


def _pairs_and_entry() -> tuple[pd.DataFrame, FakeEntry]:
    rows = [[lang, i + 1, f"{lang}-{i}", f"eng-{lang}-{i}"] for lang, (x, _) in SIDES.items() for i in range(len(x))]
    pairs = pd.DataFrame(rows, columns=["language", "line", "text", "eng"])
    texts, xxx, eng = text_index(pairs)
    vectors = np.zeros((len(texts), 2))
    vectors[xxx] = np.concatenate([np.array(x, dtype=float) for x, _ in SIDES.values()])
    vectors[eng] = np.concatenate([np.array(y, dtype=float) for _, y in SIDES.values()])
    return pairs, FakeEntry(texts, vectors)


def test_the_raw_average_over_languages_by_hand():
    pairs, entry = _pairs_and_entry()
    scores = evaluate_tatoeba(pairs, entry, {}, [], ["mean"], k=4, progress=False)
    assert list(scores.columns) == SCORE_COLUMNS
    cosine = scores[scores["scoring"] == "cosine"].set_index(["language", "source"])["accuracy"]
    assert cosine.to_dict() == pytest.approx(
        {
            ("afr", "afr"): 1 / 3,
            ("afr", "eng"): 1 / 3,
            ("deu", "deu"): 1.0,
            ("deu", "eng"): 1.0,
            ("xho", "xho"): 0.0,
            ("xho", "eng"): 0.0,
        }
    )
    assert scores.loc[scores["language"] == "afr", "n"].unique().tolist() == [3]
    languages = pd.DataFrame({"language": ["afr", "deu", "xho"], "seen": [False, True, False]})
    table = summary(scores, languages, {}).set_index("scoring")
    assert table.loc["cosine", "all"] == pytest.approx(4 / 9)
    assert table.loc["cosine", "seen"] == pytest.approx(1.0) and table.loc["cosine", "unseen"] == pytest.approx(1 / 6)
    assert table.loc["cosine", "xxx_to_eng"] == pytest.approx(4 / 9) and table.loc["cosine", "n_languages"] == 3


def test_centering_only_where_both_languages_have_a_training_mean():
    pairs, entry = _pairs_and_entry()
    # a mean for German and English only (keys as the qe/sts centering files write them)
    centering = LoadedModel(
        ModelSpec("centering@sts", "centering", "sts", "sts/centering.safetensors", "x", "mean"),
        ["deu", "eng"],
        {"pooling": "mean"},
        "mean",
        {"de": np.array([0.5, 0.5], dtype=np.float32), "en": np.array([0.0, 0.0], dtype=np.float32)},
    )
    emu = LoadedModel(
        ModelSpec("emu@massive", "encoder", "massive", "emu/encoders/emu", "x", "mean"), ["eng"], pooling="mean"
    )
    # the fine-tuned encoder's own entry: here the raw vectors mirrored, which swaps deu's answers
    tuned = FakeEntry(*_texts_and(entry, lambda v: v[:, ::-1]))
    scores = evaluate_tatoeba(pairs, entry, {"emu@massive": tuned}, [centering, emu], ["mean", "cls"], progress=False)
    assert sorted(scores.loc[scores["method"] == "centering@sts", "language"].unique()) == ["deu"]
    # deu centred: x = [[.5,-.5],[-.5,.5]] against y = [[1,0],[0,1]]: still right both ways
    got = scores[(scores["method"] == "centering@sts") & (scores["scoring"] == "cosine")]["accuracy"].tolist()
    assert got == [1.0, 1.0]
    mirrored = scores[scores["method"] == "emu@massive"].set_index(["language", "source", "scoring"])["accuracy"]
    raw_cls = scores[(scores["method"] == "raw") & (scores["embedding"] == "cls")].set_index(
        ["language", "source", "scoring"]
    )["accuracy"]
    pd.testing.assert_series_equal(mirrored, raw_cls, check_names=False)  # cls is mean mirrored in FakeEntry


def _texts_and(entry: FakeEntry, change) -> tuple[list[str], np.ndarray]:
    pairs, _ = _pairs_and_entry()
    texts, _, _ = text_index(pairs)
    return texts, change(entry.vectors("mean"))


def test_an_entry_of_other_texts_is_refused():
    pairs, entry = _pairs_and_entry()
    entry.meta["texts_sha256"] = "0" * 64
    with pytest.raises(
        ValueError, match=r"^the raw encoder embeddings \(fake\) are of other texts than the Tatoeba pairs; "
    ):
        evaluate_tatoeba(pairs, entry, {}, [], ["mean"], progress=False)


def test_cosine_and_margin_rows_per_direction():
    pairs, entry = _pairs_and_entry()
    scores = evaluate_tatoeba(pairs, entry, {}, [], ["mean"], progress=False)
    assert len(scores) == 3 * 2 * 2
    assert set(zip(scores["source"], scores["target"], strict=True)) == {
        ("afr", "eng"),
        ("eng", "afr"),
        ("deu", "eng"),
        ("eng", "deu"),
        ("xho", "eng"),
        ("eng", "xho"),
    }
    assert (scores["correct"] == (scores["accuracy"] * scores["n"]).round().astype(int)).all()
