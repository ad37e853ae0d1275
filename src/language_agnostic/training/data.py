"""Batches of quadruplets (Tiyajamorn et al. Figure 2): a parallel pair and a random sentence per language."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch


class QuadrupletBatches:
    """Pairs ``(s_i, t_i)`` with random same-language partners ``s'``, ``t'``.

    Partners are drawn from a pool per side (for FMDA, the negative pool; for DREAM, any
    sentence of that language), never the example itself.

    Args:
        source: ``(n, d)`` source-side embeddings.
        target: ``(n, d)`` target-side embeddings, aligned with ``source``.
        source_lang: ``(n,)`` language ids of the source side.
        target_lang: ``(n,)`` language ids of the target side.
        batch_size: Pairs per batch.
        source_pool: Indices (into ``source``) partners are drawn from (default: all).
        target_pool: Indices (into ``target``) partners are drawn from (default: all).
        shuffle: Reshuffle pairs each epoch (training) or keep their order (dev).
    """

    def __init__(
        self,
        source: np.ndarray,
        target: np.ndarray,
        source_lang: np.ndarray,
        target_lang: np.ndarray,
        batch_size: int,
        source_pool: np.ndarray | None = None,
        target_pool: np.ndarray | None = None,
        shuffle: bool = True,
    ) -> None:
        if len(source) != len(target) or len(source) != len(source_lang) or len(target) != len(target_lang):
            raise ValueError(f"source {len(source)}, target {len(target)} and language ids must be aligned")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        # copies: store arrays are read-only memory maps
        self.source = torch.from_numpy(np.array(source, dtype=np.float32))
        self.target = torch.from_numpy(np.array(target, dtype=np.float32))
        self.source_lang = torch.as_tensor(np.asarray(source_lang, dtype=np.int64))
        self.target_lang = torch.as_tensor(np.asarray(target_lang, dtype=np.int64))
        n = len(source)
        self.source_pool = torch.as_tensor(
            np.arange(n) if source_pool is None else np.asarray(source_pool, dtype=np.int64)
        )
        self.target_pool = torch.as_tensor(
            np.arange(n) if target_pool is None else np.asarray(target_pool, dtype=np.int64)
        )
        for name, pool in (("source", self.source_pool), ("target", self.target_pool)):
            if len(pool) < 2:
                raise ValueError(f"the {name} partner pool needs at least 2 sentences, has {len(pool)}")
        self.batch_size = batch_size
        self.shuffle = shuffle

    def __len__(self) -> int:
        return len(self.source)

    def n_batches(self) -> int:
        """Batches per epoch."""
        return -(-len(self.source) // self.batch_size)

    def _partners(self, index: torch.Tensor, pool: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        draw = torch.randint(len(pool), (len(index),), generator=generator)
        partner = pool[draw]
        # never the example itself: take the next pool member instead
        same = partner == index
        partner[same] = pool[(draw[same] + 1) % len(pool)]
        return partner

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[dict[str, torch.Tensor]]:
        """The epoch's batches: ``s, t, s2, t2, s_lang, t_lang``."""
        del epoch  # the generator already carries the epoch's seed
        n = len(self.source)
        order = torch.randperm(n, generator=generator) if self.shuffle else torch.arange(n)
        for start in range(0, n, self.batch_size):
            index = order[start : start + self.batch_size]
            s2 = self._partners(index, self.source_pool, generator)
            t2 = self._partners(index, self.target_pool, generator)
            yield {
                "s": self.source[index],
                "t": self.target[index],
                "s2": self.source[s2],
                "t2": self.target[t2],
                "s_lang": self.source_lang[index],
                "t_lang": self.target_lang[index],
            }


class InterleavedBatches:
    """Several batch sources as one epoch: every source's batches, in a seeded random order.

    The unified multilingual FMDA (Appendix C) trains on EN-DE, EN-ES and EN-JA pairs "in one
    epoch", and the first stage of two-stage FMDA (§4.6) on template pairs of two languages;
    each batch comes from one source (one language pair), the order of batches is mixed.

    Args:
        sources: The batch sources, each with ``__len__`` (examples) and ``batch_size``.
    """

    def __init__(self, sources: list) -> None:
        if not sources:
            raise ValueError("InterleavedBatches needs at least one source")
        self.sources = list(sources)

    def __len__(self) -> int:
        return sum(len(s) for s in self.sources)

    def n_batches(self) -> int:
        """Batches per epoch: every source's."""
        return sum(s.n_batches() for s in self.sources)

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[dict[str, torch.Tensor]]:
        """All sources' batches for ``epoch``, interleaved by ``generator``."""
        streams = []
        for source in self.sources:
            # each source draws from its own generator, seeded from the shared one
            seed = int(torch.randint(2**62, (1,), generator=generator))
            streams.append(iter(source.batches(epoch, torch.Generator().manual_seed(seed))))
        counts = [-(-len(s) // s.batch_size) for s in self.sources]
        schedule = torch.cat([torch.full((c,), i) for i, c in enumerate(counts)])
        for i in schedule[torch.randperm(len(schedule), generator=generator)].tolist():
            yield next(streams[i])
