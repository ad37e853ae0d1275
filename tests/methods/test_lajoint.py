"""LAJoint (LAJ-MCL §3.1) on tiny encoders: the label prefix, label embeddings through ``inputs_embeds``,
their initialisation from the labels' texts, the compressor (eq. 2-3), the projector (eq. 4-5), the slot
prediction against L2-normalised labels, and L_J (eq. 6)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.lajoint import (
    LAJoint,
    LajointConfig,
    build_lajoint,
    initial_label_embeddings,
    label_names,
    lajoint_losses,
    prefix_shift,
    prepend_labels,
)
from language_agnostic.text.slot_negatives import slot_text

D = 16


@pytest.fixture
def encoder(tiny_hub_model: Path):
    return load_encoder(str(tiny_hub_model))


def _model(encoder, slots=("date", "time"), **options) -> LAJoint:
    torch.manual_seed(0)
    config = LajointConfig(n_intents=3, slots=slots, dropout=0.0, **options)
    return LAJoint(encoder.model, encoder.hidden_size, config)


def _ids(encoder, text: str, n_slots: int = 2) -> list[int]:
    tok = encoder.tokenizer
    return prepend_labels(tok(text)["input_ids"], n_slots, tok.cls_token_id, tok.sep_token_id, tok.unk_token_id)


def test_label_names_and_slot_texts_follow_the_label_vocabulary():
    assert label_names(["date", "place_name"]) == ["O", "B-date", "I-date", "B-place_name", "I-place_name"]
    assert slot_text("place_name") == "place name" and slot_text("fromloc.city_name") == "fromloc city name"
    config = LajointConfig(n_intents=2, slots=("date", "place_name"))
    assert config.n_labels == 5 and config.label_texts() == ["outside", "begin", "inside", "date", "place name"]
    with pytest.raises(ValueError, match="no text"):
        slot_text("__")


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"n_intents": 1}, "n_intents"),
        ({"slots": ()}, "slots"),
        ({"slots": ("a", "a")}, "distinct"),
        ({"dropout": 1.0}, "dropout"),
        ({"ignore_index": 2}, "ignore_index"),
        ({"abstract_texts": ("o", "b")}, "abstract_texts"),
    ],
)
def test_bad_options_are_named(bad, match):
    with pytest.raises(ValueError, match=match):
        LajointConfig(**{"n_intents": 2, "slots": ("date",), **bad})


def test_the_prefix_is_cls_the_labels_and_sep_before_the_utterance(encoder):
    tok = encoder.tokenizer
    ids = _ids(encoder, "wake me up")
    # K = 2 slots: [CLS], s_O s_B s_I s_date s_time (placeholders), [SEP], then the utterance without its [CLS]
    assert tok.convert_ids_to_tokens(ids) == ["[CLS]"] + ["[UNK]"] * 5 + ["[SEP]", "wake", "me", "up", "[SEP]"]
    assert prefix_shift(2) == 6  # "wake" was at 1, is at 7
    with pytest.raises(ValueError, match="start token"):
        prepend_labels([5, 6], 2, tok.cls_token_id, tok.sep_token_id, 1)


def test_label_positions_are_fed_through_inputs_embeds(encoder):
    model = _model(encoder).eval()
    ids = torch.tensor([_ids(encoder, "wake me up at nine am"), _ids(encoder, "play music") + [0] * 4])
    mask = (torch.arange(ids.shape[1]) < torch.tensor([[14], [10]])).long()
    word_embeddings = encoder.model.get_input_embeddings()
    with torch.no_grad():
        # label embeddings equal to the placeholder's word embedding: exactly the encoder on the ids
        model.label_embeddings.copy_(word_embeddings.weight[encoder.tokenizer.unk_token_id].expand(5, -1))
        same = model.encode(ids, mask)
        plain = encoder.model(input_ids=ids, attention_mask=mask).last_hidden_state
        assert torch.allclose(same[mask.bool()], plain[mask.bool()], atol=1e-6)
        # another embedding at s_date changes what the words read
        model.label_embeddings[3] += torch.linspace(-1.0, 1.0, D)  # a constant shift would vanish in LayerNorm
        moved = model.encode(ids, mask)
    assert not torch.allclose(moved[0, 7], same[0, 7], atol=1e-4)
    assert moved.shape == (2, 14, D)


def test_xlm_r_positions_from_inputs_embeds_match_those_from_ids():
    """XLM-R numbers positions from padding_idx + 1; from inputs_embeds it does the same for right-padded rows."""
    from transformers import XLMRobertaConfig, XLMRobertaModel

    torch.manual_seed(0)
    xlmr = XLMRobertaModel(
        XLMRobertaConfig(
            vocab_size=50,
            hidden_size=D,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=40,
            pad_token_id=1,
        ),
        add_pooling_layer=False,
    ).eval()
    model = LAJoint(xlmr, D, LajointConfig(n_intents=2, slots=("date",), dropout=0.0)).eval()
    ids = torch.tensor([[0, 3, 3, 3, 3, 2, 10, 11, 12, 2], [0, 3, 3, 3, 3, 2, 13, 2, 1, 1]])
    mask = (ids != 1).long()
    with torch.no_grad():
        model.label_embeddings.copy_(xlmr.get_input_embeddings().weight[3].expand(4, -1))
        ours = model.encode(ids, mask)
        plain = xlmr(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.allclose(ours[mask.bool()], plain[mask.bool()], atol=1e-6)


def test_label_embeddings_start_from_the_texts_bottom_layers(encoder):
    enc, tok = encoder.model, encoder.tokenizer
    enc.train()  # the mode is restored afterwards, and dropout is off while the texts are read
    got = initial_label_embeddings(enc, tok, ["alarm", "nine am", "weather today"], layers=2)
    assert got.shape == (3, D) and torch.allclose(got.norm(dim=1), torch.ones(3), atol=1e-6)
    assert enc.training is True
    enc.eval()
    with torch.no_grad():
        hidden = enc(**tok("nine am", return_tensors="pt"), output_hidden_states=True).hidden_states
    # [CLS] nine am [SEP]: each token the mean of layers 1 and 2 (not the embedding layer 0), then the
    # mean over "nine" and "am" only, scaled to norm 1
    nine = (hidden[1][0, 1] + hidden[2][0, 1]) / 2
    am = (hidden[1][0, 2] + hidden[2][0, 2]) / 2
    expected = (nine + am) / 2
    assert torch.allclose(got[1], expected / expected.norm(), atol=1e-5)
    one_layer = initial_label_embeddings(enc, tok, ["nine am"], layers=1)[0]
    assert torch.allclose(one_layer, F.normalize((hidden[1][0, 1] + hidden[1][0, 2]) / 2, dim=0), atol=1e-5)
    with pytest.raises(ValueError, match="layers must be in 1..2"):
        initial_label_embeddings(enc, tok, ["alarm"], layers=3)  # the tiny encoder has 2 layers; the paper's 3 needs 3


def test_build_lajoint_initialises_every_label_position(encoder):
    config = LajointConfig(n_intents=2, slots=("time", "date"), abstract_texts=("o", "b", "i"))
    model = build_lajoint(encoder.model, encoder.tokenizer, config, layers=2)
    expected = initial_label_embeddings(encoder.model, encoder.tokenizer, ["o", "b", "i", "time", "date"], layers=2)
    assert torch.equal(model.label_embeddings.data, expected)
    # the label embeddings train with the encoder (encoder_lr), the compressor / projector / heads apart
    ids = {id(p) for p in model.encoder_parameters()}
    assert id(model.label_embeddings) in ids and id(model.project.weight) not in ids
    assert id(model.compress_b.weight) not in ids and id(model.intent_head.weight) not in ids


def test_the_compressor_combines_b_and_i_with_each_slot_in_label_order(encoder):
    model = _model(encoder)
    states = torch.randn(2, 9, D)  # [CLS] s_O s_B s_I s_1 s_2 [SEP] ...
    eye, zero = torch.eye(D), torch.zeros(D, D)
    with torch.no_grad():
        model.compress_b.weight.copy_(torch.cat([eye, zero], 1))  # eq. 2 with W_cb = [I; 0]: E_B
        model.compress_b.bias.zero_()
        model.compress_i.weight.copy_(torch.cat([zero, 2 * eye], 1))  # eq. 3 with W_ci = [0; 2I], b = 1: 2 E_k + 1
        model.compress_i.bias.fill_(1.0)
        labels = model.label_states(states)
    assert labels.shape == (2, 5, D)  # O, B-s1, I-s1, B-s2, I-s2
    assert torch.allclose(labels[:, 0], states[:, 1])
    assert torch.allclose(labels[:, 1], states[:, 2]) and torch.allclose(labels[:, 3], states[:, 2])
    assert torch.allclose(labels[:, 2], 2 * states[:, 4] + 1) and torch.allclose(labels[:, 4], 2 * states[:, 5] + 1)
    plain = _model(encoder, compressor=False)
    assert plain.compress_b is None
    bare = plain.label_states(states)  # "- compressor": the mean of the abstract label and the slot
    assert torch.allclose(bare[:, 1], (states[:, 2] + states[:, 4]) / 2)
    assert torch.allclose(bare[:, 4], (states[:, 3] + states[:, 5]) / 2)


def test_shapes_with_and_without_compressor_and_projector(encoder):
    ids = torch.tensor([_ids(encoder, "wake me up"), _ids(encoder, "play music") + [0]])
    mask = (ids != 0).long()
    for options in ({}, {"compressor": False}, {"projector": False}, {"compressor": False, "projector": False}):
        model = _model(encoder, **options)
        out = model.outputs(ids, mask)
        assert out.intent_logits.shape == (2, 3) and out.slot_logits.shape == (2, 11, 5)
        assert out.words.shape == (2, 11, D) and out.labels.shape == (2, 5, D)
        if options.get("projector") is False:  # "- projector": H = E
            assert torch.equal(out.words, out.states)
    n_params = [
        sum(p.numel() for n, p in _model(encoder, **k).named_parameters() if not n.startswith("encoder."))
        for k in ({}, {"compressor": False}, {"projector": False})
    ]
    # label embeddings 5x16 + intent head 16*3+3 = 131; compressor 2 x (32x16+16) = 1056; projector 16x16+16 = 272
    assert n_params == [131 + 1056 + 272, 131 + 272, 131 + 1056]


def test_slot_logits_normalise_the_labels_not_the_words(encoder):
    model = _model(encoder)
    ids = torch.tensor([_ids(encoder, "wake me up")])
    mask = torch.ones_like(ids)
    out = model.outputs(ids, mask)
    h_t, h_k = out.words[0, 7], out.labels[0, 2]
    assert torch.allclose(out.slot_logits[0, 7, 2], h_t @ h_k / h_k.norm(), atol=1e-5)
    # scaling a word scales its logits; a label's length does not matter (p = softmax(H_t ||H_k||^T))
    with torch.no_grad():
        model.project.weight.mul_(3.0)
        model.project.bias.mul_(3.0)
    tripled = model.outputs(ids, mask)
    assert torch.allclose(tripled.slot_logits, 3 * out.slot_logits, atol=1e-4)


def test_the_intent_is_read_off_cls_and_l_j_is_the_sum(encoder):
    model = _model(encoder)
    ids = torch.tensor([_ids(encoder, "wake me up"), _ids(encoder, "play music") + [0]])
    mask = (ids != 0).long()
    out = model.outputs(ids, mask)
    assert torch.allclose(out.intent_logits, model.intent_head(out.states[:, 0]))
    labels = torch.full(ids.shape, -100)
    labels[0, 7:10] = torch.tensor([0, 0, 1])
    labels[1, 7:9] = torch.tensor([0, 3])
    batch = {"input_ids": ids, "attention_mask": mask, "intents": torch.tensor([0, 2]), "slot_labels": labels}
    losses = lajoint_losses(model, batch)
    expected_slot = F.cross_entropy(out.slot_logits[labels != -100], labels[labels != -100])
    assert torch.allclose(losses["slot"], expected_slot, atol=1e-6)
    assert torch.allclose(losses["intent"], F.cross_entropy(out.intent_logits, torch.tensor([0, 2])), atol=1e-6)
    assert torch.allclose(losses["total"], losses["intent"] + losses["slot"])
    losses["total"].backward()
    assert model.label_embeddings.grad is not None and model.label_embeddings.grad.abs().sum() > 0
    weighted = lajoint_losses(model, batch, {"slot": 0.5})
    assert torch.allclose(weighted["total"], weighted["intent"] + 0.5 * weighted["slot"])
    with pytest.raises(ValueError, match="unknown LAJoint loss weight"):
        lajoint_losses(model, batch, {"word": 1.0})
    with pytest.raises(ValueError, match="label_init"):
        LAJoint(encoder.model, D, LajointConfig(n_intents=2, slots=("date",)), torch.zeros(3, D))
