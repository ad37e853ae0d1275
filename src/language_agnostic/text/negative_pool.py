"""FMDA's negative pools (Wu et al. 2022, §4.2), exactly as brute-force sacreBLEU gives them.

An utterance enters its language's pool when its sentence BLEU against every *other*
utterance of that language is below a threshold. Brute force is ~130 M ``sentence_bleu``
calls per MASSIVE locale. Instead:

1. tokenise every utterance once, exactly as sacreBLEU does, and count its n-grams;
2. for a block of hypotheses, get the clipped n-gram matches against *all* references at
   once as sparse matrix products (``min(a, b) = sum_c [a >= c][b >= c]`` over count levels);
3. evaluate sacreBLEU's ``compute_bleu`` formula on those statistics with numpy;
4. re-score with sacreBLEU's own ``BLEU.compute_bleu`` every pair whose vectorised score lies
   within a hair of the threshold, so float rounding in numpy can never flip a decision.

Pairs that share no n-gram at all score exactly 0 under every smoothing (sacreBLEU returns
early when nothing matches), which is what keeps the products sparse.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp
from sacrebleu.metrics.bleu import BLEU
from tqdm.auto import tqdm

logger = logging.getLogger(__name__)

Direction = Literal["both", "hypothesis", "reference"]
MAX_ORDER = 4
# sacreBLEU's log of a zero precision
_LOG_ZERO = -9999999999.0


@dataclass(frozen=True)
class BleuSettings:
    """The sacreBLEU sentence-BLEU settings that define "similar".

    Attributes:
        tokenize: sacreBLEU tokenizer name (``13a``, ``intl``, ``zh``, ``ja-mecab``, ``char``…).
        smooth_method: ``none``, ``exp``, ``floor`` or ``add-k``.
        smooth_value: Value for ``floor`` / ``add-k`` (``None``: sacreBLEU's default).
        effective_order: Score short sentences on the n-gram orders they have.
        lowercase: Lowercase before tokenising.
    """

    tokenize: str = "13a"
    smooth_method: str = "none"
    smooth_value: float | None = None
    effective_order: bool = True
    lowercase: bool = False

    def metric(self) -> BLEU:
        """The sacreBLEU metric object with these settings."""
        return BLEU(
            lowercase=self.lowercase,
            tokenize=self.tokenize,
            smooth_method=self.smooth_method,
            smooth_value=self.smooth_value,
            effective_order=self.effective_order,
        )


def _ngram_matrices(
    token_lists: Sequence[Sequence[str]],
) -> list[list[sp.csr_matrix]]:
    """For each order n, binary matrices ``[count(sentence, ngram) >= c]`` for c = 1, 2, …"""
    per_order: list[list[sp.csr_matrix]] = []
    n_rows = len(token_lists)
    for n in range(1, MAX_ORDER + 1):
        vocab: dict[tuple[str, ...], int] = {}
        levels: list[tuple[list[int], list[int]]] = []  # (rows, cols) per count level
        for i, tokens in enumerate(token_lists):
            counts = Counter(tuple(tokens[j : j + n]) for j in range(len(tokens) - n + 1))
            for gram, count in counts.items():
                col = vocab.setdefault(gram, len(vocab))
                for level in range(count):
                    if level == len(levels):
                        levels.append(([], []))
                    levels[level][0].append(i)
                    levels[level][1].append(col)
        mats = []
        for rows, cols in levels:
            data = np.ones(len(rows), dtype=np.int32)
            mats.append(sp.csr_matrix((data, (rows, cols)), shape=(n_rows, max(len(vocab), 1))))
        per_order.append(mats)
    return per_order


def _vectorised_bleu(
    correct: np.ndarray,
    hyp_len: np.ndarray,
    ref_len: np.ndarray,
    settings: BleuSettings,
) -> np.ndarray:
    """sacreBLEU's ``compute_bleu`` on arrays of pairs (same branches, same operation order).

    Args:
        correct: ``[MAX_ORDER, M]`` clipped matches of M (hypothesis, reference) pairs.
        hyp_len: ``[M]`` hypothesis lengths.
        ref_len: ``[M]`` reference lengths.
        settings: BLEU settings.

    Returns:
        ``[M]`` scores on sacreBLEU's 0–100 scale.
    """
    smooth = settings.smooth_method
    smooth_value = settings.smooth_value
    if smooth_value is None:
        smooth_value = BLEU.SMOOTH_DEFAULTS[smooth]
    h = hyp_len.astype(np.float64)
    r = ref_len.astype(np.float64)
    any_match = correct.any(axis=0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bp = np.where(h < r, np.exp(1.0 - r / np.where(h > 0, h, 1.0)), 1.0)
        bp = np.where(h > 0, bp, 0.0)
        shape = h.shape
        alive = np.ones(shape, dtype=bool)
        mteval = np.ones(shape, dtype=np.float64)
        eff = np.full(shape, 0 if settings.effective_order else MAX_ORDER, dtype=np.int64)
        precisions = []
        for n in range(1, MAX_ORDER + 1):
            c = correct[n - 1].astype(np.float64)
            t = np.maximum(hyp_len - n + 1, 0).astype(np.float64)
            if smooth == "add-k" and n > 1:
                c = c + smooth_value
                t = t + smooth_value
            # sacreBLEU stops at the first order the hypothesis has no n-grams of
            alive = alive & (t != 0)
            if settings.effective_order:
                eff = np.where(alive, n, eff)
            zero = c == 0
            safe_t = np.where(t != 0, t, 1.0)
            p = 100.0 * c / safe_t
            if smooth == "exp":
                mteval = np.where(alive & zero, mteval * 2, mteval)
                p = np.where(zero, 100.0 / (mteval * safe_t), p)
            elif smooth == "floor":
                p = np.where(zero, 100.0 * smooth_value / safe_t, p)
            precisions.append(np.where(alive, p, 0.0))
        log_sum = np.zeros(shape, dtype=np.float64)
        for n, p in enumerate(precisions, start=1):
            term = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), _LOG_ZERO)
            log_sum = log_sum + np.where(n <= eff, term, 0.0)
        score = bp * np.exp(log_sum / np.maximum(eff, 1))
    return np.where(any_match, score, 0.0)


def _candidate_mask(correct: np.ndarray, hyp_len: np.ndarray, settings: BleuSettings) -> np.ndarray:
    """Pairs whose score can be above 0; every other pair scores exactly 0.

    Without smoothing a zero precision at any scored order gives 0, and a match of the
    highest scored order implies matches of all lower ones, so only pairs that share an
    n-gram of that order can score. With smoothing, any shared unigram can.
    """
    if settings.smooth_method != "none":
        return correct[0] > 0
    rows = np.arange(correct.shape[1])
    if settings.effective_order:
        top = np.clip(hyp_len, 1, MAX_ORDER) - 1
        return (correct[top, rows, :] > 0) & (hyp_len > 0)[:, None]
    return correct[MAX_ORDER - 1] > 0


def _exact_bleu(correct: Sequence[int], hyp_len: int, ref_len: int, settings: BleuSettings) -> float:
    """sacreBLEU's own formula on one pair's statistics."""
    total = [max(hyp_len - n + 1, 0) for n in range(1, MAX_ORDER + 1)]
    return BLEU.compute_bleu(
        correct=[int(c) for c in correct],
        total=total,
        sys_len=hyp_len,
        ref_len=ref_len,
        smooth_method=settings.smooth_method,
        smooth_value=settings.smooth_value,
        effective_order=settings.effective_order,
    ).score


def max_bleu_flags(
    texts: Sequence[str],
    threshold: float,
    settings: BleuSettings,
    block_size: int = 1024,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Which utterances reach the threshold against some other utterance, in each role.

    Args:
        texts: The utterances of one language.
        threshold: On BLEU's 0–1 scale (0.1 = 10 sacreBLEU points).
        settings: sentence-BLEU settings.
        block_size: Hypotheses scored at once (memory ~ 60 bytes × block × len(texts)).
        progress: Show a progress bar.

    Returns:
        ``(as_hypothesis, as_reference)``: boolean arrays; ``as_hypothesis[i]`` is true when
        ``sentence_bleu(texts[i], [texts[j]]) >= threshold`` for some ``j != i``, and
        ``as_reference[j]`` when that holds with ``j`` as the reference.
    """
    metric = settings.metric()
    if not settings.effective_order:
        # sacreBLEU warns on every sentence scored without effective order; say it once
        logger.warning("sentence BLEU without effective order: short utterances score 0")
    # sacreBLEU's own preprocessing (lowercase + tokenizer), as sentence_bleu applies it
    token_lists = [metric._preprocess_segment(t).split() for t in texts]  # noqa: SLF001
    lengths = np.array([len(t) for t in token_lists], dtype=np.int64)
    n = len(texts)
    as_hyp = np.zeros(n, dtype=bool)
    as_ref = np.zeros(n, dtype=bool)
    if n < 2:
        return as_hyp, as_ref
    points = threshold * 100.0
    mats = _ngram_matrices(token_lists)
    transposed = [[m.T.tocsc() for m in levels] for levels in mats]
    blocks = range(0, n, block_size)
    for start in tqdm(blocks, desc="negative pool", unit="block", disable=not progress):
        stop = min(start + block_size, n)
        correct = np.zeros((MAX_ORDER, stop - start, n), dtype=np.int32)
        for order in range(MAX_ORDER):
            for m, mt in zip(mats[order], transposed[order]):
                correct[order] += (m[start:stop] @ mt).toarray()
        block_len = lengths[start:stop]
        bi, rj = np.nonzero(_candidate_mask(correct, block_len, settings))
        keep = bi + start != rj  # "every *other* utterance"
        bi, rj = bi[keep], rj[keep]
        pair_correct = correct[:, bi, rj]
        score = _vectorised_bleu(pair_correct, block_len[bi], lengths[rj], settings)
        # a float rounding difference must never flip a decision: recheck the borderline
        for k in np.flatnonzero(np.abs(score - points) <= 1e-7 * max(points, 1.0)):
            score[k] = _exact_bleu(pair_correct[:, k], int(block_len[bi[k]]), int(lengths[rj[k]]), settings)
        hit = score >= points
        as_hyp[start + bi[hit]] = True
        as_ref[rj[hit]] = True
    return as_hyp, as_ref


def negative_pool_mask(
    texts: Sequence[str],
    threshold: float = 0.1,
    direction: Direction = "both",
    settings: BleuSettings | None = None,
    block_size: int = 1024,
    progress: bool = True,
) -> np.ndarray:
    """Which utterances belong to the negative pool.

    Args:
        texts: The train utterances of one language.
        threshold: On BLEU's 0–1 scale; an utterance is kept when every score is *below* it.
        direction: ``"hypothesis"`` scores each utterance as the hypothesis against every
            other one as reference; ``"reference"`` the other way round; ``"both"`` requires
            both to be below the threshold.
        settings: sentence-BLEU settings (default: 13a, no smoothing, effective order).
        block_size: Hypotheses scored at once.
        progress: Show a progress bar.

    Returns:
        A boolean array, ``True`` for utterances in the pool.
    """
    if direction not in ("both", "hypothesis", "reference"):
        raise ValueError(f"direction must be 'both', 'hypothesis' or 'reference', got {direction!r}")
    if not (0.0 <= threshold <= 1.0) or math.isnan(threshold):
        raise ValueError(f"threshold is on BLEU's 0-1 scale, got {threshold!r}")
    settings = settings or BleuSettings()
    as_hyp, as_ref = max_bleu_flags(texts, threshold, settings, block_size, progress)
    if direction == "hypothesis":
        return ~as_hyp
    if direction == "reference":
        return ~as_ref
    return ~(as_hyp | as_ref)
