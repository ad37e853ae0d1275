"""Which trained models and training languages follow from the project's configuration, and which
models are skipped, why.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from language_agnostic.datasets.directory import ModelShelf
from language_agnostic.methods.apply import (
    ModelSpec,
    expected_models,
    fmda_meaning_table,
    fmda_meanings,
    head_meaning,
    load_models,
    model_sections,
    training_languages,
)
from language_agnostic.methods.registry import artifact, build
from language_agnostic.methods.trained import write_artifact
from tests.conftest import PROJECT_ROOT

IDENTITY = {"name": "tiny", "weights_sha256": "a" * 64, "hidden_size": 16}


def _conf() -> dict:
    params: dict = {}
    for name in ("qe", "sts", "massive", "fmda", "emu"):
        params.update(yaml.safe_load((PROJECT_ROOT / "conf" / "base" / f"parameters_{name}.yml").read_text()))
    return params


def test_training_languages_follow_the_configured_corpora():
    assert training_languages(_conf()) == {
        "qe": ["cmn", "deu", "eng", "est", "ron"],  # en-de en-zh ro-en et-en; ne and si have no Tatoeba set
        "sts": ["ara", "deu", "eng", "fra", "ita", "nld", "spa", "tur"],
        "en_de": ["deu", "eng"],
        "en_es": ["eng", "spa"],
        "en_ja": ["eng", "jpn"],
        "massive": ["deu", "eng", "jpn", "spa"],  # EMU: en-US labelled, massive.locales unlabelled
    }
    paper = {**_conf(), "fmda_paper": {"unified": {"pairs": ["en_de", "en_ja"]}}}
    assert training_languages(paper, ["fmda"])["unified"] == ["deu", "eng", "jpn"]
    # a source the project does not train is refused by the model (tests/parameters/test_project.py)


def test_expected_models_follow_the_configured_pipelines():
    specs = expected_models(_conf())
    names = [s.name for s in specs]
    assert names[:9] == [
        "centering@qe",
        "dream@qe",
        "meat@qe",
        "seed@qe",
        "seed_without_lc@qe",
        "seed_without_ll@qe",
        "seed_without_lm@qe",
        "dream_without_language@qe",
        "dream_without_meaning@qe",
    ]
    assert names[9:13] == ["centering@sts", "dream@sts", "meat@sts", "seed@sts"]
    assert names[13:20] == [
        "fmda@en_de",
        "fmda-infonce@en_de",
        "fmda-two_stage@en_de",
        "fmda-two_stage_infonce@en_de",
        "dream@en_de",
        "linear-infonce@en_de",
        "dream-infonce@en_de",
    ]
    assert names[-1] == "emu@massive" and len(names) == 13 + 3 * 7 + 1
    by_name = {s.name: s for s in specs}
    assert by_name["fmda-two_stage@en_ja"] == ModelSpec(
        "fmda-two_stage@en_ja", "fmda", "en_ja", "en_ja/fmda_two_stage.safetensors", "kedro run --pipelines=fmda", "m"
    )
    assert by_name["linear-infonce@en_es"].path == "en_es/linear_infonce.safetensors"
    assert by_name["emu@massive"] == ModelSpec(
        "emu@massive",
        "encoder",
        "massive",
        "emu/encoders/emu",
        "kedro run --pipelines=emu (with 'emu' in emu.save_encoders)",
        "mean",
    )
    paper = {
        **_conf(),
        "fmda_paper": {
            "variants": {"no_contrastive": {"pairs": ["en_de"], "ablation": "no_contrastive"}},
            "unified": {"pairs": ["en_de"]},
        },
    }
    extra = {s.name: s for s in expected_models(paper, ["fmda"])}
    assert extra["fmda-no_contrastive@en_de"].command == "kedro run --pipelines=fmda --env=paper"
    assert "fmda-no_contrastive@en_es" not in extra and extra["fmda-unified@unified"].path == "fmda_unified.safetensors"


def _head(method: str, identity: dict | None = IDENTITY, **extra) -> dict:
    torch.manual_seed(0)
    options = {"activation": "none"} if method == "dream" else {}
    return artifact(method, build(method, 16, 2, options), 16, 2, options, encoder=identity, pooling="mean", **extra)


def test_missing_old_and_foreign_models_are_skipped_with_the_reason(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    write_artifact(_head("dream"), tmp_path / "qe" / "dream.safetensors")
    old = _head("meat")
    del old["build"]
    write_artifact(old, tmp_path / "qe" / "meat.safetensors")
    write_artifact(_head("seed", {"name": "other", "weights_sha256": "b" * 64}), tmp_path / "qe" / "seed.safetensors")
    write_artifact(
        {"state_dict": {"de": torch.ones(16), "en": torch.zeros(16)}, "method": "centering", "pooling": "mean"},
        tmp_path / "qe" / "centering.safetensors",
    )
    specs = [
        s
        for s in expected_models(_conf(), ["qe", "emu"])
        if s.name in ("centering@qe", "dream@qe", "meat@qe", "seed@qe", "seed_without_lc@qe", "emu@massive")
    ]
    with caplog.at_level(logging.WARNING):
        loaded, skipped = load_models(ModelShelf(tmp_path), specs, training_languages(_conf(), ["qe"]), IDENTITY)
    assert [m.spec.name for m in loaded] == ["centering@qe", "dream@qe"]
    assert loaded[1].languages == ["cmn", "deu", "eng", "est", "ron"] and loaded[1].pooling == "mean"
    np.testing.assert_array_equal(loaded[0].module["de"], np.ones(16, dtype=np.float32))
    reasons = {row["method"]: row["reason"] for row in skipped}
    assert reasons["meat@qe"] == (
        f"{tmp_path}/qe/meat.safetensors was saved before the method registry (no 'build' entry); "
        "rerun `kedro run --pipelines=qe`"
    )
    assert reasons["seed@qe"].startswith(
        f"tatoeba.models: {tmp_path}/qe/seed.safetensors was trained with encoder 'other'"
    )
    assert reasons["seed_without_lc@qe"] == (
        f"{tmp_path}/qe/seed_without_lc.safetensors not found; `kedro run --pipelines=qe` makes it"
    )
    assert reasons["emu@massive"] == (
        f"{tmp_path}/emu/encoders/emu not found (no config.json); "
        "`kedro run --pipelines=emu (with 'emu' in emu.save_encoders)` makes it"
    )
    assert f"tatoeba: seed_without_lc@qe skipped: {tmp_path}/qe/seed_without_lc.safetensors not found" in caplog.text

    # a fine-tuned encoder is used when it started from the configured encoder (as emu's finetuned.json records it)
    encoder_dir = tmp_path / "emu" / "encoders" / "emu"
    encoder_dir.mkdir(parents=True)
    (encoder_dir / "config.json").write_text("{}")
    record = {"base": {"name": "emu/emu", "base": {"name": "tiny", "weights_sha256": "a" * 64}}, "dev_accuracy": 0.8}
    (encoder_dir / "finetuned.json").write_text(json.dumps(record))
    emu = [s for s in specs if s.name == "emu@massive"]
    assert [m.spec.name for m in load_models(ModelShelf(tmp_path), emu, {}, IDENTITY)[0]] == ["emu@massive"]
    record["base"]["base"]["weights_sha256"] = "c" * 64
    (encoder_dir / "finetuned.json").write_text(json.dumps(record))
    _, skipped = load_models(ModelShelf(tmp_path), emu, {}, IDENTITY)
    assert skipped[0]["reason"] == (
        f"{encoder_dir} was fine-tuned from encoder 'tiny' (weights cccccccccccc), but "
        "embeddings.encoder.name configures 'tiny' (weights aaaaaaaaaaaa); its rows would be "
        "compared with another encoder's"
    )


def test_heads_and_fmda_models_give_their_meaning_embedding(tiny_hub_model: Path, tmp_path: Path):
    from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
    from language_agnostic.encoders.loading import load_encoder
    from language_agnostic.methods.fmda import encode_with_fmda

    options = {
        "ffn_layers": 1,
        "mlp_layers": 1,
        "activation": "gelu",
        "attention_scale": "sqrt_d",
        "utterance_target": "mean",
        "init": "pytorch",
    }
    torch.manual_seed(1)
    fmda = [artifact("fmda", build("fmda", 16, 2, options), 16, 2, options, encoder=IDENTITY) for _ in range(2)]
    for i, saved in enumerate(fmda):
        write_artifact(saved, tmp_path / "en_de" / f"fmda_v{i}.safetensors")
    write_artifact(_head("dream"), tmp_path / "en_de" / "dream.safetensors")
    specs = [ModelSpec(f"fmda-v{i}@en_de", "fmda", "en_de", f"en_de/fmda_v{i}.safetensors", "x", "m") for i in range(2)]
    specs.append(ModelSpec("dream@en_de", "head", "en_de", "en_de/dream.safetensors", "x"))
    loaded, skipped = load_models(ModelShelf(tmp_path), specs, {}, IDENTITY)
    assert not skipped
    vectors = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    with torch.no_grad():
        expected = loaded[2].module(torch.from_numpy(vectors))[0].numpy()  # DREAM's MLP_M
    np.testing.assert_allclose(head_meaning(loaded[2], vectors), expected, rtol=1e-6)
    # several FMDA models over one gather of token states: each as encode_with_fmda gives it alone
    entry = extract_embeddings(
        load_encoder(str(tiny_hub_model)),
        ["wake me up", "play some jazz music", "weck mich", "set an alarm"],
        ExtractionSettings(prefix="", dtype="float32", device="cpu", token_states=True, progress=False),
        EmbeddingStore(tmp_path / "store"),
    )
    index = np.array([3, 0, 2])
    for got, model in zip(fmda_meanings(loaded[:2], entry, index, batch_size=2), loaded[:2], strict=True):
        np.testing.assert_allclose(got, encode_with_fmda(model.module, entry)["m"][index], rtol=1e-5, atol=1e-6)
    # the cached table of every text: float16 of the same numbers, computed once, keyed by the weights
    table = fmda_meaning_table(loaded[0], entry)
    assert table.dtype == np.float16 and table.shape == (4, 16)
    np.testing.assert_allclose(table, encode_with_fmda(loaded[0].module, entry)["m"], rtol=2e-3, atol=2e-3)
    (derived,) = (tmp_path / "store").glob("v2-*/derived")
    assert len(list(derived.iterdir())) == 1
    np.testing.assert_array_equal(fmda_meaning_table(loaded[0], entry), table)
    fmda_meaning_table(loaded[1], entry)
    assert len(list(derived.iterdir())) == 2  # other weights, another table


def test_model_sections_name_the_sections_in_the_plan_nodes_order():
    """The plan nodes' positional sections are named qe, sts, massive, fmda, fmda_paper, emu."""
    sections = [{"n": i} for i in range(6)]
    assert model_sections(sections) == {
        "qe": {"n": 0},
        "sts": {"n": 1},
        "massive": {"n": 2},
        "fmda": {"n": 3},
        "fmda_paper": {"n": 4},
        "emu": {"n": 5},
    }
    with pytest.raises(ValueError, match=r"expected the parameter sections \['qe', .*, 'emu'\], got 5 sections"):
        model_sections(sections[:5])
