"""benchmarks/pipeline_times.py: the timing table's rows from the logs of cold_warm.sh."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("pipeline_times", ROOT / "benchmarks" / "pipeline_times.py")
pipeline_times = importlib.util.module_from_spec(spec)
sys.modules["pipeline_times"] = pipeline_times  # its dataclass looks its module up there
spec.loader.exec_module(pipeline_times)

# the lines that matter, as the project's log and GNU time write them
COLD = """\
2026-11-28 02:25:01 INFO    extraction: encoding 1200 texts with multilingual-e5-small on cpu (torch, bfloat16)
2026-11-28 02:31:00 INFO    extraction: encoding 34 texts with multilingual-e5-small on cpu (torch, bfloat16)
2026-11-28 02:59:00 INFO    tracking_hook: trained models: 7 trained, 0 reused (0 s of training saved)
	Elapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03
	Maximum resident set size (kbytes): 3774873
	Exit status: 0
"""
WARM = """\
2026-11-28 03:01:00 INFO    extraction: embedding store: all 1234 texts of 2 list(s) already stored, nothing to encode
2026-11-28 03:02:00 INFO    tracking_hook: trained models: 0 trained, 7 reused (1500 s of training saved)
	Elapsed (wall clock) time (h:mm:ss or m:ss): 2:05.41
	Maximum resident set size (kbytes): 1048576
	Exit status: 0
"""


def test_a_row_from_the_two_logs(tmp_path: Path):
    (tmp_path / "emu_cold.log").write_text(COLD)
    (tmp_path / "emu_warm.log").write_text(WARM)
    cold = pipeline_times.read_run(tmp_path / "emu_cold.log")
    assert cold == pipeline_times.Run(3723.0, 3774873 / 1024**2, 0, 1234, 7, 0)
    warm = pipeline_times.read_run(tmp_path / "emu_warm.log")
    assert (warm.seconds, warm.encoded, warm.trained, warm.reused) == (125.41, 0, 0, 7)
    assert pipeline_times.row("emu", cold, warm) == (
        "| `emu` | 62 min 03 s | 2 min 05 s | 0.03× | 1,234 / 0 | 7 / 0 | 0 / 7 | 3.6 GB |"
    )


def test_a_failed_run_is_named_in_its_row(tmp_path: Path):
    cold = pipeline_times.Run(60.0, 1.0, 1, 0, 0, 0)
    warm = pipeline_times.Run(30.0, 1.0, 0, 0, 0, 0)
    assert pipeline_times.row("qe", cold, warm).startswith("| `qe` (cold exit 1) | 1 min 00 s | 30 s | 0.50× |")


def test_a_cut_log_is_refused_with_its_path(tmp_path: Path):
    (tmp_path / "qe_cold.log").write_text("2026-11-28 02:25:01 INFO still running\n")
    with pytest.raises(ValueError, match=r"qe_cold.log: no /usr/bin/time -v summary"):
        pipeline_times.read_run(tmp_path / "qe_cold.log")


@pytest.mark.skipif(not Path("/usr/bin/time").exists(), reason="cold_warm.sh times each run with GNU time")
def test_cold_warm_gives_each_pipeline_its_own_copy_of_data_as_cloned(tmp_path: Path):
    # a clone's data/ is a directory, not a link: each pipeline's cold run must still start from
    # its own copy of it, not from what the pipeline before it left there
    (tmp_path / "data" / "06_models").mkdir(parents=True)
    (tmp_path / "data" / "06_models" / ".gitkeep").write_text("")
    kedro = tmp_path / ".venv" / "bin" / "kedro"
    kedro.parent.mkdir(parents=True)
    # a stand-in for `kedro run --pipelines=P`: it lists what data/ held before it ran, then leaves a file
    kedro.write_text(
        "#!/bin/bash\nP=${2#--pipelines=}\n"
        'ls -A data/06_models | tr "\\n" " " >> data/seen_$P\necho >> data/seen_$P\n'
        "touch data/06_models/model_$P\n"
    )
    kedro.chmod(0o755)
    script = ROOT / "benchmarks" / "cold_warm.sh"
    logs = tmp_path / "logs"
    done = subprocess.run(["bash", str(script), "qe", "sts"], cwd=tmp_path, env={**os.environ, "LOGS": str(logs)})
    assert done.returncode == 0
    assert (tmp_path / "data").is_symlink() and os.readlink(tmp_path / "data") == "data_runs/sts"
    for p in ("qe", "sts"):
        # cold saw only the clone's files, warm what its own cold run left
        assert (tmp_path / "data_runs" / p / f"seen_{p}").read_text() == f".gitkeep \n.gitkeep model_{p} \n"
    assert sorted(q.name for q in (tmp_path / ".data_template" / "06_models").iterdir()) == [".gitkeep"]
    assert (logs / "chain.txt").read_text().count("rc=0") == 4
