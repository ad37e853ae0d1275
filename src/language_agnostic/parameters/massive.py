"""``conf/base/parameters_massive.yml``: MASSIVE 1.1 ingestion and the texts FMDA is trained and evaluated on."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator
from sacrebleu.metrics.bleu import BLEU

from language_agnostic.corpora.errors import OnBadRow
from language_agnostic.corpora.massive import LOCALE_PATTERN, PARTITIONS
from language_agnostic.parameters._rules import NonEmpty, error_at, matching
from language_agnostic.parameters.base import Section
from language_agnostic.text.masking import MaskUnit
from language_agnostic.text.negative_pool import Direction

Locale = Annotated[str, matching(LOCALE_PATTERN, "a MASSIVE locale code such as 'en-US' or 'ja-JP'")]
Partition = Literal[PARTITIONS]
SmoothMethod = Literal[tuple(BLEU.SMOOTH_DEFAULTS)]
Tokenizer = Literal[tuple(BLEU.TOKENIZERS)]
# a pair's key is a Kedro namespace (data/03_primary/<key>/...): no dot, no space
PairName = Annotated[str, matching(r"\w+", "letters, digits and underscores (a namespace such as en_de)")]
TokenizeKey = Annotated[str, matching(r"default|" + LOCALE_PATTERN.pattern.strip("^$"), "default or a locale code")]
Count = Annotated[int, Field(ge=1)]


class Pair(Section):
    """``massive.pairs.<name>``: one language pair, joined by MASSIVE ``id``."""

    source: Locale
    """The source locale (one of massive.locales)."""
    target: Locale
    """The target locale (one of massive.locales)."""


class Ingest(Section):
    """``massive.ingest``: how the locale files are read (also by the slu pipeline)."""

    on_bad_row: OnBadRow = "error"
    """error: stop at the first bad row (file, line); skip: log, count, write it to the rejects."""
    whitespace_insensitive_locales: list[Locale] = []
    """Locales whose annotations add spaces `utt` lacks (compared ignoring whitespace)."""


class Masking(Section):
    """``massive.masking``: FMDA's template (slots masked) and residual (carrier masked) texts."""

    mask_token: NonEmpty = "auto"
    """auto: embeddings.encoder's mask token (<mask> for e5 / XLM-R, [MASK] for mBERT); or a literal token."""
    unit: MaskUnit = "token"
    """token: a mask per masked word; span: a mask per run of them."""


class NTargets(Section):
    """``massive.template_retrieval.n_targets``: targets per source of the two evaluation sets."""

    single: Count
    """Targets per source of the single-target set (accuracy@1, Table 3)."""
    multi: Count
    """Targets per source of the multi-target set (MAP, Table 6)."""


class TemplateRetrieval(Section):
    """``massive.template_retrieval``: the template-retrieval evaluation sets."""

    seed: int
    """Seed of the replacement slot values drawn."""
    partition: Partition
    """The partition whose utterances are the sources."""
    value_partitions: Annotated[list[Partition], Field(min_length=1)]
    """Replacement slot values come from these partitions."""
    n_targets: NTargets
    """Targets per source of each set."""


class TemplatePairs(Section):
    """``massive.template_pairs``: monolingual template pairs for FMDA's two-stage training (§4.6)."""

    seed: int
    """Seed of the replacement slot values drawn."""
    partition: Partition
    """The partition whose utterances are the sources."""
    value_partitions: Annotated[list[Partition], Field(min_length=1)]
    """Replacement slot values come from these partitions."""


class NegativePool(Section):
    """``massive.negative_pool``: utterances with no other of their language and partition at BLEU ``threshold``.

    An utterance is pooled when its sentence BLEU against every other utterance of the same language and
    partition is below ``threshold``.
    """

    partitions: Annotated[list[Partition], Field(min_length=1)] = ["train", "dev"]
    """The partitions pooled (train negatives come from the train pool, dev from dev)."""
    threshold: Annotated[float, Field(ge=0, le=1)]
    """Pool threshold on BLEU's 0-1 scale (0.1 = 10 sacreBLEU points)."""
    direction: Direction = "both"
    """Score each utterance as hypothesis, reference, or both (both below the threshold)."""
    smooth_method: SmoothMethod = "none"
    """sacreBLEU's smoothing: none, exp, floor or add-k."""
    smooth_value: Annotated[float, Field(gt=0)] | None = None
    """The value of floor / add-k smoothing; null: sacreBLEU's default."""
    effective_order: bool = True
    """Score short sentences on the n-gram orders they have."""
    lowercase: bool = False
    """Lowercase before tokenising."""
    tokenize: dict[TokenizeKey, Tokenizer] = {}
    """sacreBLEU tokenizer per locale; others: `default` (13a when absent)."""
    block_size: Count = 1024
    """Hypotheses scored at once (memory ~60 B x block x utterances)."""


class Massive(Section):
    """``massive``: MASSIVE 1.1 ingestion and the texts FMDA is trained and evaluated on."""

    locales: Annotated[list[Locale], Field(min_length=1)]
    """Locales read from the tarball (any MASSIVE locale present)."""
    pairs: dict[PairName, Pair]
    """Language pairs; each key is a namespace (data/03_primary/<key>/)."""
    ingest: Ingest
    """How the locale files are read."""
    masking: Masking
    """FMDA's masked texts."""
    template_retrieval: TemplateRetrieval
    """The template-retrieval evaluation sets."""
    template_pairs: TemplatePairs
    """FMDA's monolingual template training pairs."""
    negative_pool: NegativePool
    """FMDA's negative pools."""

    @model_validator(mode="after")
    def _pairs_in_locales(self) -> Massive:
        """A pair reads only locales of ``massive.locales`` (``corpora/massive_table.py:validate_massive_config``)."""
        for name, pair in self.pairs.items():
            for side in ("source", "target"):
                locale = getattr(pair, side)
                if locale not in self.locales:
                    raise error_at(
                        ("pairs", name, side),
                        f"locale {locale!r} is not in massive.locales {list(self.locales)}; add it there",
                        locale,
                    )
        return self


SECTIONS: dict[str, type[Section]] = {"massive": Massive}
