"""notebooks/results.ipynb runs top to bottom on a tiny project written here, and stays paired with its script."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from language_agnostic.datasets.metrics import MetricsTableDataset
from tests.conftest import PROJECT_ROOT

NOTEBOOK = PROJECT_ROOT / "notebooks" / "results.ipynb"


def _row(method: str, embedding: str, task: str, source: str, target: str, metric: str, value: float) -> dict:
    return {
        "pipeline": "t",
        "method": method,
        "embedding": embedding,
        "task": task,
        "dataset": "massive_test",
        "source": source,
        "target": target,
        "metric": metric,
        "value": value,
        "encoder": "tiny",
        "run_id": "",
    }


def _tiny_project(root: Path) -> Path:
    """pyproject.toml and conf/base of this project, and a data/08_reporting of a few hand-written rows."""
    root.mkdir(parents=True)
    shutil.copy(PROJECT_ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(PROJECT_ROOT / "conf" / "base", root / "conf" / "base")
    (root / "conf" / "local").mkdir()
    (root / "src").mkdir()  # Kedro's bootstrap wants a source directory; the package comes from PYTHONPATH
    (root / "mlruns").mkdir()
    reporting = root / "data" / "08_reporting"
    reporting.mkdir(parents=True)
    rows = [
        _row("raw", "mean", "cross_lingual_retrieval", "en-US", "de-DE", "accuracy@1", 0.60),
        _row("raw", "mean", "cross_lingual_retrieval", "de-DE", "en-US", "accuracy@1", 0.62),
        _row("fmda", "m", "cross_lingual_retrieval", "en-US", "de-DE", "accuracy@1", 0.70),
        _row("fmda", "m", "cross_lingual_retrieval", "de-DE", "en-US", "accuracy@1", 0.72),
    ]
    for source, target, value in (("en-US", "de-DE", 0.5), ("de-DE", "en-US", 0.55)):
        rows += [
            _row("emu", "mean", "intent_nn", source, target, "accuracy@1", value),
            _row("emu", "mean", "intent_nn", source, target, "accuracy@1_ci_low", value - 0.05),
            _row("emu", "mean", "intent_nn", source, target, "accuracy@1_ci_high", value + 0.05),
        ]
    MetricsTableDataset(str(reporting / "metrics.csv")).save(pd.DataFrame(rows))  # writes the leaderboard too
    (reporting / "fmda_tables.md").write_text("## Table 2: tiny\n\n| a | b |\n|---|---:|\n| x | 1 |\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1])
    figure.savefig(reporting / "fmda_figure4.png")
    plt.close(figure)
    return root


@pytest.mark.slow
def test_the_results_notebook_runs_on_tiny_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    project = _tiny_project(tmp_path / "project")
    monkeypatch.setenv("LANGUAGE_AGNOSTIC_PROJECT", str(project))
    # the kernel imports this checkout's package, whatever is installed
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(filter(None, [str(PROJECT_ROOT / "src"), str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])),
    )
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "commit it stripped"
    nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(project)}}
    ).execute()
    text = "\n".join(
        str(output.get("text", "")) + str(output.get("data", {}).get("text/markdown", ""))
        for cell in notebook.cells
        for output in cell.get("outputs", [])
    )
    assert "10 metric rows; pipelines: ['t']; encoders: ['tiny']" in text
    # the leaderboard through the catalog, the best cell bold
    assert "| fmda | m | **0.710** |" in text and "| raw | mean | 0.610 |" in text
    assert "## Table 2: tiny" in text and "emu_tables_markdown: not written yet" in text
    images = [
        output for cell in notebook.cells for output in cell.get("outputs", []) if "image/png" in output.get("data", {})
    ]
    assert len(images) == 3  # two per-locale charts (retrieval, intent_nn with CIs) and the figure
    assert "no MLflow runs in sqlite:///" in text


def test_the_notebook_and_its_script_are_paired():
    jupytext = pytest.importorskip("jupytext")
    import nbformat

    script = jupytext.read(PROJECT_ROOT / "notebooks" / "results.py")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert [(c.cell_type, c.source) for c in script.cells] == [(c.cell_type, c.source) for c in notebook.cells]
