"""FMDA batches: token states of a parallel pair and of a negative per language, plus masked-text targets.

Token states stay on disk in the embedding store (fp16, streamed); each batch gathers only
its own rows, padded to the batch's longest utterance.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from language_agnostic.encoders.extraction import EmbeddingSet


class FmdaBatches:
    """Quadruplets for FMDA (§3, §4.2): ``(s, t)`` parallel, ``s'``/``t'`` from the negative pools.

    Args:
        source: Token-state entry of the source-language utterances.
        target: Token-state entry of the target-language utterances (row ``i`` translates
            source row ``i``).
        targets: First-token states of the masked texts: ``s_tp``, ``s_rs``, ``t_tp``, ``t_rs``,
            each ``(n, D)`` aligned with the pairs.
        source_lang, target_lang: Language ids of the two sides.
        source_pool, target_pool: Row indices negatives are drawn from (the negative pools).
        batch_size: Pairs per batch.
        shuffle: Reshuffle every epoch (training) or keep the order (dev).
        bucket: Length-bucketed batches (training only): each epoch's shuffled pairs are
            sorted by length, ties broken by the shuffle, cut into batches, and the batches
            shuffled. Batches then pad to about their own length instead of the longest of a
            random 512 (32.7 tokens for a mean of 13.1 on MASSIVE en-de, docs/fmda.md).
        negatives: Gather the pool negatives ``s2``/``t2``; an in-batch loss (InfoNCE) reads
            none, so it skips half the gathering. The pairs' order does not depend on it.
    """

    def __init__(
        self,
        source: EmbeddingSet,
        target: EmbeddingSet,
        targets: dict[str, np.ndarray],
        source_lang: int,
        target_lang: int,
        source_pool: np.ndarray,
        target_pool: np.ndarray,
        batch_size: int,
        shuffle: bool = True,
        bucket: bool = False,
        negatives: bool = True,
    ) -> None:
        n = len(source)
        if len(target) != n or any(len(v) != n for v in targets.values()):
            raise ValueError(f"source ({n}), target ({len(target)}) and masked-text targets must be aligned")
        missing = sorted({"s_tp", "s_rs", "t_tp", "t_rs"} - set(targets))
        if missing:
            raise ValueError(f"missing masked-text targets {missing}")
        for name, pool in (("source", source_pool), ("target", target_pool)):
            if len(pool) < 2:
                raise ValueError(f"the {name} negative pool needs at least 2 utterances, has {len(pool)}")
        self.source, self.target = source, target
        for entry in (source, target):
            entry.load_token_states()  # gathered every epoch: keep them in memory
        self.targets = {
            k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in targets.items()
        }  # a copy: store arrays are read-only memmaps
        self.langs = (source_lang, target_lang)
        self.pools = (torch.as_tensor(np.asarray(source_pool)), torch.as_tensor(np.asarray(target_pool)))
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.bucket = bucket
        self.negatives = negatives
        self.lengths = torch.as_tensor(np.asarray(source.lengths) + np.asarray(target.lengths))

    def __len__(self) -> int:
        return len(self.source)

    def n_batches(self) -> int:
        """Batches per epoch (bucketing reorders the same ``batch_size`` chunks)."""
        return -(-len(self.source) // self.batch_size)

    @staticmethod
    def _states(entry: EmbeddingSet, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        states, mask = entry.token_states(index.numpy())
        # torch converts fp16 with SIMD; numpy's astype was 4 s of a 9 s epoch
        return torch.from_numpy(states).float(), torch.from_numpy(mask)

    def _negatives(self, index: torch.Tensor, pool: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        draw = torch.randint(len(pool), (len(index),), generator=generator)
        chosen = pool[draw]
        same = chosen == index  # never the utterance itself
        chosen[same] = pool[(draw[same] + 1) % len(pool)]
        return chosen

    def _batch_indices(self, generator: torch.Generator) -> list[torch.Tensor]:
        n = len(self.source)
        order = torch.randperm(n, generator=generator) if self.shuffle else torch.arange(n)
        if not (self.shuffle and self.bucket):
            return list(order.split(self.batch_size))
        # a stable sort keeps the random order among equal lengths, so batches differ every epoch
        order = order[torch.sort(self.lengths[order], stable=True).indices]
        chunks = order.split(self.batch_size)
        return [chunks[i] for i in torch.randperm(len(chunks), generator=generator)]

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[dict[str, torch.Tensor]]:
        """The epoch's batches, with every key ``fmda_losses`` reads."""
        del epoch
        for index in self._batch_indices(generator):
            parts = [("s", self.source, index), ("t", self.target, index)]
            if self.negatives:
                parts += [
                    ("s2", self.source, self._negatives(index, self.pools[0], generator)),
                    ("t2", self.target, self._negatives(index, self.pools[1], generator)),
                ]
            batch: dict[str, torch.Tensor] = {}
            for name, entry, rows in parts:
                batch[f"{name}_states"], batch[f"{name}_mask"] = self._states(entry, rows)
            for key, values in self.targets.items():
                batch[f"{key}_target"] = values[index]
            batch["s_lang"] = torch.full((len(index),), self.langs[0], dtype=torch.long)
            batch["t_lang"] = torch.full((len(index),), self.langs[1], dtype=torch.long)
            yield batch
