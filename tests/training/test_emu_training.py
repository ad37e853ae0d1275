"""EMU fine-tuning end to end on tiny data with a tiny local encoder: data, sampling, every loss, a copy trained."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from language_agnostic.encoders.loading import load_encoder
from language_agnostic.training.emu import adversarial_locales_of, train_emu
from language_agnostic.training.emu_data import EmuBatches, sample_per_intent, tokenise
from language_agnostic.training.finetune import FineTuning

EN = [
    "wake me up at nine",
    "set an alarm for six",
    "play some jazz music",
    "play music",
    "what is the weather today",
    "weather today",
    "wake me up at six",
    "play jazz",
    "what is the weather",
    "set an alarm",
]
INTENTS = ["alarm", "alarm", "music", "music", "weather", "weather", "alarm", "music", "weather", "alarm"]
DE = [
    "weck mich um neun",
    "stelle einen wecker",
    "spiel etwas musik",
    "spiel musik",
    "wie ist das wetter",
    "wetter heute",
    "weck mich um sechs",
    "spiel jazz",
    "wie ist das wetter heute",
    "wecker",
]
PARTITIONS = ["train"] * 6 + ["dev"] * 3 + ["test"]
TRAINING = {
    "lr": 1e-3,
    "encoder_lr": 1e-4,
    "max_epochs": 2,
    "patience": 2,
    "seed": 0,
    "progress": False,
    "keep_initial": False,
}  # tiny data: test the mechanics; the loop tests keep_initial
EXTRACTION = {"prefix": ""}


def _utterances() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"locale": loc, "id": str(i), "partition": p, "utt": t, "intent": intent}
            for loc, texts in (("en-US", EN), ("de-DE", DE))
            for i, (t, p, intent) in enumerate(zip(texts, PARTITIONS, INTENTS))
        ]
    )


def test_sample_per_intent_is_seeded_and_bounded():
    rows = _utterances().query("locale == 'en-US' and partition == 'train'")
    sample = sample_per_intent(rows, 1, seed=0)
    assert sorted(sample["intent"]) == ["alarm", "music", "weather"]
    assert sample.equals(sample_per_intent(rows, 1, seed=0))
    assert len(sample_per_intent(rows, None, 0)) == 6
    with pytest.raises(ValueError, match="per_intent must be >= 1 or null, got 0"):
        sample_per_intent(rows, 0, 0)


def test_batches_carry_what_each_loss_reads(tiny_hub_model: Path):
    encoder = load_encoder(str(tiny_hub_model))
    tok = tokenise(encoder, EN[:6], EXTRACTION)
    adv = tokenise(encoder, DE[:6], EXTRACTION)
    labels = np.array([0, 0, 1, 1, 2, 2])
    data = EmuBatches(
        tok,
        labels,
        [adv],
        int(encoder.tokenizer.pad_token_id),
        batch_size=4,
        extras=("adversarial", "pair", "positive"),
    )
    batch = next(iter(data.batches(0, torch.Generator().manual_seed(0))))
    assert {
        "input_ids",
        "attention_mask",
        "labels",
        "adv_input_ids",
        "adv_attention_mask",
        "pair_input_ids",
        "pair_attention_mask",
        "same",
        "pos_input_ids",
        "pos_attention_mask",
    } == set(batch)
    # a same-intent partner (N-pair's positive, half the Siamese partners) has the anchor's intent and is not the anchor
    index = np.arange(6)
    chosen = data._same_intent(index, torch.Generator().manual_seed(0))
    assert (labels[chosen] == labels).all() and (chosen != index).all()
    assert set(batch["same"].tolist()) <= {0, 1}
    critic = next(iter(data.adversary_batches(0, torch.Generator().manual_seed(0))))
    assert (
        set(critic) == {"input_ids", "attention_mask", "adv_input_ids", "adv_attention_mask"}
        and len(critic["input_ids"]) == 4
    )
    with pytest.raises(ValueError, match="needs adversarial sentences"):
        EmuBatches(tok, labels, [], 0)


@pytest.mark.parametrize("loss", ["emu", "softmax", "contrastive", "npair"])
def test_train_emu_fine_tunes_a_copy(tiny_hub_model: Path, loss: str):
    encoder = load_encoder(str(tiny_hub_model))
    before = {k: v.clone() for k, v in encoder.model.state_dict().items()}
    method = {"loss": loss, "critic_steps": 2, "critic_hidden": 8}
    data = {"per_intent": 2, "batch_size": 4, "seed": 0}
    model, result, info = train_emu(_utterances(), encoder, FineTuning(loss, method, data, TRAINING, EXTRACTION))
    assert info["n_train"] == 6 and info["intents"] == ["alarm", "music", "weather"]
    assert info["adversarial_locales"] == (["de-DE"] if loss == "emu" else [])
    assert 0.0 <= info["dev_accuracy"] <= 1.0 and result.epochs_run <= 2
    # the shared encoder is untouched; the copy moved (except the frozen token embeddings)
    assert all(torch.equal(before[k], v) for k, v in encoder.model.state_dict().items())
    tuned = model.encoder.state_dict()
    assert torch.equal(tuned["embeddings.word_embeddings.weight"], before["embeddings.word_embeddings.weight"])
    assert not torch.equal(
        tuned["encoder.layer.0.attention.self.query.weight"], before["encoder.layer.0.attention.self.query.weight"]
    )
    if loss == "emu":
        assert max(float(p.detach().abs().max()) for p in model.critics.parameters()) <= 0.01 + 1e-9


def test_train_emu_names_a_training_locale_without_data(tiny_hub_model: Path):
    # a value's type, choices and keys are the model's (tests/parameters/test_emu.py); what the data lack is named here
    encoder = load_encoder(str(tiny_hub_model))
    with pytest.raises(ValueError, match="training_locale 'fr-FR': no train or dev utterances"):
        train_emu(_utterances(), encoder, FineTuning("emu", {}, {"training_locale": "fr-FR"}, TRAINING, EXTRACTION))


def test_adversarial_locales_of_configured_pairs():
    pairs = [
        {"source": "en-US", "target": "de-DE"},
        {"source": "en-US", "target": "ja-JP"},
        {"source": "de-DE", "target": "es-ES"},
    ]
    assert adversarial_locales_of(pairs, "en-US") == ["de-DE", "ja-JP", "es-ES"]


def test_several_labelled_locales_train_on_the_same_ids_in_each(tiny_hub_model: Path):
    encoder = load_encoder(str(tiny_hub_model))
    method = {"loss": "emu", "adversarial_weight": 0.0}
    data = {"per_intent": 2, "batch_size": 4, "seed": 0, "labelled_locales": ["en-US", "de-DE"]}
    _, _, info = train_emu(_utterances(), encoder, FineTuning("emu-no_ld-en_de", method, data, TRAINING, EXTRACTION))
    assert (
        info["n_train"] == 12 and info["labelled_locales"] == ["en-US", "de-DE"] and info["adversarial_locales"] == []
    )
    _, _, info = train_emu(
        _utterances(), encoder, FineTuning("emu", method, {**data, "labelled_locales": ["de-DE"]}, TRAINING, EXTRACTION)
    )
    assert info["n_train"] == 6 and info["labelled_locales"] == ["de-DE"]
    # EMU's critic has one D_t per labelled language; with several it is not built, and says so
    with pytest.raises(ValueError, match=r"emu.methods.emu: EMU's critic with several labelled locales"):
        train_emu(_utterances(), encoder, FineTuning("emu", {"loss": "emu"}, data, TRAINING, EXTRACTION))
    with pytest.raises(ValueError, match=r"emu.data.labelled_locales: 6 labelled sentences have no fr-FR translation"):
        train_emu(
            _utterances(),
            encoder,
            FineTuning("emu", method, {**data, "labelled_locales": ["en-US", "fr-FR"]}, TRAINING, EXTRACTION),
        )


def test_batch_sources_count_batches_for_the_schedule(tiny_hub_model: Path):
    """``len()`` counts examples; ``n_batches()`` what the loop plans warmup and decay on."""
    from language_agnostic.training.data import InterleavedBatches, QuadrupletBatches

    encoder = load_encoder(str(tiny_hub_model))
    tok = tokenise(encoder, EN, EXTRACTION)
    labelled = EmuBatches(tok, np.array([0, 0, 1, 1, 2, 2, 0, 1, 2, 0]), [], 0, batch_size=4, extras=())
    assert len(labelled) == 10 and labelled.n_batches() == 3 == len(list(labelled.batches(1, torch.Generator())))
    quads = QuadrupletBatches(np.zeros((5, 2)), np.zeros((5, 2)), np.zeros(5), np.ones(5), batch_size=2)
    both = InterleavedBatches(
        [quads, QuadrupletBatches(np.zeros((4, 2)), np.zeros((4, 2)), np.zeros(4), np.ones(4), batch_size=3)]
    )
    assert (len(quads), quads.n_batches(), len(both), both.n_batches()) == (5, 3, 9, 5)
