"""The raw encoder on real WMT20 QE and STS17 reproduces the design note's figures (±0.01).

This checks the readers (quoting off, gold alignment, tr-en prefix), extraction and Pearson
end to end on the shared data: ../shared/design/bundled-encoder.md, mean pooling, "query: ".
"""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from language_agnostic.corpora.errors import RejectLog
from language_agnostic.corpora.sts17 import TRACKS, read_sts_track
from language_agnostic.corpora.wmt_qe import QE_PAIRS, qe_archive_name, qe_member, read_qe_tsv
from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.evaluation.correlation import paired_cosine, pearson
from tests.conftest import REAL_DATA_ROOT

QE_REFERENCE = {"en-de": 0.023, "en-zh": 0.041, "ro-en": 0.665, "et-en": 0.201, "ne-en": 0.378, "si-en": 0.315}
STS_REFERENCE = {"ar-ar": 0.737, "ar-en": 0.594, "es-es": 0.867, "es-en": 0.715, "en-en": 0.857, "tr-en": 0.582}


@pytest.fixture(scope="module")
def embed(real_bundled: Path, tmp_path_factory: pytest.TempPathFactory):
    if not (REAL_DATA_ROOT / "wmt20_qe").is_dir() or not (REAL_DATA_ROOT / "sts17").is_dir():
        pytest.skip(f"WMT20 QE / STS17 data not found under {REAL_DATA_ROOT}")
    encoder = load_encoder("bundled", real_bundled)
    store = EmbeddingStore(tmp_path_factory.mktemp("store"))
    settings = ExtractionSettings(progress=False)

    def vectors(texts: list[str]) -> np.ndarray:
        return extract_embeddings(encoder, texts, settings, store).vectors("mean")

    return vectors


@pytest.mark.slow
def test_raw_qe_pearson_reproduces_the_reference(embed):
    got = {}
    for pair in QE_PAIRS:
        with tarfile.open(REAL_DATA_ROOT / "wmt20_qe" / qe_archive_name(pair)) as archive:
            text = archive.extractfile(qe_member(pair)).read().decode("utf-8")
        rows = read_qe_tsv(text, pair, pair, RejectLog())
        assert len(rows) == 1000, pair
        cosine = paired_cosine(embed([r["source"] for r in rows]), embed([r["translation"] for r in rows]))
        got[pair] = pearson(cosine, np.array([r["z_mean"] for r in rows]))
    assert got == pytest.approx(QE_REFERENCE, abs=0.01)
    assert np.mean(list(got.values())) == pytest.approx(0.270, abs=0.01)


@pytest.mark.slow
def test_raw_sts_pearson_reproduces_the_reference(embed):
    inputs = zipfile.ZipFile(REAL_DATA_ROOT / "sts17" / "Sts2017.eval.v1.1.zip")
    gold = zipfile.ZipFile(REAL_DATA_ROOT / "sts17" / "Sts2017.gs.zip")
    got = {}
    for name in STS_REFERENCE:
        track = TRACKS[name]
        rows = read_sts_track(
            inputs.read(track.input_member).decode("utf-8"),
            gold.read(track.gold_member).decode("utf-8"),
            track,
            "sts17",
            RejectLog(),
        )
        assert len(rows) == 250, name
        cosine = paired_cosine(embed([r["sentence1"] for r in rows]), embed([r["sentence2"] for r in rows]))
        got[name] = pearson(cosine, np.array([r["score"] for r in rows]))
    assert got == pytest.approx(STS_REFERENCE, abs=0.01)
