"""FMDA's reconstruction-target texts (Wu et al. 2022, §3.3, Figure 3).

The *template* text keeps the carrier-phrase tokens and masks the slot tokens; the
*residual* text keeps the slot tokens and masks the carrier phrase. Masks are placed in the
surface utterance (``utt``) using the token character offsets from the MASSIVE parser, so the
separators between tokens are those of ``utt`` (a space in English, nothing in Japanese).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

MaskUnit = Literal["token", "span"]


def mask_utterance(
    utt: str,
    token_starts: Sequence[int],
    token_ends: Sequence[int],
    masked: Sequence[bool],
    mask_token: str,
    unit: MaskUnit = "token",
) -> str:
    """Replace the chosen tokens of ``utt`` by ``mask_token``.

    Args:
        utt: The surface utterance.
        token_starts: Character offset of each token in ``utt``.
        token_ends: Character offset one past each token.
        masked: One flag per token: ``True`` to mask it.
        mask_token: The encoder's mask token, e.g. ``"<mask>"``.
        unit: ``"token"``: one mask per masked token; ``"span"``: one mask per run of
            consecutive masked tokens.

    Returns:
        The masked text. Text between tokens (spaces) is kept as in ``utt``.

    Examples:
        >>> mask_utterance("wake me up at nine am", [0, 5, 8, 11, 14, 19], [4, 7, 10, 13, 18, 21],
        ...                [False, False, False, False, True, True], "<mask>")
        'wake me up at <mask> <mask>'
    """
    if not (len(token_starts) == len(token_ends) == len(masked)):
        raise ValueError(
            f"token_starts, token_ends and masked differ in length: "
            f"{len(token_starts)}, {len(token_ends)}, {len(masked)}"
        )
    if unit not in ("token", "span"):
        raise ValueError(f"mask unit must be 'token' or 'span', got {unit!r}")
    pieces: list[str] = []
    cursor = 0
    previous_masked = False
    for start, end, is_masked in zip(token_starts, token_ends, masked):
        gap = utt[cursor:start]
        if is_masked and unit == "span" and previous_masked:
            cursor = end  # extend the running mask over this token and the gap before it
            continue
        pieces.append(gap)
        pieces.append(mask_token if is_masked else utt[start:end])
        cursor = end
        previous_masked = is_masked
    pieces.append(utt[cursor:])
    return "".join(pieces)


def template_and_residual(
    utt: str,
    token_starts: Sequence[int],
    token_ends: Sequence[int],
    bio: Sequence[str],
    mask_token: str,
    unit: MaskUnit = "token",
) -> tuple[str, str]:
    """The template text (slots masked) and residual text (carrier masked) of an utterance.

    Args:
        utt: The surface utterance.
        token_starts: Character offset of each token in ``utt``.
        token_ends: Character offset one past each token.
        bio: BIO label of each token (``"O"`` for carrier-phrase tokens).
        mask_token: The mask token.
        unit: ``"token"`` or ``"span"`` (see :func:`mask_utterance`).

    Returns:
        ``(template_text, residual_text)``.
    """
    is_slot = [label != "O" for label in bio]
    template = mask_utterance(utt, token_starts, token_ends, is_slot, mask_token, unit)
    residual = mask_utterance(utt, token_starts, token_ends, [not s for s in is_slot], mask_token, unit)
    return template, residual
