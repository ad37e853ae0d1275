"""Joint SLU fine-tuning end to end on tiny data with a tiny local encoder: a step, selection on dev exact match,
a copy trained, predictions per word, the artifact round trip, and bad parameters named."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.registry import load_trained
from language_agnostic.methods.slu import JointSlu, SluConfig, rebuild_slu, slu_losses
from language_agnostic.training.finetune import FineTuning, trained_state
from language_agnostic.training.loop import TrainSettings, train
from language_agnostic.training.slu import code_switch_settings, prepare_slu, slu_artifact, train_slu
from language_agnostic.training.slu_data import SluBatches
from language_agnostic.training.slu_methods import method_settings
from language_agnostic.training.slu_predict import predict_slu

# (locale, id, partition, intent, words, labels)
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
    ("10", "dev", "news_query", "what is the news", "O O O O"),  # an intent never trained: always a miss
    ("11", "test", "alarm_set", "wake me up at six am", "O O O O B-time I-time"),
]
DE = [
    ("11", "test", "alarm_set", "weck mich um sechs uhr", "O O O B-time I-time"),
    ("12", "test", "play_music", "spiel etwas musik", "O O O"),
    ("7", "dev", "alarm_set", "weck mich um sechs", "O O O B-time"),  # another locale's dev: never read
]
TRAINING = {
    "lr": 1e-2,
    "encoder_lr": 1e-3,
    "max_epochs": 3,
    "patience": 3,
    "seed": 0,
    "progress": False,
    "keep_initial": False,
    "weight_decay": 0.01,
    "schedule": "linear",
    "warmup_ratio": 0.1,
}
EXTRACTION = {"prefix": ""}
DICTIONARIES = {"de": {"wake": ["weck"], "me": ["mich"], "play": ["spiel"], "music": ["musik"], "weather": ["wetter"]}}


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"locale": loc, "id": i, "partition": p, "intent": intent, "words": words.split(), "labels": labels.split()}
            for loc, rows in (("en-US", EN), ("de-DE", DE))
            for i, p, intent, words, labels in rows
        ]
    )


@pytest.fixture
def encoder(tiny_hub_model: Path):
    return load_encoder(str(tiny_hub_model))


def test_a_training_step_on_the_tiny_encoder_lowers_the_joint_loss(encoder):
    labels = {"O": 0, "B-time": 1, "I-time": 2, "B-genre": 3, "I-genre": 4, "B-date": 5, "I-date": 6}
    rows = [r for r in EN if r[1] == "train"]
    data = SluBatches(
        encoder,
        [r[3].split() for r in rows],
        [r[4].split() for r in rows],
        [0, 0, 1, 1, 2, 2],
        labels,
        EXTRACTION,
        batch_size=6,
        shuffle=False,
    )
    torch.manual_seed(0)
    model = JointSlu(encoder.model, encoder.hidden_size, SluConfig(n_intents=3, n_labels=7))
    batch = next(iter(data.batches(0, torch.Generator())))

    def loss() -> dict[str, float]:
        model.eval()
        with torch.no_grad():
            return {k: float(v) for k, v in slu_losses(model, batch).items()}

    before = loss()
    train(
        model,
        lambda m, b: slu_losses(m, b),
        data,
        data,
        TrainSettings(lr=1e-2, encoder_lr=1e-3, max_epochs=1, patience=1, progress=False),
    )
    after = loss()
    assert after["total"] < before["total"] and after["total"] == pytest.approx(after["intent"] + after["slot"])


def test_train_slu_fine_tunes_a_copy_selected_on_dev_exact_match(encoder):
    before = {k: v.clone() for k, v in encoder.model.state_dict().items()}
    model, result, info = train_slu(
        _table(), encoder, FineTuning("zsjoint", {}, {"batch_size": 2}, TRAINING, EXTRACTION)
    )
    assert info["intents"] == ["alarm_set", "play_music", "weather_query"]
    assert info["labels"] == ["O", "B-date", "I-date", "B-genre", "I-genre", "B-time", "I-time"]
    assert (info["n_train"], info["n_dev"], info["n_dev_loss"]) == (6, 4, 3)  # dev loss: trained intents only
    assert info["n_truncated"] == {"train": 0, "dev": 0, "train_switched": 0} and info["code_switch"] is None
    # the shared encoder is untouched; the copy moved
    assert all(torch.equal(before[k], v) for k, v in encoder.model.state_dict().items())
    assert model.encoder is not encoder.model
    assert not torch.equal(
        model.encoder.state_dict()["encoder.layer.0.attention.self.query.weight"],
        before["encoder.layer.0.attention.self.query.weight"],
    )
    # selection: one dev exact match per evaluation, the kept epoch is the first best, and the kept
    # model scores it again (news_query is never right, so at most 3 of 4)
    scores = [r["dev_score"] for r in result.history]
    assert len(scores) == result.epochs_run and all(0.0 <= s <= 0.75 for s in scores)
    assert result.best_epoch == scores.index(max(scores)) + 1
    assert info["dev_exact_match"] == pytest.approx(max(scores))
    assert {"dev_intent_accuracy", "dev_slot_f1"} <= set(info) and info["best_epoch"] == result.best_epoch
    assert info["mixed_precision"] == "no"  # the setting test predictions are made under (evaluate_slu_variant)


def test_the_dev_score_is_exact_match_on_the_dev_locale_only(encoder, monkeypatch: pytest.MonkeyPatch):
    import language_agnostic.training.slu as slu

    seen = []
    monkeypatch.setattr(
        slu, "exact_match", lambda gi, pi, gl, pl: seen.append((list(gi), [list(x) for x in gl])) or 0.5
    )
    run = prepare_slu(_table(), encoder, FineTuning("zsjoint", {}, {}, TRAINING, EXTRACTION))
    assert run.dev_score(run.model) == 0.5
    assert seen == [
        (["alarm_set", "play_music", "weather_query", "news_query"], [r[4].split() for r in EN if r[1] == "dev"])
    ]


def test_the_kept_checkpoint_is_the_best_dev_exact_match(encoder, monkeypatch: pytest.MonkeyPatch):
    import language_agnostic.training.slu as slu

    scripted = iter([0.25, 0.5, 0.25])  # exact match at epochs 1-3: the loop keeps the maximum, epoch 2
    monkeypatch.setattr(slu, "exact_match", lambda *args: next(scripted))
    states = []
    real_train = slu.train

    def recording_train(model, loss_fn, train_data, dev_data, settings, dev_score):
        def score(m):
            states.append({k: v.detach().clone() for k, v in m.state_dict().items()})
            return dev_score(m)

        return real_train(model, loss_fn, train_data, dev_data, settings, score)

    monkeypatch.setattr(slu, "train", recording_train)
    model, result, _ = train_slu(_table(), encoder, FineTuning("zsjoint", {}, {"batch_size": 2}, TRAINING, EXTRACTION))
    assert [r["dev_score"] for r in result.history] == [0.25, 0.5, 0.25] and result.best_epoch == 2
    assert all(torch.equal(v, states[1][k]) for k, v in model.state_dict().items())
    assert not all(torch.equal(v, states[2][k]) for k, v in model.state_dict().items())


def test_predict_slu_gives_one_label_per_word_for_every_row(encoder):
    model, _, info = train_slu(
        _table(),
        encoder,
        FineTuning("zsjoint", {"dropout": 0.0}, {"batch_size": 3}, {**TRAINING, "max_epochs": 1}, EXTRACTION),
    )
    test = _table().query("partition == 'test'").reset_index(drop=True)
    intents, labels = predict_slu(model, test, encoder, info["intents"], info["labels"], EXTRACTION, batch_size=2)
    assert len(intents) == len(labels) == 3 and set(intents) <= set(info["intents"])
    assert [len(x) for x in labels] == [len(w) for w in test["words"]] == [6, 5, 3]
    assert all(set(x) <= set(info["labels"]) for x in labels)
    # batching and length-sorting do not change a prediction
    one = [predict_slu(model, [w], encoder, info["intents"], info["labels"], EXTRACTION) for w in test["words"]]
    assert [o[0][0] for o in one] == intents and [o[1][0] for o in one] == labels
    # precision: the heads see bf16 states under bf16, fp32 ones otherwise
    seen: list[torch.dtype] = []
    hook = model.slot_head.register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    predict_slu(model, test, encoder, info["intents"], info["labels"], EXTRACTION, precision="bf16")
    predict_slu(model, test, encoder, info["intents"], info["labels"], EXTRACTION)
    hook.remove()
    assert seen == [torch.bfloat16, torch.float32]
    # a word cut off by the length limit is labelled O, and still gets a label
    _, cut = predict_slu(model, test, encoder, info["intents"], info["labels"], {"prefix": "", "max_length": 5})
    assert [len(x) for x in cut] == [6, 5, 3] and cut[0][3:] == ["O", "O", "O"]


def test_the_artifact_rebuilds_the_same_model(encoder):
    model, _, info = train_slu(
        _table(), encoder, FineTuning("zsjoint", {}, {}, {**TRAINING, "max_epochs": 1}, EXTRACTION)
    )
    saved = slu_artifact(model, encoder, method="zsjoint", intents=info["intents"], labels=info["labels"])
    assert set(saved["state_dict"]) == set(trained_state(model)) == set(model.state_dict())
    test = _table().query("partition == 'test'")
    expected = predict_slu(model, test, encoder, info["intents"], info["labels"], EXTRACTION)
    again = rebuild_slu(encoder, saved)
    assert predict_slu(again, test, encoder, info["intents"], info["labels"], EXTRACTION) == expected
    # the registry rebuilds it too, from the encoder config it carries (no base encoder needed)
    method, loaded = load_trained(saved)
    assert (
        method.name == "slu"
        and predict_slu(loaded, test, encoder, info["intents"], info["labels"], EXTRACTION) == expected
    )
    # and over the base encoder, the way the pipelines reload it: the same predictions
    method, over_base = load_trained(saved, encoder)
    assert method.name == "slu" and type(over_base) is type(again)
    assert predict_slu(over_base, test, encoder, info["intents"], info["labels"], EXTRACTION) == expected
    with pytest.raises(ValueError, match="does not fit the encoder"):
        rebuild_slu(encoder, {**saved, "state_dict": {**saved["state_dict"], "extra.weight": torch.zeros(1)}})
    with pytest.raises(ValueError, match="holds no weights"):
        rebuild_slu(encoder, {**saved, "state_dict": {}})


def test_cosda_switches_training_data_only(encoder):
    data = {"batch_size": 2, "code_switch": {"ratio": 0.5, "languages": ["de"], "seed": 3}}
    run = prepare_slu(_table(), encoder, FineTuning("cosda", {}, data, TRAINING, EXTRACTION), DICTIONARIES)
    assert run.train_data.switcher is not None and run.dev_data.switcher is None
    assert run.info["code_switch"]["languages"] == ["de"] and 0 < run.info["code_switch"]["coverage"]["de"] < 1
    dev = [list(run.dev_data.batches(0, torch.Generator().manual_seed(s))) for s in (1, 2)]
    assert all(torch.equal(a[k], b[k]) for a, b in zip(*dev) for k in a)
    train_ids = [
        torch.cat([b["input_ids"].flatten() for b in run.train_data.batches(e, torch.Generator().manual_seed(e))])
        for e in (1, 2)
    ]
    assert not torch.equal(train_ids[0], train_ids[1]) or len(train_ids[0]) != len(train_ids[1])
    model, result, info = train_slu(
        _table(), encoder, FineTuning("cosda", {}, data, {**TRAINING, "max_epochs": 2}, EXTRACTION), DICTIONARIES
    )
    assert result.epochs_run == 2 and info["n_truncated"]["train_switched"] == 0


def test_max_train_is_a_seeded_sample(encoder):
    def words(seed: int) -> list:
        return prepare_slu(
            _table(), encoder, FineTuning("zsjoint", {}, {"max_train": 4, "seed": seed}, TRAINING, EXTRACTION)
        ).train_data.words

    assert len(words(0)) == 4 and words(0) == words(0)
    assert (
        len(
            prepare_slu(
                _table(), encoder, FineTuning("zsjoint", {}, {"max_train": 100}, TRAINING, EXTRACTION)
            ).train_data.words
        )
        == 6
    )


@pytest.mark.parametrize(
    ("method", "data", "dictionaries", "message"),
    [
        ({}, {"training_locale": "fr-FR"}, None, "slu.data.training_locale 'fr-FR': no train utterances"),
        ({}, {"dev_locale": "fr-FR"}, None, "slu.data.dev_locale 'fr-FR': no dev utterances"),
        (
            {},
            {"code_switch": {"ratio": 0.5, "languages": ["de"]}},
            None,
            r"slu.data.code_switch.languages: no dictionary for \['de'\]",
        ),
        # slu.code_switch.languages: [] and no MUSE dictionary of a language of slu.locales
        (
            {},
            {"code_switch": {"ratio": 0.5, "languages": []}},
            DICTIONARIES,
            "slu.data.code_switch.languages must be a non-empty list",
        ),
    ],
)
def test_bad_parameters_are_named(encoder, method, data, dictionaries, message):
    # what the data lack is named here; a value's type, range and keys (loss weights too) are the model's
    # (tests/parameters/test_slu.py)
    with pytest.raises(ValueError, match=message):
        prepare_slu(_table(), encoder, FineTuning("x", method, data, TRAINING, EXTRACTION), dictionaries)


def test_a_table_without_a_column_is_named(encoder):
    with pytest.raises(ValueError, match=r"slu table: missing column\(s\) \['labels'\]"):
        prepare_slu(_table().drop(columns="labels"), encoder, FineTuning("zsjoint", {}, {}, TRAINING, EXTRACTION))


def test_method_settings_read_a_methods_entry():
    assert method_settings("zsjoint", {"method": "slu"}) == ({}, {}, {})
    spec = {
        "method": "slu",
        "loss_weights": {"slot": 2},
        "options": {"dropout": 0.2},
        "training": {"lr": 1e-3},
        "data": {"code_switch": {"ratio": 0.9, "languages": ["de"]}},
    }
    assert method_settings("cosda", spec) == (
        {"dropout": 0.2, "loss_weights": {"slot": 2}},
        {"lr": 1e-3},
        {"code_switch": {"ratio": 0.9, "languages": ["de"]}},
    )
    assert code_switch_settings({"ratio": 1, "languages": ["de", "es"]}).languages == ("de", "es")
    assert code_switch_settings({"ratio": 1, "languages": ["de"], "keep_source": True}).keep_source is True


def test_train_layers_freezes_the_embeddings_and_bottom_layers_and_nothing_below_keeps_a_graph(encoder):
    run = prepare_slu(
        _table(), encoder, FineTuning("zsjoint", {}, {"batch_size": 3}, {**TRAINING, "train_layers": 1}, EXTRACTION)
    )
    layers = run.model.encoder.encoder.layer
    frozen = [n for n, p in run.model.named_parameters() if not p.requires_grad]
    assert frozen and all(n.startswith(("encoder.embeddings.", "encoder.encoder.layer.0.")) for n in frozen)
    assert all(p.requires_grad for p in [*layers[1].parameters(), *run.model.intent_head.parameters()])
    assert run.info["train_layers"] == 1 and run.info["encoder_parameters"]["frozen"] == sum(
        p.numel() for p in run.model.encoder.parameters() if not p.requires_grad
    )
    # autograd records nothing below the first trained layer: the frozen layer's output needs no gradient
    seen = []
    layers[0].register_forward_hook(
        lambda m, i, o: seen.append(o[0].requires_grad if isinstance(o, tuple) else o.requires_grad)
    )
    batch = next(iter(run.train_data.batches(1, torch.Generator().manual_seed(0))))
    slu_losses(run.model, batch)["total"].backward()
    assert seen == [False]
    assert all(p.grad is None for n, p in run.model.named_parameters() if n in frozen)
    assert layers[1].attention.self.query.weight.grad is not None
    # the artifact leaves the frozen tensors to the base encoder, and rebuilds the same model
    model, _, info = train_slu(
        _table(), encoder, FineTuning("zsjoint", {}, {}, {**TRAINING, "max_epochs": 1, "train_layers": 0}, EXTRACTION)
    )
    saved = slu_artifact(model, encoder, method="zsjoint", intents=info["intents"], labels=info["labels"])
    assert not any(k.startswith("encoder.") and "weight" in k for k in saved["state_dict"])
    test = _table().query("partition == 'test'")
    assert predict_slu(
        rebuild_slu(encoder, saved), test, encoder, info["intents"], info["labels"], EXTRACTION
    ) == predict_slu(model, test, encoder, info["intents"], info["labels"], EXTRACTION)


@pytest.mark.parametrize(
    "value, match",
    [
        (-1, r"train_layers must be null or in 0..2"),
        (3, r"train_layers must be null or in 0..2"),
    ],
)
def test_a_train_layers_the_encoder_lacks_is_named(encoder, value, match):
    with pytest.raises(ValueError, match=f"slu.training.{match}"):
        prepare_slu(_table(), encoder, FineTuning("zsjoint", {}, {}, {**TRAINING, "train_layers": value}, EXTRACTION))


def test_the_kept_checkpoint_info_has_the_dev_scores_and_the_seconds_per_epoch(encoder):
    _, result, info = train_slu(
        _table(), encoder, FineTuning("zsjoint", {}, {}, {**TRAINING, "max_epochs": 2}, EXTRACTION)
    )
    assert {"dev_exact_match", "dev_intent_accuracy", "dev_slot_f1", "best_epoch", "epochs_run"} <= set(info)
    assert info["train_seconds"] > 0 and info["train_seconds_per_epoch"] == pytest.approx(info["train_seconds"] / 2)
    assert info["train_layers"] is None and info["encoder_parameters"]["frozen"] == 0


def test_intent_vectors_are_what_the_intent_head_reads(encoder):
    from language_agnostic.training.slu_predict import intent_vectors

    model, _, info = train_slu(
        _table(), encoder, FineTuning("zsjoint", {}, {}, {**TRAINING, "max_epochs": 1}, EXTRACTION)
    )
    rows = _table()
    vectors = intent_vectors(model, rows, encoder, EXTRACTION, batch_size=3)
    assert vectors.shape == (len(rows), 16) and vectors.dtype == "float32"
    intents, _ = predict_slu(model, rows, encoder, info["intents"], info["labels"], EXTRACTION)
    with torch.no_grad():
        from_vectors = model.intent_head(torch.from_numpy(vectors)).argmax(-1).tolist()
    assert [info["intents"][i] for i in from_vectors] == intents
    one = intent_vectors(model, [rows["words"].iloc[0]], encoder, EXTRACTION)
    assert torch.allclose(torch.from_numpy(one[0]), torch.from_numpy(vectors[0]), atol=1e-5)  # batching changes nothing
    assert intent_vectors(model, [], encoder, EXTRACTION).shape == (0, 16)


def test_every_slu_model_of_the_registry_has_its_trainer_and_no_other():
    from language_agnostic.methods.registry import SLU_METHODS
    from language_agnostic.training.slu_methods import TRAINERS, method_kind, trainer

    assert set(TRAINERS) == set(SLU_METHODS) == {"slu", "lajoint"}
    assert method_kind(None) == "slu" and method_kind({"method": "lajoint"}) == "lajoint"
    assert trainer("lajoint").train.__name__ == "train_lajmcl"
    with pytest.raises(ValueError, match=r"no SLU trainer for method 'dream'; known: \['lajoint', 'slu'\]"):
        trainer("dream")


def test_training_data_log_line(caplog: pytest.LogCaptureFixture) -> None:
    from language_agnostic.training.slu import log_training_data

    info = {
        "name": "lajmcl",
        "n_train": 12,
        "training_locale": "en-US",
        "intents": ["a", "b"],
        "labels": ["O", "B-x", "I-x"],
        "dev_locale": "en-US",
        "n_dev": 4,
        "code_switch": None,
    }
    with caplog.at_level("INFO", logger="language_agnostic.training.slu"):
        log_training_data("lajmcl", info, slots=1, **{"MCL levels": ["word"]})
    assert caplog.messages == [
        "lajmcl lajmcl: 12 en-US train utterances (2 intents, 3 labels), dev en-US (4), code-switch None, "
        "slots 1, MCL levels ['word']"
    ]
