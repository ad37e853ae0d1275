"""MCL's losses (LAJ-MCL §3.2) on hand-built tensors with hand-computed values, eq. 12's sampling
distribution, and L = L_J + λ1 L_u + λ2 L_s + λ3 L_w (eq. 14) on the tiny encoder."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.lajmcl import (
    LajMcl,
    MclConfig,
    ProjectionHead,
    lajmcl_losses,
    pool_values,
    sample_word_negatives,
    slot_affinity,
    slot_guided_similarity,
    slot_loss,
    utterance_loss,
    word_loss,
    word_negative_probabilities,
)
from language_agnostic.methods.lajoint import LajointConfig


def t(*rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32)


# --- utterance level (eq. 7-8) ---


def test_projection_head_is_relu_between_two_bias_free_maps():
    head = ProjectionHead(2)
    with torch.no_grad():
        head.w1.weight.copy_(t([1.0, 0.0], [0.0, -1.0]))
        head.w2.weight.copy_(t([2.0, 1.0], [0.0, 1.0]))
    # x = (3, 4): x W1 = (3, -4), relu -> (3, 0), W2 -> (6, 0)
    assert head(t([3.0, 4.0])).tolist() == [[6.0, 0.0]]
    assert head.w1.bias is None and head.w2.bias is None


def test_utterance_loss_by_hand():
    z = t([0.0, 0.0], [3.0, 0.0])
    z_pos = t([1.0, 0.0], [3.0, 4.0])
    # anchor 0: d(pos) = 1; negatives z_1 (d 3), ẑ_1 (d 5): max(0, 1-3+.5) = 0, max(0, 1-5+.5) = 0
    # anchor 1: d(pos) = 4; negatives z_0 (d 3), ẑ_0 (d 2): 4-3+.5 = 1.5, 4-2+.5 = 2.5
    # mean over the 4 (anchor, negative) pairs: 4 / 4 = 1.0
    assert utterance_loss(z, z_pos, 0.5).item() == pytest.approx(1.0)
    # r = 2.5: anchor 0: 0.5, 0; anchor 1: 3.5, 4.5 -> 8.5 / 4
    assert utterance_loss(z, z_pos, 2.5).item() == pytest.approx(2.125)
    # one utterance: no negative, 0 and still in the graph
    single = utterance_loss(z[:1].requires_grad_(), z_pos[:1], 0.5)
    assert single.item() == 0.0 and single.requires_grad


def test_utterance_loss_pulls_the_positive_in():
    z = t([0.0, 0.0], [3.0, 0.0])
    z_pos = t([1.0, 0.0], [3.0, 4.0]).requires_grad_()
    utterance_loss(z, z_pos, 0.5).backward()
    # only anchor 1's hinges are active: d(z_1, ẑ_1) shrinks when ẑ_1 moves towards z_1 = (3, 0), i.e. down
    assert z_pos.grad[1, 1] > 0 and z_pos.grad[1, 0] == 0
    # ẑ_0 is anchor 1's negative in an active hinge: pushed away from z_1 (to the left)
    assert z_pos.grad[0, 0] > 0


# --- slot level (eq. 9-11) ---


def test_slot_guided_similarity_is_kl_of_the_source_against_the_other():
    slots = t([1.0, 0.0], [0.0, 1.0])  # Z_K = I: aff(z) = z
    z = t([math.log(3.0), 0.0])  # softmax -> (3/4, 1/4)
    z_pos = t([0.0, 0.0])  # (1/2, 1/2)
    # KL(P||Q) = 3/4 ln(3/2) + 1/4 ln(1/2) = 0.130812; the other direction would be 0.143841
    assert slot_guided_similarity(z, z_pos, slots).item() == pytest.approx(0.130812, abs=1e-6)
    assert slot_guided_similarity(z, z, slots).item() == pytest.approx(0.0, abs=1e-7)
    assert slot_affinity(t([1.0, 2.0]), t([[1.0, 1.0], [2.0, 0.0]])).tolist() == [[3.0, 2.0]]


def test_the_slot_temperature_divides_the_affinities_and_sharpens_the_divergence():
    slots = t([1.0, 0.0], [0.0, 1.0])
    assert slot_affinity(t([1.0, 2.0]), t([[1.0, 1.0], [2.0, 0.0]]), 0.5).tolist() == [[6.0, 4.0]]
    z, z_pos = t([math.log(3.0) / 2, 0.0]), t([0.0, 0.0])
    # τ_s = 1/2 doubles the affinities: softmax(ln 3, 0) = (3/4, 1/4) against (1/2, 1/2), the 0.130812 of above;
    # at τ_s = 1 the same vectors give softmax(ln 3 / 2, 0) = (0.633975, 0.366025): KL = 0.036341
    assert slot_guided_similarity(z, z_pos, slots, 0.5).item() == pytest.approx(0.130812, abs=1e-6)
    assert slot_guided_similarity(z, z_pos, slots).item() == pytest.approx(0.036341, abs=1e-6)
    z_neg = torch.stack([t([0.0, math.log(3.0) / 2])])  # (1/4, 3/4) at τ_s = 1/2: KL 0.549306
    # margin 0.5: max(0, 0.130812 - 0.549306 + 0.5) = 0.081506; at τ_s = 1 KL(neg) = 0.147186 (about a quarter:
    # near agreement a KL grows with the square of the logits' difference), max(0, 0.036341 - 0.147186 + 0.5) = 0.389155
    assert slot_loss(z, z_pos, z_neg, slots, 0.5, temperature=0.5).item() == pytest.approx(0.081506, abs=1e-6)
    assert slot_loss(z, z_pos, z_neg, slots, 0.5).item() == pytest.approx(0.389155, abs=1e-6)


def test_the_cosine_affinity_normalises_both_sides_so_scaling_a_value_changes_nothing():
    z, slots = t([3.0, 4.0]), t([1.0, 0.0], [0.0, 2.0])
    # (0.6, 0.8) against (1, 0) and (0, 1), divided by τ_s = 1/2
    assert slot_affinity(z, slots, 0.5, "cosine")[0].tolist() == pytest.approx([1.2, 1.6])
    z_pos = t([4.0, 3.0])
    kl = slot_guided_similarity(z, z_pos, slots, 0.5, "cosine").item()
    # softmax(1.2, 1.6) = (0.401312, 0.598688) against softmax(1.6, 1.2) = (0.598688, 0.401312): KL = 0.078950
    assert kl == pytest.approx(0.078950, abs=1e-6)
    assert slot_guided_similarity(10 * z, 10 * z_pos, 10 * slots, 0.5, "cosine").item() == pytest.approx(kl, abs=1e-6)
    # with the dot product (eq. 10 as printed) the same scaling sharpens both softmaxes: the KL changes
    assert slot_guided_similarity(10 * z, 10 * z_pos, slots, 1.0).item() != pytest.approx(
        slot_guided_similarity(z, z_pos, slots, 1.0).item(), abs=1e-3
    )
    with pytest.raises(ValueError, match="slot affinity must be one of \\['dot', 'cosine'\\], got 'l2'"):
        slot_affinity(z, slots, 1.0, "l2")


def test_the_cosine_affinity_is_computed_in_fp32_from_bf16_vectors():
    z = torch.tensor([[1.0, 0.0], [1.0, 1.0 / 64]], dtype=torch.bfloat16)
    slots = torch.tensor([[1.0, 0.0]], dtype=torch.bfloat16)
    # (1, 1/64) normalised: cos = 1 / sqrt(1 + 1/4096) = 0.99987794; bf16 would round it to 1 (8 bits of mantissa)
    cosine = slot_affinity(z, slots, 1.0, "cosine")
    assert cosine.dtype == torch.float32 and cosine[:, 0].tolist() == pytest.approx([1.0, 0.99987794], abs=1e-7)
    assert slot_affinity(z, slots).dtype == torch.float32  # dot: computed in bf16, returned as fp32


def test_slot_loss_by_hand():
    slots = t([1.0, 0.0], [0.0, 1.0])
    z, z_pos = t([math.log(3.0), 0.0]), t([0.0, 0.0])
    # two negatives of the one value: the same distribution as z (KL 0) and the mirrored one
    # (1/4, 3/4): KL = 3/4 ln 3 + 1/4 ln(1/3) = 1/2 ln 3 = 0.549306
    z_neg = torch.stack([t([math.log(3.0), 0.0]), t([0.0, math.log(3.0)])])  # (N_s=2, G=1, d)
    # margin 0.2: max(0, 0.130812 - 0 + 0.2) = 0.330812; max(0, 0.130812 - 0.549306 + 0.2) = 0; mean 0.165406
    assert slot_loss(z, z_pos, z_neg, slots, 0.2).item() == pytest.approx(0.165406, abs=1e-6)
    # the first negative left out: only the inactive hinge is left
    valid = torch.tensor([[False], [True]])
    assert slot_loss(z, z_pos, z_neg, slots, 0.2, valid).item() == pytest.approx(0.0)
    none = slot_loss(z, z_pos, z_neg, slots, 0.2, torch.zeros(2, 1, dtype=torch.bool))
    assert none.item() == 0.0
    # per-value slot matrices (G, K, d): doubling Z_K doubles the affinities -> softmax(2 ln 3, 0) = (9/10, 1/10)
    # against (1/2, 1/2): KL = 0.9 ln 1.8 + 0.1 ln 0.2 = 0.368064
    per_value = (2 * slots).unsqueeze(0)
    assert slot_guided_similarity(z, z_pos, per_value).item() == pytest.approx(0.368064, abs=1e-6)


def test_pool_values_means_each_values_sub_tokens():
    states = torch.arange(12, dtype=torch.float32).reshape(2, 3, 2)  # rows (0,1) (2,3) (4,5) / (6,7) (8,9) (10,11)
    ids = torch.tensor([[0, 0, -1], [-1, 1, 1]])
    pooled, counts = pool_values(states, ids, 3)
    # value 0: mean of (0,1), (2,3) = (1, 2); value 1: mean of (8,9), (10,11) = (9, 10); value 2: nothing
    assert pooled.tolist() == [[1.0, 2.0], [9.0, 10.0], [0.0, 0.0]] and counts.tolist() == [2.0, 2.0, 0.0]


# --- word level (eq. 12-13) ---


def test_eq_12_sampling_distribution_by_hand():
    # words: O B-time I-time O B-date (ids 0 5 6 0 1); anchor t = 1 (B-time): only itself has its label
    # q = sin(1/1), -, sin(1/1), sin(1/2), sin(1/3) = .841471, 0, .841471, .479426, .327195; sum 2.489562
    p = word_negative_probabilities(np.array([0, 5, 6, 0, 1]), 1)
    assert p == pytest.approx([0.3379996, 0.0, 0.3379996, 0.1925742, 0.1314266], abs=1e-6)
    # words of the anchor's own label are masked: t = 0 with label 5 at 0 and 2 -> sin(1), sin(1/3) normalised
    assert word_negative_probabilities([5, 0, 5, 0], 0) == pytest.approx([0.0, 0.7200271, 0.0, 0.2799729], abs=1e-6)
    assert word_negative_probabilities([3, 3], 0).tolist() == [0.0, 0.0]  # nothing to draw


def test_word_negatives_are_drawn_by_eq_12_among_other_labels():
    ign = -100
    # a row of positions: [CLS] (ignored), 5 words, a later sub-token (ignored): labels O B-time I-time O B-date
    labels = torch.tensor([[ign, 0, 5, ign, 6, 0, 1]])
    pairs = sample_word_negatives(labels, 2, np.random.default_rng(0), outside_id=0, ignore_index=ign)
    # anchors are the slot words (positions 2, 4, 6), 2 distinct negatives each; never a word of their own label
    assert pairs.shape == (6, 3) and pairs[:, 0].tolist() == [0] * 6
    assert pairs[:, 1].tolist() == [2, 2, 4, 4, 6, 6]
    for _, a, r in pairs.tolist():
        assert labels[0, r] != labels[0, a] and labels[0, r] != ign
    assert torch.equal(pairs, sample_word_negatives(labels, 2, np.random.default_rng(0), 0, ign))  # seeded
    # the frequencies of one draw for the anchor B-time (word 1) follow eq. 12 (word index, not position)
    rng = np.random.default_rng(1)
    draws = [sample_word_negatives(labels, 1, rng, 0, ign)[0, 2].item() for _ in range(4000)]
    freq = [draws.count(pos) / len(draws) for pos in (1, 4, 5, 6)]
    assert freq == pytest.approx([0.338, 0.338, 0.1926, 0.1314], abs=0.025)
    # an anchor with fewer candidates than N_w gets all of them; a row of O words has no anchor
    few = sample_word_negatives(torch.tensor([[5, 0], [0, 0]]), 3, np.random.default_rng(0), 0, ign)
    assert few.tolist() == [[0, 0, 1]]


def test_word_loss_uses_cosine_distance_by_hand():
    z_label = t([1.0, 0.0], [1.0, 0.0])
    z_word = t([1.0, 1.0], [0.0, 2.0])
    z_neg = t([0.0, 1.0], [3.0, 0.0])
    # pair 0: cos(label, word) = 1/sqrt 2 = .707107, cos(label, neg) = 0: max(0, 0 - .707107 + .5) = 0
    # pair 1: cos(label, word) = 0, cos(label, neg) = 1: max(0, 1 - 0 + .5) = 1.5; mean 0.75
    # (eq. 13 read literally with a similarity would give (1.207107 + 0) / 2 = 0.603553)
    assert word_loss(z_label, z_word, z_neg, 0.5).item() == pytest.approx(0.75)
    empty = torch.zeros(0, 2)
    assert word_loss(empty, empty, empty, 0.5).item() == 0.0


def test_bad_mcl_options_are_named():
    with pytest.raises(ValueError, match="margins.word"):
        MclConfig(margins={"word": -0.1})
    with pytest.raises(ValueError, match="head_dim"):
        MclConfig(head_dim=0)
    with pytest.raises(ValueError, match="slot_temperature must be a number > 0, got 0"):
        MclConfig(slot_temperature=0)
    with pytest.raises(ValueError, match="slot_affinity must be one of \\['dot', 'cosine'\\], got 'l2'"):
        MclConfig(slot_affinity="l2")
    assert MclConfig().slot_temperature == 1.0 and MclConfig().slot_affinity == "dot"  # the paper as printed
    assert MclConfig().margins == {"utterance": 0.5, "slot_value": 0.5, "word": 0.5}


# --- eq. 14 on a batch ---


@pytest.fixture
def encoder(tiny_hub_model: Path):
    return load_encoder(str(tiny_hub_model))


def _batch(encoder, n_s: int = 2, n_w: int = 2):
    from language_agnostic.text.code_switch import CodeSwitcher
    from language_agnostic.text.slot_negatives import SlotNegatives
    from language_agnostic.training.lajmcl_data import LajBatches

    words = [["wake", "me", "up", "at", "nine", "am"], ["play", "some", "jazz", "music"], ["weather", "today"]]
    tags = [["O", "O", "O", "O", "B-time", "I-time"], ["O", "O", "B-genre", "O"], ["O", "B-date"]]
    labels = {"O": 0, "B-date": 1, "I-date": 2, "B-genre": 3, "I-genre": 4, "B-time": 5, "I-time": 6}
    switcher = CodeSwitcher({"de": {"wake": ["weck"], "music": ["musik"], "today": ["heute"]}}, ratio=1.0)
    pools = {"date": [("nine", "am")], "time": [("today",), ("tomorrow",)], "genre": [("today",)]}
    data = LajBatches(
        encoder,
        words,
        tags,
        [0, 1, 2],
        labels,
        {"prefix": ""},
        slots=("date", "genre", "time"),
        batch_size=3,
        shuffle=False,
        switcher=switcher,
        keep_source=True,
        mcl=True,
        slot_negatives=SlotNegatives(pools, switcher, n_s),
        word_negatives=n_w,
    )
    return next(iter(data.batches(0, torch.Generator().manual_seed(0))))


def _model(encoder) -> LajMcl:
    torch.manual_seed(0)
    return LajMcl(
        encoder.model,
        encoder.hidden_size,
        LajointConfig(n_intents=3, slots=("date", "genre", "time"), dropout=0.0),
        MclConfig(margins={"utterance": 0.5, "slot_value": 0.5, "word": 0.5}),
    )


def test_eq_14_sums_the_levels_with_their_weights(encoder):
    batch = _batch(encoder)
    assert batch["neg_input_ids"].shape[0] == 6 and batch["word_pairs"].shape[1] == 3
    model = _model(encoder)
    parts = lajmcl_losses(model, batch, {"utterance": 0.3, "slot_value": 0.5, "word": 0.7})
    assert all(parts[k].item() > 0 for k in ("intent", "slot", "utterance", "slot_value", "word"))
    expected = (
        parts["intent"] + parts["slot"] + 0.3 * parts["utterance"] + 0.5 * parts["slot_value"] + 0.7 * parts["word"]
    )
    assert parts["total"].item() == pytest.approx(expected.item(), rel=1e-6)
    parts["total"].backward()
    for head in (model.g_u, model.g_s, model.g_w):
        assert head.w1.weight.grad is not None and head.w1.weight.grad.abs().sum() > 0
    # a level at weight 0 is not computed (the ablations), and the joint loss is LAJoint's
    model.zero_grad()
    joint = lajmcl_losses(model, batch, {"utterance": 0, "slot_value": 0, "word": 0})
    assert joint["utterance"].item() == joint["slot_value"].item() == joint["word"].item() == 0.0
    assert joint["total"].item() == pytest.approx(parts["intent"].item() + parts["slot"].item(), rel=1e-6)
    joint["total"].backward()
    assert model.g_u.w1.weight.grad is None


def test_missing_extras_and_bad_weights_are_named(encoder):
    batch = _batch(encoder)
    model = _model(encoder)
    with pytest.raises(ValueError, match="needs word_pairs"):
        lajmcl_losses(model, {k: v for k, v in batch.items() if k != "word_pairs"})
    with pytest.raises(ValueError, match=r"needs \['neg_input_ids'"):
        lajmcl_losses(model, {k: v for k, v in batch.items() if k != "neg_input_ids"}, {"word": 0})
    with pytest.raises(ValueError, match="unknown LAJ-MCL loss weight"):
        lajmcl_losses(model, batch, {"sentence": 1.0})
    with pytest.raises(ValueError, match="loss_weights.word"):
        lajmcl_losses(model, batch, {"word": -1.0})
    odd = {k: batch[k][:5] for k in ("input_ids", "attention_mask", "intents", "slot_labels")}
    with pytest.raises(ValueError, match="in pairs"):
        lajmcl_losses(model, odd, {"slot_value": 0, "word": 0})
