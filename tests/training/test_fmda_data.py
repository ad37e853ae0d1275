"""FMDA batches from real store entries (tiny encoder), and a short FMDA training through the shared loop."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.methods.fmda import Fmda, FmdaConfig, fmda_losses
from language_agnostic.training.fmda_data import FmdaBatches
from language_agnostic.training.loop import TrainSettings, train

EN = ["wake me up at nine", "play jazz music", "what is the weather", "set an alarm", "music please", "stop"]
DE = ["weck mich um neun", "spiel jazz musik", "wie ist das wetter", "stelle einen wecker", "musik bitte", "stopp"]
SETTINGS = ExtractionSettings(prefix="", dtype="float32", device="cpu", token_states=True, progress=False)


@pytest.fixture
def batches_factory(tiny_hub_model: Path, tmp_path: Path):
    encoder = load_encoder(str(tiny_hub_model))
    store = EmbeddingStore(tmp_path)
    source, target = (extract_embeddings(encoder, texts, SETTINGS, store) for texts in (EN, DE))
    rng = np.random.default_rng(0)
    targets = {k: rng.standard_normal((6, 16)).astype(np.float32) for k in ("s_tp", "s_rs", "t_tp", "t_rs")}

    def make(shuffle: bool = True, batch_size: int = 4, bucket: bool = False) -> FmdaBatches:
        return FmdaBatches(
            source,
            target,
            targets,
            0,
            1,
            np.array([0, 2, 5]),
            np.arange(6),
            batch_size=batch_size,
            shuffle=shuffle,
            bucket=bucket,
        )

    return make, source, targets


def test_batches_carry_everything_fmda_needs(batches_factory):
    make, source, targets = batches_factory
    first, second = list(make(shuffle=False).batches(1, torch.Generator().manual_seed(0)))
    assert len(first["s_lang"]) == 4 and len(second["s_lang"]) == 2
    states, mask = source.token_states([0, 1, 2, 3])
    torch.testing.assert_close(first["s_states"], torch.from_numpy(states.astype(np.float32)))
    assert first["s_mask"].sum(1).tolist() == source.lengths[:4].tolist()
    torch.testing.assert_close(first["t_tp_target"], torch.from_numpy(targets["t_tp"][:4]))
    assert first["s_lang"].tolist() == [0] * 4 and first["t_lang"].tolist() == [1] * 4
    # negatives come from the pool and are never the utterance itself
    for seed in range(10):
        for batch in make().batches(1, torch.Generator().manual_seed(seed)):
            negatives = {tuple(row[0, :3].tolist()) for row in batch["s2_states"]}
            pool_rows = {
                tuple(torch.from_numpy(source.token_states([i])[0][0, 0, :3].astype(np.float32)).tolist())
                for i in (0, 2, 5)
            }
            assert negatives <= pool_rows


def test_length_buckets_group_similar_lengths_and_still_cover_every_pair(batches_factory):
    make, source, _ = batches_factory
    batches = make(batch_size=2, bucket=True)
    pair_lengths = sorted((source.lengths + batches.target.lengths).tolist())
    orders = set()
    for seed in range(6):
        seen = []
        for batch in batches.batches(1, torch.Generator().manual_seed(seed)):
            seen.append(sorted((batch["s_mask"].sum(1) + batch["t_mask"].sum(1)).tolist()))
        # every pair once per epoch; each batch holds neighbours of the length order
        assert sorted(x for b in seen for x in b) == pair_lengths
        assert sorted(seen) == [pair_lengths[i : i + 2] for i in range(0, 6, 2)]
        orders.add(tuple(map(tuple, seen)))
    assert len(orders) > 1  # the batch order is reshuffled
    # dev batches (no shuffle) are never bucketed: the stored order
    dev = next(iter(make(shuffle=False, batch_size=2, bucket=True).batches(0, torch.Generator().manual_seed(0))))
    assert dev["s_mask"].sum(1).tolist() == source.lengths[:2].tolist()


def test_fmda_trains_through_the_shared_loop(batches_factory):
    make, _, _ = batches_factory

    def run():
        torch.manual_seed(0)
        model = Fmda(FmdaConfig(dim=16, n_languages=2))
        result = train(
            model,
            fmda_losses,
            make(),
            make(shuffle=False),
            TrainSettings(lr=1e-2, max_epochs=4, patience=4, seed=1, progress=False),
        )
        return result

    first, second = run(), run()
    assert first.history == second.history  # seeded: the same run twice gives the same losses
    assert first.history[-1]["dev_total"] < first.history[0]["dev_total"]
    assert {"dev_tp_rec", "dev_m_con", "train_lang"} <= set(first.history[1])  # [0]: the initial weights, dev only


def test_misaligned_inputs(batches_factory):
    make, source, targets = batches_factory
    with pytest.raises(ValueError, match=r"missing masked-text targets \['t_rs'\]"):
        FmdaBatches(
            source, source, {k: v for k, v in targets.items() if k != "t_rs"}, 0, 1, np.arange(6), np.arange(6), 4
        )
    with pytest.raises(ValueError, match="the target negative pool needs at least 2 utterances, has 1"):
        FmdaBatches(source, source, targets, 0, 1, np.arange(6), np.array([3]), 4)


def test_interleaved_batches_mix_sources_and_keep_each_ones_batches():
    from language_agnostic.training.data import InterleavedBatches, QuadrupletBatches

    def source(offset: float, n: int) -> QuadrupletBatches:
        x = np.full((n, 2), offset, dtype=np.float32) + np.arange(n, dtype=np.float32)[:, None]
        return QuadrupletBatches(x, x, np.zeros(n), np.ones(n), batch_size=2)

    mixed = InterleavedBatches([source(0, 4), source(100, 6)])
    assert len(mixed) == 10
    orders = set()
    for seed in range(8):
        batches = list(mixed.batches(1, torch.Generator().manual_seed(seed)))
        assert len(batches) == 5  # 2 + 3, each batch from one source
        firsts = [float(b["s"][0, 0]) for b in batches]
        assert sorted(v for b in batches for v in b["s"][:, 0].tolist()) == [0, 1, 2, 3, 100, 101, 102, 103, 104, 105]
        assert all(len({v >= 100 for v in b["s"][:, 0].tolist()}) == 1 for b in batches)
        orders.add(tuple(f >= 100 for f in firsts))
    assert len(orders) > 1
    again = [b["s"] for b in mixed.batches(1, torch.Generator().manual_seed(3))]
    once = [b["s"] for b in mixed.batches(1, torch.Generator().manual_seed(3))]
    assert all(torch.equal(a, b) for a, b in zip(again, once))
