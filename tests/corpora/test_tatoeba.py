"""The Tatoeba reader: the real file layout (sizes, alignment), the language table, and every error
naming file and line.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from kedro.io import DatasetError

from language_agnostic.corpora.errors import CorpusFormatError, MissingRawDataError
from language_agnostic.corpora.languages import language_table, to_iso639_3
from language_agnostic.corpora.tatoeba import available_languages, ingest_tatoeba, text_index
from language_agnostic.datasets.directory import TextDirectoryDataset
from tests.conftest import REAL_DATA_ROOT

REAL_TATOEBA = REAL_DATA_ROOT / "tatoeba" / "v1"
URL = "https://github.com/facebookresearch/LASER/tree/main/data/tatoeba/v1"


def _dataset(path: Path) -> TextDirectoryDataset:
    return TextDirectoryDataset(
        str(path), pattern="tatoeba.*-eng.*", description="LASER Tatoeba test sets", source_url=URL
    )


@pytest.fixture
def real_tatoeba() -> Path:
    """The real LASER Tatoeba folder; the test is skipped (saying where it looked) when absent."""
    if not REAL_TATOEBA.is_dir():
        pytest.skip(f"real Tatoeba data not found at {REAL_TATOEBA}")
    return REAL_TATOEBA


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.slow
def test_the_real_files_sizes_and_alignment(real_tatoeba: Path):
    files = _dataset(real_tatoeba).load()
    assert len(available_languages(list(files))) == 112 and "README.md" not in files
    # three real pairs, the first and the two smallest of the set (PROVENANCE.md's counts)
    pairs, rejects, languages, counts = ingest_tatoeba(
        files, {"languages": ["deu", "swg", "tzl"]}, {"sts": ["ara", "deu", "eng"]}
    )
    assert {k: v["pairs"] for k, v in counts.items() if k != "total"} == {"deu": 1000, "swg": 112, "tzl": 104}
    assert counts["total"] == {"languages": 3, "pairs": 1216, "rejected": 0} and rejects.empty
    first = pairs[pairs["language"] == "deu"].iloc[0]
    assert (first["line"], first["text"], first["eng"]) == (
        1,
        "Maria sagte, sie wisse nicht, wo Tom sei.",
        "Mary said she didn't know where Tom was.",
    )
    # line i of one file is line i of the other: the last German line against the last English one, read here
    last = pairs[pairs["language"] == "deu"].iloc[-1]
    deu = (real_tatoeba / "tatoeba.deu-eng.deu").read_text(encoding="utf-8").split("\n")
    eng = (real_tatoeba / "tatoeba.deu-eng.eng").read_text(encoding="utf-8").split("\n")
    assert (last["line"], last["text"], last["eng"]) == (1000, deu[999].strip(), eng[999].strip())
    assert languages.set_index("language").loc["deu", ["iso639_1", "script", "seen", "seen_by"]].tolist() == [
        "de",
        "Latn",
        True,
        "sts",
    ]
    assert not languages.set_index("language").loc["tzl", "seen"]


@pytest.mark.slow
def test_the_language_table_covers_the_real_set_and_its_scripts(real_tatoeba: Path):
    files = _dataset(real_tatoeba).load()
    assert set(available_languages(list(files))) == set(language_table()) - {"eng"}
    pairs, rejects, _, counts = ingest_tatoeba(files, {"languages": "all", "expected_pairs": 112})
    assert counts["total"] == {"languages": 112, "pairs": 88877, "rejected": 0} and rejects.empty
    assert len(text_index(pairs)[0]) == 158078  # distinct sentences: what the encoder sees
    # the table's script against the letters of a few real files
    expected = {"amh": "ETHIOPIC", "kat": "GEORGIAN", "ell": "GREEK", "ukr": "CYRILLIC", "urd": "ARABIC"}
    for language, script in expected.items():
        text = files[f"tatoeba.{language}-eng.{language}"]()
        letters = [unicodedata.name(c, "?").split(" ")[0] for c in text if c.isalpha()]
        assert max(set(letters), key=letters.count) == script
        assert (
            language_table()[language].script
            == {"ETHIOPIC": "Ethi", "GEORGIAN": "Geor", "GREEK": "Grek", "CYRILLIC": "Cyrl", "ARABIC": "Arab"}[script]
        )


def test_files_of_different_lengths_name_the_file_and_the_missing_line(tmp_path: Path):
    folder = _write(tmp_path / "v1", {"tatoeba.xho-eng.xho": "a\nb\nc\n", "tatoeba.xho-eng.eng": "A\nB\n"})
    with pytest.raises(
        CorpusFormatError,
        match=(
            rf"^{folder}/tatoeba.xho-eng.eng:3: missing line: {folder}/tatoeba.xho-eng.eng "
            rf"has 2 lines but {folder}/tatoeba.xho-eng.xho has 3; the two files of a "
            r"Tatoeba pair must be line-aligned$"
        ),
    ):
        ingest_tatoeba(_dataset(folder).load(), {"languages": "all"})


def test_an_empty_sentence_is_fatal_or_rejected_and_counted(tmp_path: Path):
    folder = _write(
        tmp_path / "v1",
        {
            "tatoeba.xho-eng.xho": "a\n  \nc\n",
            "tatoeba.xho-eng.eng": "A\nB\nC\n",
            "tatoeba.afr-eng.afr": "x\n",
            "tatoeba.afr-eng.eng": "X\n",
            "notes.txt": "ignored",
        },
    )
    files = _dataset(folder).load()
    with pytest.raises(CorpusFormatError, match=rf"^{folder}/tatoeba.xho-eng.xho:2: empty sentence"):
        ingest_tatoeba(files, {"languages": "all"})
    pairs, rejects, languages, counts = ingest_tatoeba(files, {"languages": "all", "on_bad_row": "skip"})
    assert pairs.values.tolist() == [["afr", 1, "x", "X"], ["xho", 1, "a", "A"], ["xho", 3, "c", "C"]]
    assert rejects[["source", "line", "key", "kind", "content"]].values.tolist() == [
        [f"{folder}/tatoeba.xho-eng.xho", 2, "xho:2", "empty_sentence", "B"]
    ]
    assert counts["xho"] == {"xxx_lines": 3, "eng_lines": 3, "pairs": 2, "rejected": 1}
    assert counts["total"] == {"languages": 2, "pairs": 3, "rejected": 1}
    assert languages["language"].tolist() == ["afr", "xho"] and not languages["seen"].any()


def test_configuration_errors_name_the_parameter_or_the_file(tmp_path: Path):
    folder = _write(
        tmp_path / "v1", {"tatoeba.xho-eng.xho": "a\n", "tatoeba.xho-eng.eng": "A\n", "tatoeba.afr-eng.afr": "x\n"}
    )
    files = _dataset(folder).load()
    with pytest.raises(
        CorpusFormatError,
        match=(
            rf"^{folder}: 2 language pairs found, tatoeba.ingest.expected_pairs says 112; "
            r"found: \['afr', 'xho'\]$"
        ),
    ):
        ingest_tatoeba(files, {"languages": "all", "expected_pairs": 112})
    for languages in ("all", ["afr"]):
        with pytest.raises(
            CorpusFormatError,
            match=(
                rf"^{folder}/tatoeba.afr-eng.eng: file not found; the pair afr-eng needs "
                r"both tatoeba.afr-eng.afr and tatoeba.afr-eng.eng$"
            ),
        ):
            ingest_tatoeba(files, {"languages": languages})
    (folder / "tatoeba.xho-eng.xho").write_bytes(b"ok\n\xff\n")
    with pytest.raises(CorpusFormatError, match=rf"^{folder}/tatoeba.xho-eng.xho:2: invalid utf-8"):
        ingest_tatoeba(files, {"languages": ["xho"]})


def test_a_missing_folder_names_the_path_and_where_to_download_it(tmp_path: Path):
    # Kedro wraps the error of a dataset's load in a DatasetError that keeps its message
    with pytest.raises(
        DatasetError, match=rf"LASER Tatoeba test sets not found at '{tmp_path}/nope'. Download it from {URL}"
    ) as info:
        _dataset(tmp_path / "nope").load()
    assert isinstance(info.value.__cause__, MissingRawDataError)


def test_text_index_encodes_each_distinct_sentence_once():
    import pandas as pd

    pairs = pd.DataFrame(
        {
            "language": ["afr", "afr", "xho"],
            "line": [1, 2, 1],
            "text": ["a", "b", "c"],
            "eng": ["Tom ran.", "Hi!", "Tom ran."],
        }
    )
    texts, xxx, eng = text_index(pairs)
    assert texts == ["a", "b", "c", "Tom ran.", "Hi!"]
    assert xxx.tolist() == [0, 1, 2] and eng.tolist() == [3, 4, 3]


def test_configured_codes_map_to_tatoeba_codes():
    assert [to_iso639_3(c) for c in ("de-DE", "en", "zh_CN", "cmn_Hans", "fa-IR", "ms", "ara", "ne", "si-LK", "x")] == [
        "deu",
        "eng",
        "cmn",
        "cmn",
        "pes",
        "zsm",
        "ara",
        None,
        None,
        None,
    ]
    table = language_table()
    assert len(table) == 113 and table["yue"].iso639_1 == "" and table["srp"].script == "Latn+Cyrl"
