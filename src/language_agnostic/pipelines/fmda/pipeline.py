"""``fmda``: per language pair, embed → train the FMDA variants and the heads over pooled vectors
(DREAM, controls) → evaluate; one unified model; report.

The variants (``fmda.variants``: all-together, two-stage, the Table 4 ablations) and the
pairs each is trained on are read from ``conf/`` when the pipeline is built, like the pairs
themselves: adding a variant or a pair is a YAML edit, and kedro-viz shows every one.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from kedro.pipeline import Node, Pipeline, node

from language_agnostic.methods.fmda import method_name
from language_agnostic.pipelines.embeddings.pipeline import load_encoder_pipeline
from language_agnostic.pipelines.fmda import nodes
from language_agnostic.pipelines.massive.pipeline import configured_pairs, in_pair_namespace
from language_agnostic.pipelines.node_factories import train_and_evaluate
from language_agnostic.pipelines.project_config import bind, configuration_error_pipeline, load_parameters
from language_agnostic.training.reuse import Naming, reusable

SHARED_INPUTS = {
    "massive_masked_texts",
    "massive_template_retrieval_single",
    "massive_template_retrieval_multi",
    "massive_negative_pools",
    "massive_template_train_pairs",
    "encoder",
    "embedding_store",
    "encoder_identity",
}
SHARED_PARAMS = {
    "params:embeddings.extraction",
    "params:fmda.model",
    "params:fmda.training",
    "params:fmda.template_pairs_holdout",
    "params:fmda.loss",
}
DEFAULT_VARIANTS: dict[str, Any] = {nodes.ALL_TOGETHER: {"pairs": "all"}}


def variant_pairs(variants: Mapping[str, Any], pairs: list[str], where: str = "fmda.variants") -> dict[str, list[str]]:
    """``{variant: [pair namespaces]}``; ``pairs: all`` (or no ``pairs``) means every configured pair.

    Raises:
        ValueError: A pair that is not in ``massive.pairs``.
    """
    out = {}
    for name, spec in variants.items():
        spec = dict(spec or {})
        chosen = spec.get("pairs", "all")
        chosen = list(pairs) if chosen == "all" else [str(p) for p in chosen]
        missing = sorted(set(chosen) - set(pairs))
        if missing:
            raise ValueError(f"{where}.{name}.pairs: {missing} not in massive.pairs ({pairs})")
        out[str(name)] = chosen
    return out


def all_together_twin(name: str, variants: Mapping[str, Any]) -> str | None:
    """The full all-together variant a two-stage variant (Table 5) or an ablation (Table 4) is
    compared with: the one configured exactly as it is except ``two_stage`` / ``ablation`` (and
    which pairs it trains on); None when there is none.

    ``two_stage`` → ``all_together``; ``two_stage_infonce`` → ``infonce`` (both with InfoNCE);
    ``no_contrastive_seed1`` (``training: {seed: 1}``) → ``seed1``.
    """
    varied = ("two_stage", "ablation", "pairs")
    settings = lambda spec: {k: v for k, v in (spec or {}).items() if k not in varied}  # noqa: E731
    full = lambda spec: not (spec or {}).get("two_stage") and (spec or {}).get("ablation", "full") == "full"  # noqa: E731
    if full(variants.get(name)):
        return None
    for other, spec in variants.items():
        if other != name and full(spec) and settings(spec) == settings(variants[name]):
            return str(other)
    return None


def create_pair_pipeline(
    variants: Mapping[str, Any], methods: Mapping[str, Any] | None = None, sources: Mapping[str, str] | None = None
) -> Pipeline:
    """One language pair (instantiated per namespace) with the given FMDA variants and heads over pooled vectors.

    ``sources`` names the parameter section each variant is read from (``fmda``, or
    ``fmda_paper`` for the paper-only experiment set); default ``fmda``.
    """
    sources = sources or {}
    nodes_ = _pair_input_nodes(two_stage=any((spec or {}).get("two_stage") for spec in variants.values()))
    for name, spec in variants.items():
        nodes_ += _variant_nodes(name, spec, variants, sources.get(name, "fmda"))
    for name in methods or {}:
        nodes_ += _head_nodes(name)
    return Pipeline(nodes_)


def _pair_input_nodes(two_stage: bool) -> list[Node]:
    """Embed the pair's inputs, score the untrained baselines, and (``two_stage``) embed the template pairs."""
    nodes_ = [
        node(
            nodes.embed_fmda_inputs,
            inputs=[
                "massive_masked_texts",
                "massive_template_retrieval_single",
                "massive_template_retrieval_multi",
                "params:pair",
                "encoder",
                "embedding_store",
                "params:embeddings.extraction",
            ],
            outputs="fmda_inputs",
            name="embed_fmda_inputs_node",
        ),
        node(
            nodes.evaluate_baselines,
            inputs=["fmda_inputs", "encoder_identity"],
            outputs="baseline_rows",
            name="evaluate_baselines_node",
        ),
    ]
    if two_stage:
        nodes_.append(
            node(
                nodes.embed_template_pairs,
                inputs=[
                    "massive_template_train_pairs",
                    "massive_masked_texts",
                    "params:pair",
                    "encoder",
                    "embedding_store",
                    "params:embeddings.extraction",
                    "params:fmda.template_pairs_holdout",
                ],
                outputs="fmda_template_pairs",
                name="embed_template_pairs_node",
            )
        )
    return nodes_


def _training_inputs(*settings: str) -> list[str]:
    """What every FMDA model (variant, head, unified model) trains on besides its embedded pairs: the
    negative pools, its ``settings``, ``fmda.training`` and ``fmda.loss``."""
    return ["massive_negative_pools", *settings, "params:fmda.training", "params:fmda.loss"]


def _variant_nodes(name: str, spec: Any, variants: Mapping[str, Any], source: str) -> list[Node]:
    """Train one FMDA variant (two-stage or all together; its parameters under ``source``) and evaluate it."""
    # a two-stage variant trains on the template pairs first: the one input the other variants lack
    two_stage = bool((spec or {}).get("two_stage"))
    twin = all_together_twin(name, variants)
    return train_and_evaluate(
        f"fmda_{name}",
        reads=["fmda_inputs"],
        train=bind(nodes.train_fmda_two_stage if two_stage else nodes.train_fmda, variant=name),
        train_inputs=[
            *(["fmda_template_pairs"] if two_stage else []),
            *_training_inputs("params:fmda.model", f"params:{source}.variants.{name}"),
        ],
        trained=[f"fmda_model_{name}", f"fmda_history_{name}"],
        evaluate=nodes.evaluate_fmda,
        # a two-stage variant is also tested against its all-together twin (Table 5's claims)
        evaluate_inputs=["encoder_identity", *([f"fmda_model_{twin}"] if twin else [])],
        rows=f"fmda_rows_{name}",
        naming=Naming("variant", {"variant": str, "method": method_name}),
    )


def _head_nodes(name: str) -> list[Node]:
    """Train one head of ``fmda.methods`` over pooled vectors and evaluate it."""
    return train_and_evaluate(
        name,
        reads=["fmda_inputs"],
        train=bind(nodes.train_pooled_head, name=name),
        train_inputs=_training_inputs(f"params:fmda.methods.{name}"),
        trained=[f"head_model_{name}", f"head_history_{name}"],
        evaluate=nodes.evaluate_head,
        evaluate_inputs=["encoder_identity"],
        rows=f"head_rows_{name}",
        naming=Naming("name", {"name": str}),
    )


def create_pipeline(
    pairs: list[str] | None = None,
    variants: Mapping[str, Any] | None = None,
    unified: list[str] | None = None,
    figure_pair: str | None = None,
    methods: Mapping[str, Any] | None = None,
) -> Pipeline:
    """Build ``fmda`` from ``massive.pairs``, ``fmda.variants`` (+ ``fmda_paper.variants``), ``fmda.methods``,
    ``fmda_paper.unified.pairs`` and ``fmda.figure.pair``.

    Arguments given here replace the configuration (tests build small pipelines this way).
    Built from the configuration alone, a configuration error (e.g. a variant naming a pair
    that ``massive.pairs`` does not list) gives :func:`configuration_error_pipeline`, so the
    other pipelines still build and ``kedro run --pipelines=fmda`` stops naming the parameter.
    """
    given = (pairs, variants, unified, figure_pair, methods)
    if given == (None,) * 5:
        try:
            return _create_pipeline(*given)
        except ValueError as exc:
            return configuration_error_pipeline("fmda", exc)
    return _create_pipeline(*given)


def _create_pipeline(*given: Any) -> Pipeline:
    """The pipeline; see :func:`create_pipeline`."""
    with warnings.catch_warnings():
        # Figure 4 and the unified model read per-pair datasets (``en_de.fmda_inputs``) from outside
        # the pair's namespace, on purpose: Kedro warns about any dotted name read that way
        warnings.filterwarnings("ignore", message="One or more dataset names contain '.'", category=UserWarning)
        return _build(*given)


def _build(
    pairs: list[str] | None,
    variants: Mapping[str, Any] | None,
    unified: list[str] | None,
    figure_pair: str | None,
    methods: Mapping[str, Any] | None,
) -> Pipeline:
    """:func:`create_pipeline`'s pipeline from its arguments, those left None read from the configuration."""
    params = load_parameters() if None in (pairs, variants, unified, figure_pair, methods) else {}
    fmda = params.get("fmda", {})
    # the paper-only experiment set (Tables 4 and 9): empty in base, filled by `--env paper`
    paper = params.get("fmda_paper") or {}
    sources: dict[str, str] = {}
    pairs = configured_pairs(pairs)
    if variants is None:
        variants, sources = _configured_variants(fmda, paper)
    if unified is None:
        unified = [str(p) for p in (paper.get("unified") or {}).get("pairs") or []]
    if figure_pair is None:
        figure_pair = str((fmda.get("figure") or {}).get("pair") or "")
    if figure_pair == "first":
        figure_pair = pairs[0] if pairs else ""
    if methods is None:
        methods = fmda.get("methods") or {}
    trained_on = {
        **variant_pairs({k: v for k, v in variants.items() if k not in sources}, pairs),
        **variant_pairs({k: v for k, v in variants.items() if k in sources}, pairs, "fmda_paper.variants"),
    }
    heads_on = variant_pairs(methods, pairs, "fmda.methods")
    missing = sorted(set(unified) - set(pairs))
    if missing:
        raise ValueError(f"fmda_paper.unified.pairs: {missing} not in massive.pairs ({pairs})")
    per_pair, rows = [], []
    for name in pairs:
        mine = {v: spec for v, spec in variants.items() if name in trained_on[v]}
        my_heads = {h: spec for h, spec in methods.items() if name in heads_on[h]}
        per_pair.append(_namespaced_pair_pipeline(name, mine, my_heads, sources))
        rows += (
            [f"{name}.baseline_rows"]
            + [f"{name}.fmda_rows_{v}" for v in mine]
            + [f"{name}.head_rows_{h}" for h in my_heads]
        )
    extra = _unified_nodes(unified) if unified else []
    rows += [f"fmda_rows_unified_{name}" for name in unified]
    if figure_pair:
        extra.append(_figure_node(figure_pair, variants, trained_on))
    report = node(
        nodes.report_fmda,
        inputs=rows,
        outputs=["fmda_metrics_table", "fmda_metrics", "fmda_tables_markdown"],
        name="report_fmda_node",
    )
    return Pipeline([load_encoder_pipeline(), *per_pair, *extra, report], tags="fmda")


def _configured_variants(fmda: Mapping[str, Any], paper: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``fmda.variants`` with ``fmda_paper.variants`` added, and ``{variant: "fmda_paper"}`` for the added ones.

    Raises:
        ValueError: a paper variant has the name of an ``fmda`` one.
    """
    variants = dict(fmda.get("variants") or DEFAULT_VARIANTS)
    extra = dict(paper.get("variants") or {})
    twice = sorted(set(variants) & set(extra))
    if twice:
        raise ValueError(f"fmda_paper.variants: {twice} already in fmda.variants; give them other names")
    variants.update(extra)
    return variants, {name: "fmda_paper" for name in extra}


def _namespaced_pair_pipeline(
    name: str, mine: Mapping[str, Any], my_heads: Mapping[str, Any], sources: Mapping[str, str]
) -> Pipeline:
    """The pair pipeline of ``name`` in its namespace, reading the shared datasets and parameters it uses."""
    # (a pair without a two-stage variant reads no template pairs: in_pair_namespace maps only what is read)
    shared = {
        *SHARED_INPUTS,
        *SHARED_PARAMS,
        *[f"params:{sources.get(v, 'fmda')}.variants.{v}" for v in mine],
        *[f"params:fmda.methods.{h}" for h in my_heads],
    }
    return in_pair_namespace(create_pair_pipeline(mine, my_heads, sources), name, shared)


def _unified_nodes(unified: list[str]) -> list[Node]:
    """Train one model on the pairs of ``unified`` together and evaluate it on each of them."""
    extra = [
        node(
            reusable(nodes.train_fmda_unified),
            inputs=[
                *_training_inputs("params:fmda.model", "params:fmda_paper.unified"),
                *[f"{name}.fmda_inputs" for name in unified],
            ],
            outputs=["fmda_model_unified", "fmda_history_unified"],
            name="train_fmda_unified_node",
        )
    ]
    for name in unified:
        extra.append(
            node(
                nodes.evaluate_fmda,
                inputs=[f"{name}.fmda_inputs", "fmda_model_unified", "encoder_identity"],
                outputs=f"fmda_rows_unified_{name}",
                name=f"evaluate_fmda_unified_{name}_node",
            )
        )
    return extra


def _figure_node(figure_pair: str, variants: Mapping[str, Any], trained_on: Mapping[str, Any]) -> Node:
    """Figure 4 on ``figure_pair``: the all-together model, and the two-stage one where it is trained there.

    Raises:
        ValueError: the all-together variant is not trained on ``figure_pair``.
    """
    if nodes.ALL_TOGETHER not in variants or figure_pair not in trained_on[nodes.ALL_TOGETHER]:
        raise ValueError(f"fmda.figure.pair {figure_pair!r} needs the all_together variant trained on it")
    template_model = (
        "two_stage" if "two_stage" in variants and figure_pair in trained_on["two_stage"] else nodes.ALL_TOGETHER
    )
    return node(
        nodes.plot_embeddings,
        inputs=[
            f"{figure_pair}.fmda_inputs",
            f"{figure_pair}.fmda_model_{nodes.ALL_TOGETHER}",
            f"{figure_pair}.fmda_model_{template_model}",
            "massive_utterances",
            "massive_masked_texts",
            "params:fmda.figure",
        ],
        outputs="fmda_figure",
        name="plot_embeddings_node",
    )
