"""LAJoint / LAJ-MCL fine-tuning on tiny data with the tiny local encoder: a few steps lower the joint loss,
the variants' data, predictions per word, and bad parameters named."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.lajmcl import lajmcl_losses
from language_agnostic.training.finetune import FineTuning
from language_agnostic.training.lajmcl import MclData, lajmcl_loss_fn, predict_lajmcl, prepare_lajmcl, train_lajmcl
from language_agnostic.training.loop import train

EN = [
    ("1", "train", "alarm_set", "wake me up at nine am", "O O O O B-time I-time"),
    ("2", "train", "alarm_set", "set an alarm for six", "O O O O B-time"),
    ("3", "train", "play_music", "play some jazz music", "O O B-genre O"),
    ("4", "train", "play_music", "play music", "O O"),
    ("5", "train", "weather_query", "what is the weather today", "O O O O B-date"),
    ("6", "train", "weather_query", "weather today", "O B-date"),
    ("7", "dev", "alarm_set", "wake me up at six", "O O O O B-time"),
    ("8", "dev", "play_music", "play jazz", "O B-genre"),
    ("9", "dev", "weather_query", "what is the weather", "O O O O"),
    ("11", "test", "alarm_set", "wake me up at six am", "O O O O B-time I-time"),
]
TRAINING = {
    "lr": 1e-2,
    "encoder_lr": 1e-3,
    "max_epochs": 3,
    "patience": 3,
    "seed": 0,
    "progress": False,
    "keep_initial": False,
}  # tiny data: test the mechanics; the loop tests keep_initial
EXTRACTION = {"prefix": ""}
DICTIONARIES = {
    "de": {
        "wake": ["weck"],
        "me": ["mich"],
        "play": ["spiel"],
        "music": ["musik"],
        "weather": ["wetter"],
        "today": ["heute"],
        "nine": ["neun"],
        "six": ["sechs"],
    }
}
SWITCH = {"code_switch": {"ratio": 0.9, "languages": ["de"], "seed": 0, "keep_source": True}}
METHOD = {"dropout": 0.0, "mcl": {"init_layers": 2, "p_s": 1}}  # the tiny encoder has 2 layers
NO_MCL = {"utterance": 0, "slot_value": 0, "word": 0}


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "locale": "en-US",
                "id": i,
                "partition": p,
                "intent": intent,
                "words": words.split(),
                "labels": labels.split(),
            }
            for i, p, intent, words, labels in EN
        ]
    )


@pytest.fixture
def encoder(tiny_hub_model: Path):
    return load_encoder(str(tiny_hub_model))


def test_a_few_steps_of_lajmcl_lower_the_joint_loss(encoder):
    before_weights = {k: v.clone() for k, v in encoder.model.state_dict().items()}
    run = prepare_lajmcl(
        _table(), encoder, FineTuning("lajmcl", METHOD, {"batch_size": 6, **SWITCH}, TRAINING, EXTRACTION), DICTIONARIES
    )
    assert run.info["slots"] == ["date", "genre", "time"] and run.info["mcl_levels"] == [
        "utterance",
        "slot_value",
        "word",
    ]
    assert run.info["loss_weights"] == {"intent": 1.0, "slot": 1.0, "utterance": 0.5, "slot_value": 0.5, "word": 0.5}
    assert run.info["similar_slots"] is not None and set(run.info["similar_slots"]) == {"date", "genre", "time"}
    batch = next(iter(run.train_data.batches(0, torch.Generator().manual_seed(5))))
    assert {"value_ids", "neg_input_ids", "word_pairs"} <= set(batch) and batch["input_ids"].shape[0] == 12

    def joint() -> float:
        run.model.eval()
        with torch.no_grad():
            parts = lajmcl_losses(run.model, batch, NO_MCL)
        return float(parts["intent"] + parts["slot"])

    start = joint()
    result = train(
        run.model, lajmcl_loss_fn(run.loss_weights), run.train_data, run.dev_data, run.settings, run.dev_score
    )
    trained = [r for r in result.history if r["epoch"] > 0]  # epoch 0: the initial weights, scored on dev only
    assert result.epochs_run == 3 and all("train_word" in r and "train_slot_value" in r for r in trained)
    assert all(r["dev_word"] == 0.0 for r in result.history)  # dev batches: L_J alone
    end = joint()
    assert end < start
    # the shared encoder is untouched: a copy was trained
    assert all(torch.equal(before_weights[k], v) for k, v in encoder.model.state_dict().items())


def test_lajoint_without_mcl_needs_no_code_switching_and_predicts_one_label_per_word(encoder):
    method = {**METHOD, "loss_weights": NO_MCL, "compressor": False}
    model, result, info = train_lajmcl(
        _table(), encoder, FineTuning("lajoint", method, {"batch_size": 3}, {**TRAINING, "max_epochs": 1}, EXTRACTION)
    )
    assert info["mcl_levels"] == [] and info["code_switch"] is None and info["compressor"] is False
    assert 0.0 <= result.history[0]["dev_score"] <= 1.0
    test = _table().query("partition != 'train'").reset_index(drop=True)
    intents, labels = predict_lajmcl(model, test, encoder, info["intents"], info["labels"], 3, EXTRACTION, batch_size=2)
    assert [len(x) for x in labels] == [len(w) for w in test["words"]] and set(intents) <= set(info["intents"])
    # batching does not change a prediction
    one = [
        predict_lajmcl(model, [w], encoder, info["intents"], info["labels"], 3, EXTRACTION)[1][0] for w in test["words"]
    ]
    assert one == labels


def test_ja_style_rows_are_predicted_as_their_text_reads(encoder):
    run = prepare_lajmcl(
        _table(), encoder, FineTuning("lajmcl", {**METHOD, "loss_weights": NO_MCL}, {}, TRAINING, EXTRACTION)
    )
    rows = pd.DataFrame(
        {"words": [["wake", "me", "up"], ["we", "ather"]], "spaced": [[True, True, True], [True, False]]}
    )
    _, labels = predict_lajmcl(run.model, rows, encoder, run.info["intents"], run.info["labels"], 3, EXTRACTION)
    assert [len(x) for x in labels] == [3, 2]


@pytest.mark.parametrize(
    "method, data, match",
    [
        (METHOD, {}, r"MCL \(\['utterance', 'slot_value', 'word'\] weighted > 0\) needs slu.data.code_switch"),
        (
            {**METHOD, "loss_weights": {"utterance": 1, "slot_value": 0, "word": 0}},
            {"code_switch": {"ratio": 0.9, "languages": ["de"]}},
            "keep_source: true",
        ),
        # the settings' own checks (their __post_init__)
        ({**METHOD, "mcl": {"p_s": 0}}, SWITCH, "mcl.p_s must be an integer >= 1"),
        ({**METHOD, "margins": {"word": -1}}, SWITCH, "margins.word"),
    ],
)
def test_bad_parameters_are_named(encoder, method, data, match):
    # a value's type, range and keys are the model's (tests/parameters/test_slu.py)
    with pytest.raises(ValueError, match=match):
        prepare_lajmcl(_table(), encoder, FineTuning("lajmcl", method, data, TRAINING, EXTRACTION), DICTIONARIES)


def test_mcl_data_defaults_are_appendix_b():
    assert MclData() == MclData(slot_negatives=2, word_negatives=2, p_v=20, p_s=5, init_layers=3)


def test_the_slot_affinity_options_reach_the_model_and_survive_the_artifact(encoder):
    from language_agnostic.methods.registry import load_trained
    from language_agnostic.training.lajmcl import lajmcl_artifact

    run = prepare_lajmcl(
        _table(),
        encoder,
        FineTuning(
            "lajmcl",
            {**METHOD, "slot_temperature": 0.25, "slot_affinity": "cosine"},
            {"batch_size": 6, **SWITCH},
            TRAINING,
            EXTRACTION,
        ),
        DICTIONARIES,
    )
    assert run.model.mcl.slot_temperature == 0.25 and run.info["slot_temperature"] == 0.25
    assert run.model.mcl.slot_affinity == run.info["slot_affinity"] == "cosine"
    method, model = load_trained(lajmcl_artifact(run.model, encoder), encoder)  # over the base encoder
    rebuilt = model.mcl
    assert method.name == "lajoint" and type(model) is type(run.model)
    assert (rebuilt.slot_temperature, rebuilt.slot_affinity) == (0.25, "cosine")
    with pytest.raises(ValueError, match="slot_temperature must be a number > 0, got -1"):
        prepare_lajmcl(
            _table(),
            encoder,
            FineTuning("lajmcl", {**METHOD, "slot_temperature": -1}, {"batch_size": 6, **SWITCH}, TRAINING, EXTRACTION),
            DICTIONARIES,
        )


def test_train_lajmcl_reports_what_train_slu_reports(encoder):
    from language_agnostic.training.slu import train_slu

    _, _, slu_info = train_slu(
        _table(), encoder, FineTuning("zsjoint", {}, {}, {**TRAINING, "max_epochs": 1}, EXTRACTION)
    )
    _, result, info = train_lajmcl(
        _table(),
        encoder,
        FineTuning("lajoint", {**METHOD, "loss_weights": NO_MCL}, {}, {**TRAINING, "max_epochs": 1}, EXTRACTION),
    )
    shared = {
        "dev_exact_match",
        "dev_intent_accuracy",
        "dev_slot_f1",
        "best_epoch",
        "best_step",
        "epochs_run",
        "train_seconds",
        "train_seconds_per_epoch",
        "train_layers",
        "encoder_parameters",
        "n_truncated",
    }
    assert shared <= set(slu_info) and shared <= set(info)
    assert info["dev_exact_match"] == pytest.approx(result.history[result.best_epoch - 1]["dev_score"])
    assert info["mixed_precision"] == "no"  # test is predicted under it, as dev was scored
    assert set(info["n_truncated"]) == set(slu_info["n_truncated"]) == {"train", "dev", "train_switched"}


def test_train_layers_keeps_the_label_embeddings_trained_and_their_gradient_flowing_through_every_layer(encoder):
    run = prepare_lajmcl(
        _table(),
        encoder,
        FineTuning(
            "lajmcl", {**METHOD, "loss_weights": NO_MCL}, {"batch_size": 3}, {**TRAINING, "train_layers": 1}, EXTRACTION
        ),
    )
    layers = run.model.encoder.encoder.layer
    assert not any(p.requires_grad for p in [*run.model.encoder.embeddings.parameters(), *layers[0].parameters()])
    assert run.model.label_embeddings.requires_grad and all(p.requires_grad for p in layers[1].parameters())
    seen = []
    layers[0].register_forward_hook(
        lambda m, i, o: seen.append(o[0].requires_grad if isinstance(o, tuple) else o.requires_grad)
    )
    batch = next(iter(run.train_data.batches(1, torch.Generator().manual_seed(0))))
    lajmcl_losses(run.model, batch, NO_MCL)["total"].backward()
    # the label embeddings enter at the input: the frozen layer is in the graph, its weights get no gradient
    assert seen == [True] and run.model.label_embeddings.grad is not None
    assert all(p.grad is None for p in layers[0].parameters())


def test_lajmcl_intent_vectors_read_cls_with_the_label_prefix(encoder):
    from language_agnostic.training.lajmcl import lajmcl_intent_vectors

    model, _, info = train_lajmcl(
        _table(),
        encoder,
        FineTuning("lajoint", {**METHOD, "loss_weights": NO_MCL}, {}, {**TRAINING, "max_epochs": 1}, EXTRACTION),
    )
    rows = _table()
    vectors = lajmcl_intent_vectors(model, rows, encoder, 3, EXTRACTION, batch_size=4)
    assert vectors.shape == (len(rows), 16)
    intents, _ = predict_lajmcl(model, rows, encoder, info["intents"], info["labels"], 3, EXTRACTION)
    with torch.no_grad():
        from_vectors = model.intent_head(torch.from_numpy(vectors)).argmax(-1).tolist()
    assert [info["intents"][i] for i in from_vectors] == intents
    spaced = pd.DataFrame(
        {"words": [["wake", "me", "up"], ["we", "ather"]], "spaced": [[True, True, True], [True, False]]}
    )
    assert lajmcl_intent_vectors(model, spaced, encoder, 3, EXTRACTION).shape == (2, 16)


def test_p_v_0_needs_pool_values(encoder):
    method = {**METHOD, "loss_weights": {"utterance": 0, "word": 0}, "mcl": {"init_layers": 2, "p_s": 1, "p_v": 0}}
    with pytest.raises(ValueError, match=r"slu.methods.lajmcl.mcl: p_v 0 with pool_values null .* set mcl.pool_values"):
        prepare_lajmcl(
            _table(),
            encoder,
            FineTuning("lajmcl", method, {"batch_size": 6, **SWITCH}, TRAINING, EXTRACTION),
            DICTIONARIES,
        )
    method["mcl"]["pool_values"] = 20
    run = prepare_lajmcl(
        _table(), encoder, FineTuning("lajmcl", method, {"batch_size": 6, **SWITCH}, TRAINING, EXTRACTION), DICTIONARIES
    )
    assert run.info["mcl"]["p_v"] == 0 and run.info["mcl"]["pool_values"] == 20
    with pytest.raises(ValueError, match="mcl.pool_values must be an integer >= 1"):
        MclData(pool_values=0)
