"""The ``qe`` and ``sts`` pipelines and their shared nodes (``pipelines/similarity.py``) on tiny data."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset

from language_agnostic.corpora import evaluation_sets
from language_agnostic.corpora.errors import CorpusFormatError
from language_agnostic.corpora.wmt_qe import HEADER
from language_agnostic.datasets import TarArchiveDataset, ZipArchiveDataset
from language_agnostic.datasets.embeddings import EmbeddingStoreDataset
from language_agnostic.datasets.torch_state import TrainedHeadDataset
from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.evaluation.correlation import paired_cosine, pearson
from language_agnostic.pipelines import similarity
from language_agnostic.pipelines.qe.nodes import build_qe_candidates
from language_agnostic.pipelines.sts.nodes import build_tatoeba_candidates
from language_agnostic.training import heads

EN = [
    "wake me up at nine",
    "play jazz music",
    "what is the weather",
    "set an alarm for six",
    "play some music",
    "what is the weather today",
    "wake me up",
    "set an alarm",
    "play jazz",
    "weather today",
    "alarm for nine",
    "music please",
    "wake me at six",
    "jazz for me",
    "the weather at nine",
    "set music",
]
RO = [
    "trezeste ma la noua",
    "canta muzica jazz",
    "cum este vremea",
    "pune o alarma la sase",
    "canta ceva muzica",
    "cum este vremea azi",
    "trezeste ma",
    "pune o alarma",
    "canta jazz",
    "vremea azi",
    "alarma la noua",
    "muzica te rog",
    "trezeste ma la sase",
    "jazz pentru mine",
    "vremea la noua",
    "pune muzica",
]
ES = [
    "¿qué tiempo hace?",
    "música de jazz",
    "despiértame a las nueve",
    "pon una alarma",
    "¿hace frío mañana?",
    "canción",
]
GOLD = [0.5, -1.2, 0.3, 1.1, -0.4, 0.9]
EN_STS = [f"{e} now" for e in EN]  # STS sentences: none is in the tiny training corpora


def _tsv(rows: list[tuple[str, str, float | str]]) -> str:
    lines = ["\t".join(HEADER)]
    for i, (src, mt, z) in enumerate(rows):
        lines.append("\t".join([str(i), src, mt, "[50]", "50", "[0.1]", str(z), "-0.5"]))
    return "\n".join(lines) + "\n"


def _tar(path: Path, members: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


def _members(files: dict[str, str]) -> dict[str, Any]:
    return {name: (lambda text=text: text) for name, text in files.items()}


# ---------------------------------------------------------------- evaluation sets


def test_qe_test_sets_are_counted_and_bad_rows_rejected_or_named(tmp_path: Path):
    member = "ro-en/test20.roen.df.short.tsv"
    good = _tsv([(EN[i], RO[i], GOLD[i]) for i in range(3)])
    bad = good + "3\tonly\ttwo fields\n" + "4\t" + EN[4] + "\t" + RO[4] + "\t[1]\t1\t[1]\tnan?\t0\n"
    path = _tar(tmp_path / "ro-en_test.tar.gz", {member: bad})
    archive = TarArchiveDataset(str(path)).load()
    table, rejects, counts = evaluation_sets.ingest_qe_test({"pairs": ["ro-en"], "on_bad_row": "skip"}, archive)
    assert counts == {"ro-en": {"rows_in": 5, "rows_out": 3, "rejected": 2}}
    assert table.columns.tolist() == evaluation_sets.EVAL_COLUMNS
    assert table["gold"].tolist() == GOLD[:3] and set(table["lang1"]) == {"ro"} and set(table["lang2"]) == {"en"}
    assert rejects["kind"].tolist() == ["wrong_field_count", "bad_score"] and rejects["line"].tolist() == [5, 6]
    with pytest.raises(
        CorpusFormatError, match=r"ro-en_test\.tar\.gz:ro-en/test20\.roen\.df\.short\.tsv:5: 3 tab-separated"
    ):
        evaluation_sets.ingest_qe_test({"pairs": ["ro-en"], "on_bad_row": "error"}, archive)


def test_a_missing_member_is_named(tmp_path: Path):
    archive = TarArchiveDataset(str(_tar(tmp_path / "en-de_test.tar.gz", {"other.tsv": "x"}))).load()
    with pytest.raises(CorpusFormatError, match=r"en-de_test\.tar\.gz: no member 'en-de/test20\.ende\.df\.short\.tsv'"):
        evaluation_sets.ingest_qe_test({"pairs": ["en-de"]}, archive)


def _sts_zips(tmp_path: Path) -> tuple[Any, Any]:
    inputs = {
        "STS2017.eval.v1.1/STS.input.track4a.es-en.txt": "".join(f"{s}\t{e}\n" for s, e in zip(ES, EN_STS)),
        "STS2017.eval.v1.1/STS.input.track5.en-en.txt": "".join(
            f"{a}\t{b}\n" for a, b in zip(EN_STS[:6], EN_STS[6:12])
        ),
        # tr-en: 4 input lines, gold for the first 2 only
        "STS2017.eval.v1.1/STS.input.track6.tr-en.txt": "".join(
            f"{e}\tçok güzel {i}\n" for i, e in enumerate(EN_STS[:4])
        ),
    }
    gold = {
        "STS2017.gs/STS.gs.track4a.es-en.txt": "\n".join(str(2.5 + g) for g in GOLD) + "\n",
        "STS2017.gs/STS.gs.track5.en-en.txt": "\n".join(str(2.5 - g) for g in GOLD) + "\n",
        "STS2017.gs/STS.gs.track6.tr-en.txt": "4.0\n1.5\n",
    }
    return (
        ZipArchiveDataset(str(_zip(tmp_path / "Sts2017.eval.v1.1.zip", inputs))).load(),
        ZipArchiveDataset(str(_zip(tmp_path / "Sts2017.gs.zip", gold))).load(),
    )


def test_sts_tracks_from_zips_keep_the_scored_prefix_of_tr_en(tmp_path: Path):
    inputs, gold = _sts_zips(tmp_path)
    table, rejects, counts = evaluation_sets.ingest_sts_test({"tracks": ["es-en", "en-en", "tr-en"]}, inputs, gold)
    assert counts["tr-en"] == {"input_lines": 4, "gold_lines": 2, "rows_out": 2, "rejected": 0}
    assert counts["es-en"]["rows_out"] == 6 and rejects.empty
    es = table[table["pair"] == "es-en"]
    assert es["text1"].tolist() == ES and (es["lang1"].iloc[0], es["lang2"].iloc[0]) == ("es", "en")
    assert table.loc[table["pair"] == "tr-en", "gold"].tolist() == [4.0, 1.5]
    with pytest.raises(ValueError, match=r"sts.test.tracks: unknown track 'xx-en'"):
        evaluation_sets.ingest_sts_test({"tracks": ["xx-en"]}, inputs, gold)


def test_a_missing_zip_names_its_path(tmp_path: Path):
    from kedro.io import DatasetError

    # Kedro wraps the MissingRawDataError; its message names the path and where to get the file
    with pytest.raises(DatasetError, match=r"STS gold not found at '.*nowhere/Sts2017\.gs\.zip'"):
        ZipArchiveDataset(str(tmp_path / "nowhere" / "Sts2017.gs.zip"), description="STS gold").load()


# ---------------------------------------------------------------- training corpus


def test_qe_candidates_detokenise_mlqe_pe_and_add_flores():
    mlqe = [
        _members(
            {
                "ro-en-train/train.src": "Vremea e bună .\nAlt rând , aici .\n",
                "ro-en-train/train.pe": "The weather is good .\nAnother line , here .\n",
            }
        ),
        _members({"ro-en-dev/dev.src": "Unu .\n", "ro-en-dev/dev.pe": "One .\n"}),
    ]
    flores = _members(
        {
            "wikipedia_en_ne_si_test_sets/wikipedia.dev.ne-en.ne": "नेपाल\n",
            "wikipedia_en_ne_si_test_sets/wikipedia.dev.ne-en.en": "Nepal\n",
        }
    )
    params = {"pairs": ["ro-en"], "mlqe_pe_splits": ["train", "dev"], "flores": {"pairs": ["ne-en"], "splits": ["dev"]}}
    table = build_qe_candidates(params, flores, *mlqe)
    assert table["target"].tolist() == ["The weather is good.", "Another line, here.", "One.", "Nepal"]
    assert table["origin"].tolist() == ["mlqe-pe:train"] * 2 + ["mlqe-pe:dev", "flores-v1:dev"]
    assert table["pair"].tolist() == ["ro-en"] * 3 + ["ne-en"]
    with pytest.raises(ValueError, match="expected 2 MLQE-PE archives, got 1"):
        build_qe_candidates(params, flores, mlqe[0])


def test_tatoeba_candidates_filter_arabic_by_labels():
    base = "ara-eng/tatoeba-test-v2021-08-07"
    files = _members(
        {
            f"{base}.ara": "مرحبا\nاهلين\nشكرا\n",
            f"{base}.eng": "hello\nhi\nthanks\n",
            f"{base}.ara.labels": "ara\narz\nara\n",
            "eng-spa/tatoeba-test-v2021-08-07.spa": "hola\n",
            "eng-spa/tatoeba-test-v2021-08-07.eng": "hello there\n",
        }
    )
    table, counts = build_tatoeba_candidates({"languages": {"ara": "ar", "spa": "es"}}, files)
    assert table["target"].tolist() == ["hello", "thanks", "hello there"]
    assert table["pair"].tolist() == ["ar-en", "ar-en", "es-en"]
    assert counts.to_dict("records") == [
        {"language": "ara", "read": 3, "dropped_by_labels": 1},
        {"language": "spa", "read": 1, "dropped_by_labels": 0},
    ]
    with pytest.raises(CorpusFormatError, match=r"no member 'eng-ita/tatoeba-test-v2021-08-07\.ita'"):
        build_tatoeba_candidates({"languages": {"ita": "it"}}, files)


def _eval_table(pair: str, lang1: str, lang2: str, first: list[str], second: list[str], dataset: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "dataset": dataset,
            "pair": pair,
            "lang1": lang1,
            "lang2": lang2,
            "text1": first,
            "text2": second,
            "gold": GOLD[: len(first)],
        }
    )


def test_clean_and_split_counts_duplicates_and_every_kind_of_test_overlap():
    pairs = [
        ("a b", "x y"),
        ("a b", "x  Y"),
        ("c d", "Banned QE"),
        ("", "z"),
        ("e f", "One sentence."),
        ("g h", "sts sentence"),
    ] + [(f"s{i}", f"t{i}") for i in range(6)]
    candidates = pd.DataFrame(
        {
            "pair": "ro-en",
            "source_lang": "ro",
            "target_lang": "en",
            "source": [s for s, _ in pairs],
            "target": [t for _, t in pairs],
            "origin": "x",
        }
    )
    qe = _eval_table("ro-en", "ro", "en", ["q"], ["banned qe"], "wmt20_qe_test")
    sts = _eval_table("en-en", "en", "en", ["STS sentence"], ["other"], "sts17")
    laser = _members({"tatoeba.deu-eng.deu": "ein satz\n", "tatoeba.deu-eng.eng": "one  SENTENCE.\n"})
    corpus, sizes = evaluation_sets.clean_and_split(candidates, qe, sts, laser, {"validation_fraction": 0.1, "seed": 1})
    assert sizes.to_dict("records") == [
        {
            "pair": "ro-en",
            "in": 12,
            "empty": 1,
            "duplicate": 1,
            "test_overlap": 3,
            "out": 7,
            "train": 6,
            "validation": 1,
        }
    ]
    assert corpus["split"].value_counts().to_dict() == {"train": 6, "validation": 1}
    assert not set(corpus["target"]) & {"Banned QE", "One sentence.", "sts sentence"}
    # only the listed LASER languages are read
    _, sizes = evaluation_sets.clean_and_split(candidates, qe, sts, laser, {"laser_tatoeba": ["deu"]})
    assert sizes["test_overlap"].item() == 3
    with pytest.raises(CorpusFormatError, match=r"LASER Tatoeba test file 'tatoeba\.fra-eng\.fra' not found"):
        evaluation_sets.clean_and_split(candidates, qe, sts, laser, {"laser_tatoeba": ["fra"]})


# ---------------------------------------------------------------- reports


def test_report_tables_average_their_pairs_and_ablations_get_their_own_table():
    def row(method: str, embedding: str, pair: str, value: float) -> dict[str, Any]:
        return {
            "pipeline": "qe",
            "method": method,
            "embedding": embedding,
            "task": "quality_estimation",
            "dataset": f"wmt20_qe_test:{pair}",
            "source": pair[:2],
            "target": pair[3:],
            "metric": "pearson",
            "value": value,
            "encoder": "tiny",
        }

    pearson_rows = pd.DataFrame(
        [
            row("raw", "mean", "ro-en", 0.6),
            row("raw", "mean", "et-en", 0.2),
            row("seed", "meaning", "ro-en", 0.7),
            row("seed", "meaning", "et-en", 0.3),
            row("seed_without_lc", "meaning", "ro-en", 0.5),
            row("seed_without_lc", "meaning", "et-en", 0.2),
        ]
    )
    leakage = pd.DataFrame(
        [
            {
                **row("seed", "meaning", "x-x", 0.3),
                "task": "language_leakage",
                "metric": "probe_accuracy",
                "dataset": "qe_corpus:validation",
            },
            {
                **row("seed", "language", "x-x", 0.99),
                "task": "language_leakage",
                "metric": "probe_accuracy",
                "dataset": "qe_corpus:validation",
            },
        ]
    )
    sizes = pd.DataFrame(
        [
            {
                "pair": "ro-en",
                "in": 10,
                "empty": 0,
                "duplicate": 1,
                "test_overlap": 2,
                "out": 7,
                "train": 6,
                "validation": 1,
            }
        ]
    )
    report = {
        "pipeline": "qe",
        "title": "QE",
        "tables": {"Table 1": ["ro-en", "et-en"], "Table 1b": ["et-en"]},
        "ablation_tables": {"seed": "Table 5", "dream": "Table 6"},
        "paper_corpus_sizes": {"DREAM Table 1": {"ro-en": 195082}},
    }
    ablations = {"seed_without_lc": {"base": "seed", "loss_weights": {"cross": 0}}}
    rows, metrics, markdown = similarity.report_similarity(
        report, ablations, sizes, {"ro-en": {"rows_in": 1, "rows_out": 1}}, None, pearson_rows, leakage
    )
    assert len(rows) == 8
    table_1 = markdown.split("## Table 1\n")[1].split("## ")[0]
    assert "| method / embedding | ro-en | et-en | Avg. |" in table_1
    assert "| raw/mean | 0.600 | 0.200 | 0.400 |" in table_1
    assert "| seed/meaning | 0.700 | 0.300 | 0.500 |" in table_1
    assert "seed_without_lc" not in table_1  # ablations only in their own table
    assert "| seed/meaning | 0.300 | 0.300 |" in markdown.split("## Table 1b\n")[1]
    assert (
        "| seed | none (all losses) | 0.700 | 0.300 | 0.500 |\n| seed_without_lc | cross = 0 | 0.500 | 0.200 | 0.350 |"
        in markdown
    )
    assert "## Table 6" not in markdown  # no DREAM ablation configured
    assert "| seed | 0.300 | 0.990 |" in markdown
    assert "| ro-en | 10 | 1 | 2 | 7 | 6 | 1 | 195,082 |" in markdown
    assert metrics["qe.ingest.ro_en.rows_in"] == {"value": 1.0, "step": 0}


# ---------------------------------------------------------------- pipelines end to end

EXTRACTION = {"prefix": "", "dtype": "float32", "device": "cpu", "batch_size": 8, "progress": False}
TRAINING = {"batch_size": 4, "lr": 1e-3, "max_epochs": 2, "patience": 2, "seed": 0, "progress": False}


def _params(
    name: str, report: dict[str, Any], figure_pair: str, corpus: dict[str, Any], ablations: dict[str, Any] | None = None
) -> dict[str, Any]:
    methods = {
        "dream": {"activation": "none", "training": {"patience": 1}},
        "meat": {"training": {"lr": 1e-4}},
        "seed": {},
    }
    params = {
        f"params:{name}.corpus": {**corpus, "validation_fraction": 0.25, "seed": 0},
        f"params:{name}.pooling": "mean",
        f"params:{name}.training": TRAINING,
        f"params:{name}.leakage": {"train_per_language": 100, "test_per_language": 100, "seed": 0},
        f"params:{name}.figure": {"pair": figure_pair, "n_pairs": 1000, "seed": 0},
        f"params:{name}.report": report,
        f"params:{name}.ablations": ablations or {},
    }
    params.update({f"params:{name}.methods.{m}": spec for m, spec in methods.items()})
    params.update({f"params:{name}.ablations.{a}": spec for a, spec in (ablations or {}).items()})
    return params


def _catalog(tmp_path: Path, model_dir: Path, extra: dict[str, Any]) -> DataCatalog:
    qe_archive = TarArchiveDataset(
        str(
            _tar(
                tmp_path / "ro-en_test.tar.gz",
                {"ro-en/test20.roen.df.short.tsv": _tsv([(RO[10 + i], EN[10 + i], GOLD[i]) for i in range(6)])},
            )
        )
    )
    inputs, gold = _sts_zips(tmp_path)
    laser = _members({"tatoeba.ron-eng.ron": RO[15] + "\n", "tatoeba.ron-eng.eng": "not in the corpus\n"})
    return DataCatalog(
        {
            "wmt20_qe_test_ro-en": qe_archive,
            "sts17_input_archive": MemoryDataset(inputs, copy_mode="assign"),
            "sts17_gold_archive": MemoryDataset(gold, copy_mode="assign"),
            "laser_tatoeba": MemoryDataset(laser, copy_mode="assign"),
            "embedding_store": EmbeddingStoreDataset(str(tmp_path / "store")),
            "encoder": MemoryDataset(copy_mode="assign"),
            "params:embeddings.encoder": MemoryDataset({"name": str(model_dir)}),
            "params:embeddings.extraction": MemoryDataset(EXTRACTION),
            "params:qe.test": MemoryDataset({"pairs": ["ro-en"]}),
            "params:sts.test": MemoryDataset({"tracks": ["es-en", "en-en"]}),
            # on disk, so that the runner does not release them before the test reads them
            **{
                f"{name}_corpus_sizes": CSVDataset(
                    filepath=str(tmp_path / f"{name}_sizes.csv"), save_args={"index": False}
                )
                for name in ("qe", "sts")
            },
            **{
                f"{name}_seed_model": TrainedHeadDataset(str(tmp_path / f"{name}_seed.safetensors"))
                for name in ("qe", "sts")
            },
            **{name: MemoryDataset(value, copy_mode="assign") for name, value in extra.items()},
        }
    )


def test_qe_pipeline_end_to_end_on_tiny_data(tiny_hub_model: Path, tmp_path: Path):
    from language_agnostic.pipelines.qe.pipeline import create_pipeline

    # 12 candidate pairs; pair 10 has a test sentence (QE source) and pair 15 a LASER one: 10 kept
    mlqe = _members(
        {"ro-en-train/train.src": "\n".join(RO[:8]) + "\n", "ro-en-train/train.pe": "\n".join(EN[:8]) + "\n"}
    )
    mlqe_dev = _members(
        {
            "ro-en-dev/dev.src": "\n".join(RO[8:12] + [RO[15]]) + "\n",
            "ro-en-dev/dev.pe": "\n".join(EN[8:12] + ["set music"]) + "\n",
        }
    )
    corpus = {"pairs": ["ro-en"], "mlqe_pe_splits": ["train", "dev"], "flores": {"pairs": []}}
    report = {
        "pipeline": "qe",
        "task": "quality_estimation",
        "title": "QE",
        "tables": {"QE": ["ro-en"]},
        "ablation_tables": {"dream": "DREAM Table 6"},
        "paper_corpus_sizes": {"SEED Table 2": {"ro-en": 200000}},
        "bootstrap": {"resamples": 200, "seed": 0},
        "claims": [
            {
                "claim": "SEED above raw",
                "method": "seed/meaning",
                "baseline": "raw/mean",
                "backbone": "mE5",
                "paper": "0.438 vs 0.357",
            },
            {
                "claim": "not trained here",
                "method": "seed_without_lc/meaning",
                "baseline": "raw/mean",
                "backbone": "mE5",
                "paper": "0.493 vs 0.357",
            },
        ],
    }
    ablations = {"dream_without_meaning": {"base": "dream", "loss_weights": {"meaning": 0}}}
    catalog = _catalog(
        tmp_path,
        tiny_hub_model,
        {
            "mlqe_pe_train_ro-en": mlqe,
            "mlqe_pe_dev_ro-en": mlqe_dev,
            "flores_v1_archive": {},
            **_params("qe", report, "ro-en", corpus, ablations),
        },
    )
    catalog["qe_dream_without_meaning_model"] = TrainedHeadDataset(str(tmp_path / "ablation.safetensors"))
    SequentialRunner().run(create_pipeline(corpus=corpus, qe_pairs=["ro-en"], ablations=ablations), catalog)
    sizes = catalog["qe_corpus_sizes"].load()
    assert sizes.to_dict("records") == [
        {
            "pair": "ro-en",
            "in": 13,
            "empty": 0,
            "duplicate": 0,
            "test_overlap": 3,
            "out": 10,
            "train": 8,
            "validation": 2,
        }
    ]
    table = catalog["qe_metrics_table"].load()
    pearson_rows = table[table["metric"] == "pearson"]
    assert set(zip(pearson_rows["method"], pearson_rows["embedding"])) == {
        ("raw", "cls"),
        ("raw", "mean"),
        ("centering", "mean"),
        ("dream", "meaning"),
        ("meat", "meaning"),
        ("seed", "meaning"),
        ("dream_without_meaning", "meaning"),
    }
    assert set(pearson_rows["dataset"]) == {"wmt20_qe_test:ro-en"} and set(pearson_rows["source"]) == {"ro"}
    # the raw row is Pearson(cos, z_mean) computed here from the encoder directly
    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path / "check")
    vec = [
        extract_embeddings(encoder, texts, ExtractionSettings(**EXTRACTION), store).vectors("mean")
        for texts in (RO[10:16], EN[10:16])
    ]
    raw = pearson_rows[(pearson_rows["method"] == "raw") & (pearson_rows["embedding"] == "mean")]["value"].item()
    assert raw == pytest.approx(pearson(paired_cosine(*vec), np.array(GOLD)), abs=1e-6)
    probes = table[table["metric"] == "probe_accuracy"]
    assert {("seed", "meaning"), ("seed", "language"), ("dream", "language"), ("raw", "mean")} <= set(
        zip(probes["method"], probes["embedding"])
    )
    assert probes["value"].between(0, 1).all()
    markdown = catalog["qe_report_markdown"].load()
    assert (
        "| seed/meaning |" in markdown
        and "## Language leakage" in markdown
        and "| ro-en | 13 | 0 | 3 | 10 | 8 | 2 | 200,000 |" in markdown
    )
    assert "## DREAM Table 6" in markdown and "| dream_without_meaning | meaning = 0 |" in markdown
    # the claim on this run's six test items: the raw Pearson above, a p-value and one seed; the untrained one skipped
    claims = markdown.split("## The papers' claims, as measured\n")[1].split("## ")[0]
    assert (
        "| method r | baseline r | Δ r | bootstrap p | seeds | verdict |" in claims and "not trained here" not in claims
    )
    row = next(line for line in claims.splitlines() if line.startswith("| SEED above raw |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:6] == ["mE5", "0.438 vs 0.357", "`seed/meaning`", "`raw/mean`", "avg Pearson, ro-en"]
    # the cell is rounded to 3 decimals (±5e-4) from the report's own computation of the same Pearson
    # (float noise between the two can push a value on the rounding edge past 5e-4)
    assert float(cells[7]) == pytest.approx(raw, abs=6e-4) and cells[10] == "1"
    assert 0 < float(cells[9]) <= 1 and cells[11] in {"holds", "fails", "tie"}
    ablated = catalog["qe_dream_without_meaning_model"].load()
    assert (ablated["method"], ablated["name"], ablated["loss_weights"]) == (
        "dream",
        "dream_without_meaning",
        {"meaning": 0.0},
    )
    figure = catalog["qe_figure"].load()
    assert [ax.get_title().split()[1] for ax in figure.axes] == ["meaning", "language"]
    model = catalog["qe_seed_model"].load()
    assert model["languages"] == ["en", "ro"] and 1 <= model["best_epoch"] <= 2


def test_sts_pipeline_end_to_end_on_tiny_data(tiny_hub_model: Path, tmp_path: Path):
    from language_agnostic.pipelines.sts.pipeline import create_pipeline

    base = "eng-spa/tatoeba-test-v2021-08-07"
    opus = _members(
        {
            f"{base}.spa": "\n".join(f"{w} número {i}" for i, w in enumerate(RO[:12])) + "\n",
            f"{base}.eng": "\n".join([EN_STS[0], *EN[1:12]]) + "\n",
        }
    )
    report = {
        "pipeline": "sts",
        "task": "semantic_textual_similarity",
        "title": "STS",
        "tables": {"cross-lingual": ["es-en"], "monolingual": ["en-en"]},
        "paper_corpus_sizes": {},
    }
    catalog = _catalog(
        tmp_path,
        tiny_hub_model,
        {"opus_mt_testsets": opus, **_params("sts", report, "es-en", {"languages": {"spa": "es"}})},
    )
    SequentialRunner().run(create_pipeline(qe_pairs=["ro-en"], ablations={}), catalog)
    table = catalog["sts_metrics_table"].load()
    pearson_rows = table[table["metric"] == "pearson"]
    assert set(pearson_rows["dataset"]) == {"sts17:es-en", "sts17:en-en"}
    assert len(pearson_rows) == 2 * 6
    # line 0 is an STS sentence, lines 10 and 11 are QE test translations: dropped
    sizes = catalog["sts_corpus_sizes"].load()
    assert sizes.to_dict("records") == [
        {
            "pair": "es-en",
            "in": 12,
            "empty": 0,
            "duplicate": 0,
            "test_overlap": 3,
            "out": 9,
            "train": 7,
            "validation": 2,
        }
    ]
    markdown = catalog["sts_report_markdown"].load()
    assert "## cross-lingual\n\n| method / embedding | es-en | Avg. |" in markdown
    assert "## monolingual\n\n| method / embedding | en-en | Avg. |" in markdown


def test_unknown_methods_are_named():
    with pytest.raises(ValueError, match="unknown method 'emu'"):
        heads.head_options("emu", "none")


@pytest.mark.parametrize(
    ("ablations", "message"),
    [
        (
            {"seed": {"base": "seed", "loss_weights": {"cross": 0}}},
            r"qe.ablations.seed: the name must be a new identifier",
        ),
        (
            {"x-y": {"base": "seed", "loss_weights": {"cross": 0}}},
            r"qe.ablations.x-y: the name must be a new identifier",
        ),
        (
            {"no_lm": {"base": "emu", "loss_weights": {"meaning": 0}}},
            r"qe.ablations.no_lm.base must be one of \['dream', 'meat', 'seed'\], got 'emu'",
        ),
        (
            {"no_lm": {"base": "seed"}},
            r"qe.ablations.no_lm: give the loss_weights it changes \(e.g. \{meaning: 0\}\) or a training seed",
        ),
    ],
)
def test_bad_ablations_are_named(ablations: dict[str, Any], message: str):
    with pytest.raises(ValueError, match=message):
        heads.check_ablations(ablations)


@pytest.mark.slow
def test_real_evaluation_sets_and_qe_corpus_counts():
    """On ../shared/data: 6 × 1,000 QE rows, 6 × 250 STS rows, no rejects; the QE corpus sizes of docs/qe_sts.md."""
    from tests.conftest import REAL_DATA_ROOT

    root = REAL_DATA_ROOT
    if not (root / "wmt20_qe").is_dir() or not (root / "sts17").is_dir() or not (root / "parallel").is_dir():
        pytest.skip(f"WMT20 QE / STS17 / parallel data not found under {root}")
    pairs = ["en-de", "en-zh", "ro-en", "et-en", "ne-en", "si-en"]
    qe, qe_rejects, qe_counts = evaluation_sets.ingest_qe_test(
        {"pairs": pairs}, *[TarArchiveDataset(str(root / "wmt20_qe" / f"{p}_test.tar.gz")).load() for p in pairs]
    )
    assert {p: c["rows_out"] for p, c in qe_counts.items()} == dict.fromkeys(pairs, 1000) and qe_rejects.empty
    sts, sts_rejects, sts_counts = evaluation_sets.ingest_sts_test(
        {"tracks": ["ar-en", "es-en", "tr-en", "ar-ar", "es-es", "en-en"]},
        ZipArchiveDataset(str(root / "sts17" / "Sts2017.eval.v1.1.zip")).load(),
        ZipArchiveDataset(str(root / "sts17" / "Sts2017.gs.zip")).load(),
    )
    assert len(sts) == 6 * 250 and sts_rejects.empty and sts_counts["tr-en"]["input_lines"] == 500
    mlqe = [
        TarArchiveDataset(str(root / "parallel" / "mlqe-pe-post-editing" / s / f"{p}-{s}.tar.gz")).load()
        for p in pairs
        for s in ("train", "dev")
    ]
    flores = TarArchiveDataset(str(root / "parallel" / "flores-v1" / "wikipedia_en_ne_si_test_sets.tgz")).load()
    candidates = build_qe_candidates(
        {
            "pairs": pairs,
            "mlqe_pe_splits": ["train", "dev"],
            "flores": {"pairs": ["ne-en", "si-en"], "splits": ["dev", "devtest", "test"]},
        },
        flores,
        *mlqe,
    )
    from kedro_datasets.partitions import PartitionedDataset

    laser = PartitionedDataset(path=str(root / "tatoeba" / "v1"), dataset="text.TextDataset").load()
    _, sizes = evaluation_sets.clean_and_split(candidates, qe, sts, laser, {"validation_fraction": 0.1, "seed": 2025})
    assert sizes.set_index("pair")["out"].to_dict() == {
        "en-de": 7830,
        "en-zh": 7827,
        "ro-en": 8000,
        "et-en": 8000,
        "ne-en": 16216,
        "si-en": 16379,
    }
