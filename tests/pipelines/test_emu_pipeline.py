"""The ``emu`` pipeline end to end on tiny data with a tiny local encoder; its tables from hand-made rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner

from language_agnostic.datasets.encoder_dir import EncoderDirectoryDataset
from language_agnostic.datasets.outcomes import OutcomesDataset
from language_agnostic.encoders.loading import load_encoder
from language_agnostic.pipelines.emu.pipeline import create_pipeline
from language_agnostic.training import reuse

EN = [
    "wake me up at nine",
    "set an alarm for six",
    "play some jazz music",
    "play music",
    "what is the weather today",
    "weather today",
    "wake me up at six",
    "play jazz",
    "what is the weather",
    "set an alarm",
    "alarm at seven",
    "play some music",
    "weather tomorrow",
]
DE = [
    "weck mich um neun",
    "stelle einen wecker",
    "spiel etwas musik",
    "spiel musik",
    "wie ist das wetter",
    "wetter heute",
    "weck mich um sechs",
    "spiel jazz",
    "wie ist das wetter heute",
    "wecker",
    "wecker um sieben",
    "spiel etwas jazz",
    "wetter morgen",
]
INTENTS = [
    "alarm",
    "alarm",
    "music",
    "music",
    "weather",
    "weather",
    "alarm",
    "music",
    "weather",
    "alarm",
    "alarm",
    "music",
    "weather",
]
PARTITIONS = ["train"] * 6 + ["dev"] * 3 + ["test"] * 4
METHODS = {
    "emu": {"method": "emu", "loss": "emu", "options": {"critic_steps": 2, "critic_hidden": 8}},
    "emu-no_ld": {"loss": "emu", "loss_weights": {"adversarial": 0}},
    "emu-no_ld_cl": {"loss": "emu", "loss_weights": {"adversarial": 0, "center": 0}},
    "emu-parallel": {"loss": "emu", "data": {"adversarial": "parallel"}, "options": {"critic_hidden": 8}},
    "softmax": {"loss": "softmax"},
    "contrastive": {"loss": "contrastive", "options": {"margin": 2.0}},
    "npair": {"loss": "npair"},
}
FIGURE = {
    "methods": ["raw", "softmax", "emu", "lasers"],
    "locales": ["en-US", "de-DE"],
    "n_intents": 2,
    "per_intent": 1,
    "seed": 0,
}


def _utterances() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"locale": loc, "id": str(i), "partition": p, "utt": t, "intent": intent}
            for loc, texts in (("en-US", EN), ("de-DE", DE))
            for i, (t, p, intent) in enumerate(zip(texts, PARTITIONS, INTENTS))
        ]
    )


def _catalog(model_dir: Path, tmp: Path) -> DataCatalog:
    params: dict[str, Any] = {
        "params:embeddings.encoder": {"name": str(model_dir)},
        "params:embeddings.extraction": {"prefix": ""},
        "params:emu.data": {"training_locale": "en-US", "per_intent": 2, "batch_size": 4, "seed": 0},
        "params:emu.training": {
            "lr": 1e-3,
            "encoder_lr": 1e-4,
            "max_epochs": 1,
            "patience": 1,
            "seed": 0,
            "progress": False,
        },
        **{f"params:emu.methods.{name}": spec for name, spec in METHODS.items()},
        "params:emu.figure": FIGURE,
        "params:emu.evaluation": {"locales": [], "directions": "training"},
    }
    return DataCatalog(
        {
            "massive_utterances": MemoryDataset(_utterances()),
            "encoder": MemoryDataset(copy_mode="assign"),
            "emu_encoder_emu": EncoderDirectoryDataset(str(tmp / "emu_encoder")),
            "emu_outcomes": OutcomesDataset(str(tmp / "outcomes.parquet")),
            "emu_outcomes_before": OutcomesDataset(str(tmp / "outcomes.parquet")),
            **{k: MemoryDataset(v) for k, v in params.items()},
        }
    )


def test_emu_pipeline_end_to_end_on_tiny_data(tiny_hub_model: Path, tmp_path: Path):
    catalog = _catalog(tiny_hub_model, tmp_path)
    SequentialRunner().run(create_pipeline(methods=METHODS, save_encoders=["emu"], figure=FIGURE), catalog)
    table = catalog["emu_metrics_table"].load()
    # Figure 2: one panel per figure method that was trained ("lasers" is not), in the configured order
    figure = catalog["emu_figure"].load()
    assert [ax.get_title() for ax in figure.axes] == [f"{m}: en-US ○ / × de-DE" for m in ("raw", "softmax", "emu")]
    assert [len(c.get_offsets()) for c in figure.axes[0].collections] == [1, 1, 1, 1]  # 2 intents × 2 locales
    accuracy = table[(table["task"] == "intent_nn") & (table["metric"] == "accuracy@1")]
    directions = {("en-US", "en-US"), ("en-US", "de-DE"), ("de-DE", "en-US")}
    for method in ["raw", *METHODS]:
        assert set(zip(*[accuracy[accuracy["method"] == method][c] for c in ("source", "target")])) == directions, (
            method
        )
    # every fine-tuned method is tested against raw on the same queries; raw is not tested against itself
    p = table[table["metric"] == "mcnemar_p_vs_raw"]
    assert set(p["method"]) == set(METHODS) and p["value"].between(0, 1).all()
    assert (
        table[table["metric"] == "accuracy@1_ci_low"]["value"].to_numpy() <= accuracy["value"].to_numpy() + 1e-9
    ).all()
    # the classifier's own accuracy: EMU's methods and softmax have one, the metric-learning baselines not
    assert set(table[table["task"] == "intent_classification"]["method"]) == {
        "emu",
        "emu-no_ld",
        "emu-no_ld_cl",
        "emu-parallel",
        "softmax",
    }
    markdown = catalog["emu_tables_markdown"].load()
    assert "| method | en-en | EN → * | * → EN |" in markdown and "| emu-parallel |" in markdown
    # how each model was chosen: the kept epoch (0 = the raw encoder kept), its dev figure and the start's
    selection = table[table["task"] == "model_selection"].pivot(index="method", columns="metric", values="value")
    assert set(selection.index) == set(METHODS) and selection["kept_epoch"].isin([0.0, 1.0]).all()
    kept_raw = selection["kept_epoch"] == 0
    assert (selection["dev_accuracy@1"][kept_raw] == selection["dev_accuracy@1_initial"][kept_raw]).all()
    assert (selection["dev_accuracy@1"] >= selection["dev_accuracy@1_initial"]).all()
    assert "## Model selection" in markdown and "| method | kept epoch | dev | raw encoder (epoch 0) |" in markdown
    # per-query outcomes stored for paired tests: every method, direction and test query (4 per locale here)
    outcomes = catalog["emu_outcomes"].load()
    assert len(outcomes) == (1 + len(METHODS)) * 3 * 4 and set(outcomes["method"]) == {"raw", *METHODS}
    en = outcomes[(outcomes["method"] == "raw") & (outcomes["source"] == "en-US") & (outcomes["target"] == "en-US")]
    assert en["correct"].mean() == pytest.approx(
        accuracy[(accuracy["method"] == "raw") & (accuracy["source"] == "en-US") & (accuracy["target"] == "en-US")][
            "value"
        ].item()
    )
    # the claims: each with the paper's backbone, both columns, a p-value, one seed and a verdict
    claims = markdown.split("## Claims (EMU), as measured")[1]
    lines = [line for line in claims.splitlines() if line.startswith("| EMU above the raw encoder")]
    assert len(lines) == 2 and all("LASER (BiLSTM)" in line for line in lines)
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[5] == "en-en" and cells[10] == "1" and cells[11] in ("holds", "fails", "tie")
    assert 0 <= float(cells[9]) <= 1
    # the saved encoder loads by path like any other encoder: the base's weights when the kept epoch is 0
    # (no improvement on dev, as here for emu on this tiny data), the fine-tuned ones otherwise
    tuned = load_encoder(str(tmp_path / "emu_encoder"))
    base = load_encoder(str(tiny_hub_model))
    key = "encoder.layer.0.attention.self.query.weight"
    same = np.array_equal(tuned.model.state_dict()[key].numpy(), base.model.state_dict()[key].numpy())
    assert same == (selection.loc["emu", "kept_epoch"] == 0)


def test_raw_rows_equal_an_independent_computation(tiny_hub_model: Path, tmp_path: Path):
    import torch

    from language_agnostic.evaluation.intent_nn import nearest_neighbour_correct

    catalog = _catalog(tiny_hub_model, tmp_path)
    SequentialRunner().run(create_pipeline(methods={}, save_encoders=[]), catalog)
    table = catalog["emu_metrics_table"].load()
    encoder = load_encoder(str(tiny_hub_model))
    test = _utterances().query("partition == 'test'")

    def vectors(locale: str) -> np.ndarray:
        out = []
        for text in test[test["locale"] == locale]["utt"]:
            with torch.inference_mode():
                out.append(
                    encoder.model.eval()(**encoder.tokenizer([text], return_tensors="pt"))
                    .last_hidden_state[0]
                    .mean(0)
                    .numpy()
                )
        return np.stack(out)

    en, de = vectors("en-US"), vectors("de-DE")
    ids, labels = test[test["locale"] == "en-US"]["id"].tolist(), test[test["locale"] == "en-US"]["intent"].tolist()
    expected = nearest_neighbour_correct(de, ids, labels, en, ids, labels).mean()
    got = table[(table["metric"] == "accuracy@1") & (table["source"] == "de-DE")]["value"].item()
    assert got == pytest.approx(expected, abs=1e-6)


def test_raw_is_encoded_as_the_methods_are(tiny_hub_model: Path, tmp_path: Path):
    """Under bf16 autocast, a method whose encoder did not move (encoder_lr 0) gives raw's vectors and
    outcomes exactly: raw and the methods differ by their training alone, not by their arithmetic."""
    catalog = _catalog(tiny_hub_model, tmp_path)
    training = {**catalog["params:emu.training"].load(), "mixed_precision": "bf16"}
    catalog["params:emu.training"] = MemoryDataset(training)
    frozen = {"frozen": {"loss": "softmax", "training": {"encoder_lr": 0}}}
    catalog["params:emu.methods.frozen"] = MemoryDataset(frozen["frozen"])
    figure = {**FIGURE, "methods": ["raw", "frozen"]}
    catalog["params:emu.figure"] = MemoryDataset(figure)
    pipeline = create_pipeline(methods=frozen, save_encoders=[], figure=figure)
    # up to the evaluations, so their sets and outcomes are the run's last outputs (kept, not released)
    pipeline = pipeline.to_outputs("emu_figure_sets_raw", "emu_figure_sets_frozen")
    SequentialRunner().run(pipeline, catalog)
    raw, tuned = catalog["emu_figure_sets_raw"].load(), catalog["emu_figure_sets_frozen"].load()
    for locale in ("en-US", "de-DE"):
        assert np.array_equal(raw[locale].vectors, tuned[locale].vectors), locale
    outcomes = [catalog[f"emu_outcomes_{m}"].load().drop(columns="method") for m in ("raw", "frozen")]
    pd.testing.assert_frame_equal(outcomes[0].reset_index(drop=True), outcomes[1].reset_index(drop=True))


def test_configuration_mistakes_are_named():
    # a method's keys and values are checked when the run starts (tests/parameters/test_emu.py)
    with pytest.raises(ValueError, match=r"emu.save_encoders: \['npair'\] not in emu.methods"):
        create_pipeline(methods={"emu": {}}, save_encoders=["npair"])


def test_only_builds_the_named_methods(monkeypatch: pytest.MonkeyPatch):
    from language_agnostic.pipelines.emu import pipeline as emu_pipeline

    params = {"emu": {"methods": METHODS, "save_encoders": ["emu", "npair"], "only": "emu"}}
    monkeypatch.setattr(emu_pipeline, "load_parameters", lambda: params)
    names = {n.name for n in emu_pipeline.create_pipeline().nodes}
    assert {"train_emu_node", "evaluate_emu_node", "save_emu_encoder_node", "evaluate_emu_raw_node"} <= names
    assert not any("npair" in n or "softmax" in n for n in names)
    params["emu"]["only"] = ["emu", "lasers"]
    failing = emu_pipeline.create_pipeline()  # a configuration error becomes one raising node
    assert [n.name for n in failing.nodes] == ["emu_configuration_error_node"]
    with pytest.raises(ValueError, match=r"emu.only: \['lasers'\] not in emu.methods"):
        failing.nodes[0].run({name: None for name in failing.nodes[0].inputs})


def test_every_direction_and_table3_for_a_labelled_locale_study(tiny_hub_model: Path, tmp_path: Path):
    methods = {
        "emu-no_ld-de": {"loss": "emu", "loss_weights": {"adversarial": 0}, "data": {"labelled_locales": ["de-DE"]}}
    }
    catalog = _catalog(tiny_hub_model, tmp_path)
    catalog["params:emu.methods.emu-no_ld-de"] = methods["emu-no_ld-de"]
    catalog["params:emu.evaluation"] = {"locales": ["en-US", "de-DE"], "directions": "all"}
    SequentialRunner().run(create_pipeline(methods=methods, save_encoders=[]), catalog)
    table = catalog["emu_metrics_table"].load()
    accuracy = table[table["metric"] == "accuracy@1"]
    every = {("en-US", "en-US"), ("en-US", "de-DE"), ("de-DE", "en-US"), ("de-DE", "de-DE")}
    for method in ("raw", "emu-no_ld-de"):
        mine = accuracy[(accuracy["method"] == method) & (accuracy["task"] == "intent_nn")]
        assert set(zip(mine["source"], mine["target"])) == every
    table3 = catalog["emu_tables_markdown"].load().split("## Table 3")[1]
    assert "| method | en-en | en-de | de-en | de-de |" in table3 and "| emu-no_ld-de |" in table3


def test_a_renamed_method_reuses_its_fine_tuning_under_the_new_name(tiny_hub_model: Path, tmp_path: Path):
    tables = {}
    for name in ("softmax", "softmax_renamed"):
        catalog = _catalog(tiny_hub_model, tmp_path / name)
        catalog[f"params:emu.methods.{name}"] = METHODS["softmax"]
        reuse.USAGE.reset()
        SequentialRunner().run(create_pipeline(methods={name: METHODS["softmax"]}, save_encoders=[]), catalog)
        tables[name] = catalog["emu_metrics_table"].load().drop(columns=["run_id"], errors="ignore")
    # the second run trained nothing: the name labels the fine-tuning, it does not shape it
    assert (reuse.USAGE.trained, reuse.USAGE.reused) == ([], ["train_emu_variant[softmax_renamed]"])
    before = tables["softmax"].assign(method=tables["softmax"]["method"].replace("softmax", "softmax_renamed"))
    pd.testing.assert_frame_equal(tables["softmax_renamed"], before)


def test_table3_is_relative_to_raw():
    from language_agnostic.reporting.emu import table3_relative

    rows = pd.DataFrame(
        [
            {"method": m, "task": "intent_nn", "metric": "accuracy@1", "source": s, "target": t, "value": v}
            for m, s, t, v in [
                ("raw", "en-US", "en-US", 0.5),
                ("raw", "de-DE", "en-US", 0.4),
                ("x", "en-US", "en-US", 0.6),
                ("x", "de-DE", "en-US", 0.3),
            ]
        ]
    )
    assert table3_relative(rows)[2] == "| x | +20.0% | -25.0% |"


def test_claims_pair_each_seed_with_the_same_seed_of_the_baseline():
    from language_agnostic.reporting.claims import seed_runs
    from language_agnostic.reporting.emu import claims_rows

    assert seed_runs(["raw", "emu", "emu-seed2021", "emu-no_ld", "emu-no_ld-seed2021", "emu-no_ld-seed2022"]) == {
        "raw": {"": "raw"},
        "emu": {"": "emu", "2021": "emu-seed2021"},
        "emu-no_ld": {"": "emu-no_ld", "2021": "emu-no_ld-seed2021", "2022": "emu-no_ld-seed2022"},
    }

    def hits(method: str, n_right: int) -> pd.DataFrame:  # 100 en-en queries, the first n_right right
        return pd.DataFrame(
            {
                "pipeline": "emu",
                "method": method,
                "task": "intent_nn",
                "source": "en-US",
                "target": "en-US",
                "query": [str(i) for i in range(100)],
                "correct": np.arange(100) < n_right,
            }
        )

    # emu above emu-no_ld by 20 queries with the first seed, by 1 with the second: the second's p flips it to a tie
    outcomes = pd.concat(
        [
            hits("raw", 50),
            hits("emu", 80),
            hits("emu-seed2021", 61),
            hits("emu-no_ld", 60),
            hits("emu-no_ld-seed2021", 60),
            hits("emu-no_ld-seed2022", 10),
        ]
    )
    rows = {(r[0], r[5]): r for r in claims_rows(outcomes, "en-US")}
    ld = rows[("the language discriminator helps (Table 5)", "en-en")]
    assert ld[6:] == ["70.50", "60.00", "+10.50 ± 13.44", "1", "2", "tie"]  # seeds "" and 2021; 2022 has no emu
    raw = rows[("EMU above the raw encoder (Table 2)", "en-en")]
    assert raw[10:] == ["2", "holds"]  # both seeds of emu against the one raw encoder
