"""The ``massive`` pipeline: node errors, the pair join, a full slice run on tiny data, config."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from language_agnostic.corpora.errors import CorpusFormatError
from language_agnostic.corpora.massive_table import build_pair_table, parse_massive
from language_agnostic.datasets import TarArchiveDataset
from language_agnostic.pipelines.massive import nodes
from language_agnostic.pipelines.massive.pipeline import create_pipeline
from tests.conftest import PROJECT_ROOT, jsonl, tiny_rows, write_massive_archive

PARAMS = yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "parameters_massive.yml").read_text())["massive"]
INGEST = PARAMS["ingest"]


def _load(path: Path):
    return TarArchiveDataset(str(path), "MASSIVE 1.1 tarball").load()


# ------------------------------------------------------------------ configuration errors
def test_unknown_locale_in_parameters_names_the_parameter(tiny_archive: Path):
    with pytest.raises(
        CorpusFormatError,
        match=r"massive.locales\[1\]: the archive has no file "
        r"'1.1/data/fr-FR.jsonl' \(locales in it: \['de-DE', 'en-US', 'ja-JP'\]\)",
    ):
        parse_massive(_load(tiny_archive), ["en-US", "fr-FR"], {}, INGEST)


def test_malformed_locale_code_names_the_parameter(tiny_archive: Path):
    with pytest.raises(CorpusFormatError, match=r"massive.locales\[0\]: 'english' is not a MASSIVE locale code"):
        parse_massive(_load(tiny_archive), ["english"], {}, INGEST)


def test_pair_with_a_locale_not_configured_names_the_pair(tiny_archive: Path):
    pairs = {"en_ja": {"source": "en-US", "target": "ja-JP"}}
    with pytest.raises(
        CorpusFormatError,
        match=r"massive.pairs.en_ja.target: locale 'ja-JP' is not in "
        r"massive.locales \['en-US', 'de-DE'\]",
    ):
        parse_massive(_load(tiny_archive), ["en-US", "de-DE"], pairs, INGEST)


def test_pair_with_a_locale_missing_from_the_archive(tiny_archive: Path):
    pairs = {"en_fr": {"source": "en-US", "target": "fr-FR"}}
    with pytest.raises(
        CorpusFormatError,
        match=r"massive.pairs.en_fr.target: locale 'fr-FR' is not in "
        r"massive.locales.*the archive has \['de-DE', 'en-US', 'ja-JP'\]",
    ):
        parse_massive(_load(tiny_archive), ["en-US"], pairs, INGEST)


def test_bad_row_in_the_archive_names_member_and_line(tmp_path: Path):
    rows = tiny_rows("en-US")
    text = jsonl(rows[:2]) + "{not json\n" + jsonl(rows[2:])
    archive = write_massive_archive(tmp_path / "m.tar.gz", {"en-US": text})
    with pytest.raises(CorpusFormatError, match=r"m.tar.gz:1.1/data/en-US.jsonl:3"):
        parse_massive(_load(archive), ["en-US"], {}, INGEST)
    utterances, rejects, counts = parse_massive(_load(archive), ["en-US"], {}, {**INGEST, "on_bad_row": "skip"})
    assert len(utterances) == 6
    assert rejects[["locale", "line", "kind"]].to_dict("records") == [
        {"locale": "en-US", "line": 3, "kind": "malformed_json"}
    ]
    assert counts["en_US"] == {
        "rows_in": 7,
        "rows_out": 6,
        "rejected": 1,
        "rejected_malformed_json": 1,
        "train": 3,
        "dev": 1,
        "test": 2,
    }


def test_invalid_utf8_names_member_line_and_byte_offset(tmp_path: Path):
    rows = tiny_rows("en-US")
    good = jsonl(rows[:2]).encode("utf-8")
    text = good + b'{"id": "x", "utt": "caf\xe9"}\n' + jsonl(rows[2:]).encode("utf-8")
    archive = write_massive_archive(tmp_path / "m.tar.gz", {"en-US": text})
    offset = len(good) + len(b'{"id": "x", "utt": "caf')
    with pytest.raises(
        CorpusFormatError,
        match=rf"^{re.escape(str(tmp_path))}/m.tar.gz:1.1/data/en-US.jsonl:3: invalid utf-8 at byte offset "
        rf"{offset} \(invalid continuation byte\)$",
    ):
        parse_massive(_load(archive), ["en-US"], {}, INGEST)


def test_a_bom_and_crlf_line_ends_are_read_like_plain_utf8(tmp_path: Path):
    rows = tiny_rows("en-US")
    plain = parse_massive(
        _load(write_massive_archive(tmp_path / "a.tar.gz", {"en-US": jsonl(rows)})), ["en-US"], {}, INGEST
    )
    windows = "\ufeff" + jsonl(rows).replace("\n", "\r\n")
    read = parse_massive(_load(write_massive_archive(tmp_path / "b.tar.gz", {"en-US": windows})), ["en-US"], {}, INGEST)
    pd.testing.assert_frame_equal(read[0], plain[0])
    assert read[2] == plain[2] and read[2]["en_US"]["rows_out"] == 6 and read[2]["en_US"]["rejected"] == 0


# ------------------------------------------------------------------ the pair join
def test_pair_table_joins_by_id_and_reports_one_sided_ids(tiny_archive: Path):
    utterances, _, _ = parse_massive(_load(tiny_archive), ["en-US", "de-DE"], {}, INGEST)
    # drop one German row and give another a different partition
    de = utterances["locale"] == "de-DE"
    utterances = utterances[~(de & (utterances["id"] == "6"))].copy()
    utterances.loc[de & (utterances["id"] == "5"), "partition"] = "test"
    table, counts = build_pair_table(
        utterances, {"source": "en-US", "target": "de-DE"}, {**INGEST, "on_bad_row": "skip"}
    )
    assert table["id"].tolist() == ["1", "2", "3", "4"]
    assert table.iloc[0][["source_utt", "target_utt"]].tolist() == [
        "wake me up at nine am on friday",
        "weck mich am freitag um neun uhr auf",
    ]
    assert counts == {
        "en_US__de_DE": {
            "rows_in_source": 6,
            "rows_in_target": 5,
            "pairs_out": 4,
            "rejected_only_source": 1,
            "rejected_only_target": 0,
            "rejected_disagreeing": 1,
            "train": 2,
            "dev": 0,
            "test": 2,
        }
    }


def test_a_missing_parallel_row_stops_the_run_under_error_naming_both_files_and_the_id(tiny_archive: Path):
    utterances, _, _ = parse_massive(_load(tiny_archive), ["en-US", "de-DE"], {}, INGEST)
    de = utterances["locale"] == "de-DE"
    missing = utterances[~(de & (utterances["id"] == "6"))]
    with pytest.raises(
        CorpusFormatError,
        match=r"^1.1/data/en-US.jsonl: id '6' has no parallel row in 1.1/data/de-DE.jsonl "
        r"\(1 such ids\) \(massive.ingest.on_bad_row: error; 'skip' counts and reports such ids instead\)$",
    ):
        build_pair_table(missing, {"source": "en-US", "target": "de-DE"}, INGEST)
    extra = utterances[~(~de & (utterances["id"] == "2"))]
    with pytest.raises(
        CorpusFormatError, match=r"^1.1/data/de-DE.jsonl: id '2' has no parallel row in 1.1/data/en-US.jsonl"
    ):
        build_pair_table(extra, {"source": "en-US", "target": "de-DE"}, INGEST)
    moved = utterances.copy()
    moved.loc[de & (moved["id"] == "5"), "partition"] = "test"
    with pytest.raises(
        CorpusFormatError, match=r"^1.1/data/en-US.jsonl and 1.1/data/de-DE.jsonl: id '5' disagrees on partition"
    ):
        build_pair_table(moved, {"source": "en-US", "target": "de-DE"}, INGEST)


def test_pair_table_without_utterances_for_a_locale(tiny_archive: Path):
    utterances, _, _ = parse_massive(_load(tiny_archive), ["en-US"], {}, INGEST)
    with pytest.raises(CorpusFormatError, match="language pair en-US->de-DE: no parsed utterances for 'de-DE'"):
        build_pair_table(utterances, {"source": "en-US", "target": "de-DE"})


# ------------------------------------------------------------------ a slice run on tiny data
def _flatten_params(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """``params:a``, ``params:a.b``, ... as Kedro exposes nested parameters."""
    out[f"params:{prefix}"] = value
    if isinstance(value, dict):
        for key, sub in value.items():
            _flatten_params(f"{prefix}.{key}", sub, out)


def test_pipeline_runs_end_to_end_on_tiny_data(tiny_archive: Path):
    params = {
        **PARAMS,
        "locales": ["en-US", "de-DE", "ja-JP"],
        "masking": {"mask_token": "<mask>", "unit": "token"},
        "pairs": {"en_de": {"source": "en-US", "target": "de-DE"}, "en_ja": {"source": "en-US", "target": "ja-JP"}},
    }
    flat: dict[str, Any] = {}
    _flatten_params("massive", params, flat)
    flat["params:embeddings.encoder"] = {"name": "unused-with-a-literal-mask-token"}
    catalog = DataCatalog(
        {
            "massive_archive": TarArchiveDataset(str(tiny_archive), "MASSIVE 1.1 tarball"),
            **{name: MemoryDataset(value) for name, value in flat.items()},
        }
    )
    pipeline = create_pipeline(pairs=["en_de", "en_ja"])
    SequentialRunner().run(pipeline, catalog)

    # pair tables live in the namespaces
    en_ja = catalog["en_ja.massive_pairs"].load()
    assert en_ja["id"].tolist() == ["1", "2", "3", "4", "5", "6"]
    assert en_ja.loc[en_ja["id"] == "3", "target_utt"].item() == "静かに"
    masked = catalog["massive_masked_texts"].load()
    row = masked[(masked["locale"] == "ja-JP") & (masked["id"] == "1")].iloc[0]
    assert (row["template_text"], row["residual_text"]) == (
        "<mask>の<mask>に起こしてください",
        "金曜日<mask>午前九時<mask>",
    )
    # test split: id 3 has no slot, id 4 has a time and a date with other values available
    single = catalog["massive_template_retrieval_single"].load()
    assert sorted(single.groupby("locale")["source_id"].apply(list).items()) == [
        ("de-DE", ["4"]),
        ("en-US", ["4"]),
        ("ja-JP", ["4"]),
    ]
    assert single.loc[single["locale"] == "en-US", "template"].item() == "wake me up at [time] [date]"
    pools = catalog["massive_negative_pools"].load()
    # the three train utterances of each language share at most one word: all are pooled; the
    # lone dev utterance (5) has nothing to resemble and forms the dev pool
    assert sorted(pools.groupby(["locale", "partition"])["id"].apply(sorted).items()) == [
        (("de-DE", "dev"), ["5"]),
        (("de-DE", "train"), ["1", "2", "6"]),
        (("en-US", "dev"), ["5"]),
        (("en-US", "train"), ["1", "2", "6"]),
        (("ja-JP", "dev"), ["5"]),
        (("ja-JP", "train"), ["1", "2", "6"]),
    ]
    summary = catalog["massive_summary"].load()
    assert summary["ingest"]["ja_JP"]["rows_out"] == 6
    assert summary["pairs"]["en_US__ja_JP"]["pairs_out"] == 6
    metrics = catalog["massive_metrics"].load()
    assert metrics["ingest.en_US.train"] == {"value": 3.0, "step": 0}
    markdown = catalog["massive_summary_markdown"].load()
    assert "| en-US → ja-JP | 6 | 3 | 1 | 2 | 0 |" in markdown
    assert "| ja-JP | train | 3 | 3 | 100.0% |" in markdown and "| ja-JP | dev | 1 | 1 | 100.0% |" in markdown
    assert summary["negative_pool"]["en_US"]["dev"] == {"in": 1, "pool_out": 1, "pool_fraction": 1.0}


# ------------------------------------------------------------------ real data
@pytest.mark.slow
def test_real_massive_counts(real_massive: Path):
    locales = ["en-US", "de-DE", "es-ES", "ja-JP"]
    pairs = {"en_ja": {"source": "en-US", "target": "ja-JP"}}
    utterances, rejects, counts = parse_massive(_load(real_massive), locales, pairs, INGEST)
    assert rejects.empty
    for locale in locales:
        tag = locale.replace("-", "_")
        assert counts[tag] == {
            "rows_in": 16521,
            "rows_out": 16521,
            "rejected": 0,
            "train": 11514,
            "dev": 2033,
            "test": 2974,
        }, locale
    table, pair_counts = build_pair_table(utterances, pairs["en_ja"])
    assert pair_counts["en_US__ja_JP"]["pairs_out"] == 16521
    assert table["partition"].value_counts().to_dict() == {"train": 11514, "test": 2974, "dev": 2033}


# ------------------------------------------------------------------ the mask token
def test_literal_mask_token_loads_nothing():
    assert nodes.resolve_mask_token({"mask_token": "[MASK]"}, {"name": "no-such-model"}) == "[MASK]"


def test_auto_mask_token_comes_from_the_encoder(tiny_hub_model: Path, tmp_path: Path):
    assert nodes.resolve_mask_token({"mask_token": "auto"}, {"name": str(tiny_hub_model)}) == "[MASK]"
    from transformers import PreTrainedTokenizerFast

    PreTrainedTokenizerFast.from_pretrained(tiny_hub_model, mask_token=None).save_pretrained(tmp_path / "no-mask")
    assert PreTrainedTokenizerFast.from_pretrained(tmp_path / "no-mask").mask_token is None
    with pytest.raises(CorpusFormatError, match="mask_token is 'auto' but encoder .* has no mask token"):
        nodes.resolve_mask_token({"mask_token": "auto"}, {"name": str(tmp_path / "no-mask")})
