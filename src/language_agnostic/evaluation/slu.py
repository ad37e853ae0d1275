"""Joint intent / slot-filling (SLU) metrics, as MASSIVE reports them.

Slot F1 is seqeval's span-level micro F1 in its default (conlleval-like, non-strict) mode,
which is what MASSIVE's official evaluation calls: a span may start with ``I-x``.
"""

from __future__ import annotations

from collections.abc import Sequence

from seqeval.metrics import f1_score


def _check_aligned(gold: Sequence[object], pred: Sequence[object], what: str) -> None:
    """Raise, naming ``what``, when two per-utterance lists differ in length or are empty."""
    if len(gold) != len(pred):
        raise ValueError(f"{what}: {len(gold)} gold but {len(pred)} predicted utterances; they must align")
    if len(gold) == 0:
        raise ValueError(f"{what}: no utterances")


def _label_lists(
    gold_labels: Sequence[Sequence[str]], pred_labels: Sequence[Sequence[str]]
) -> tuple[list[list[str]], list[list[str]]]:
    """Plain lists of lists (parquet gives arrays), after checking every utterance's length."""
    _check_aligned(gold_labels, pred_labels, "labels")
    gold = [list(labels) for labels in gold_labels]
    pred = [list(labels) for labels in pred_labels]
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"labels: utterance {i} has {len(g)} gold but {len(p)} predicted labels")
    return gold, pred


def intent_accuracy(gold: Sequence[str], pred: Sequence[str]) -> float:
    """Fraction of utterances whose predicted intent is the gold one.

    Raises:
        ValueError: the lists differ in length or are empty.
    """
    _check_aligned(gold, pred, "intents")
    return sum(g == p for g, p in zip(gold, pred)) / len(gold)


def slot_f1(gold_labels: Sequence[Sequence[str]], pred_labels: Sequence[Sequence[str]]) -> float:
    """Span-level micro F1 of BIO slot labels (``seqeval.metrics.f1_score``, default mode).

    A span is counted right only with the same type, start and end. With no span in either
    gold or predictions seqeval returns 0.0 (and warns).

    Args:
        gold_labels: One list of BIO labels per utterance.
        pred_labels: The predicted labels, one per gold label.

    Raises:
        ValueError: utterance counts differ, an utterance's label counts differ, or no utterances.
    """
    gold, pred = _label_lists(gold_labels, pred_labels)
    return float(f1_score(gold, pred))


def exact_match_correct(
    gold_intents: Sequence[str],
    pred_intents: Sequence[str],
    gold_labels: Sequence[Sequence[str]],
    pred_labels: Sequence[Sequence[str]],
) -> list[bool]:
    """Per utterance: the right intent and every slot label right (the outcomes a paired test reads).

    Raises:
        ValueError: any of the four lists misaligned (see :func:`slot_f1`).
    """
    _check_aligned(gold_intents, pred_intents, "intents")
    gold, pred = _label_lists(gold_labels, pred_labels)
    if len(gold) != len(gold_intents):
        raise ValueError(f"{len(gold_intents)} intents but {len(gold)} label lists; they must align")
    return [gi == pi and g == p for gi, pi, g, p in zip(gold_intents, pred_intents, gold, pred)]


def exact_match(
    gold_intents: Sequence[str],
    pred_intents: Sequence[str],
    gold_labels: Sequence[Sequence[str]],
    pred_labels: Sequence[Sequence[str]],
) -> float:
    """Fraction of utterances with the right intent and every slot label right (:func:`exact_match_correct`).

    Raises:
        ValueError: any of the four lists misaligned (see :func:`slot_f1`).
    """
    hits = exact_match_correct(gold_intents, pred_intents, gold_labels, pred_labels)
    return sum(hits) / len(hits)


def slu_scores(
    gold_intents: Sequence[str],
    pred_intents: Sequence[str],
    gold_labels: Sequence[Sequence[str]],
    pred_labels: Sequence[Sequence[str]],
) -> dict[str, float]:
    """``intent_accuracy``, ``slot_f1`` and ``exact_match`` of one set of predictions."""
    return {
        "intent_accuracy": intent_accuracy(gold_intents, pred_intents),
        "slot_f1": slot_f1(gold_labels, pred_labels),
        "exact_match": exact_match(gold_intents, pred_intents, gold_labels, pred_labels),
    }


SLOT_ERRORS = ("utterance", "slot_num", "slot_type", "slot_bound", "slot_both")


def slot_spans(labels: Sequence[str]) -> list[tuple[str, int, int]]:
    """The slot spans ``(type, first word, last word)`` of one BIO sequence, in order, as seqeval's
    default mode reads them (the spans :func:`slot_f1` scores: a span may start with ``I-x``)."""
    from seqeval.metrics.sequence_labeling import get_entities

    return [(str(t), int(a), int(b)) for t, a, b in get_entities(list(labels))]


def slot_error_statistics(gold_labels: Sequence[Sequence[str]], pred_labels: Sequence[Sequence[str]]) -> dict[str, int]:
    """LAJ-MCL's Table 5: error statistics of slot filling (§4.4, "Error Statistics").

    The paper's definitions, and how they are read here (spans as :func:`slot_spans`, i.e. as
    slot F1 scores them; the intent plays no part):

    - ``utterance`` (#utterance): utterances with a slot error, i.e. whose predicted spans are
      not exactly the gold spans;
    - ``slot_num`` (#slot_num): utterances among them whose number of predicted spans differs
      from the gold number;
    - in every other erroneous utterance ("the utterances without #slot_num") the predicted and
      gold spans are as many, and the ``j``-th predicted span is set against the ``j``-th gold
      span (both in sentence order); each pair that differs counts once as
      ``slot_type`` (†slot_type: same words, another type), ``slot_bound`` (†slot_bound: same
      type, other first or last word, overlapping or not) or ``slot_both`` (†slot_both: both).

    So ``utterance`` = ``slot_num`` + the utterances with at least one †slot error, and the †slot
    columns count span pairs, not utterances (the paper's Table 5 has more †slot errors than
    utterances without #slot_num, e.g. CoSDA-ML es: 420 − 231 = 189 utterances, 271 errors).
    Utterances with #slot_num errors add nothing to the †slot columns, as in the paper ("the
    newly involved slot predictions affect the number of †slot errors, leading to confusing results").

    Args:
        gold_labels: One list of BIO labels per utterance.
        pred_labels: The predicted labels, one per gold label.

    Returns:
        ``{"utterance", "slot_num", "slot_type", "slot_bound", "slot_both"}`` counts.

    Raises:
        ValueError: utterance counts differ, an utterance's label counts differ, or no utterances.
    """
    gold, pred = _label_lists(gold_labels, pred_labels)
    counts = dict.fromkeys(SLOT_ERRORS, 0)
    for g, p in zip(gold, pred):
        gold_spans, pred_spans = slot_spans(g), slot_spans(p)
        if gold_spans == pred_spans:
            continue
        counts["utterance"] += 1
        if len(gold_spans) != len(pred_spans):
            counts["slot_num"] += 1
            continue
        for (gt, ga, gb), (pt, pa, pb) in zip(gold_spans, pred_spans):
            same_type, same_bounds = gt == pt, (ga, gb) == (pa, pb)
            if same_type and same_bounds:
                continue
            counts["slot_type" if same_bounds else "slot_bound" if same_type else "slot_both"] += 1
    return counts
