"""The method protocol: every registered method builds, trains a step on tiny input and lowers
its loss, encodes, and comes back from its saved artifact with the same outputs."""

from __future__ import annotations

import pytest
import torch

from language_agnostic.methods.registry import METHODS, artifact, build, get_method, load_trained
from language_agnostic.training.loop import TrainSettings, train

DIM, N_LANG, BATCH, LENGTH = 8, 2, 6, 5


def _vector_batch(g: torch.Generator) -> dict[str, torch.Tensor]:
    s = torch.randn(BATCH, DIM, generator=g)
    return {
        "s": s,
        "t": s + 0.1 * torch.randn(BATCH, DIM, generator=g),
        "s2": torch.randn(BATCH, DIM, generator=g),
        "t2": torch.randn(BATCH, DIM, generator=g),
        "s_lang": torch.zeros(BATCH, dtype=torch.long),
        "t_lang": torch.ones(BATCH, dtype=torch.long),
    }


def _token_batch(g: torch.Generator) -> dict[str, torch.Tensor]:
    mask = torch.ones(BATCH, LENGTH, dtype=torch.bool)
    mask[0, 3:] = False
    batch = {}
    for side in ("s", "t", "s2", "t2"):
        batch[f"{side}_states"], batch[f"{side}_mask"] = torch.randn(BATCH, LENGTH, DIM, generator=g), mask
    for name in ("s_tp_target", "s_rs_target", "t_tp_target", "t_rs_target"):
        batch[name] = torch.randn(BATCH, DIM, generator=g)
    batch["s_lang"], batch["t_lang"] = torch.zeros(BATCH, dtype=torch.long), torch.ones(BATCH, dtype=torch.long)
    return batch


def _id_batch(g: torch.Generator, length: int = LENGTH) -> dict[str, torch.Tensor]:
    batch = {}
    for prefix in ("", "adv_"):
        ids = torch.randint(5, 64, (BATCH, length), generator=g)
        mask = torch.ones(BATCH, length, dtype=torch.long)
        mask[0, 3:] = 0
        batch[f"{prefix}input_ids"], batch[f"{prefix}attention_mask"] = ids, mask
    batch["labels"] = torch.arange(BATCH) % 2
    # the joint SLU model's targets (build_slu's and build_lajmcl's test defaults: 2 intents, 3 labels): an
    # intent per sentence, a slot label per sub-token, -100 (ignored) on the first token and on padding
    batch["intents"] = torch.arange(BATCH) % 2
    slots = torch.randint(0, 3, (BATCH, length), generator=g)
    slots[:, 0] = -100
    batch["slot_labels"] = slots.masked_fill(batch["attention_mask"] == 0, -100)
    return batch


class One:
    def __init__(self, batch):
        self.batch = batch

    def batches(self, epoch, generator):
        yield self.batch


# LAJoint's ids hold [CLS], the 4 label positions of one slot (s_O, s_B, s_I, s_1) and [SEP] before the words
LENGTHS = {"lajoint": 9}
# the loss weights of the protocol's step: LAJ-MCL's slot and word levels need MCL's batch extras
# (training.lajmcl_data; tested in tests/methods/test_lajmcl.py), its utterance level only pairs of rows
WEIGHTS = {"lajoint": {"slot_value": 0.0, "word": 0.0}}


def _batch(name: str) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    inputs = get_method(name).inputs
    if inputs == "ids":
        return _id_batch(g, LENGTHS.get(name, LENGTH))
    return _token_batch(g) if inputs == "tokens" else _vector_batch(g)


def _inputs(name: str, batch):
    inputs = get_method(name).inputs
    if inputs == "ids":
        return batch["input_ids"], batch["attention_mask"]
    return (batch["s_states"], batch["s_mask"]) if inputs == "tokens" else batch["s"]


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_trains_a_step_and_lowers_its_loss(name: str):
    method = get_method(name)
    torch.manual_seed(0)
    model = build(name, DIM, N_LANG)
    batch = _batch(name)
    weights = WEIGHTS.get(name, {})
    with torch.no_grad():
        before = float(method.losses(model, batch, weights, {})["total"])
    result = train(
        model,
        lambda m, b: method.losses(m, b, weights, {}),
        One(batch),
        One(batch),
        TrainSettings(lr=1e-2, max_epochs=1, patience=1, progress=False),
    )
    with torch.no_grad():
        after = float(method.losses(model, batch, weights, {})["total"])
    assert result.epochs_run == 1 and after < before
    encoded = method.encode(model, _inputs(name, batch))
    assert encoded and all(v.shape == (BATCH, DIM) for v in encoded.values())


@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_saved_artifact_comes_back_with_the_same_outputs(name: str):
    torch.manual_seed(1)
    options = {"temperature": 0.1} if "temperature" in get_method(name).options else {}
    model = build(name, DIM, N_LANG, options)
    saved = artifact(name, model, DIM, N_LANG, options, pooling="mean")
    method, again = load_trained(saved)
    batch = _batch(name)
    model.eval()
    with torch.no_grad():
        first, second = method.encode(model, _inputs(name, batch)), method.encode(again, _inputs(name, batch))
    assert method.name == name and saved["pooling"] == "mean" and not again.training
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_unknown_methods_name_the_parameter():
    # the options a method takes in conf/ are the models' (tests/parameters/test_fmda.py, test_similarity.py)
    with pytest.raises(
        ValueError, match=r"qe.methods.x.method: unknown method 'laser'; known: \['dream', 'dream-infonce', 'emu'"
    ):
        build("laser", DIM, N_LANG, where="qe.methods.x.method")
    with pytest.raises(ValueError, match="has no 'build' entry"):
        load_trained({"method": "dream", "state_dict": {}})


def test_meat_and_emu_declare_their_adversaries_for_the_loop_and_the_others_do_not():
    from language_agnostic.training.loop import FineTunesEncoder, HasAdversary

    meat = build("meat", DIM, N_LANG)
    assert isinstance(meat, HasAdversary) and not isinstance(meat, FineTunesEncoder)
    assert {id(p) for p in meat.adversary_parameters()} == {id(p) for p in meat.discriminator.parameters()}
    # EMU fine-tunes its encoder and trains a WGAN critic: k steps at its own lr, clipped after each
    emu = build("emu", DIM, N_LANG)
    assert isinstance(emu, HasAdversary) and isinstance(emu, FineTunesEncoder)
    assert {id(p) for p in emu.adversary_parameters()} == {id(p) for p in emu.critics.parameters()}
    assert {id(p) for p in emu.encoder_parameters()} == {id(p) for p in emu.encoder.parameters()}
    assert (emu.adversary_steps, emu.adversary_lr) == (5, 5e-4)
    assert not any(
        isinstance(build(name, DIM, N_LANG), HasAdversary) for name in METHODS if name not in ("meat", "emu")
    )
