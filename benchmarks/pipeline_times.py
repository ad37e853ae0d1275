"""The one timing table's rows: each pipeline's cold and warm run, read from their logs.

``benchmarks/cold_warm.sh P ...`` runs each pipeline twice under ``/usr/bin/time -v`` from its own
empty ``data/`` (cold: nothing encoded, converted or trained; warm: the same command again) and keeps
``LOGS/<P>_cold.log`` and ``LOGS/<P>_warm.log``. This prints one markdown row per pipeline: the wall
times (GNU time's "Elapsed (wall clock)"), the cold run's peak memory, the texts each run encoded
into the embedding store (its "encoding N texts" lines; EMU encodes with its fine-tuned encoders,
outside the store) and the models each run trained and reused (the tracking hook's last line).

    .venv/bin/python benchmarks/pipeline_times.py LOGS emu fmda tatoeba qe sts
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

WALL = re.compile(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)")
PEAK = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")
STATUS = re.compile(r"Exit status: (\d+)")
ENCODING = re.compile(r"encoding (\d+) texts with ")
MODELS = re.compile(r"trained models: (\d+) trained, (\d+) reused")


@dataclass(frozen=True)
class Run:
    """What one logged run took."""

    seconds: float
    peak_gb: float
    exit_status: int
    encoded: int
    trained: int
    reused: int


def seconds(elapsed: str) -> float:
    """GNU time's ``h:mm:ss`` or ``m:ss.ss`` in seconds."""
    parts = [float(p) for p in elapsed.split(":")]
    total = 0.0
    for part in parts:
        total = total * 60 + part
    return total


def read_run(path: Path) -> Run:
    """One run's figures from its log (``/usr/bin/time -v`` output at its end).

    Raises:
        ValueError: the log has no GNU time summary (the run was cut, or not run under ``time -v``).
    """
    text = path.read_text(errors="replace")
    wall, peak, status = WALL.search(text), PEAK.search(text), STATUS.search(text)
    if not (wall and peak and status):
        raise ValueError(f"{path}: no /usr/bin/time -v summary (a run still going, or cut)")
    models = MODELS.findall(text)
    trained, reused = (int(models[-1][0]), int(models[-1][1])) if models else (0, 0)
    return Run(
        seconds(wall.group(1)),
        int(peak.group(1)) / 1024**2,
        int(status.group(1)),
        sum(int(n) for n in ENCODING.findall(text)),
        trained,
        reused,
    )


def minutes(value: float) -> str:
    """``12 min 05 s`` (or ``45 s``)."""
    m, s = divmod(round(value), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def row(pipeline: str, cold: Run, warm: Run) -> str:
    """The table row of one pipeline."""
    failed = [f"{name} exit {r.exit_status}" for name, r in (("cold", cold), ("warm", warm)) if r.exit_status]
    note = f" ({', '.join(failed)})" if failed else ""
    cells = [
        f"`{pipeline}`{note}",
        minutes(cold.seconds),
        minutes(warm.seconds),
        f"{warm.seconds / cold.seconds:.2f}×",
        f"{cold.encoded:,} / {warm.encoded:,}",
        f"{cold.trained} / {cold.reused}",
        f"{warm.trained} / {warm.reused}",
        f"{cold.peak_gb:.1f} GB",
    ]
    return "| " + " | ".join(cells) + " |"


COLUMNS = [
    "pipeline",
    "cold",
    "warm",
    "warm / cold",
    "texts encoded into the store (cold / warm)",
    "models trained / reused, cold",
    "warm",
    "peak memory (cold)",
]
HEADER = ["| " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * (len(COLUMNS) - 1)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", type=Path, help="the directory cold_warm.sh wrote its logs to")
    parser.add_argument("pipelines", nargs="+")
    args = parser.parse_args(argv)
    print("\n".join(HEADER))
    for pipeline in args.pipelines:
        print(row(pipeline, read_run(args.logs / f"{pipeline}_cold.log"), read_run(args.logs / f"{pipeline}_warm.log")))


if __name__ == "__main__":
    main()
