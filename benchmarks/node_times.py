"""Per-node wall times of a finished ``kedro run``, read from its console log.

The project's log (conf/logging.yml) stamps every line ``YYYY-mm-dd HH:MM:SS``. Kedro's rich log
(the project's before 2026-11-25, or KEDRO_LOGGING_CONFIG pointing at it) stamps a line with
``[mm/dd/yy HH:MM:SS]`` only when the second changes, so each line's time is the last stamp seen.
The sequential runner runs one node at a time: a node's time is from its ``Running node: <name>``
line to the next ``Completed k out of n tasks`` line. Rich logs wrapped at 80 columns (no
terminal) keep the node name on the ``Running node`` line for all but the longest names; run
those with ``COLUMNS=250`` to avoid wrapping.

    COLUMNS=250 .venv/bin/kedro run --pipelines=qe > qe.log 2>&1
    .venv/bin/python benchmarks/node_times.py qe.log                 # every node
    .venv/bin/python benchmarks/node_times.py qe.log --group train_  # and the sum of nodes matching a prefix
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timedelta
from pathlib import Path

STAMP = re.compile(r"\[(\d\d/\d\d/\d\d \d\d:\d\d:\d\d)\]")  # rich
PLAIN_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) ")  # conf/logging.yml
RUNNING = re.compile(r"Running node:\s*([\w.\-]*)")
WRAPPED_NAME = re.compile(r"^\s+([\w.\-]+):")  # a long name wrapped onto the next line
COMPLETED = re.compile(r"Completed \d+ out of \d+ tasks")


def node_times(lines: list[str]) -> list[tuple[str, datetime, timedelta]]:
    """``(node, start, duration)`` for every node that completed, in run order."""
    now: datetime | None = None
    current: tuple[str, datetime] | None = None
    out: list[tuple[str, datetime, timedelta]] = []
    for i, line in enumerate(lines):
        stamp, plain = STAMP.search(line), PLAIN_STAMP.match(line)
        if stamp:
            now = datetime.strptime(stamp.group(1), "%m/%d/%y %H:%M:%S")
        elif plain:
            now = datetime.strptime(plain.group(1), "%Y-%m-%d %H:%M:%S")
        if now is None:
            continue
        running = RUNNING.search(line)
        if running:
            name = "" if running.group(1).endswith(".py") else running.group(1)  # rich's source column, not a name
            wrapped = WRAPPED_NAME.match(lines[i + 1]) if not name and i + 1 < len(lines) else None
            current = (name or (wrapped.group(1) if wrapped else "?"), now)
        elif COMPLETED.search(line) and current is not None:
            out.append((current[0], current[1], now - current[1]))
            current = None
    return out


def _minutes(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    return f"{seconds // 60} min {seconds % 60:02d} s"


def main(argv: list[str] | None = None) -> None:
    """Print a markdown table of node times (and group sums) from a log file (``argv``: tests pass their own)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path)
    parser.add_argument(
        "--group", action="append", default=[], help="also print the summed time of nodes with this prefix"
    )
    args = parser.parse_args(argv)
    times = node_times(args.log.read_text(errors="replace").splitlines())
    if not times:
        raise SystemExit(f"{args.log}: no completed node found (is it a kedro run's console log?)")
    print("| node | start | wall time |\n|---|---|---:|")
    for name, start, duration in times:
        print(f"| {name} | {start:%H:%M:%S} | {_minutes(duration)} |")
    for prefix in args.group:
        total = sum((d for n, _, d in times if n.startswith(prefix)), timedelta())
        print(f"| **{prefix}*** | | {_minutes(total)} |")
    first, last = times[0][1], times[-1][1] + times[-1][2]
    print(f"| **first node start → last node end** | | {_minutes(last - first)} |")


if __name__ == "__main__":
    main()
