"""Parallel training corpora: readers, detokenisation, label filter, test-overlap removal, split."""

from __future__ import annotations

import pytest

from language_agnostic.corpora.errors import CorpusFormatError
from language_agnostic.corpora.parallel import (
    clean_pairs,
    filter_by_labels,
    mlqe_pe_pairs,
    overlap_key,
    read_line_aligned,
    train_validation_split,
)


def test_line_aligned_and_mismatch():
    assert read_line_aligned("a\nb\n", "x\ny\n", "w") == [("a", "x"), ("b", "y")]
    with pytest.raises(CorpusFormatError, match="w: 2 source lines but 1 target lines"):
        read_line_aligned("a\nb\n", "x\n", "w")


def test_mlqe_pe_is_detokenised():
    pairs = mlqe_pe_pairs("Germanii au pierdut șansa , spune el .\n", 'He said : " Yes " .\n', "ro-en", "ro-en-train")
    assert pairs == [("Germanii au pierdut șansa, spune el.", 'He said: "Yes".')]


def test_label_filter():
    pairs = [("a", "1"), ("b", "2"), ("c", "3")]
    kept, dropped = filter_by_labels(pairs, "ara\narz\nara\n", ["ara"], "ara.labels")
    assert (kept, dropped) == ([("a", "1"), ("c", "3")], 1)
    with pytest.raises(CorpusFormatError, match="ara.labels: 2 labels for 3 sentence pairs"):
        filter_by_labels(pairs, "ara\nara\n", ["ara"], "ara.labels")


def test_clean_pairs_counts_every_drop():
    pairs = [
        ("Hello world.", "Hallo Welt."),
        ("Hello  World.", "hallo welt."),  # duplicate after normalisation
        ("The cat sleeps.", "Die Katze schläft."),  # target is a test sentence
        ("A test sentence.", "Ein Satz."),  # source is a test sentence (other case, NFKC width)
        ("", "leer"),
        ("Fine.", "Gut."),
    ]
    kept, counts = clean_pairs(pairs, ["die katze schläft.", "Ａ test sentence."])
    assert kept == [("Hello world.", "Hallo Welt."), ("Fine.", "Gut.")]
    assert counts == {"in": 6, "empty": 1, "duplicate": 1, "test_overlap": 2, "out": 2}
    assert overlap_key("  Ａ  Test\tSentence. ") == "a test sentence."


def test_split_is_seeded_and_disjoint():
    pairs = [(f"s{i}", f"t{i}") for i in range(50)]
    train, validation = train_validation_split(pairs, 0.1, seed=3)
    assert len(validation) == 5 and len(train) == 45
    assert set(train).isdisjoint(validation) and set(train) | set(validation) == set(pairs)
    assert train_validation_split(pairs, 0.1, seed=3) == (train, validation)
    assert train_validation_split(pairs, 0.1, seed=4)[1] != validation
    with pytest.raises(ValueError, match="validation_fraction must be between 0 and 1, got 1.5"):
        train_validation_split(pairs, 1.5, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize(("lang", "distinct", "removed"), [("ne", 39, 70), ("si", 30, 47)])
def test_flores_overlap_with_the_qe_test_set_on_real_data(lang: str, distinct: int, removed: int):
    """The shared data's provenance counts 39 (ne) and 30 (si) QE test sources inside FLoRes v1."""
    import tarfile
    from collections import Counter

    from language_agnostic.corpora.errors import RejectLog
    from language_agnostic.corpora.wmt_qe import qe_archive_name, qe_member, read_qe_tsv
    from tests.conftest import REAL_DATA_ROOT

    flores = REAL_DATA_ROOT / "parallel" / "flores-v1" / "wikipedia_en_ne_si_test_sets.tgz"
    if not flores.is_file():
        pytest.skip(f"FLoRes v1 not found at {flores}")
    pair = f"{lang}-en"
    with tarfile.open(REAL_DATA_ROOT / "wmt20_qe" / qe_archive_name(pair)) as archive:
        qe = read_qe_tsv(archive.extractfile(qe_member(pair)).read().decode(), pair, pair, RejectLog())
    pairs = []
    with tarfile.open(flores) as archive:
        for split in ("dev", "devtest", "test"):
            base = f"wikipedia_en_ne_si_test_sets/wikipedia.{split}.{pair}"
            pairs += read_line_aligned(
                archive.extractfile(f"{base}.{lang}").read().decode(),
                archive.extractfile(f"{base}.en").read().decode(),
                base,
            )
    flores_keys = Counter(overlap_key(src) for src, _ in pairs)
    assert sum(overlap_key(r["source"]) in flores_keys for r in qe) == distinct
    _, counts = clean_pairs(pairs, [r["source"] for r in qe] + [r["translation"] for r in qe])
    assert counts["test_overlap"] == removed


def test_tatoeba_file_names():
    from language_agnostic.corpora.parallel import laser_tatoeba_files, opus_tatoeba_files

    assert opus_tatoeba_files("spa") == (
        "eng-spa/tatoeba-test-v2021-08-07.spa",
        "eng-spa/tatoeba-test-v2021-08-07.eng",
        None,
    )
    assert opus_tatoeba_files("ara")[2] == "ara-eng/tatoeba-test-v2021-08-07.ara.labels"
    assert laser_tatoeba_files("deu") == ("tatoeba.deu-eng.deu", "tatoeba.deu-eng.eng")
    with pytest.raises(ValueError, match="no OPUS-MT Tatoeba set configured for 'xxx'"):
        opus_tatoeba_files("xxx")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lang3", "size", "overlap"),
    [
        ("ara", 10305, 295),
        ("deu", 17565, 35),
        ("spa", 16583, 44),
        ("fra", 12681, 29),
        ("ita", 17320, 20),
        ("nld", 12696, 101),
        ("tur", 13907, 11),
    ],
)
def test_opus_tatoeba_overlap_with_laser_test_on_real_data(lang3: str, size: int, overlap: int):
    """The provenance counts these LASER test pairs (of 1,000) inside the OPUS-MT v2021-08-07 sets."""
    from language_agnostic.corpora.parallel import laser_tatoeba_files, opus_tatoeba_files
    from tests.conftest import REAL_DATA_ROOT

    opus = REAL_DATA_ROOT / "parallel" / "opus-mt-testsets" / "testsets"
    laser = REAL_DATA_ROOT / "tatoeba" / "v1"
    if not opus.is_dir() or not laser.is_dir():
        pytest.skip(f"OPUS-MT test sets or LASER Tatoeba not found under {REAL_DATA_ROOT}")
    src, eng, _ = opus_tatoeba_files(lang3)
    train = read_line_aligned((opus / src).read_text("utf-8"), (opus / eng).read_text("utf-8"), src)
    test_src, test_eng = laser_tatoeba_files(lang3)
    test = read_line_aligned((laser / test_src).read_text("utf-8"), (laser / test_eng).read_text("utf-8"), test_src)
    assert len(train) == size and len(test) == 1000
    train_keys = {(overlap_key(a), overlap_key(b)) for a, b in train}
    assert sum((overlap_key(a), overlap_key(b)) in train_keys for a, b in test) == overlap
    kept, counts = clean_pairs(train, [s for pair in test for s in pair])
    assert counts["test_overlap"] >= overlap  # pairs sharing just one side are removed too
