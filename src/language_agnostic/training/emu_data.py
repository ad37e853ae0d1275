"""EMU's training data: labelled English sentences, unlabelled adversarial sentences, and the baselines' pairs.

Every text is tokenised once (``encoders.extraction.tokenise_all``, with the encoder's prefix);
batches are padded per batch. All sampling is from the loop's seeded generators, so the same
seed gives the same batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from language_agnostic.encoders.extraction import Tokenised, padded_batch, tokenisation_settings, tokenise_all
from language_agnostic.encoders.loading import LoadedEncoder


def sample_per_intent(rows: pd.DataFrame, per_intent: int | None, seed: int) -> pd.DataFrame:
    """A seeded sample of at most ``per_intent`` rows of every intent (``None``: every row), in id order.

    EMU's training sets have 676-1,195 sentences (its Table 1); a few dozen per MASSIVE intent
    is that size, and the full split is one parameter away.
    """
    if per_intent is None or rows.empty:
        return rows.reset_index(drop=True)
    if per_intent < 1:
        raise ValueError(f"per_intent must be >= 1 or null, got {per_intent}")
    rng = np.random.default_rng(seed)
    chosen = [
        group.iloc[np.sort(rng.permutation(len(group))[:per_intent])] for _, group in rows.groupby("intent", sort=True)
    ]
    out = pd.concat(chosen)
    return out.sort_values("id", key=lambda c: c.astype(int)).reset_index(drop=True)


class EmuBatches:
    """Batches for EMU and its fine-tuning baselines.

    Each batch has the labelled sentences (``input_ids``, ``attention_mask``, ``labels``) and,
    for EMU's critic, as many adversarial sentences (``adv_*``) from one adversarial language
    drawn at random (Algorithm 1, lines 10-11); the contrastive baseline gets a partner per
    sentence (``pair_*``, ``same``: of the same intent with probability ½) and N-pair a positive
    of the same intent (``pos_*``). :meth:`adversary_batches` is the endless stream of critic
    batches (training sentences and adversarial ones, no labels; lines 2-4).

    Args:
        labelled: Tokenised training sentences.
        labels: Their intent indices.
        adversarial: Tokenised unlabelled sentences per adversarial language (may be empty: no critic).
        pad_id: The tokenizer's padding id.
        batch_size: Sentences per batch (16 in the paper).
        shuffle: Reshuffle every epoch (training) or keep the order (dev).
        extras: Which extra inputs to build: ``adversarial``, ``pair`` and/or ``positive``.
        parallel: EMU-PARALLEL: ``adversarial[k]`` row ``i`` translates labelled row ``i``, and a
            batch's adversarial sentences are the translations of its own training sentences
            (in one randomly chosen language) instead of random unlabelled ones.
    """

    def __init__(
        self,
        labelled: Tokenised,
        labels: np.ndarray,
        adversarial: Sequence[Tokenised],
        pad_id: int,
        batch_size: int = 16,
        shuffle: bool = True,
        extras: Sequence[str] = ("adversarial",),
        parallel: bool = False,
    ) -> None:
        self.labelled, self.labels = labelled, torch.tensor(np.asarray(labels), dtype=torch.long)
        if len(self.labels) != len(labelled.lengths):
            raise ValueError(f"{len(labelled.lengths)} sentences but {len(self.labels)} labels")
        unknown = sorted(set(extras) - {"adversarial", "pair", "positive"})
        if unknown:
            raise ValueError(f"unknown extras {unknown}")
        if "adversarial" in extras and not adversarial:
            raise ValueError("EMU's critic needs adversarial sentences in at least one other language")
        self.adversarial, self.pad_id, self.parallel = list(adversarial), pad_id, parallel
        if parallel and any(len(a.lengths) != len(labelled.lengths) for a in self.adversarial):
            raise ValueError("parallel adversarial sentences must align with the labelled ones")
        self.batch_size, self.shuffle, self.extras = batch_size, shuffle, tuple(extras)
        self._by_label = {int(k): np.flatnonzero(np.asarray(labels) == k) for k in np.unique(labels)}

    def __len__(self) -> int:
        return len(self.labels)

    def n_batches(self) -> int:
        """Labelled batches per epoch."""
        return -(-len(self.labels) // self.batch_size)

    def _pad(self, tok: Tokenised, index: np.ndarray, prefix: str = "") -> dict[str, torch.Tensor]:
        ids, mask = padded_batch(tok, np.asarray(index), self.pad_id)
        return {f"{prefix}input_ids": ids, f"{prefix}attention_mask": mask}

    def _adversarial(self, rows: np.ndarray, generator: torch.Generator) -> dict[str, torch.Tensor]:
        language = self.adversarial[int(torch.randint(len(self.adversarial), (1,), generator=generator))]
        if self.parallel:  # the translations of the batch's own sentences
            return self._pad(language, rows, "adv_")
        index = torch.randint(len(language.lengths), (len(rows),), generator=generator).numpy()
        return self._pad(language, index, "adv_")

    def _same_intent(self, index: np.ndarray, generator: torch.Generator, exclude_self: bool = True) -> np.ndarray:
        out = np.empty(len(index), dtype=np.int64)
        for i, row in enumerate(index):
            pool = self._by_label[int(self.labels[row])]
            if exclude_self and len(pool) > 1:
                pool = pool[pool != row]
            out[i] = pool[int(torch.randint(len(pool), (1,), generator=generator))]
        return out

    def batches(self, epoch: int, generator: torch.Generator) -> Iterator[dict[str, torch.Tensor]]:
        """The epoch's labelled batches with the extras configured."""
        del epoch
        n = len(self.labels)
        order = torch.randperm(n, generator=generator) if self.shuffle else torch.arange(n)
        for index in order.split(self.batch_size):
            index = index.numpy()
            batch = {**self._pad(self.labelled, index), "labels": self.labels[index]}
            if "adversarial" in self.extras:
                batch.update(self._adversarial(index, generator))
            if "pair" in self.extras:
                same = torch.rand(len(index), generator=generator) < 0.5
                partner = np.where(
                    same.numpy(),
                    self._same_intent(index, generator),
                    torch.randint(n, (len(index),), generator=generator).numpy(),
                )
                batch.update(self._pad(self.labelled, partner, "pair_"))
                batch["same"] = (self.labels[partner] == self.labels[index]).long()
            if "positive" in self.extras:
                batch.update(self._pad(self.labelled, self._same_intent(index, generator), "pos_"))
            yield batch

    def adversary_batches(self, epoch: int, generator: torch.Generator) -> Iterator[dict[str, torch.Tensor]]:
        """Critic batches, endlessly: training sentences drawn at random and adversarial ones (no labels)."""
        del epoch
        while True:
            index = torch.randint(len(self.labels), (self.batch_size,), generator=generator).numpy()
            yield {**self._pad(self.labelled, index), **self._adversarial(index, generator)}


def tokenise(encoder: LoadedEncoder, texts: Sequence[str], extraction: Mapping[str, object] | None = None) -> Tokenised:
    """Texts tokenised as the embedding stage would (its prefix and length policy)."""
    settings = tokenisation_settings(extraction)
    return tokenise_all(encoder, list(texts), settings)
