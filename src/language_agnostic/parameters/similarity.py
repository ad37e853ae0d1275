"""``qe`` and ``sts`` (``conf/*/parameters_qe.yml``, ``parameters_sts.yml``): meaning embeddings judged on WMT20
quality estimation and SemEval-2017 STS, one model for each, sharing every block but the evaluation sets, the
training corpus and the report's identity.

What reads them: ``pipelines/similarity.py`` (the shared body: which heads and ablations are trained, which
parameters each node reads), ``pipelines/qe`` and ``pipelines/sts`` (``corpus``), ``corpora/evaluation_sets.py``
(``test``, ``corpus``' cleaning and split), ``training/heads.py`` (``training``, ``methods``: ``HeadSpec`` and
``TrainSettings`` with ``batch_size``), ``methods/registry.py:check_ablations`` (``ablations``),
``evaluation/similarity.py`` (``leakage``, ``report``), ``reporting/figures.py:plot_meaning_language``
(``figure``), ``reporting/similarity.py`` (``report``).

``methods`` is a block of the heads the pipelines train (``methods/registry.py:TRAINED_METHODS``: each a node
reading ``params:<pipeline>.methods.<method>``), not a mapping of names the user chooses: each head has its own
loss weights. ``ablations`` is such a mapping: each entry retrains the head it names as ``base``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from language_agnostic.corpora.errors import OnBadRow
from language_agnostic.corpora.evaluation_sets import STS_DEFAULT_TRACKS
from language_agnostic.corpora.languages import language_table
from language_agnostic.corpora.parallel import OPUS_TATOEBA_DIRS, OPUS_TATOEBA_VERSION
from language_agnostic.corpora.sts17 import TRACKS
from language_agnostic.corpora.wmt_qe import QE_PAIRS
from language_agnostic.encoders.pooling import Pooling
from language_agnostic.evaluation.claims import DIRECTIONS
from language_agnostic.methods.dream import ACTIVATIONS as DREAM_ACTIVATIONS
from language_agnostic.methods.dream import DEFAULT_WEIGHTS as DREAM_WEIGHTS
from language_agnostic.methods.meat import DEFAULT_WEIGHTS as MEAT_WEIGHTS
from language_agnostic.methods.registry import TRAINED_METHODS
from language_agnostic.methods.seed import DEFAULT_WEIGHTS as SEED_WEIGHTS
from language_agnostic.parameters._rules import NonEmpty, error_at, matching, word_or_list
from language_agnostic.parameters.base import Section, overrides
from language_agnostic.parameters.emu import LossWeight, Seed, Training
from language_agnostic.reporting.compare import MAIN

# the MLQE-PE post-editing splits (sheffieldnlp/mlqe-pe: data/post-editing/<split>/<pair>-<split>.tar.gz)
MLQE_PE_SPLITS = ("train", "dev", "test")
# what the FLoRes v1 archive holds (wikipedia_en_ne_si_test_sets/wikipedia.<split>.<pair>.<lang>)
FLORES_V1_PAIRS = ("ne-en", "si-en")
FLORES_V1_SPLITS = ("dev", "devtest", "test")
# the names an ablation cannot take: the trained heads and the untrained baselines (check_ablations)
RESERVED_HEADS = (*TRAINED_METHODS, "raw", "centering")

QePair = Literal[QE_PAIRS]
StsTrack = Literal[tuple(TRACKS)]
OpusLanguage = Literal[tuple(OPUS_TATOEBA_DIRS)]  # corpora/parallel.py:opus_tatoeba_files


def _laser_language(code: str) -> str:
    """A language of the LASER Tatoeba test sets (``tatoeba.<code>-eng.<code>``)."""
    if code == "eng" or code not in language_table():
        raise ValueError("must be the ISO 639-3 code of a LASER Tatoeba language, e.g. 'deu'")
    return code


def _method_embedding(value: str) -> str:
    """``method/embedding`` (``reporting/similarity.py:claim_specs``)."""
    if value.count("/") != 1 or not all(value.split("/")):
        raise ValueError("write it as method/embedding (e.g. seed/meaning)")
    return value


def _ablation_name(name: str) -> str:
    """A new identifier for an ablation's head (``check_ablations``)."""
    if name in RESERVED_HEADS or not name.replace("_", "").isalnum():
        raise ValueError(f"the name must be a new identifier (letters, digits, _), not one of {list(RESERVED_HEADS)}")
    return name


LaserLanguages = word_or_list("all", Annotated[str, AfterValidator(_laser_language)])
MethodEmbedding = Annotated[str, AfterValidator(_method_embedding)]
AblationName = Annotated[str, AfterValidator(_ablation_name)]
LanguageCode = Annotated[str, matching(r"[a-z]{2,3}", "a 2- or 3-letter language code such as 'de'")]
Count = Annotated[int, Field(ge=1)]


# ---------------------------------------------------------------------------- evaluation sets (test)


class QeTest(Section):
    """``qe.test``: the WMT20 QE test sets (gold = z_mean); ``sts`` reads them too, to remove their sentences
    from its corpus."""

    pairs: Annotated[list[QePair], Field(min_length=1)] = list(QE_PAIRS)
    """The language pairs evaluated (one wmt20_qe_test_<pair> archive each)."""
    on_bad_row: OnBadRow = "error"
    """error: stop at the first bad row (file:line); skip: log, count, report it."""


class StsTest(Section):
    """``sts.test``: the SemEval-2017 STS tracks (gold 0-5); ``qe`` reads them too, to remove their sentences
    from its corpus."""

    tracks: Annotated[list[StsTrack], Field(min_length=1)] = list(STS_DEFAULT_TRACKS)
    """The tracks evaluated (es-en: track 4a; tr-en: the 250 scored lines)."""
    on_bad_row: OnBadRow = "error"
    """error: stop at the first bad row (file:line); skip: log, count, report it."""


# ---------------------------------------------------------------------------- training corpus


class _Corpus(Section):
    """How the training pairs are cleaned and split (``corpora/evaluation_sets.py:clean_and_split``)."""

    laser_tatoeba: LaserLanguages = "all"
    """Drop pairs with a side in these LASER Tatoeba test sets: all, or ISO 639-3 codes."""
    validation_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.1
    """Share of each pair held out for validation (seeded)."""
    seed: int = 0
    """Seeds the train/validation split."""


class Flores(Section):
    """FLoRes v1 (Wikipedia) sentences added to the corpus of the low-resource pairs."""

    pairs: list[Literal[FLORES_V1_PAIRS]] = []
    """The pairs FLoRes v1 adds to; empty: none."""
    splits: Annotated[list[Literal[FLORES_V1_SPLITS]], Field(min_length=1)] = ["dev", "devtest"]
    """The FLoRes v1 splits read."""


class QeCorpus(_Corpus):
    """``qe.corpus``: the training pairs (MLQE-PE source + human post-edit, FLoRes v1); which archives are read
    is decided from it when the pipeline is built."""

    pairs: Annotated[list[QePair], Field(min_length=1)]
    """The corpus's language pairs (an mlqe_pe_<split>_<pair> archive per split)."""
    mlqe_pe_splits: Annotated[list[Literal[MLQE_PE_SPLITS]], Field(min_length=1)]
    """The MLQE-PE splits read (source + human post-edit, Moses-detokenised)."""
    flores: Flores = Flores()
    """FLoRes v1 for the low-resource pairs."""


class StsCorpus(_Corpus):
    """``sts.corpus``: the OPUS-MT Tatoeba test sets used as training pairs ``<xx>-en``."""

    languages: Annotated[dict[OpusLanguage, LanguageCode], Field(min_length=1)]
    """Languages paired with English: {OPUS-MT ISO 639-3 code: code in the pair name}."""
    version: NonEmpty = OPUS_TATOEBA_VERSION
    """The OPUS-MT Tatoeba test-set release (the files' name prefix)."""
    keep_labels: dict[OpusLanguage, list[str]] = {}
    """{language: .labels values kept} over the defaults (ara: [ara], zho: [cmn_Hans, cmn_Hant])."""


# ---------------------------------------------------------------------------- training and heads


class HeadsTraining(Training):
    """``<pipeline>.training``: the training of every head (``TrainSettings`` and the batch size); early stopping
    on the validation split only."""

    batch_size: Annotated[int, Field(ge=1)] = 512
    """Parallel pairs per batch (each with random partners in both languages)."""


HeadTrainingOverrides = overrides(
    HeadsTraining, "HeadTrainingOverrides", "Overrides of <pipeline>.training for one head (unset: the section's)."
)


class DreamWeights(Section):
    """DREAM's loss weights (``methods/dream.py``, eq. 1)."""

    reconstruction: LossWeight = DREAM_WEIGHTS["reconstruction"]
    """L_R: the meaning and language embeddings add up to the input."""
    meaning: LossWeight = DREAM_WEIGHTS["meaning"]
    """L_M: translations share their meaning embedding, random sentences do not."""
    language: LossWeight = DREAM_WEIGHTS["language"]
    """L_L: a language's sentences share a language embedding that identifies it."""
    language_push: LossWeight = DREAM_WEIGHTS["language_push"]
    """The released code's push-apart of the two sides' language embeddings (not in its total: 0)."""


class MeatWeights(Section):
    """MEAT's loss weights (``methods/meat.py``)."""

    reconstruction: LossWeight = MEAT_WEIGHTS["reconstruction"]
    """Cosine reconstruction of each sentence from its meaning and language embeddings."""
    cross_reconstruction: LossWeight = MEAT_WEIGHTS["cross_reconstruction"]
    """Reconstruction with the translation's meaning embedding."""
    language_push: LossWeight = MEAT_WEIGHTS["language_push"]
    """Push-apart of the two sides' language embeddings."""
    uniform: LossWeight = MEAT_WEIGHTS["uniform"]
    """Adversarial: the language discriminator's prediction on the meaning embedding made uniform."""


class SeedWeights(Section):
    """SEED's loss weights (``methods/seed.py``, eq. 3; all 1 in the paper)."""

    meaning: LossWeight = SEED_WEIGHTS["meaning"]
    """L_M (eq. 4): translations share a meaning embedding, random sentences do not."""
    language: LossWeight = SEED_WEIGHTS["language"]
    """L_L (eq. 5): sentences of a language share their language embedding."""
    cross: LossWeight = SEED_WEIGHTS["cross"]
    """L_C (eq. 6): meaning and language apart, sentences rebuilt across the pair."""


# each head's loss weights: an ablation's are checked against its base's
LOSS_WEIGHTS: dict[str, type[Section]] = {"dream": DreamWeights, "meat": MeatWeights, "seed": SeedWeights}


class _Head(Section):
    """What every head takes (``training/heads.py:HeadSpec``)."""

    training: HeadTrainingOverrides = HeadTrainingOverrides()
    """Overrides of <pipeline>.training for this head."""
    pooling: Pooling | None = None
    """This head's sentence vector; null: <pipeline>.pooling."""


class DreamHead(_Head):
    """DREAM (Tiyajamorn et al. 2021): meaning and language single-layer networks, reconstruction."""

    method: Literal["dream"] = "dream"
    """The method trained: the head's own."""
    activation: Literal[tuple(DREAM_ACTIVATIONS)] = "none"
    """Activation after each single-layer network; none: linear, as in the paper."""
    loss_weights: DreamWeights = DreamWeights()
    """Loss weights over the defaults ({}: the paper's)."""


class MeatHead(_Head):
    """MEAT (Kuroda et al. 2022): DREAM's heads against an adversarial language discriminator."""

    method: Literal["meat"] = "meat"
    """The method trained: the head's own."""
    loss_weights: MeatWeights = MeatWeights()
    """Its loss weights over the defaults ({}: all 1)."""


class SeedHead(_Head):
    """SEED (Fukushima et al. 2025): one meaning network, the language embedding the rest."""

    method: Literal["seed"] = "seed"
    """The method trained: the head's own."""
    loss_weights: SeedWeights = SeedWeights()
    """Loss weights over the defaults ({}: all 1, as in the paper)."""


class Heads(Section):
    """``<pipeline>.methods``: every head the pipeline trains (``TRAINED_METHODS``), each its own node and run."""

    dream: DreamHead
    """DREAM's loss weights, activation and training overrides."""
    meat: MeatHead
    """MEAT's loss weights and training overrides."""
    seed: SeedHead
    """SEED's loss weights and training overrides."""


class Ablation(Section):
    """A head retrained with some loss terms off (SEED Table 5, DREAM Table 6) or with another training seed (a
    seed run: the claims' seeds); its own node, run and rows."""

    base: Literal[TRAINED_METHODS]
    """The head retrained (its <pipeline>.methods settings under these)."""
    loss_weights: dict[str, LossWeight] = {}
    """Loss weights over the base's ({meaning: 0}: L_M off; {}: a seed run)."""
    seed: int | None = None
    """The training seed; null: the base's."""

    @model_validator(mode="after")
    def _changes_something(self) -> Ablation:
        known = sorted(LOSS_WEIGHTS[self.base].model_fields)
        for name in self.loss_weights:
            if name not in known:
                raise error_at(("loss_weights",), f"not a loss weight of {self.base} (known: {known})", name)
        if not self.loss_weights and self.seed is None:
            given = self.model_dump(exclude_unset=True)
            raise error_at((), "give the loss_weights it changes (e.g. {meaning: 0}) or a training seed", given)
        return self


# ---------------------------------------------------------------------------- probes and figure


class Leakage(Section):
    """``<pipeline>.leakage``: the language-ID probe (logistic regression) on every embedding, trained on
    training-split sentences and scored on validation ones."""

    train_per_language: Count = 1000
    """Sentences per language drawn from the training split."""
    test_per_language: Count = 500
    """Sentences per language drawn from the validation split."""
    max_iter: Count = 2000
    """The logistic regression's iteration cap."""
    seed: Seed = 0
    """Seeds the draw and the probe."""


class Figure(Section):
    """``<pipeline>.figure``: PCA of SEED's meaning and language embeddings of one evaluation pair (SEED Fig. 1,
    DREAM Fig. 5)."""

    pair: str
    """The evaluation pair plotted."""
    n_pairs: Count = 1000
    """Sentence pairs drawn from it (all when it has fewer)."""
    seed: Seed = 0
    """Seeds the draw."""


# ---------------------------------------------------------------------------- report


class Bootstrap(Section):
    """The claims' paired bootstrap over the test items (``evaluation/claims.py:paired_correlation``)."""

    resamples: Count = 10_000
    """Bootstrap resamples."""
    seed: Seed = 0
    """Seeds the resampling."""


class Claim(Section):
    """A paper's claim, judged on the average Pearson over a table's pairs, method against baseline."""

    claim: NonEmpty
    """The claim in a few words, with its paper's table."""
    method: MethodEmbedding
    """The head, as method/embedding (e.g. seed/meaning)."""
    baseline: MethodEmbedding
    """The baseline, as method/embedding (e.g. raw/mean)."""
    backbone: str
    """The encoders the paper made the claim on."""
    paper: str
    """The paper's figures behind it."""
    direction: Literal[DIRECTIONS] = ">"
    """>: method above baseline; not >: no better; not <: no worse."""
    table: NonEmpty = Field(default=None)
    """The report.tables key whose pairs judge it; absent: the first."""


class _Report(Section):
    """What the report shows (``reporting/similarity.py:similarity_markdown``)."""

    pipeline: str
    """The pipeline named in the rows, metric keys and runs (the section's own name)."""
    task: str
    """The task named in the rows."""
    title: NonEmpty
    """The report's heading."""
    tables: Annotated[dict[str, Annotated[list[str], Field(min_length=1)]], Field(min_length=1)]
    """{title: [evaluation pairs]}: a Pearson table each, these pairs then their average."""
    ablation_tables: dict[Literal[TRAINED_METHODS], NonEmpty] = {}
    """{head: title}: a table of the head's ablations over the first table's pairs."""
    bootstrap: Bootstrap = Bootstrap()
    """The claims' paired bootstrap."""
    claims: list[Claim] = []
    """The papers' claims checked on this run."""
    paper_corpus_sizes: dict[str, dict[str, Annotated[int, Field(ge=0)]]] = {}
    """{paper's table: {pair: training pairs}}: the papers' sizes, shown beside ours."""

    @model_validator(mode="after")
    def _claims_on_a_table(self) -> _Report:
        for i, claim in enumerate(self.claims):
            if claim.table is not None and claim.table not in self.tables:
                raise error_at(("claims", i, "table"), f"not one of report.tables {list(self.tables)}", claim.table)
        return self


class QeReport(_Report):
    """``qe.report``: the QE report (SEED Table 1 / DREAM Table 2 layout) and its rows' identity."""

    pipeline: Literal["qe"]
    """The pipeline named in rows, metric keys and runs."""
    task: Literal[MAIN["qe"][0]]
    """The task named in the rows."""


class StsReport(_Report):
    """``sts.report``: the STS report (SEED Table 4 / DREAM Tables 4-5 layout) and its rows' identity."""

    pipeline: Literal["sts"]
    """The pipeline named in rows, metric keys and runs."""
    task: Literal[MAIN["sts"][0]]
    """The task named in the rows."""


# ---------------------------------------------------------------------------- the sections


class _Similarity(Section):
    """What ``qe`` and ``sts`` share: the heads, their training, ablations, probes and figure."""

    test: Section
    """The evaluation sets; the other pipeline reads them too, to remove their sentences from its corpus."""
    corpus: _Corpus
    """The training pairs; which files are read is decided from it when the pipeline is built."""
    pooling: Pooling
    """The sentence vector the heads and mean centring read."""
    training: HeadsTraining
    """Every head's; early stopping on the validation split."""
    methods: Heads
    """Each head's loss weights and overrides of training."""
    ablations: dict[AblationName, Ablation]
    """{name: ablation}: a head retrained with loss terms off or another seed ({}: none)."""
    leakage: Leakage
    """The language-ID probe."""
    figure: Figure
    """The PCA figure of SEED's embeddings."""
    report: _Report
    """The report: its Pearson tables, ablation tables, claims and the papers' corpus sizes."""

    def evaluation_pairs(self) -> tuple[str, list[str]]:
        """Where the evaluation pairs are set (``test.pairs``) and their names, as the report's tables and the
        figure name them."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _evaluated_pairs(self) -> _Similarity:
        where, pairs = self.evaluation_pairs()
        if self.figure.pair not in pairs:
            raise error_at(("figure", "pair"), f"not an evaluation pair of {where} {pairs}", self.figure.pair)
        for title, columns in self.report.tables.items():
            for i, pair in enumerate(columns):
                if pair not in pairs:
                    raise error_at(("report", "tables", title, i), f"not an evaluation pair of {where} {pairs}", pair)
        return self


class Qe(_Similarity):
    """``qe``: WMT20 sentence-level QE with meaning embeddings (DREAM §4.1, SEED §3): ``kedro run --pipelines=qe``."""

    test: QeTest
    """The evaluation sets (gold z_mean; sts reads them too, for overlap removal)."""
    corpus: QeCorpus
    """The training pairs."""
    report: QeReport
    """The report's Pearson and ablation tables, claims and corpus sizes."""

    def evaluation_pairs(self) -> tuple[str, list[str]]:
        return "qe.test.pairs", list(self.test.pairs)


class Sts(_Similarity):
    """``sts``: SemEval-2017 STS with meaning embeddings (DREAM §4.2, SEED §3): ``kedro run --pipelines=sts``."""

    test: StsTest
    """The evaluation tracks (qe reads them too)."""
    corpus: StsCorpus
    """The training pairs (OPUS-MT Tatoeba test sets)."""
    report: StsReport
    """The Pearson tables, claims and corpus sizes of the report."""

    def evaluation_pairs(self) -> tuple[str, list[str]]:
        return "sts.test.tracks", list(self.test.tracks)


SECTIONS: dict[str, type[Section]] = {"qe": Qe, "sts": Sts}

__all__ = [
    "LOSS_WEIGHTS",
    "SECTIONS",
    "Ablation",
    "Claim",
    "DreamHead",
    "Heads",
    "HeadsTraining",
    "MeatHead",
    "Qe",
    "QeCorpus",
    "SeedHead",
    "Sts",
    "StsCorpus",
]
