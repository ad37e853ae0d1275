"""Project wiring: the registry, namespaces from conf/, and the raw-data root override."""

from __future__ import annotations

from pathlib import Path

import pytest
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project

from tests.conftest import PROJECT_ROOT

MASSIVE_TAIL = "massive/amazon-massive-dataset-1.1.tar.gz"


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(PROJECT_ROOT)
    bootstrap_project(PROJECT_ROOT)
    return PROJECT_ROOT


def _archive_path(runtime_params: dict | None = None) -> str:
    with KedroSession.create(PROJECT_ROOT, runtime_params=runtime_params) as session:
        catalog = session.load_context().catalog
        return catalog["massive_archive"]._filepath  # noqa: SLF001


def test_registry_lists_massive_with_a_namespace_per_pair(project: Path):
    from language_agnostic.pipeline_registry import register_pipelines

    pipelines = register_pipelines()
    assert {"__default__", "massive", "embeddings", "fmda"} <= set(pipelines)
    # the default job is the quick stages; fmda (tens of minutes on a CPU) runs on request
    default = {n.name for n in pipelines["__default__"].nodes}
    assert "parse_massive_node" in default and "load_encoder_node" in default
    assert not any("fmda" in name for name in default)
    # fmda runs the massive stage itself, so one command works from a fresh clone
    fmda = pipelines["fmda"]
    assert {"parse_massive_node", "build_negative_pools_node"} <= {n.name for n in fmda.nodes}
    assert "massive_negative_pools" not in fmda.inputs() and "massive_archive" in fmda.inputs()
    outputs = pipelines["massive"].all_outputs()
    assert {"en_de.massive_pairs", "en_es.massive_pairs", "en_ja.massive_pairs"} <= outputs
    assert "massive_negative_pools" in outputs


def test_raw_data_root_defaults_to_shared_data(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("LANGUAGE_AGNOSTIC_DATA_ROOT", raising=False)
    # relative roots are resolved against the project root, not the working directory
    assert _archive_path() == f"{PROJECT_ROOT}/../shared/data/{MASSIVE_TAIL}"


def test_raw_data_root_from_the_environment(project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("LANGUAGE_AGNOSTIC_DATA_ROOT", str(tmp_path))
    assert _archive_path() == f"{tmp_path}/{MASSIVE_TAIL}"


def test_raw_data_root_from_runtime_params(project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("LANGUAGE_AGNOSTIC_DATA_ROOT", "/elsewhere")
    assert _archive_path({"raw_data_root": str(tmp_path)}) == f"{tmp_path}/{MASSIVE_TAIL}"


def test_missing_raw_data_through_the_catalog(project: Path, tmp_path: Path):
    with KedroSession.create(PROJECT_ROOT, runtime_params={"raw_data_root": str(tmp_path)}) as session:
        catalog = session.load_context().catalog
        with pytest.raises(Exception) as info:
            catalog.load("massive_archive")
    # Kedro wraps load errors in a DatasetError that keeps our message
    message = str(info.value)
    assert "MASSIVE 1.1 tarball not found at" in message
    assert f"'{tmp_path}/{MASSIVE_TAIL}'" in message
    assert "https://amazon-massive-nlu-dataset.s3.amazonaws.com/amazon-massive-dataset-1.1.tar.gz" in message


def _conf_with_env(
    tmp_path: Path, env: str, massive_pairs: dict, fmda: dict | None = None, paper: bool = False
) -> Path:
    """A copy of conf/base plus an env whose ``massive`` lists other pairs (and optionally its own ``fmda``)."""
    import shutil

    import yaml

    conf = tmp_path / "conf"
    shutil.copytree(PROJECT_ROOT / "conf" / "base", conf / "base")
    (conf / "local").mkdir()
    # parameters merge softly (pipelines/config_loader.py): the env's pairs replace base's
    # the pairs' locales are read from the archive too (a pair's locale must be in massive.locales)
    locales = list(dict.fromkeys(loc for pair in massive_pairs.values() for loc in (pair["source"], pair["target"])))
    params = {
        "massive": {"locales": locales, "pairs": {"_replace": True, **massive_pairs}},
        **({"fmda": fmda} if fmda else {}),
    }
    if paper:  # the paper experiment set, whose Table 4 ablations name en_de
        params.update(yaml.safe_load((PROJECT_ROOT / "conf" / "paper" / "parameters_fmda_paper.yml").read_text()))
    (conf / env).mkdir()
    (conf / env / "parameters.yml").write_text(yaml.safe_dump(params))
    return conf


@pytest.fixture
def forget_env():
    from language_agnostic.pipelines.project_config import forget_session_config

    yield
    forget_session_config()  # later tests build from conf/ again


def test_the_registry_follows_the_sessions_env_and_a_bad_variant_breaks_only_fmda(
    project: Path, tmp_path: Path, forget_env
):
    from language_agnostic.pipeline_registry import register_pipelines
    from language_agnostic.pipelines.project_config import PipelineConfigurationError

    pairs = {"en_ko": {"source": "en-US", "target": "ko-KR"}, "en_ru": {"source": "en-US", "target": "ru-RU"}}
    conf = _conf_with_env(tmp_path, "other_pairs", pairs)
    with KedroSession.create(PROJECT_ROOT, env="other_pairs", conf_source=str(conf)) as session:
        session.load_context()
        pipelines = register_pipelines()
    outputs = pipelines["massive"].all_outputs()
    assert {"en_ko.massive_pairs", "en_ru.massive_pairs"} <= outputs and "en_de.massive_pairs" not in outputs
    assert "en_ru.massive_pair_embeddings" in pipelines["embeddings"].all_outputs()
    assert {"qe", "sts"} <= set(pipelines) and "parse_massive_node" in {n.name for n in pipelines["__default__"].nodes}
    # the default fmda job trains on whatever pairs are configured; its figure on the first
    names = {n.name for n in pipelines["fmda"].nodes}
    assert {"en_ko.train_fmda_all_together_node", "en_ru.train_fmda_two_stage_node", "plot_embeddings_node"} <= names
    plot = next(n for n in pipelines["fmda"].nodes if n.name == "plot_embeddings_node")
    assert "en_ko.fmda_inputs" in plot.inputs

    # the paper set's Table 4 ablations name en_de: only fmda is replaced by its error
    conf = _conf_with_env(tmp_path / "paper", "other_pairs", pairs, paper=True)
    with KedroSession.create(PROJECT_ROOT, env="other_pairs", conf_source=str(conf)) as session:
        session.load_context()
        pipelines = register_pipelines()
    assert "en_ko.massive_pairs" in pipelines["massive"].all_outputs() and "parse_massive_node" in {
        n.name for n in pipelines["__default__"].nodes
    }
    (error_node,) = pipelines["fmda"].nodes
    with pytest.raises(
        PipelineConfigurationError,
        match=r"^the 'fmda' pipeline cannot be built from this configuration: "
        r"fmda_paper\.variants\.no_\w+\.pairs: \['en_de'\] not in massive.pairs \(\['en_ko', 'en_ru'\]\)$",
    ):
        error_node.run({})


def test_pipelines_built_while_the_hooks_run_follow_the_sessions_env(project: Path, tmp_path: Path, forget_env):
    # a hook reading context.params makes Kedro build every pipeline (to validate typed parameters):
    # the run's --env must be recorded before that (`kedro run --pipelines=massive --env=fmda_en_de`
    # asked for conf/base's three pairs when it was not)
    from kedro.framework.project import pipelines as project_pipelines

    pairs = {"en_ko": {"source": "en-US", "target": "ko-KR"}}
    conf = _conf_with_env(tmp_path, "other_pairs", pairs)
    project_pipelines._is_data_loaded = False  # built afresh by the first reader, as in a new process
    try:
        with KedroSession.create(PROJECT_ROOT, env="other_pairs", conf_source=str(conf)) as session:
            session.load_context()  # fires after_context_created: the hooks read context.params
            assert project_pipelines._is_data_loaded
            outputs = project_pipelines["massive"].all_outputs()
    finally:
        project_pipelines._is_data_loaded = False
    assert "en_ko.massive_pairs" in outputs and "en_de.massive_pairs" not in outputs


def test_the_paper_env_adds_the_ablations_and_the_unified_model(project: Path, forget_env):
    from language_agnostic.pipeline_registry import register_pipelines

    with KedroSession.create(PROJECT_ROOT, env="paper") as session:
        context = session.load_context()
        paper = {n.name for n in register_pipelines()["fmda"].nodes}
        reports = [str(context.catalog[f"{p}_tables_markdown"]._describe()) for p in ("fmda", "slu")]
    assert "fmda_paper_tables.md" in reports[0] and "slu_paper_tables.md" in reports[1]  # beside the default's
    forget_env_now()
    with KedroSession.create(PROJECT_ROOT) as session:
        session.load_context()
        default = {n.name for n in register_pipelines()["fmda"].nodes}
    extra = {
        "train_fmda_unified_node",
        "en_de.train_fmda_no_contrastive_node",
        "en_de.train_fmda_no_reconstruction_node",
    }
    assert extra <= paper and not extra & default
    assert default < paper  # the paper set is the default job and more


def forget_env_now() -> None:
    from language_agnostic.pipelines.project_config import forget_session_config

    forget_session_config()


def test_an_env_with_fewer_pairs_and_its_own_fmda_builds_fmda_on_them(project: Path, tmp_path: Path, forget_env):
    from language_agnostic.pipeline_registry import register_pipelines

    fmda = yaml_base("parameters_fmda.yml")["fmda"]
    fmda["variants"] = {
        "all_together": {"pairs": "all"},
        "no_contrastive": {"pairs": ["en_es"], "ablation": "no_contrastive"},
    }
    fmda["figure"]["pair"] = "en_es"
    conf = _conf_with_env(tmp_path, "es_only", {"en_es": {"source": "en-US", "target": "es-ES"}}, fmda)
    with KedroSession.create(PROJECT_ROOT, env="es_only", conf_source=str(conf)) as session:
        session.load_context()
        pipelines = register_pipelines()
    names = {n.name for n in pipelines["fmda"].nodes}
    assert {
        "en_es.train_fmda_all_together_node",
        "en_es.train_fmda_no_contrastive_node",
        "plot_embeddings_node",
    } <= names
    assert not any(name.startswith(("en_de.", "en_ja.")) for name in names)


def yaml_base(name: str) -> dict:
    """conf/base's file with its budgets written out in its methods (as the config loader does)."""
    import yaml

    from language_agnostic.pipelines.config_loader import expand_budgets

    return expand_budgets(yaml.safe_load((PROJECT_ROOT / "conf" / "base" / name).read_text()))


def resolved(env: str) -> dict:
    """The parameters a run with ``--env=<env>`` gets (conf/base with the env merged in, as Kedro does)."""
    from language_agnostic import settings

    args = dict(settings.CONFIG_LOADER_ARGS)
    return settings.CONFIG_LOADER_CLASS(conf_source=str(PROJECT_ROOT / "conf"), env=env, **args)["parameters"]


def env_file(env: str, name: str) -> dict:
    import yaml

    return yaml.safe_load((PROJECT_ROOT / "conf" / env / f"parameters_{name}.yml").read_text())


def only_differs(env_name: str, pipeline: str, changed: set[str]) -> tuple[dict, dict]:
    """``(base, resolved env)`` of a pipeline's parameters, after checking that the env's file holds
    only the ``changed`` keys and that everything else resolves to base's."""
    base = yaml_base(f"parameters_{pipeline}.yml")[pipeline]
    env = resolved(env_name)[pipeline]
    assert set(env_file(env_name, pipeline)[pipeline]) == changed  # the file holds only what differs
    assert {k: v for k, v in env.items() if k not in changed} == {k: v for k, v in base.items() if k not in changed}
    return base, env


def test_the_fmda_en_de_env_is_base_on_the_first_pair(project: Path, forget_env):

    from language_agnostic.pipeline_registry import register_pipelines

    base = yaml_base("parameters_massive.yml")["massive"]
    env = resolved("fmda_en_de")["massive"]
    assert env["pairs"] == {"en_de": base["pairs"]["en_de"]}
    assert {k: v for k, v in env.items() if k != "pairs"} == {k: v for k, v in base.items() if k != "pairs"}
    with KedroSession.create(PROJECT_ROOT, env="fmda_en_de") as session:
        session.load_context()
        names = {n.name for n in register_pipelines()["fmda"].nodes}
    assert {"en_de.train_fmda_all_together_node", "plot_embeddings_node"} <= names
    assert not any(name.startswith(("en_es.", "en_ja.")) for name in names)


def test_the_fmda_seeds_env_trains_table_2s_variants_on_three_seeds(project: Path, forget_env):
    from language_agnostic.pipeline_registry import register_pipelines

    base, env = only_differs("fmda_seeds", "fmda", {"variants", "methods", "figure"})
    assert env["methods"] == {} and env["figure"]["pair"] == ""
    # the configured seed as in base, and each seed run that variant with only its seed changed
    for name, spec in env["variants"].items():
        variant, _, seed = name.rpartition("seed")
        variant = variant.rstrip("_") or "all_together"
        if not seed.isdigit():
            assert spec == base["variants"][name]
            continue
        twin = base["variants"][variant]
        assert {k: v for k, v in spec.items() if k != "training"} == {k: v for k, v in twin.items() if k != "training"}
        assert spec["training"] == {**twin.get("training", {}), "seed": int(seed)}
        assert int(seed) != base["training"]["seed"]
    assert sorted(env["variants"]) == sorted(
        ["all_together", "seed1", "seed2", "infonce", "infonce_seed1", "infonce_seed2"]
        + ["two_stage", "two_stage_seed1", "two_stage_seed2"]
    )
    # Table 4's ablations: the paper env's (conf/paper) on the configured seed and seeds 1 and 2
    import yaml

    paper = yaml.safe_load((PROJECT_ROOT / "conf" / "paper" / "parameters_fmda_paper.yml").read_text())
    ablations = {k: v for k, v in paper["fmda_paper"]["variants"].items() if "ablation" in v}
    seeded = resolved("fmda_seeds")["fmda_paper"]["variants"]
    expected = {**ablations}
    for name, spec in ablations.items():
        for seed in (1, 2):
            expected[f"{name}_seed{seed}"] = {**spec, "training": {"seed": seed}}
    assert seeded == expected
    with KedroSession.create(PROJECT_ROOT, env="fmda_seeds") as session:
        context = session.load_context()
        names = {n.name for n in register_pipelines()["fmda"].nodes}
        report = context.catalog["fmda_tables_markdown"]
    assert {
        "en_ja.train_fmda_seed2_node",
        "en_de.evaluate_fmda_infonce_seed1_node",
        "en_es.train_fmda_two_stage_seed1_node",
        "en_de.train_fmda_no_contrastive_seed2_node",
        "report_fmda_node",
    } <= names
    assert not any("dream" in name or "plot_embeddings" in name for name in names)
    assert "fmda_seeds_tables.md" in str(report._describe())  # beside the default run's tables


def test_the_emu_seeds_env_restates_base_but_for_its_methods(project: Path, forget_env):

    from language_agnostic.pipeline_registry import register_pipelines

    base, env = only_differs("emu_seeds", "emu", {"methods", "figure", "save_encoders"})
    # the configured seed's methods are base's, under base's names (so a default run's models are reused);
    # each other is a base method with only the training seed changed
    configured = {name for name in env["methods"] if "-seed" not in name}
    assert configured == {"emu", "emu-no_ld", "emu-no_ld_cl", "npair", "softmax"}
    for name in configured:
        assert env["methods"][name] == base["methods"][name]
    for name, spec in env["methods"].items():
        if name in configured:
            continue
        method, seed = name.rsplit("-seed", 1)
        assert {k: v for k, v in spec.items() if k != "training"} == base["methods"][method]
        assert spec["training"] == {"seed": int(seed)} and int(seed) != base["training"]["seed"]
    with KedroSession.create(PROJECT_ROOT, env="emu_seeds") as session:
        session.load_context()
        names = {n.name for n in register_pipelines()["emu"].nodes}
    assert {"train_emu_seed2021_node", "train_emu_no_ld_cl_seed2022_node", "report_emu_node"} <= names


@pytest.mark.parametrize("pipeline", ["qe", "sts"])
def test_the_similarity_seeds_env_restates_base_but_for_its_seed_runs(project: Path, forget_env, pipeline: str):
    from language_agnostic.pipeline_registry import register_pipelines

    base = yaml_base(f"parameters_{pipeline}.yml")[pipeline]
    env = resolved("similarity_seeds")[pipeline]
    assert {k: v for k, v in env.items() if k != "ablations"} == {k: v for k, v in base.items() if k != "ablations"}
    runs = env[
        "ablations"
    ]  # the seed runs; of the loss ablations DREAM's language one and SEED's three (qe), with seeds
    ablated = (
        {
            "dream_without_language": {"language": 0},
            "seed_without_lc": {"cross": 0},
            "seed_without_ll": {"language": 0},
            "seed_without_lm": {"meaning": 0},
        }
        if pipeline == "qe"
        else {}
    )
    for name in ablated:
        assert runs[name] == base["ablations"][name]
    # each seed run is a trained method (or one of those ablations) with only its seed changed
    for name, spec in runs.items():
        if name in ablated:
            continue
        head, seed = name.rsplit("_seed", 1)
        method = base["ablations"][head]["base"] if head in ablated else head
        weights = {"loss_weights": ablated[head]} if head in ablated else {}
        assert spec == {"base": method, **weights, "seed": int(seed)} and int(seed) != base["training"]["seed"]
    heads = ("dream", "meat", "seed", *ablated)
    assert sorted(runs) == sorted([f"{m}_seed{n}" for m in heads for n in (1, 2)] + list(ablated))
    with KedroSession.create(PROJECT_ROOT, env="similarity_seeds") as session:
        context = session.load_context()
        names = {n.name for n in register_pipelines()[pipeline].nodes}
        report = context.catalog[f"{pipeline}_report_markdown"]
    assert {
        f"train_{pipeline}_seed_seed2_node",
        f"train_{pipeline}_dream_seed1_node",
        f"report_{pipeline}_node",
    } <= names
    assert f"{pipeline}_seeds_report.md" in str(report._describe())  # beside the default run's report


def test_the_emu_languages_env_restates_base_but_for_the_study(project: Path, forget_env):
    """The env adds fr-FR to the locales and trains the study's methods; everything else is conf/base's."""
    from language_agnostic.pipeline_registry import register_pipelines

    def load(env: str, name: str) -> dict:
        return resolved(env) if env != "base" else yaml_base(f"parameters_{name}.yml")

    base, study = load("base", "massive")["massive"], load("emu_languages", "massive")["massive"]
    assert study["locales"] == [*base["locales"], "fr-FR"]
    assert {k: v for k, v in study.items() if k != "locales"} == {k: v for k, v in base.items() if k != "locales"}
    base_emu, study_emu = load("base", "emu")["emu"], load("emu_languages", "emu")["emu"]
    assert study_emu["data"] == base_emu["data"] and study_emu["training"] == base_emu["training"]
    with KedroSession.create(PROJECT_ROOT, env="emu_languages") as session:
        context = session.load_context()
        names = {n.name for n in register_pipelines()["emu"].nodes}
        report = context.catalog["emu_tables_markdown"]
    assert {f"train_emu_no_ld_{x}_node" for x in ("en", "de", "fr", "en_de", "en_fr", "de_fr", "en_de_fr")} <= names
    assert "train_emu_node" not in names and "plot_emu_figure_node" not in names
    assert "emu_languages_tables.md" in str(report._describe())  # beside the default run's tables


def test_the_paper_env_trains_slu_at_paper_scale_and_nothing_else_differs(project: Path, forget_env):
    def load(env: str) -> dict:
        return resolved(env)["slu"] if env != "base" else yaml_base("parameters_slu.yml")["slu"]

    base, paper, controls = load("base"), load("paper"), load("slu_controls")
    assert set(controls["methods"]) == {"cosda-cs_only"}
    # the control is cosda trained the same way, without the English beside the switched copy
    cs_only, cosda = controls["methods"]["cosda-cs_only"], base["methods"]["cosda"]
    assert cs_only["training"] == cosda["training"]
    assert cs_only["data"] == {**cosda["data"], "code_switch": {"keep_source": False}}
    assert {k: v for k, v in controls.items() if k != "methods"} == {k: v for k, v in base.items() if k != "methods"}
    from kedro.framework.session import KedroSession

    from language_agnostic.pipeline_registry import register_pipelines

    with KedroSession.create(PROJECT_ROOT, env="slu_controls") as session:
        context = session.load_context()
        names = {n.name for n in register_pipelines()["slu"].nodes}
        tables = context.catalog["slu_tables_markdown"]
    assert {"train_cosda_cs_only_node", "evaluate_cosda_cs_only_node"} <= names and "train_zsjoint_node" not in names
    assert "slu_controls_tables.md" in str(tables._describe())
    assert (paper["training"]["max_epochs"], base["training"]["max_epochs"]) == (20, 3)
    assert paper["training"]["train_layers"] is base["training"]["train_layers"] is None
    # the paper env trains every method of conf/base, the LAJ methods without their reduced-setting overrides
    assert paper["methods"] == {
        name: {k: v for k, v in spec.items() if k not in ("training", "data")} for name, spec in base["methods"].items()
    }
    # the paper's warm-up for the multilingual experiments (App. C.2); the reduced default keeps §4.4's 5 %
    assert (paper["training"]["warmup_ratio"], base["training"]["warmup_ratio"]) == (0.1, 0.05)

    def strip(c: dict) -> dict:
        budget = ("max_epochs", "patience", "warmup_ratio")
        return {**c, "methods": None, "training": {k: v for k, v in c["training"].items() if k not in budget}}

    assert strip(paper) == strip(base)


LAJ = {"lajoint", "lajoint-cs", "lajmcl"}
MCL_ABLATIONS = {
    "lajoint-cs+ucl": {"utterance"},
    "lajoint-cs+scl": {"slot_value"},
    "lajoint-cs+wcl": {"word"},
    "lajoint-cs+ucl+scl": {"utterance", "slot_value"},
    "lajoint-cs+ucl+wcl": {"utterance", "word"},
    "lajoint-cs+scl+wcl": {"slot_value", "word"},
}
LAJOINT_ABLATIONS = {
    "lajoint-no_compressor": {"compressor": False},
    "lajoint-no_projector": {"projector": False},
    "lajoint-no_comp_proj": {"compressor": False, "projector": False},
}
# the joint baselines trained at the LAJ methods' budget, for LAJ-MCL's claims at one budget
BUDGET_CONTROLS = {"zsjoint-laj_budget": False, "cosda-laj_budget": True}


def _slu(env: str) -> dict:
    return resolved(env)["slu"] if env != "base" else yaml_base("parameters_slu.yml")["slu"]


def test_the_default_slu_run_trains_every_method_alike_on_all_the_data(project: Path, forget_env):
    from language_agnostic.pipeline_registry import register_pipelines

    base = _slu("base")
    assert set(base["methods"]) == LAJ | {"zsjoint", "cosda"}
    budgets = [(base["methods"][m]["training"], base["methods"][m]["data"]) for m in sorted(base["methods"])]
    assert all(b == budgets[0] for b in budgets)  # one budget and one recipe for every method
    assert budgets[0] == (
        {"max_epochs": 1, "train_layers": 6, "lr": 5.0e-3, "encoder_lr": 1.0e-4},
        {"max_train": None, "batch_size": 8},
    )  # docs/decisions.md, chosen on en-US dev
    # the quick / ablation budget: the same recipe on the 2,000-utterance sample
    assert base["budgets"]["laj"]["training"] == base["budgets"]["all_data"]["training"]
    assert base["budgets"]["laj"]["data"] == {"max_train": 2000, "batch_size": 8}
    assert base["methods"]["lajmcl"].get("loss_weights") is None  # λ1 = λ2 = λ3 = 0.5
    assert set(base["methods"]["lajoint-cs"]["loss_weights"].values()) == {0}
    assert (
        base["figure"]["methods"] == ["zsjoint", "cosda", "lajoint-cs", "lajmcl"]
        and base["figure"]["n_utterances"] == 100
    )
    with KedroSession.create(PROJECT_ROOT) as session:
        session.load_context()
        pipeline = register_pipelines()["slu"]
    names = {n.name for n in pipeline.nodes}
    assert {"train_lajoint_cs_node", "evaluate_lajmcl_node", "plot_slu_figure_node", "report_slu_node"} <= names
    assert "slu_figure" in pipeline.outputs()


@pytest.mark.parametrize("env", ["slu_quick", "slu_ablations", "slu_grid", "slu_scl"])
def test_the_ablation_and_grid_envs_restate_base_but_for_their_methods(project: Path, forget_env, env: str):
    from language_agnostic.pipeline_registry import register_pipelines
    from language_agnostic.pipelines.slu.nodes import method_key

    base, study = _slu("base"), _slu(env)
    # slu_quick and slu_scl draw no figure: their methods would overwrite the default run's four panels
    own = {"methods", "figure"} if env in ("slu_scl", "slu_quick") else {"methods"}
    assert {k: v for k, v in study.items() if k not in own} == {k: v for k, v in base.items() if k not in own}
    # every method of the env takes the laj budget (the 2,000-utterance sample), as its references do
    laj = base["budgets"]["laj"]
    assert all(
        spec["training"] == laj["training"] and spec["data"] == laj["data"] for spec in study["methods"].values()
    )
    quick = _slu("slu_quick")["methods"]
    if env == "slu_quick":  # the default run's five methods, only their budget (and so their names) changed
        assert study["figure"]["methods"] == []
        assert quick == {
            name + "-laj_budget": {**{k: v for k, v in spec.items() if k not in ("training", "data")}, **laj}
            for name, spec in base["methods"].items()
        }
    elif env == "slu_ablations":
        references = {m + "-laj_budget" for m in LAJ}
        assert set(study["methods"]) == set(MCL_ABLATIONS) | set(LAJOINT_ABLATIONS) | set(BUDGET_CONTROLS) | references
        assert {m: study["methods"][m] for m in references | set(BUDGET_CONTROLS)} == {
            m: quick[m] for m in references | set(BUDGET_CONTROLS)
        }
        for name, switched in BUDGET_CONTROLS.items():
            spec = study["methods"][name]
            assert spec["method"] == "slu" and bool(spec.get("code_switch")) is switched and "loss_weights" not in spec
        for name, levels in MCL_ABLATIONS.items():
            spec = study["methods"][name]
            assert spec["method"] == "lajoint" and spec["code_switch"] is True
            assert set(spec["loss_weights"]) == {"utterance", "slot_value", "word"} - levels  # the others weighted 0
            assert set(spec["loss_weights"].values()) == {0}
        for name, options in LAJOINT_ABLATIONS.items():
            spec = study["methods"][name]
            assert (
                spec["options"] == options and "code_switch" not in spec and set(spec["loss_weights"].values()) == {0}
            )
    elif env == "slu_scl":  # the slot level under other readings: only its options differ from the printed one's
        printed = _slu("slu_ablations")["methods"]
        for name, base_name in {
            "lajoint-cs+scl-t16": "lajoint-cs+scl",
            "lajoint-cs+scl-cos": "lajoint-cs+scl",
            "lajmcl-cos": "lajmcl-laj_budget",
        }.items():
            spec, reference = study["methods"][name], printed[base_name]
            assert {k: v for k, v in spec.items() if k != "options"} == {
                k: v for k, v in reference.items() if k != "options"
            }
        assert study["methods"]["lajoint-cs+scl-t16"]["options"] == {"slot_temperature": 0.0625}
        # the claims' references are restated unchanged, so this run's rows are the default / ablations runs' rows
        assert study["methods"]["lajoint-cs-laj_budget"] == printed["lajoint-cs-laj_budget"]
        assert study["methods"]["cosda-laj_budget"] == printed["cosda-laj_budget"]
        assert set(study["methods"]) == {
            "lajoint-cs+scl-t16",
            "lajoint-cs+scl-cos",
            "lajmcl-cos",
            "lajoint-cs-laj_budget",
            "cosda-laj_budget",
        }
        assert study["figure"]["methods"] == []
        assert study["methods"]["lajmcl-cos"]["options"] == {"slot_affinity": "cosine", "slot_temperature": 0.1}
    else:  # Table 6: LAJoint+SCL over p_s {5, 10} x p_v {0, 10, 20}
        from language_agnostic.pipelines.slu.nodes import grid_methods

        assert sorted(grid_methods(study["methods"]).values()) == [(p_s, p_v) for p_s in (5, 10) for p_v in (0, 10, 20)]
        assert all(spec["loss_weights"] == {"utterance": 0, "word": 0} for spec in study["methods"].values())
    with KedroSession.create(PROJECT_ROOT, env=env) as session:
        context = session.load_context()
        pipeline = register_pipelines()["slu"]
        tables = context.catalog["slu_tables_markdown"]
        params = context.params
        loaded = {m: context.catalog.load(f"params:slu.methods.{m}") for m in study["methods"]}
    assert loaded == study["methods"]
    names = {n.name for n in pipeline.nodes}
    assert {f"train_{method_key(m)}_node" for m in study["methods"]} <= names and "train_zsjoint_node" not in names
    assert "plot_slu_figure_node" not in names  # no figure method in these runs
    assert f"{env}_tables.md" in str(tables._describe())
    # the methods keep their names in the parameters the nodes read (params:slu.methods.lajoint-cs+ucl)
    assert set(params["slu"]["methods"]) == set(study["methods"])
    assert {i for i in pipeline.inputs() if i.startswith("params:slu.methods.")} == {
        f"params:slu.methods.{m}" for m in study["methods"]
    }


def _unseeded(entry: dict) -> dict:
    """A method entry without its ``training.seed``."""
    return {**entry, "training": {k: v for k, v in entry["training"].items() if k != "seed"}}


@pytest.mark.parametrize(("env", "extends"), [("slu_seeds", "base"), ("slu_ablation_seeds", "slu_ablations")])
def test_the_seeds_envs_restate_their_run_and_move_only_the_training_seed(
    project: Path, forget_env, env: str, extends: str
):
    """A seeds env lists the run it extends under the same names and settings (so those models are reused, and
    each ``<method>-seed<N>`` pairs with its reference's seed), and every other entry is one of those with only
    ``training.seed`` changed."""
    study, reference = _slu(env), _slu(extends)
    assert {k: v for k, v in study.items() if k not in ("methods", "figure")} == {
        k: v for k, v in _slu("base").items() if k not in ("methods", "figure")
    }
    assert study["figure"]["methods"] == []
    configured = reference["training"]["seed"]
    originals = {m: spec for m, spec in study["methods"].items() if "-seed" not in m}
    assert originals == {m: reference["methods"][m] for m in originals}
    seeds: dict[str, set[int]] = {}
    for name, spec in study["methods"].items():
        if name in originals:
            continue
        method, seed = name.rsplit("-seed", 1)
        assert spec["training"]["seed"] == int(seed) != configured
        assert _unseeded(spec) == _unseeded(originals[method]), name
        seeds.setdefault(method, set()).add(int(seed))
    assert seeds and all(s == {2023, 2024} for s in seeds.values()) and set(seeds) == set(originals)
    with KedroSession.create(PROJECT_ROOT, env=env) as session:
        tables = session.load_context().catalog["slu_tables_markdown"]
    assert f"{env}_tables.md" in str(tables._describe())
