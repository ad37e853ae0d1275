"""WMT20 QE and STS17 readers: exact rows, bad lines, tr-en gold prefix, column order."""

from __future__ import annotations

import pytest

from language_agnostic.corpora.errors import CorpusFormatError, RejectLog
from language_agnostic.corpora.sts17 import TRACKS, read_sts_track
from language_agnostic.corpora.wmt_qe import HEADER, qe_archive_name, qe_member, read_qe_tsv

TSV_HEADER = "\t".join(HEADER)


def _qe_line(index: int, src: str, mt: str, z: str = "0.5") -> str:
    return "\t".join([str(index), src, mt, "[1, 2]", "1.5", "[0.1, 0.2]", z, "-0.3"])


def test_member_names():
    assert qe_member("ro-en") == "ro-en/test20.roen.df.short.tsv"
    assert qe_archive_name("ro-en") == "ro-en_test.tar.gz"
    assert qe_archive_name("ro-en", "dev") == "ro-en.tar.gz"


def test_qe_rows_keep_quotes_verbatim():
    text = "\n".join(
        [
            TSV_HEADER,
            _qe_line(0, '"Quoted" start', 'A "quote"', "0.25"),
            _qe_line(1, "Zweiter Satz.", "Second sentence.", "-1.5"),
            "",
        ]
    )
    rows = read_qe_tsv(text, "de.tsv", "de-en", RejectLog())
    assert rows == [
        {
            "pair": "de-en",
            "source_lang": "de",
            "target_lang": "en",
            "index": "0",
            "source": '"Quoted" start',
            "translation": 'A "quote"',
            "z_mean": 0.25,
        },
        {
            "pair": "de-en",
            "source_lang": "de",
            "target_lang": "en",
            "index": "1",
            "source": "Zweiter Satz.",
            "translation": "Second sentence.",
            "z_mean": -1.5,
        },
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("0\tonly\tthree", r"x.tsv:2: 3 tab-separated fields, expected 8"),
        (_qe_line(0, "a", "b", "high"), r"x.tsv:2: z_mean 'high' is not a number"),
        (_qe_line(0, "a", "b", "nan"), r"x.tsv:2: z_mean 'nan' is not finite"),
        (_qe_line(0, " ", "b"), r"x.tsv:2: empty source or translation"),
    ],
)
def test_qe_bad_lines(line: str, message: str):
    with pytest.raises(CorpusFormatError, match=message):
        read_qe_tsv(f"{TSV_HEADER}\n{line}\n", "x.tsv", "en-de", RejectLog())
    log = RejectLog(policy="skip")
    assert read_qe_tsv(f"{TSV_HEADER}\n{line}\n{_qe_line(1, 'a', 'b')}\n", "x.tsv", "en-de", log)[0]["index"] == "1"
    assert len(log.rows) == 1


def test_qe_wrong_header_is_fatal_even_when_skipping():
    with pytest.raises(CorpusFormatError, match=r"x.tsv:1: header is 'a\\tb'"):
        read_qe_tsv("a\tb\n", "x.tsv", "en-de", RejectLog(policy="skip"))


def test_sts_rows_and_column_languages():
    inputs = "two men are crying\tرجلان يضحكان.\nA man sleeps.\tرجل ينام.\n"
    rows = read_sts_track(inputs, "1.4\n4.0\n", TRACKS["ar-en"], "gs.zip", RejectLog())
    assert rows == [
        {
            "track": "2",
            "pair": "ar-en",
            "lang1": "en",
            "lang2": "ar",
            "sentence1": "two men are crying",
            "sentence2": "رجلان يضحكان.",
            "score": 1.4,
        },
        {
            "track": "2",
            "pair": "ar-en",
            "lang1": "en",
            "lang2": "ar",
            "sentence1": "A man sleeps.",
            "sentence2": "رجل ينام.",
            "score": 4.0,
        },
    ]


def test_sts_tr_en_uses_the_first_lines_only():
    inputs = "".join(f"The lady number {i} is blonde.\tKadın {i} sarışın.\n" for i in range(4))
    rows = read_sts_track(inputs, "5.0\n3.0\n", TRACKS["tr-en"], "gs.zip", RejectLog())
    assert [r["sentence2"] for r in rows] == ["Kadın 0 sarışın.", "Kadın 1 sarışın."]
    # other tracks must match line for line
    with pytest.raises(
        CorpusFormatError, match=r"2 gold scores for 4 input lines in STS2017.eval.v1.1/STS.input.track5.en-en.txt"
    ):
        read_sts_track(inputs, "5.0\n3.0\n", TRACKS["en-en"], "gs.zip", RejectLog())


def test_sts_swapped_columns_fail():
    inputs = "Kadın sarışın.\tThe lady is blonde.\nİki köpek koşuyor.\tTwo dogs run.\n"
    with pytest.raises(CorpusFormatError, match=r"do not look like en then tr.*column order swapped"):
        read_sts_track(inputs, "5.0\n3.0\n", TRACKS["tr-en"], "gs.zip", RejectLog())


def test_sts_bad_lines():
    with pytest.raises(
        CorpusFormatError, match=r"track5.en-en.txt:2: expected two non-empty tab-separated sentences, got 1"
    ):
        read_sts_track("a\tb\nno tab here\n", "1\n2\n", TRACKS["en-en"], "gs.zip", RejectLog())
    with pytest.raises(CorpusFormatError, match=r"track5.en-en.txt:1: gold score 7.0 is outside 0-5"):
        read_sts_track("a\tb\n", "7.0\n", TRACKS["en-en"], "gs.zip", RejectLog())
