"""benchmarks/node_times.py: per-node wall times from a kedro console log."""

from __future__ import annotations

import importlib.util
from datetime import timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("node_times", ROOT / "benchmarks" / "node_times.py")
node_times = importlib.util.module_from_spec(spec)
spec.loader.exec_module(node_times)

# the shapes met in real logs: stamps only when the second changes, a progress bar before a
# stamp on the same line, a long node name wrapped onto the next line, rich's source column
LOG = """\
[11/23/26 16:59:10] INFO     Running node: build_qe_candidates_node: node.py:531
                    INFO     Completed node:                       runner.py:245
                    INFO     Completed 1 out of 3 tasks           runner.py:246
[11/23/26 16:59:13] INFO     Running node: embed_qe_inputs_node:     node.py:531
embedding sets: 100%|##| 6/6 [07:01<00:00][11/23/26 17:06:14] INFO     done     extraction.py:1
[11/23/26 17:06:31] INFO     Completed 2 out of 3 tasks           runner.py:246
                    INFO     Running node:                           node.py:531
                             train_qe_dream_without_language_node:
[11/23/26 17:09:11] INFO     Completed 3 out of 3 tasks           runner.py:246
"""


def test_node_times_from_a_log() -> None:
    times = node_times.node_times(LOG.splitlines())
    assert [(name, duration) for name, _, duration in times] == [
        ("build_qe_candidates_node", timedelta(0)),
        ("embed_qe_inputs_node", timedelta(minutes=7, seconds=18)),
        ("train_qe_dream_without_language_node", timedelta(minutes=2, seconds=40)),
    ]
    assert times[1][1].strftime("%H:%M:%S") == "16:59:13"


def test_a_node_still_running_is_left_out() -> None:
    assert node_times.node_times(LOG.splitlines()[:5]) == node_times.node_times(LOG.splitlines()[:3])


def test_main_prints_the_table_and_group_sums(tmp_path, capsys) -> None:
    log = tmp_path / "run.log"
    log.write_text(LOG)
    node_times.main([str(log), "--group", "train_"])
    out = capsys.readouterr().out.splitlines()
    assert out[2] == "| build_qe_candidates_node | 16:59:10 | 0 min 00 s |"
    assert "| **train_*** | | 2 min 40 s |" in out
    assert out[-1] == "| **first node start → last node end** | | 10 min 01 s |"


def test_a_log_without_nodes_is_refused_by_name(tmp_path) -> None:
    log = tmp_path / "empty.log"
    log.write_text("pip install ...\n")
    with pytest.raises(SystemExit, match=r"empty\.log: no completed node found"):
        node_times.main([str(log)])


PLAIN = """\
2026-11-25 18:42:07 INFO    kedro.pipeline.node: Running node: headline_node: build_headline([a;b]) -> [c]
2026-11-25 18:42:08 INFO    kedro.runner.sequential_runner: Completed 1 out of 2 tasks
2026-11-25 18:42:08 INFO    kedro.pipeline.node: Running node: headline_figure_node: headline_figure([c]) -> [d]
2026-11-25 18:42:11 INFO    kedro.runner.sequential_runner: Completed 2 out of 2 tasks
"""


def test_node_times_from_the_projects_plain_log() -> None:
    times = node_times.node_times(PLAIN.splitlines())
    assert [(name, duration) for name, _, duration in times] == [
        ("headline_node", timedelta(seconds=1)),
        ("headline_figure_node", timedelta(seconds=3)),
    ]
