"""The ``fmda`` pipeline on small tables with a tiny local encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from language_agnostic.datasets.embeddings import EmbeddingManifestDataset, EmbeddingStoreDataset
from language_agnostic.datasets.torch_state import TrainedHeadDataset
from language_agnostic.encoders.extraction import EmbeddingStore, ExtractionSettings, extract_embeddings
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1
from language_agnostic.methods.fmda import fmda_losses
from language_agnostic.pipelines.fmda.pipeline import create_pipeline
from language_agnostic.training import fmda as fmda_training

EN = [
    "wake me up at nine",
    "play jazz music",
    "what is the weather",
    "set an alarm for six",
    "play some music",
    "what is the weather today",
    "wake me up",
    "set an alarm",
    "play jazz",
    "weather today",
    "alarm for nine",
    "music please",
    "wake me at six",
    "jazz for me",
    "the weather at nine",
    "set music",
]
DE = [
    "weck mich um neun",
    "spiel jazz musik",
    "wie ist das wetter",
    "stelle einen wecker",
    "spiel etwas musik",
    "wie ist das wetter heute",
    "weck mich",
    "wecker stellen",
    "spiel jazz",
    "wetter heute",
    "wecker um neun",
    "musik bitte",
    "weck mich um sechs",
    "jazz für mich",
    "das wetter um neun",
    "musik an",
]
PARTITIONS = ["train"] * 8 + ["dev"] * 4 + ["test"] * 4
EXTRACTION = {"prefix": "", "dtype": "float32", "device": "cpu", "batch_size": 4, "progress": False}
TRAINING = {"batch_size": 4, "lr": 1e-3, "max_epochs": 2, "patience": 2, "seed": 0, "progress": False}


def _masked() -> pd.DataFrame:
    rows = []
    for locale, texts in (("en-US", EN), ("de-DE", DE)):
        for i, (text, partition) in enumerate(zip(texts, PARTITIONS)):
            words = text.split()
            # the test utterances share two templates (12, 13 and 14, 15): Figure 4(c) has something to show
            template = (
                " ".join(words[:-1] + ["[MASK]"]) if partition != "test" else ("play [MASK]", "set [MASK]")[i >= 14]
            )
            rows.append(
                {
                    "locale": locale,
                    "id": str(i),
                    "partition": partition,
                    "utt": text,
                    "template_text": template,
                    "residual_text": "[MASK] " + words[-1],
                    "n_slot_tokens": 1,
                }
            )
    return pd.DataFrame(rows)


def _template(k: int) -> pd.DataFrame:
    rows = []
    for locale, texts in (("en-US", EN), ("de-DE", DE)):
        for source in range(12, 16):
            for index in range(k):
                rows.append(
                    {
                        "locale": locale,
                        "source_id": str(source),
                        "target_index": index,
                        "template": "x",
                        "source_utt": texts[source],
                        "target_utt": texts[(source + index + 1) % 16],
                    }
                )
    return pd.DataFrame(rows)


def _template_pairs() -> pd.DataFrame:
    # train utterances 0-7 paired with another train utterance (the slot-replaced copy in real data)
    return pd.DataFrame(
        [
            {
                "locale": locale,
                "source_id": str(i),
                "target_index": 0,
                "template": "x",
                "source_utt": texts[i],
                "target_utt": texts[(i + 1) % 8],
            }
            for locale, texts in (("en-US", EN), ("de-DE", DE))
            for i in range(8)
        ]
    )


def _utterances() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "locale": locale,
                "id": str(i),
                "partition": partition,
                "utt": text,
                "intent": "music" if i >= 12 else "other",
            }
            for locale, texts in (("en-US", EN), ("de-DE", DE))
            for i, (text, partition) in enumerate(zip(texts, PARTITIONS))
        ]
    )


def _pools() -> pd.DataFrame:
    """Train pools: train ids 0, 2, 3, 5, 6 (the template holdout, 2 and 3, has two); dev pools: dev ids 8, 10, 11."""
    return pd.DataFrame(
        [
            {"locale": loc, "partition": part, "id": str(i), "utt": ""}
            for loc in ("en-US", "de-DE")
            for part, ids in (("train", (0, 2, 3, 5, 6)), ("dev", (8, 10, 11)))
            for i in ids
        ]
    )


def _catalog(model_dir: Path, store: Path) -> DataCatalog:
    params: dict[str, Any] = {
        "params:embeddings.encoder": {"name": str(model_dir)},
        "params:embeddings.extraction": EXTRACTION,
        "params:massive.pairs.en_de": {"source": "en-US", "target": "de-DE"},
        "params:fmda.model": {
            "ffn_layers": 1,
            "mlp_layers": 1,
            "activation": "gelu",
            "attention_scale": "sqrt_d",
            "utterance_target": "cls",
        },
        "params:fmda.variants.all_together": {"pairs": "all"},
        "params:fmda.variants.two_stage": {"pairs": ["en_de"], "two_stage": True},
        "params:fmda.variants.no_contrastive": {"pairs": ["en_de"], "ablation": "no_contrastive"},
        "params:fmda.variants.infonce": VARIANTS["infonce"],
        **{f"params:fmda.methods.{name}": spec for name, spec in METHODS.items()},
        "params:fmda.loss": LOSS,
        "params:fmda_paper.unified": {"pairs": ["en_de"]},
        "params:fmda.template_pairs_holdout": {"dev_fraction": 0.25, "seed": 0},
        "params:fmda.figure": {"n_pairs": 4, "intent": "music", "n_templates": 2, "per_template": 2, "seed": 0},
        "params:fmda.training": TRAINING,
    }
    pools = _pools()
    return DataCatalog(
        {
            "massive_masked_texts": MemoryDataset(_masked()),
            "massive_template_retrieval_single": MemoryDataset(_template(1)),
            "massive_template_retrieval_multi": MemoryDataset(_template(2)),
            "massive_negative_pools": MemoryDataset(pools),
            "massive_template_train_pairs": MemoryDataset(_template_pairs()),
            "massive_utterances": MemoryDataset(_utterances()),
            "embedding_store": EmbeddingStoreDataset(str(store)),
            "encoder": MemoryDataset(copy_mode="assign"),
            # on disk (safetensors), so the runner does not release it after evaluation
            "en_de.fmda_model_all_together": TrainedHeadDataset(str(store.parent / "fmda.safetensors")),
            "en_de.fmda_model_two_stage": TrainedHeadDataset(str(store.parent / "fmda_two_stage.safetensors")),
            "fmda_model_unified": TrainedHeadDataset(str(store.parent / "fmda_unified.safetensors")),
            **{name: MemoryDataset(value) for name, value in params.items()},
        }
    )


VARIANTS = {
    "all_together": {"pairs": "all"},
    "two_stage": {"pairs": ["en_de"], "two_stage": True},
    "no_contrastive": {"pairs": ["en_de"], "ablation": "no_contrastive"},
    "infonce": {"pairs": "all", "loss": {"contrastive": "infonce"}, "training": {"length_buckets": False}},
}
METHODS = {
    "dream": {
        "method": "dream",
        "pooling": "cls",
        "activation": "none",
        "loss_weights": {},
        "training": {"select_on": "dev_loss"},
    },
    "linear_infonce": {"pairs": "all", "method": "linear-infonce", "pooling": "mean"},
    "dream_infonce": {"pairs": "all", "method": "dream-infonce", "pooling": "mean"},
}
CONTROLS = {k: v for k, v in METHODS.items() if k != "dream"}
LOSS = {"contrastive": "pairwise", "negative": "hinge", "margin": 0.0, "temperature": 0.05}


def test_fmda_pipeline_end_to_end_on_tiny_data(tiny_hub_model: Path, tmp_path: Path):
    catalog = _catalog(tiny_hub_model, tmp_path / "store")
    pipeline = create_pipeline(
        pairs=["en_de"], variants=VARIANTS, unified=["en_de"], figure_pair="en_de", methods=METHODS
    )
    SequentialRunner().run(pipeline, catalog)
    table = catalog["fmda_metrics_table"].load()
    fmda_methods = ["fmda", "fmda-two_stage", "fmda-no_contrastive", "fmda-infonce", "fmda-unified"]
    embeddings = {
        ("raw", "cls"),
        ("raw", "mean"),
        ("centering", "mean"),
        ("dream", "meaning"),
        ("linear-infonce", "meaning"),
        ("dream-infonce", "meaning"),
    }
    embeddings |= {(m, e) for m in fmda_methods for e in ("m", "tp", "rs")}
    assert set(zip(table["method"], table["embedding"])) == embeddings
    # 21 embeddings x (2 retrieval directions + 2 locales x (accuracy@1 + MAP)), and the McNemar p against
    # centring of the 8 trained meaning embeddings (5 FMDA m, 3 heads) in both directions, and the
    # two-stage model's and the ablation's three embeddings against their all-together twin (2 directions
    # + 2 template sets), and each FMDA model's residual against its meaning embedding (2 directions)
    assert len(table) == 21 * (2 + 4) + 8 * 2 + 2 * 3 * 4 + 5 * 2
    twinned = set(table.loc[table["metric"] == "mcnemar_p_vs_all_together", "method"])
    assert twinned == {"fmda-two_stage", "fmda-no_contrastive"}
    residual = table[table["metric"] == "mcnemar_p_rs_vs_m"]
    assert set(residual["method"]) == set(fmda_methods) and set(residual["embedding"]) == {"rs"}
    assert table["value"].between(0, 1).all()
    # the raw rows equal retrieval computed here from the encoder directly
    encoder = load_encoder(str(tiny_hub_model))
    settings = ExtractionSettings(**EXTRACTION)
    store = EmbeddingStore(tmp_path / "check")
    a = extract_embeddings(encoder, EN[12:], settings, store).vectors("mean")
    b = extract_embeddings(encoder, DE[12:], settings, store).vectors("mean")
    raw = table[
        (table["method"] == "raw") & (table["embedding"] == "mean") & (table["task"] == "cross_lingual_retrieval")
    ]
    assert raw.set_index("source")["value"].to_dict() == pytest.approx(
        {"en-US": retrieval_accuracy_at_1(a, b), "de-DE": retrieval_accuracy_at_1(b, a)}
    )
    model = catalog["en_de.fmda_model_all_together"].load()
    assert model["ablation"] == "full" and model["method"] == "fmda" and 1 <= model["best_epoch"] <= 2
    # the model records the encoder it was trained on (retrieve checks it)
    assert model["encoder"]["weights_sha256"] == encoder.identity["weights_sha256"]
    two_stage = catalog["en_de.fmda_model_two_stage"].load()
    assert len(two_stage["stage_epochs"]) == 2
    history = catalog["en_de.fmda_history_all_together"].load()
    assert [point["step"] for point in history["fmda.all_together.en-US-de-DE.dev_total"]] == [0, 1, 2]  # 0: the start
    unified = catalog["fmda_model_unified"].load()
    assert unified["languages"] == ["en-US", "de-DE"] and unified["method"] == "fmda-unified"
    markdown = catalog["fmda_tables_markdown"].load()
    for title in ("Table 2", "Table 3", "Table 4", "Table 5", "Table 6", "Table 9"):
        assert f"## {title}:" in markdown
    assert "| fmda/tp |" in markdown and "| w/o contrastive (fmda-no_contrastive/m) |" in markdown
    assert "| two-stage / tp |" in markdown
    figure = catalog["fmda_figure"].load()
    assert [ax.get_title()[:3] for ax in figure.axes] == ["(a)", "(b)", "(c)", "(d)"]
    # no empty panel: every panel has points (c and d: 2 templates x 2 utterances)
    assert [sum(len(c.get_offsets()) for c in ax.collections) for ax in figure.axes] == [8, 8, 4, 4]


def test_two_runs_with_the_same_seed_give_the_same_metrics(tiny_hub_model: Path, tmp_path: Path, monkeypatch):
    from language_agnostic.training import reuse

    monkeypatch.setattr(reuse.SETTINGS, "reuse", False)  # both runs train: the same seed, the same numbers
    variants = {"all_together": {"pairs": "all"}}
    tables = []
    for run in ("first", "second"):
        catalog = _catalog(tiny_hub_model, tmp_path / run / "store")
        SequentialRunner().run(
            create_pipeline(
                pairs=["en_de"], variants=variants, unified=[], figure_pair="", methods={"dream": METHODS["dream"]}
            ),
            catalog,
        )
        tables.append(catalog["fmda_metrics_table"].load().drop(columns=["run_id"], errors="ignore"))
    pd.testing.assert_frame_equal(tables[0], tables[1])
    # the trained rows are there, not only the raw ones
    assert {"fmda", "dream"} <= set(tables[0]["method"])


def test_selection_on_dev_retrieval_records_the_score(tiny_hub_model: Path, tmp_path: Path):
    from language_agnostic.evaluation.retrieval import retrieval_accuracy_at_1 as acc
    from language_agnostic.methods.fmda import Fmda, FmdaConfig, encode_with_fmda
    from language_agnostic.pipelines.fmda import nodes

    catalog = _catalog(tiny_hub_model, tmp_path / "store")
    manifest = nodes.embed_fmda_inputs(
        _masked(),
        _template(1),
        _template(2),
        {"source": "en-US", "target": "de-DE"},
        load_encoder(str(tiny_hub_model)),
        EmbeddingStore(tmp_path / "store"),
        EXTRACTION,
    )
    pools = catalog["massive_negative_pools"].load()
    training = {**TRAINING, "select_on": "dev_retrieval", "max_epochs": 3, "patience": 3}
    trained, history = nodes.train_fmda(manifest, pools, catalog["params:fmda.model"].load(), {}, training)
    scores = [p["value"] for p in history["fmda.all_together.en-US-de-DE.dev_score"]]
    # step 0: the initial weights; the kept epoch is the first best (0 when no epoch beats the start)
    assert len(scores) == 4 and trained["best_epoch"] == int(np.argmax(scores))
    # the kept model's score is the dev retrieval accuracy of emb_m, recomputed here
    model = Fmda(FmdaConfig(**trained["config"]))
    model.load_state_dict(trained["state_dict"])
    a, b = (encode_with_fmda(model, manifest["sets"][f"dev.{side}.utt"])["m"] for side in ("source", "target"))
    assert max(scores) == pytest.approx((acc(a, b) + acc(b, a)) / 2)


def _two_stage_catalog(tiny_hub_model: Path, tmp_path: Path) -> DataCatalog:
    """A catalog holding the EN-DE FMDA inputs and template pairs, built by the pipeline's own nodes."""
    catalog = _catalog(tiny_hub_model, tmp_path / "store")
    for name in ("en_de.fmda_inputs", "en_de.fmda_template_pairs"):
        catalog[name] = EmbeddingManifestDataset(str(tmp_path / f"{name}.json"))
    pipeline = create_pipeline(
        pairs=["en_de"], variants=VARIANTS, unified=[], figure_pair="", methods={"dream": METHODS["dream"]}
    )
    SequentialRunner().run(pipeline.to_outputs("en_de.fmda_inputs", "en_de.fmda_template_pairs"), catalog)
    return catalog


def test_two_stage_freezes_the_template_encoder_after_stage_one(tiny_hub_model: Path, tmp_path: Path, monkeypatch):
    from language_agnostic.pipelines.fmda import nodes

    catalog = _two_stage_catalog(tiny_hub_model, tmp_path)
    after_each_stage, weights_used = [], []
    real_train = fmda_training.train

    def recording_train(model, loss_fn, train_data, dev_data, settings, dev_score=None):
        result = real_train(model, loss_fn, train_data, dev_data, settings, dev_score)
        after_each_stage.append({k: v.clone() for k, v in model.state_dict().items()})
        return result

    monkeypatch.setattr(fmda_training, "train", recording_train)
    monkeypatch.setattr(
        fmda_training, "fmda_losses", lambda m, b, w, c: (weights_used.append(dict(w)), fmda_losses(m, b, w, c))[1]
    )
    trained, _ = nodes.train_fmda_two_stage(
        catalog["en_de.fmda_inputs"].load(),
        catalog["en_de.fmda_template_pairs"].load(),
        catalog["massive_negative_pools"].load(),
        {},
        {},
        TRAINING,
    )
    first, second = after_each_stage
    for name in ("query_tp.0.weight", "key_tp.0.weight", "value_tp.0.weight"):
        torch.testing.assert_close(second[name], first[name], rtol=0, atol=0)  # frozen in stage 2
    assert not torch.equal(first["value_rs.0.weight"], second["value_rs.0.weight"])  # the rest trains on
    torch.testing.assert_close(trained["state_dict"]["key_tp.0.weight"], first["key_tp.0.weight"], rtol=0, atol=0)
    stage1, stage2 = weights_used[0], weights_used[-1]
    assert {k for k, v in stage1.items() if v} == {"tp_rec", "tp_rec_cl", "tp_con"}
    assert {k for k, v in stage2.items() if v} == {"lang", "utt_rec", "rs_rec", "rs_rec_cl", "m_con"}


def test_two_stage_stage_one_selects_on_held_out_template_retrieval(tiny_hub_model: Path, tmp_path: Path, monkeypatch):
    from language_agnostic.methods.fmda import encode_with_fmda
    from language_agnostic.pipelines.fmda import nodes

    catalog = _two_stage_catalog(tiny_hub_model, tmp_path)
    pairs = catalog["en_de.fmda_template_pairs"].load()
    stages = []
    real_train = fmda_training.train

    def recording_train(model, loss_fn, train_data, dev_data, settings, dev_score=None):
        result = real_train(model, loss_fn, train_data, dev_data, settings, dev_score)
        stages.append((result, {k: v.clone() for k, v in model.state_dict().items()}))
        return result

    monkeypatch.setattr(fmda_training, "train", recording_train)
    training = {**TRAINING, "select_on": "dev_retrieval"}
    trained, _ = nodes.train_fmda_two_stage(
        catalog["en_de.fmda_inputs"].load(), pairs, catalog["massive_negative_pools"].load(), {}, {}, training
    )
    (first, state), _ = stages
    scores = [record["dev_score"] for record in first.history]
    assert len(scores) == 3 and first.best_epoch == int(np.argmax(scores))  # [0]: the initial weights
    # the kept stage-1 score is emb_tp's accuracy@1 between the held-out pairs' two utterances,
    # both ways, both languages
    model = fmda_training._new_model(catalog["en_de.fmda_inputs"].load(), {}, 2, 0)
    model.load_state_dict(state)
    expected = []
    for side in ("source", "target"):
        a, b = (encode_with_fmda(model, pairs["sets"][f"dev.{side}.{end}"])["tp"] for end in ("a", "b"))
        expected += [retrieval_accuracy_at_1(a, b), retrieval_accuracy_at_1(b, a)]
    assert max(scores) == pytest.approx(float(np.mean(expected)))
    # under dev-loss selection stage 1 records no score
    stages.clear()
    nodes.train_fmda_two_stage(
        catalog["en_de.fmda_inputs"].load(), pairs, catalog["massive_negative_pools"].load(), {}, {}, TRAINING
    )
    assert "dev_score" not in stages[0][0].history[0]


def test_two_stage_is_tested_against_its_all_together_twin(tiny_hub_model: Path, tmp_path: Path):
    """Table 5's p-values: McNemar between the two-stage and the all-together model on the same
    cross-lingual and template queries, recomputed here; the twin is the variant configured the
    same way but in one stage.
    """
    from language_agnostic.evaluation.fmda import evaluate_fmda
    from language_agnostic.evaluation.intent_nn import mcnemar
    from language_agnostic.evaluation.retrieval import retrieval_hits
    from language_agnostic.methods.fmda import encode_with_fmda
    from language_agnostic.methods.registry import load_trained
    from language_agnostic.pipelines.fmda import nodes
    from language_agnostic.pipelines.fmda.pipeline import all_together_twin

    assert all_together_twin("two_stage", VARIANTS) == "all_together"
    infonce_twin = {**VARIANTS, "two_stage_infonce": {**VARIANTS["infonce"], "two_stage": True}}
    assert all_together_twin("two_stage_infonce", infonce_twin) == "infonce"
    assert all_together_twin("all_together", VARIANTS) is None  # not two-stage
    assert all_together_twin("two_stage", {"two_stage": {"two_stage": True, "ablation": "no_contrastive"}}) is None
    # an ablation (Table 4) is tested against the full model of its seed, a seeded two-stage against its seed's
    seeded = {
        **VARIANTS,
        "seed1": {"pairs": "all", "training": {"seed": 1}},
        "no_contrastive_seed1": {"pairs": ["en_de"], "ablation": "no_contrastive", "training": {"seed": 1}},
        "two_stage_seed1": {"pairs": "all", "two_stage": True, "training": {"seed": 1}},
    }
    assert all_together_twin("no_contrastive", seeded) == "all_together"
    assert all_together_twin("no_contrastive_seed1", seeded) == "seed1"
    assert all_together_twin("two_stage_seed1", seeded) == "seed1"
    assert all_together_twin("seed1", seeded) is None
    pipeline = create_pipeline(pairs=["en_de"], variants=infonce_twin, unified=[], figure_pair="", methods={})
    inputs = {n.name.split(".")[-1]: n.inputs for n in pipeline.nodes if "evaluate_fmda" in n.name}
    assert inputs["evaluate_fmda_two_stage_node"][-1] == "en_de.fmda_model_all_together"
    assert inputs["evaluate_fmda_two_stage_infonce_node"][-1] == "en_de.fmda_model_infonce"
    assert len(inputs["evaluate_fmda_all_together_node"]) == 3

    catalog = _two_stage_catalog(tiny_hub_model, tmp_path)
    manifest, pools = catalog["en_de.fmda_inputs"].load(), catalog["massive_negative_pools"].load()
    training = {**TRAINING, "max_epochs": 1}
    two_stage, _ = nodes.train_fmda_two_stage(
        manifest, catalog["en_de.fmda_template_pairs"].load(), pools, {}, {}, training
    )
    together, _ = nodes.train_fmda(manifest, pools, {}, {}, training)
    rows = evaluate_fmda(manifest, two_stage, {"name": "tiny"}, together)
    tested = rows[rows["metric"] == "mcnemar_p_vs_all_together"]
    assert set(tested["embedding"]) == {"m", "tp", "rs"}
    # the residual against the meaning embedding of the same model, per direction, recomputed here
    _, model = load_trained(together)
    vectors = {side: encode_with_fmda(model, manifest["sets"][f"test.{side}.utt"]) for side in ("source", "target")}
    together_rows = evaluate_fmda(manifest, together, {"name": "tiny"})
    residual = together_rows[together_rows["metric"] == "mcnemar_p_rs_vs_m"].set_index("source")["value"]
    for query, key in (("source", "target"), ("target", "source")):
        hits = {e: retrieval_hits(vectors[query][e], vectors[key][e]) for e in ("m", "rs")}
        locale = manifest[f"{query}_locale"]
        assert residual[locale] == pytest.approx(round(mcnemar(hits["rs"], hits["m"]).pvalue, 6))
    assert sorted(set(zip(tested["task"], tested["source"]))) == [
        ("cross_lingual_retrieval", "de-DE"),
        ("cross_lingual_retrieval", "en-US"),
        ("template_retrieval", "de-DE"),
        ("template_retrieval", "en-US"),
    ]
    (_, mine), (_, twin) = load_trained(two_stage), load_trained(together)
    sets = manifest["sets"]

    def hits(model, a: str, b: str, emb: str) -> np.ndarray:
        return retrieval_hits(encode_with_fmda(model, sets[a])[emb], encode_with_fmda(model, sets[b])[emb])

    cross = tested[(tested["task"] == "cross_lingual_retrieval") & (tested["embedding"] == "m")]
    expected = mcnemar(
        hits(mine, "test.source.utt", "test.target.utt", "m"), hits(twin, "test.source.utt", "test.target.utt", "m")
    ).pvalue
    assert cross.set_index("source").loc["en-US", "value"] == pytest.approx(round(expected, 6))
    template = tested[(tested["task"] == "template_retrieval") & (tested["embedding"] == "tp")]
    single = ("template.single.target.source", "template.single.target.target")
    expected = mcnemar(hits(mine, *single, "tp"), hits(twin, *single, "tp")).pvalue
    assert template.set_index("source").loc["de-DE", "value"] == pytest.approx(round(expected, 6))
    # without a twin, no such rows
    assert "mcnemar_p_vs_all_together" not in set(evaluate_fmda(manifest, two_stage, {"name": "tiny"})["metric"])


def test_variants_name_their_mistakes():
    from language_agnostic.pipelines.fmda.pipeline import variant_pairs

    assert variant_pairs({"a": {"pairs": "all"}, "b": {"pairs": ["en_es"]}, "c": None}, ["en_de", "en_es"]) == {
        "a": ["en_de", "en_es"],
        "b": ["en_es"],
        "c": ["en_de", "en_es"],
    }
    with pytest.raises(ValueError, match=r"fmda.variants.b.pairs: \['en_fr'\] not in massive.pairs"):
        variant_pairs({"b": {"pairs": ["en_fr"]}}, ["en_de"])
    with pytest.raises(ValueError, match="fmda.figure.pair 'en_de' needs the all_together variant"):
        create_pipeline(
            pairs=["en_de"],
            variants={"two_stage": {"two_stage": True}},
            unified=[],
            figure_pair="en_de",
            methods={"dream": METHODS["dream"]},
        )
    assert variant_pairs({"dream": {"pooling": "cls"}}, ["en_de"], "fmda.methods") == {"dream": ["en_de"]}


def test_paper_tables_from_hand_made_rows():
    from language_agnostic.reporting.fmda import fmda_tables

    def row(method, emb, task, dataset, source, target, metric, value):
        return {
            "pipeline": "fmda",
            "method": method,
            "embedding": emb,
            "task": task,
            "dataset": dataset,
            "source": source,
            "target": target,
            "metric": metric,
            "value": value,
            "encoder": "x",
        }

    rows = []
    for method, emb, base in (
        ("raw", "cls", 0.1),
        ("dream", "meaning", 0.2),
        ("fmda", "m", 0.3),
        ("fmda", "tp", 0.4),
        ("fmda-no_contrastive", "m", 0.05),
        ("fmda-unified", "m", 0.25),
        ("fmda-unified", "tp", 0.35),
        ("fmda-infonce", "m", 0.5),
        ("linear-infonce", "meaning", 0.45),
    ):
        rows.append(row(method, emb, "cross_lingual_retrieval", "massive_test", "en-US", "de-DE", "accuracy@1", base))
        rows.append(
            row(method, emb, "cross_lingual_retrieval", "massive_test", "de-DE", "en-US", "accuracy@1", base + 0.01)
        )
        for locale, extra in (("en-US", 0.002), ("de-DE", 0.004)):
            rows.append(
                row(
                    method,
                    emb,
                    "template_retrieval",
                    "massive_template_single:en-US>de-DE",
                    locale,
                    locale,
                    "accuracy@1",
                    base + extra,
                )
            )
            rows.append(
                row(
                    method,
                    emb,
                    "template_retrieval",
                    "massive_template_multi:en-US>de-DE",
                    locale,
                    locale,
                    "MAP",
                    base + extra / 2,
                )
            )
    text = fmda_tables(pd.DataFrame(rows))
    table2 = text.split("## Table 2")[1].split("##")[0]
    assert "| embedding | EN→DE | DE→EN |" in table2
    assert "| fmda/m | 0.300 | 0.310 |" in table2 and "| raw/mean |" not in table2  # unmeasured rows left out
    assert "| fmda-infonce/m | 0.500 | 0.510 |" in table2 and "| linear-infonce/meaning | 0.450 | 0.460 |" in table2
    # the controls come before FMDA's rows, the InfoNCE variant after
    assert table2.index("linear-infonce/meaning") < table2.index("| fmda/m") < table2.index("fmda-infonce/m")
    assert "| fmda/tp | 0.402 | 0.404 |" in text.split("## Table 3")[1].split("##")[0]
    assert "| fmda/tp | 0.401 | 0.402 |" in text.split("## Table 6")[1].split("##")[0]
    table4 = text.split("## Table 4")[1].split("##")[0]
    assert "| w/o contrastive (fmda-no_contrastive/m) | 0.050 | 0.060 |" in table4
    assert "(no two_stage variant configured)" in text.split("## Table 5")[1].split("##")[0]
    table9 = text.split("## Table 9")[1]
    assert "| task | DREAM | dual-lingual FMDA | unified FMDA |" in table9
    assert "| DE→EN | 0.210 | 0.310 | 0.260 |" in table9
    assert "| EN template | 0.202 | 0.402 | 0.352 |" in table9 and "| DE template | 0.204 | 0.404 | 0.354 |" in table9


def test_meaning_embeddings_against_centring_table():
    from language_agnostic.reporting.fmda import fmda_tables

    def row(method, emb, source, target, metric, value):
        return {
            "pipeline": "fmda",
            "method": method,
            "embedding": emb,
            "task": "cross_lingual_retrieval",
            "dataset": "massive_test",
            "source": source,
            "target": target,
            "metric": metric,
            "value": value,
            "encoder": "x",
        }

    rows = [
        row("centering", "mean", "en-US", "ja-JP", "accuracy@1", 0.612),
        row("centering", "mean", "ja-JP", "en-US", "accuracy@1", 0.626),
        row("fmda", "m", "en-US", "ja-JP", "accuracy@1", 0.628),
        row("fmda", "m", "ja-JP", "en-US", "accuracy@1", 0.622),
        row("fmda", "m", "en-US", "ja-JP", "mcnemar_p_vs_centering", 0.0137),
        row("fmda", "m", "ja-JP", "en-US", "mcnemar_p_vs_centering", 0.566),
        row("fmda-infonce", "m", "en-US", "ja-JP", "accuracy@1", 0.75),
        row("fmda-infonce", "m", "en-US", "ja-JP", "mcnemar_p_vs_centering", 0.0),
        # a meaning embedding without its p-values (an older run) shows dashes, not a wrong figure
        row("dream", "meaning", "en-US", "ja-JP", "accuracy@1", 0.581),
    ]
    section = fmda_tables(pd.DataFrame(rows)).split("### Meaning embeddings against mean centring")[1].split("##")[0]
    assert "| embedding | EN→JA | JA→EN |" in section
    assert "| fmda/m | +0.016 (p=0.014) | -0.004 (p=0.57) |" in section
    # a p-value below the table's six decimals is not shown as zero; an unmeasured direction is a dash
    assert "| fmda-infonce/m | +0.138 (p<1e-6) | — |" in section
    assert "| dream/meaning" not in section and "| centering/mean" not in section
    # the accuracy table itself is unchanged by the p-value rows
    assert "| fmda/m | 0.628 | 0.622 |" in fmda_tables(pd.DataFrame(rows)).split("## Table 2")[1]
    # the claims: the paper's backbone, McNemar's p, one seed, the verdict (EN→JA a gain with p = 0.014, JA→EN a tie)
    claims = fmda_tables(pd.DataFrame(rows)).split("## Claims (FMDA), as measured")[1]
    lines = [
        [c.strip() for c in line.strip("|").split("|")] for line in claims.splitlines() if line.startswith("| FMDA")
    ]
    assert [line[1] for line in lines] == ["XLM-R base ([CLS], frozen)"] * 3
    assert [line[3:] for line in lines] == [
        ["`fmda/m`", "`centering/mean`", "EN→JA", "62.80", "61.20", "+1.60", "0.014", "1", "holds"],
        ["`fmda/m`", "`centering/mean`", "JA→EN", "62.20", "62.60", "-0.40", "0.57", "1", "tie"],
        ["`fmda-infonce/m`", "`centering/mean`", "EN→JA", "75.00", "61.20", "+13.80", "<1e-6", "1", "holds"],
    ]


def test_mcnemar_rows_against_centring(tiny_hub_model: Path, tmp_path: Path):
    """Each direction's p-value is McNemar's on the hits of the meaning embedding and of mean centring,
    recomputed here.
    """
    from language_agnostic.evaluation.fmda import centering_of, evaluate_head
    from language_agnostic.evaluation.intent_nn import mcnemar
    from language_agnostic.evaluation.retrieval import retrieval_hits
    from language_agnostic.methods.apply import control_meaning
    from language_agnostic.methods.registry import load_trained
    from language_agnostic.pipelines.fmda import nodes
    from language_agnostic.training.fmda import train_pooled_head

    manifest = nodes.embed_fmda_inputs(
        _masked(),
        _template(1),
        _template(2),
        {"source": "en-US", "target": "de-DE"},
        load_encoder(str(tiny_hub_model)),
        EmbeddingStore(tmp_path / "store"),
        EXTRACTION,
    )
    trained, _ = train_pooled_head(
        manifest, _pools(), CONTROLS["linear_infonce"], {**TRAINING, "max_epochs": 1}, LOSS, "linear_infonce"
    )
    rows = evaluate_head(manifest, trained, {"name": "tiny"})
    p = rows[rows["metric"] == "mcnemar_p_vs_centering"].set_index("source")["value"]
    assert set(p.index) == {"en-US", "de-DE"} and set(
        rows.loc[rows["metric"] == "mcnemar_p_vs_centering", "embedding"]
    ) == {"meaning"}
    _, model = load_trained(trained)
    sets = manifest["sets"]
    mine = {
        side: control_meaning(model, np.asarray(sets[f"test.{side}.utt"].vectors("mean")), "linear-infonce")
        for side in ("source", "target")
    }
    centred = centering_of(manifest)
    base = {"source": centred(sets["test.source.utt"], "en-US"), "target": centred(sets["test.target.utt"], "de-DE")}
    expected = mcnemar(
        retrieval_hits(mine["source"], mine["target"]), retrieval_hits(base["source"], base["target"])
    ).pvalue
    assert p["en-US"] == pytest.approx(round(expected, 6))


def test_dev_negatives_follow_the_training_rule(tiny_hub_model: Path, tmp_path: Path):
    """Train negatives come from the train pool, dev negatives from the dev pool: one rule,
    so the dev loss measures training's.
    """
    from language_agnostic.pipelines.fmda import nodes

    manifest = nodes.embed_fmda_inputs(
        _masked(),
        _template(1),
        _template(2),
        {"source": "en-US", "target": "de-DE"},
        load_encoder(str(tiny_hub_model)),
        EmbeddingStore(tmp_path / "store"),
        EXTRACTION,
    )
    pools = _pools()
    train = fmda_training._fmda_batches(manifest, "train", pools, 4, True)
    dev = fmda_training._fmda_batches(manifest, "dev", pools, 4, False)
    # rows of the split's ids (train 0-7, dev 8-11) that are in that split's pool
    assert [p.tolist() for p in train.pools] == [[0, 2, 3, 5, 6], [0, 2, 3, 5, 6]]
    assert [p.tolist() for p in dev.pools] == [[0, 2, 3], [0, 2, 3]]
    # every negative drawn for a dev batch is a dev-pool utterance other than the anchor
    generator = torch.Generator().manual_seed(0)
    index = torch.arange(4)
    for _ in range(20):
        drawn = dev._negatives(index, dev.pools[0], generator)
        assert set(drawn.tolist()) <= {0, 2, 3} and not (drawn == index).any()
    # DREAM and the controls draw their partners s', t' by the same rule (negatives: pool), or from every utterance
    vectors = {
        f"{split}.{side}": np.zeros((n, 3), np.float32)
        for split, n in (("train", 8), ("dev", 4))
        for side in ("source", "target")
    }
    heads = fmda_training.pooled_batches(manifest, vectors, "dev", pools, 4, False)
    assert [heads.source_pool.tolist(), heads.target_pool.tolist()] == [[0, 2, 3], [0, 2, 3]]
    assert fmda_training.pooled_batches(manifest, vectors, "train", None, 4, False).source_pool.tolist() == list(
        range(8)
    )
    # a pool table without dev pools is named, not silently replaced by "all dev utterances"
    with pytest.raises(ValueError, match=r"the dev negative pool of en-US has 0 .*massive.negative_pool.partitions"):
        fmda_training._fmda_batches(manifest, "dev", pools[pools["partition"] == "train"], 4, False)
    # an old pool table (no partition column) is train pools only
    legacy = pools[pools["partition"] == "train"].drop(columns="partition")
    assert nodes.pool_rows(np.array([str(i) for i in range(8)]), legacy, "de-DE", "train").tolist() == [0, 2, 3, 5, 6]


def test_heads_over_pooled_vectors_train_and_report_their_meaning(tiny_hub_model: Path, tmp_path: Path):
    from language_agnostic.methods.registry import load_trained
    from language_agnostic.pipelines.fmda import nodes

    manifest = nodes.embed_fmda_inputs(
        _masked(),
        _template(1),
        _template(2),
        {"source": "en-US", "target": "de-DE"},
        load_encoder(str(tiny_hub_model)),
        EmbeddingStore(tmp_path / "store"),
        EXTRACTION,
    )
    training = {**TRAINING, "length_buckets": True}  # ignored by these heads: pooled vectors have no length
    options = {
        "linear_infonce": {"temperature": 0.1},
        "dream_infonce": {"activation": "none", "temperature": 0.1},
        "dream": {"activation": "none"},
    }
    for name, spec in METHODS.items():
        trained, history = nodes.train_pooled_head(
            manifest, _pools(), spec, training, {**LOSS, "temperature": 0.1}, name
        )
        assert trained["method"] == spec["method"] and trained["name"] == name
        assert f"{spec['method']}.en-US-de-DE.dev_total" in history
        method, model = load_trained(trained)
        assert method.name == spec["method"] and trained["build"]["options"] == options[name]
        pooling = spec["pooling"]
        a, b = (
            fmda_training.control_meaning(
                model, np.asarray(manifest["sets"][f"dev.{s}.utt"].vectors(pooling)), spec["method"]
            )
            for s in ("source", "target")
        )
        assert trained["dev_m_accuracy"] == pytest.approx(
            (retrieval_accuracy_at_1(a, b) + retrieval_accuracy_at_1(b, a)) / 2
        )
        rows = nodes.evaluate_head(manifest, trained, {"name": "tiny"})
        assert set(zip(rows["method"], rows["embedding"])) == {(spec["method"], "meaning")}
    # DREAM's own training overrides apply over fmda.training: a cap of 2 epochs is honoured
    capped = {**METHODS["dream"], "training": {"max_epochs": 1, "select_on": "dev_loss"}}
    trained, _ = nodes.train_pooled_head(manifest, _pools(), capped, training, LOSS, "dream")
    assert trained["epochs_run"] == 1 and trained["negatives"] == "all"  # DREAM's own rule: needs no pools
    trained, _ = nodes.train_pooled_head(manifest, _pools(), {**capped, "negatives": "pool"}, training, LOSS, "dream")
    assert trained["negatives"] == "pool"
    with pytest.raises(ValueError, match=r"fmda.methods.dream.negatives is 'pool' but no negative pools were given"):
        nodes.train_pooled_head(manifest, None, {**capped, "negatives": "pool"}, training, LOSS, "dream")


def test_table5_has_a_block_per_pair_with_the_contrastive_readings():
    from language_agnostic.reporting.fmda import fmda_tables

    rows = []
    for src, tgt in (("en-US", "de-DE"), ("en-US", "ja-JP")):
        for method, base in (("fmda", 0.3), ("fmda-two_stage", 0.6), ("fmda-two_stage_infonce", 0.7)):
            for emb, shift in (("m", 0.0), ("tp", 0.05)):
                for a, b in ((src, tgt), (tgt, src)):
                    rows.append(
                        {
                            "pipeline": "fmda",
                            "method": method,
                            "embedding": emb,
                            "task": "cross_lingual_retrieval",
                            "dataset": "massive_test",
                            "source": a,
                            "target": b,
                            "metric": "accuracy@1",
                            "value": base + shift,
                            "encoder": "x",
                        }
                    )
                for locale in (src, tgt):
                    rows.append(
                        {
                            "pipeline": "fmda",
                            "method": method,
                            "embedding": emb,
                            "task": "template_retrieval",
                            "dataset": f"massive_template_single:{src}>{tgt}",
                            "source": locale,
                            "target": locale,
                            "metric": "accuracy@1",
                            "value": base + shift + 0.01,
                            "encoder": "x",
                        }
                    )
    table5 = fmda_tables(pd.DataFrame(rows)).split("## Table 5")[1].split("## Table 9")[0]
    assert "### EN-DE" in table5 and "### EN-JA" in table5
    ja = table5.split("### EN-JA")[1]
    assert "| method / embedding | EN→JA | JA→EN | EN template | JA template |" in ja
    assert "| two-stage, InfoNCE / tp | 0.750 | 0.750 | 0.760 | 0.760 |" in ja
    assert "linear negatives" not in table5  # not configured, so left out


def test_table5_claims_compare_two_stage_with_all_together():
    """Table 5's claims are judged against the all-together model with its McNemar p, on every pair;
    Table 2's claim no longer lists the two-stage model (the paper's Table 2 is all-together).
    """
    from language_agnostic.reporting.fmda import fmda_tables

    def row(method, emb, task, dataset, source, target, metric, value):
        return dict(
            pipeline="fmda", method=method, embedding=emb, task=task, dataset=dataset, source=source,
            target=target, metric=metric, value=value, encoder="x",
        )  # fmt: skip

    rows = []
    for method, m, tp, p_m, p_tp in (("fmda", 0.60, 0.30, None, None), ("fmda-two_stage", 0.55, 0.75, 1e-7, 0.0)):
        for a, b in (("en-US", "ja-JP"), ("ja-JP", "en-US")):
            rows.append(row(method, "m", "cross_lingual_retrieval", "massive_test", a, b, "accuracy@1", m))
            rows.append(
                row(method, "m", "cross_lingual_retrieval", "massive_test", a, b, "mcnemar_p_vs_centering", 0.01)
            )
            if p_m is not None:
                # EN→JA a significant loss, JA→EN within noise
                p = p_m if a == "en-US" else 0.3
                rows.append(
                    row(method, "m", "cross_lingual_retrieval", "massive_test", a, b, "mcnemar_p_vs_all_together", p)
                )
        for loc in ("en-US", "ja-JP"):
            single = "massive_template_single:en-US>ja-JP"
            rows.append(row(method, "tp", "template_retrieval", single, loc, loc, "accuracy@1", tp))
            rows.append(row(method, "m", "template_retrieval", single, loc, loc, "accuracy@1", tp - 0.1))
            if p_tp is not None:
                rows.append(
                    row(method, "tp", "template_retrieval", single, loc, loc, "mcnemar_p_vs_all_together", p_tp)
                )
    rows.append(
        row("centering", "mean", "cross_lingual_retrieval", "massive_test", "en-US", "ja-JP", "accuracy@1", 0.5)
    )
    rows.append(
        row("centering", "mean", "cross_lingual_retrieval", "massive_test", "ja-JP", "en-US", "accuracy@1", 0.5)
    )
    claims = fmda_tables(pd.DataFrame(rows)).split("## Claims (FMDA), as measured")[1].split("\n## ")[0]
    lines = [[c.strip() for c in line.strip("|").split("|")] for line in claims.splitlines() if line.startswith("| ")]
    body = {(line[3], line[4], line[5]): line[6:] for line in lines[1:]}
    assert ("`fmda-two_stage/m`", "`centering/mean`", "EN→JA") not in body
    assert body[("`fmda/m`", "`centering/mean`", "EN→JA")] == ["60.00", "50.00", "+10.00", "0.01", "1", "holds"]
    # "level with all-together": a significant loss fails it, a loss within noise does not
    assert body[("`fmda-two_stage/m`", "`fmda/m`", "EN→JA")] == ["55.00", "60.00", "-5.00", "<1e-6", "1", "fails"]
    assert body[("`fmda-two_stage/m`", "`fmda/m`", "JA→EN")] == ["55.00", "60.00", "-5.00", "0.3", "1", "holds"]
    assert body[("`fmda-two_stage/tp`", "`fmda/tp`", "JA template (EN-JA model)")] == [
        "75.00", "30.00", "+45.00", "<1e-6", "1", "holds",
    ]  # fmt: skip
    # the meaning embedding's template gain has no p-value in these rows: shown, not judged
    assert body[("`fmda-two_stage/m`", "`fmda/m`", "EN template (EN-JA model)")][-1] == "not comparable"
    backbones = {line[1] for line in lines[1:] if line[3].startswith("`fmda-two_stage")}
    assert backbones == {"XLM-R base ([CLS], frozen); EN-DE only"}


def test_batches_without_negatives_hold_the_same_pairs(tiny_hub_model: Path, tmp_path: Path):
    """InfoNCE variants skip the pool negatives; the pairs, their order and targets stay the same."""
    from language_agnostic.pipelines.fmda import nodes

    manifest = nodes.embed_fmda_inputs(
        _masked(),
        _template(1),
        _template(2),
        {"source": "en-US", "target": "de-DE"},
        load_encoder(str(tiny_hub_model)),
        EmbeddingStore(tmp_path / "store"),
        EXTRACTION,
    )
    with_negatives = fmda_training._fmda_batches(manifest, "train", _pools(), 3, True, True)
    without = fmda_training._fmda_batches(manifest, "train", _pools(), 3, True, True, negatives=False)
    a = list(with_negatives.batches(1, torch.Generator().manual_seed(5)))
    b = list(without.batches(1, torch.Generator().manual_seed(5)))
    assert len(a) == len(b) == 3
    for full, lean in zip(a, b):
        assert set(full) - set(lean) == {"s2_states", "s2_mask", "t2_states", "t2_mask"}
        for key in lean:
            assert torch.equal(full[key], lean[key]), key
