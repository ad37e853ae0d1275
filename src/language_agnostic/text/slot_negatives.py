"""Slot-level hard negatives of LAJ-MCL (Liang et al. 2022, §3.2 "Slot-level CL", Appendix B.1, Algorithm 1).

1. Every slot ``s_k`` is described by its name's words ``A_k`` (``place_name`` → ``place name``)
   and its top-``p_v`` most frequent training values ``B_k`` (lines 1–3);
2. ``A_k`` and ``B_k`` concatenated are embedded by a sentence encoder (the paper: MPNet from
   SentenceTransformers; here the project's encoder, mean-pooled: :func:`mean_pooled_embedder`)
   (line 4);
3. the top-``p_s`` other slots by cosine similarity are ``s_k``'s similar slots, and the union of
   their ``B_k'`` is ``s_k``'s pool of hard negative values ``V_k`` (lines 6–9);
4. a negative utterance replaces, in the *code-switched* utterance (so the context matches the
   positive's), every slot value of slot ``s_k`` by a value drawn from ``V_k``, itself
   code-switched; ``N_s`` such utterances per utterance (lines 10–14).

Readings where the paper leaves a choice: ties in frequency are broken by the value's text and
ties in similarity by slot order (so the pools do not depend on the data's order); the text
embedded is ``"<A_k>: <v_1>, <v_2>, ..."``; the ``N_s`` values of one slot value are distinct
when ``V_k`` has enough of them (drawn with replacement otherwise), and a value equal to the
source value (case-insensitive) is never its own negative; a value whose pool is empty is left
as it is and reported as not replaced, so that the loss can leave it out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from language_agnostic.text.code_switch import CodeSwitcher

Value = tuple[str, ...]
Embed = Callable[[Sequence[str]], np.ndarray]


def slot_text(name: str) -> str:
    """A slot label's text: its name split at ``_``, ``.`` and ``-`` (``place_name`` → ``place name``,
    ATIS's ``fromloc.city_name`` → ``fromloc city name``)."""
    words = [w for w in re.split(r"[_.\-\s]+", name) if w]
    if not words:
        raise ValueError(f"slot name {name!r} has no text")
    return " ".join(words)


def value_spans(labels: Sequence[str]) -> list[tuple[int, int, str]]:
    """The slot values of a BIO label sequence as ``(first word, end word, slot)``.

    A value is a ``B-x`` and the ``I-x`` after it; an ``I-x`` that follows no ``B-x`` / ``I-x``
    of the same slot starts a value of its own (as seqeval reads it).
    """
    spans: list[tuple[int, int, str]] = []
    for w, label in enumerate(labels):
        if label == "O":
            continue
        slot = label[2:]
        if label.startswith("I-") and spans and spans[-1][1] == w and spans[-1][2] == slot:
            spans[-1] = (spans[-1][0], w + 1, slot)
        else:
            spans.append((w, w + 1, slot))
    return spans


def frequent_values(
    words: Sequence[Sequence[str]], labels: Sequence[Sequence[str]], p_v: int
) -> dict[str, list[Value]]:
    """``B_k`` of every slot seen: its ``p_v`` most frequent values (Algorithm 1, line 3).

    Values are compared lower-cased (``Friday`` and ``friday`` are one value); the most frequent
    first, ties by text.

    Raises:
        ValueError: ``p_v`` < 0, or words and labels that do not align.
    """
    if p_v < 0:
        raise ValueError(f"p_v must be >= 0, got {p_v}")
    counts: dict[str, Counter[Value]] = {}
    for i, (ws, ls) in enumerate(zip(words, labels, strict=True)):
        if len(ws) != len(ls):
            raise ValueError(f"utterance {i}: {len(ws)} words but {len(ls)} labels")
        for a, b, slot in value_spans(ls):
            counts.setdefault(slot, Counter())[tuple(w.lower() for w in ws[a:b])] += 1
    return {slot: [v for v, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:p_v]] for slot, c in counts.items()}


def slot_description(slot: str, values: Sequence[Value]) -> str:
    """``A_k`` and ``B_k`` concatenated (Algorithm 1, line 4): ``"place name: home, the office"``."""
    text = slot_text(slot)
    return f"{text}: {', '.join(' '.join(v) for v in values)}" if values else text


def similar_slots(embeddings: np.ndarray, p_s: int) -> list[list[int]]:
    """Per slot, the ``p_s`` other slots of highest cosine similarity, most similar first (line 7).

    Raises:
        ValueError: ``p_s`` < 1 or a zero embedding.
    """
    if p_s < 1:
        raise ValueError(f"p_s must be >= 1, got {p_s}")
    e = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError("a slot embedding is zero; cosine similarity is undefined")
    sim = (e / norms) @ (e / norms).T
    out = []
    for k in range(len(e)):
        order = [j for j in np.argsort(-sim[k], kind="stable") if j != k]  # stable: ties by slot order
        out.append([int(j) for j in order[:p_s]])
    return out


def negative_pools(
    slots: Sequence[str],
    frequent: Mapping[str, Sequence[Value]],
    embed: Embed,
    p_s: int,
    described: Mapping[str, Sequence[Value]] | None = None,
) -> tuple[dict[str, list[Value]], dict[str, list[str]]]:
    """``V_k`` of every slot: the union of its similar slots' frequent values (Algorithm 1, lines 1–9).

    Args:
        slots: The slot set.
        frequent: ``B_k`` per slot (:func:`frequent_values`): the values ``V_k`` is made of (line 8).
        embed: Texts → ``(n, d)`` embeddings (:func:`mean_pooled_embedder`).
        p_s: Similar slots per slot.
        described: The values each slot is described by (line 4; a slot without values is
            described by its name); ``None``: ``frequent``, as Algorithm 1 writes it.

    Returns:
        ``(pools, similar)``: slot → ``V_k`` (values in order of similarity then frequency, each
        once), and slot → its similar slots' names.
    """
    slots = list(slots)
    described = frequent if described is None else described
    embeddings = np.asarray(embed([slot_description(s, described.get(s, [])) for s in slots]))
    if embeddings.shape[0] != len(slots):
        raise ValueError(f"embed returned {embeddings.shape[0]} embeddings for {len(slots)} slots")
    similar = {s: [slots[j] for j in js] for s, js in zip(slots, similar_slots(embeddings, p_s))}
    pools = {s: list(dict.fromkeys(v for other in similar[s] for v in frequent.get(other, []))) for s in slots}
    return pools, similar


def mean_pooled_embedder(
    model: torch.nn.Module, tokenizer: object, prefix: str = "", batch_size: int = 64, max_length: int | None = None
) -> Embed:
    """Texts → the mean of the encoder's final states over their tokens (e5's pooling), in eval mode, no gradients."""

    @torch.no_grad()
    def embed(texts: Sequence[str]) -> np.ndarray:
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        out = []
        try:
            for start in range(0, len(texts), batch_size):
                enc = tokenizer(
                    [prefix + t for t in texts[start : start + batch_size]],
                    padding=True,
                    truncation=True,
                    max_length=max_length,
                    return_tensors="pt",
                )
                enc = {k: v.to(device) for k, v in enc.items()}
                states = model(**enc).last_hidden_state.float()
                mask = enc["attention_mask"].unsqueeze(-1).float()
                out.append(((states * mask).sum(1) / mask.sum(1)).cpu().numpy())
        finally:
            model.train(was_training)
        return np.concatenate(out) if out else np.zeros((0, 0))

    return embed


@dataclass
class SlotNegatives:
    """Algorithm 1's negative utterances from the negative pools.

    Attributes:
        pools: Slot → ``V_k``.
        switcher: Code-switches each drawn value (the paper's "code-switched negative slot values");
            ``None``: values stay English.
        n_negatives: ``N_s``, negative utterances per utterance.
        similar: Slot → its similar slots (what the pools came from; for reports).
    """

    pools: Mapping[str, Sequence[Value]]
    switcher: CodeSwitcher | None = None
    n_negatives: int = 2
    similar: Mapping[str, Sequence[str]] | None = None

    def __post_init__(self) -> None:
        if self.n_negatives < 1:
            raise ValueError(f"n_negatives (N_s) must be >= 1, got {self.n_negatives}")

    @classmethod
    def build(
        cls,
        words: Sequence[Sequence[str]],
        labels: Sequence[Sequence[str]],
        slots: Sequence[str],
        embed: Embed,
        p_v: int = 20,
        p_s: int = 5,
        switcher: CodeSwitcher | None = None,
        n_negatives: int = 2,
        pool_values: int | None = None,
    ) -> SlotNegatives:
        """Pools from the training utterances (Appendix B.1's ``p_v = 20``, ``p_s = 5``, ``N_s = 2``).

        ``p_v`` values describe each slot (line 4); ``pool_values`` (``None``: ``p_v``, as line 8
        writes it) per similar slot make ``V_k``. Table 6's ``p_v = 0`` ("not concatenating
        ``B_k`` for slot representation") leaves ``V_k`` empty unless ``pool_values`` is set.
        """
        described = frequent_values(words, labels, p_v)
        frequent = (
            described if pool_values is None or pool_values == p_v else frequent_values(words, labels, pool_values)
        )
        pools, similar = negative_pools(slots, frequent, embed, p_s, described)
        return cls(pools, switcher, n_negatives, similar)

    def negatives(
        self,
        words: Sequence[str],
        labels: Sequence[str],
        rng: np.random.Generator,
        source_words: Sequence[str] | None = None,
        source_labels: Sequence[str] | None = None,
    ) -> list[tuple[list[str], list[str], list[int]]]:
        """``N_s`` negative utterances of one (code-switched) utterance (Algorithm 1, lines 10–14).

        Negative ``m`` replaces the ``j``-th value (slot ``s_k``) by the ``m``-th of the values drawn
        for it from ``V_k``, code-switched, labelled ``B-s_k, I-s_k, ...``. A value without a
        candidate keeps its words and is labelled ``O`` in the negatives, so it pools to nothing
        there and the loss leaves its triple out.

        Args:
            words, labels: The code-switched utterance ``x̂_i``.
            rng: Seeded generator.
            source_words, source_labels: The English ``x_i``: its ``j``-th value is never drawn as
                the negative of the ``j``-th value (default: the switched utterance's own values).

        Returns:
            ``N_s`` ``(words, labels, replaced)``: ``replaced`` the indices ``j`` of ``x̂_i``'s
            values that have a negative, in order; they are the negative's values, in that order.
        """
        spans = value_spans(labels)
        ref_words, ref_spans = (
            (source_words, value_spans(source_labels)) if source_labels is not None else (words, spans)
        )
        if len(ref_spans) != len(spans):
            raise ValueError(f"the source utterance has {len(ref_spans)} slot values, the switched one {len(spans)}")
        drawn: list[list[Value] | None] = []
        for (_, _, slot), (ra, rb, _) in zip(spans, ref_spans):
            own = tuple(w.lower() for w in ref_words[ra:rb])
            candidates = [v for v in self.pools.get(slot, []) if v != own]
            if not candidates:
                drawn.append(None)
                continue
            replace = len(candidates) < self.n_negatives
            picks = rng.choice(len(candidates), size=self.n_negatives, replace=replace)
            drawn.append([candidates[int(p)] for p in picks])
        replaced = [j for j, values in enumerate(drawn) if values is not None]
        out = []
        for m in range(self.n_negatives):
            new_words: list[str] = []
            new_labels: list[str] = []
            at = 0
            for (a, b, slot), values in zip(spans, drawn):
                new_words.extend(words[at:a])
                new_labels.extend(labels[at:a])
                if values is None:
                    new_words.extend(words[a:b])
                    new_labels.extend(["O"] * (b - a))
                else:
                    value = list(values[m])
                    value_labels = [f"B-{slot}"] + [f"I-{slot}"] * (len(value) - 1)
                    if self.switcher is not None:
                        value, value_labels = self.switcher.switch(value, value_labels, rng)
                    new_words.extend(value)
                    new_labels.extend(value_labels)
                at = b
            new_words.extend(words[at:])
            new_labels.extend(labels[at:])
            out.append((new_words, new_labels, list(replaced)))
        return out
