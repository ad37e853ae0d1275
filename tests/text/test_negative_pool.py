"""Negative pools: hand-computed BLEU cases, direction semantics, equality with brute force."""

from __future__ import annotations

import io
import json
import logging
import math
import random
import tarfile
from pathlib import Path

import numpy as np
import pytest
from sacrebleu import sentence_bleu
from sacrebleu.metrics.bleu import BLEU

from language_agnostic.text.negative_pool import BleuSettings, max_bleu_flags, negative_pool_mask

SHORT = "a b c d"
LONG = "a b c d e f g h i j k l m n o p"
OTHER = "completely unrelated words here"


def brute_force_pool(texts: list[str], threshold: float, direction: str, settings: BleuSettings) -> np.ndarray:
    """The definition, with sacreBLEU's sentence scoring on every ordered pair.

    ``sacrebleu.sentence_bleu`` builds ``BLEU(...)`` and calls ``sentence_score`` on every
    call; building it once is the same computation and avoids creating a MeCab tagger per
    pair (which exhausts MeCab after some thousands).
    """
    n = len(texts)
    hyp_hit = np.zeros(n, dtype=bool)
    ref_hit = np.zeros(n, dtype=bool)
    sacre_logger = logging.getLogger("sacrebleu")
    level = sacre_logger.level
    # sacreBLEU logs a warning on every sentence scored without effective order
    sacre_logger.setLevel(logging.ERROR)
    try:
        metric = BLEU(
            smooth_method=settings.smooth_method,
            smooth_value=settings.smooth_value,
            lowercase=settings.lowercase,
            tokenize=settings.tokenize,
            effective_order=settings.effective_order,
        )
        for i in range(n):
            for j in range(n):
                if i != j and metric.sentence_score(texts[i], [texts[j]]).score >= threshold * 100:
                    hyp_hit[i] = True
                    ref_hit[j] = True
    finally:
        sacre_logger.setLevel(level)
    return {"both": ~(hyp_hit | ref_hit), "hypothesis": ~hyp_hit, "reference": ~ref_hit}[direction]


def test_brute_force_helper_is_sentence_bleu():
    texts = ["the cat sat on the mat", "the cat sat on the mat today", "a dog"]
    settings = BleuSettings(smooth_method="exp")
    metric = BLEU(smooth_method="exp", effective_order=True)
    for h in texts:
        for r in texts:
            assert metric.sentence_score(h, [r]).score == sentence_bleu(h, [r], smooth_method="exp").score
    assert brute_force_pool(texts, 0.1, "both", settings).tolist() == [False, False, True]


def test_hand_computed_scores_behind_the_direction_cases():
    # SHORT as hypothesis: all precisions 1, brevity penalty exp(1 - 16/4) = exp(-3)
    assert sentence_bleu(SHORT, [LONG], smooth_method="none").score == pytest.approx(100 * math.exp(-3))
    # LONG as hypothesis: precisions 4/16, 3/15, 2/14, 1/13, no brevity penalty
    expected = 100 * (4 / 16 * 3 / 15 * 2 / 14 * 1 / 13) ** 0.25
    assert sentence_bleu(LONG, [SHORT], smooth_method="none").score == pytest.approx(expected)
    assert 100 * math.exp(-3) < 10 < expected  # 4.98 < 10 < 15.3


@pytest.mark.parametrize(
    ("direction", "expected"),
    [
        # BLEU(SHORT | LONG) = 4.98 and BLEU(LONG | SHORT) = 15.3
        ("hypothesis", [True, False, True]),  # LONG scores 15.3 as a hypothesis
        ("reference", [False, True, True]),  # SHORT is the reference of that 15.3
        ("both", [False, False, True]),
    ],
)
def test_direction_semantics(direction: str, expected: list[bool]):
    mask = negative_pool_mask([SHORT, LONG, OTHER], 0.1, direction, progress=False)  # type: ignore[arg-type]
    assert mask.tolist() == expected


def test_threshold_is_on_the_zero_to_one_scale():
    # 15.3 points: below a 0.16 threshold, above 0.15
    assert negative_pool_mask([SHORT, LONG], 0.16, "both", progress=False).tolist() == [True, True]
    assert negative_pool_mask([SHORT, LONG], 0.15, "both", progress=False).tolist() == [False, False]


def test_identical_utterances_and_the_self_pair():
    texts = ["turn the lights off", "turn the lights off", "what time is it"]
    assert negative_pool_mask(texts, progress=False).tolist() == [False, False, True]
    # an utterance is never compared with itself
    assert negative_pool_mask(["what time is it"], progress=False).tolist() == [True]


def test_flags_report_both_roles():
    as_hyp, as_ref = max_bleu_flags([SHORT, LONG, OTHER], 0.1, BleuSettings(), progress=False)
    assert as_hyp.tolist() == [False, True, False]
    assert as_ref.tolist() == [True, False, False]


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="direction must be 'both', 'hypothesis' or 'reference', got 'sideways'"):
        negative_pool_mask([SHORT], 0.1, "sideways", progress=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold is on BLEU's 0-1 scale, got 10"):
        negative_pool_mask([SHORT], 10, progress=False)


def _synthetic(n: int, seed: int) -> list[str]:
    """Short sentences over a small vocabulary, so that many pairs share n-grams."""
    rng = random.Random(seed)
    words = "set the alarm for me at nine am wake up play some music what is weather today".split()
    texts = []
    for _ in range(n):
        length = rng.randint(1, 9)
        texts.append(" ".join(rng.choice(words) for _ in range(length)))
    texts += texts[:5]  # exact duplicates too
    return texts


SETTINGS = [
    BleuSettings(),
    BleuSettings(smooth_method="exp"),
    BleuSettings(smooth_method="floor", smooth_value=0.1),
    BleuSettings(smooth_method="add-k", smooth_value=1),
    BleuSettings(effective_order=False),
    BleuSettings(lowercase=True, tokenize="intl"),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"{s.smooth_method}-{s.effective_order}-{s.tokenize}")
@pytest.mark.parametrize("threshold", [0.1, 0.3])
def test_equals_brute_force_on_synthetic_sentences(settings: BleuSettings, threshold: float):
    texts = _synthetic(120, seed=3)
    for direction in ("both", "hypothesis", "reference"):
        fast = negative_pool_mask(texts, threshold, direction, settings, block_size=37, progress=False)
        assert fast.tolist() == brute_force_pool(texts, threshold, direction, settings).tolist(), direction


def _real_utterances(archive: Path, locale: str, n: int) -> list[str]:
    with tarfile.open(archive, "r:gz") as tar:
        handle = tar.extractfile(f"1.1/data/{locale}.jsonl")
        assert handle is not None
        rows = [json.loads(line) for line in io.TextIOWrapper(handle, encoding="utf-8")]
    return [r["utt"] for r in rows if r["partition"] == "train"][:n]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("locale", "settings"),
    [
        ("en-US", BleuSettings()),
        ("en-US", BleuSettings(smooth_method="exp")),
        ("ja-JP", BleuSettings(tokenize="ja-mecab")),
    ],
    ids=["en-none", "en-exp", "ja-mecab"],
)
def test_equals_brute_force_on_real_massive(real_massive: Path, locale: str, settings: BleuSettings):
    texts = _real_utterances(real_massive, locale, 400)
    fast = negative_pool_mask(texts, 0.1, "both", settings, block_size=64, progress=False)
    slow = brute_force_pool(texts, 0.1, "both", settings)
    assert fast.tolist() == slow.tolist()
    assert 0 < fast.sum() < len(texts)  # the case is not trivial
