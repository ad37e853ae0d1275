"""Check a findings page's tables against the reports a run wrote, cell by cell; or rewrite them from it.

``python -m language_agnostic.reporting.page_tables check PAGE.md REPORT.md [REPORT.md ...]`` proves
that every number of the page is what a run of this code printed ("0 differ"); ``update`` writes the
run's value into each cell that differs, leaving the rest of the page byte for byte; ``check --gaps``
compares two runs not meant to agree bit for bit (another device) by each row's largest difference.

A page merges and reshapes the reports' tables, so cells are matched, not tables: a page cell (its
row's key, its column's title) is looked up in every report table that has a column of that title and
a row of that key. A key is the row's label cells (the left-aligned columns, as
:func:`~language_agnostic.reporting.markdown.table` writes them); a page that dropped a label column
matches on the label columns it kept, by title. Where report tables disagree on a cell, the one whose
heading shares the most words with the page table's wins; a tie is *ambiguous* (shown, not a
difference). Cells are compared exactly after :func:`normalise`: no tolerance, the point is
bit-exact reproduction.

A page whose sections come from different runs (a default run, a seeds run) names the section a
report is for: ``REPORT.md#The paper's claims`` is read only for the page tables under that heading
(any level), and those tables read only the reports named for it (for the nearest such heading, so
a subsection can name its own); a report without ``#`` serves every other table. Two reports
written by the same code have the same headings, so this, not the headings' words, tells their
tables apart.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from language_agnostic.reporting.markdown import ParsedTable, cell_spans, parse_tables


def normalise(cell: str) -> str:
    """``cell`` as compared: no bold markers or backticks, ASCII minus, single spaces, stripped."""
    text = cell.replace("**", "").replace("__", "").replace("`", "").replace("\u2212", "-")
    return " ".join(text.split())


@dataclass(frozen=True)
class Source:
    """A report table, the file it was read from and the page section it is for (None: any)."""

    path: str
    table: ParsedTable
    section: str | None = None


@dataclass(frozen=True)
class Cell:
    """A value cell of a page table and what the reports hold for it.

    ``status`` is ``same``, ``differs``, ``missing`` (no report has it) or ``ambiguous`` (report
    tables disagree and their headings do not decide); ``run`` is the chosen report cell as written.
    """

    row: int
    column: int
    key: tuple[str, ...]
    page: str
    run: str | None
    status: str
    candidates: tuple[tuple[Source, str], ...] = ()


@dataclass(frozen=True)
class TableResult:
    """One page table's cells, checked."""

    table: ParsedTable
    cells: tuple[Cell, ...]

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.cells)

    @property
    def checked(self) -> int:
        return self.count("same") + self.count("differs")

    @property
    def heading(self) -> str:
        return nearest(self.table) or "(no heading)"

    @property
    def name(self) -> str:
        return f'"{self.heading}" [{self.table.header[0]}]'


def nearest(table: ParsedTable) -> str:
    """The heading nearest above ``table`` ("" for none)."""
    return table.headings[-1] if table.headings else ""


def _keys(table: ParsedTable, fill_down: bool) -> list[tuple[str, ...]]:
    """Each row's key (its label cells, normalised). A findings page leaves a label cell empty where it
    repeats the row above (``headline._claims`` reads it so too), hence ``fill_down`` for a page."""
    columns = [j for j, left in enumerate(table.left) if left]
    keys: list[tuple[str, ...]] = []
    for row in table.rows:
        key = [normalise(row[j]) for j in columns]
        if fill_down and keys:
            key = [cell or above for cell, above in zip(key, keys[-1])]
        keys.append(tuple(key))
    return keys


def _report_index(page: ParsedTable, report: ParsedTable) -> dict[tuple[str, ...], list[int]] | None:
    """Report row numbers by the page's key, or None when the report's rows cannot carry that key.

    The same number of label columns matches position by position (a page may retitle a label
    column); fewer on the page match by title (the page dropped a label column).
    """
    page_titles = [normalise(h) for h, left in zip(page.header, page.left) if left]
    report_columns = [j for j, left in enumerate(report.left) if left]
    if len(page_titles) == len(report_columns):
        columns = report_columns
    else:
        titles = {normalise(report.header[j]): j for j in report_columns}
        if not page_titles or len(page_titles) > len(report_columns) or not set(page_titles) <= set(titles):
            return None
        columns = [titles[t] for t in page_titles]
    index: dict[tuple[str, ...], list[int]] = {}
    for i, row in enumerate(report.rows):
        index.setdefault(tuple(normalise(row[j]) for j in columns), []).append(i)
    return index


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _closeness(page: ParsedTable, report: ParsedTable) -> tuple[int, int]:
    """Words shared by the nearest headings, then by all headings above: a page's "EN-DE" under
    "Table 5" picks the report's "### EN-DE" over its "### EN-ES"."""
    return len(_words(nearest(page)) & _words(nearest(report))), len(
        _words(" ".join(page.headings)) & _words(" ".join(report.headings))
    )


def check_table(page: ParsedTable, reports: Sequence[Source]) -> TableResult:
    """Every value cell (right-aligned column) of ``page``, looked up in ``reports``."""
    indexes = [(source, _report_index(page, source.table)) for source in reports]
    titles = [[normalise(h) for h in source.table.header] for source in reports]
    cells: list[Cell] = []
    for i, (key, row) in enumerate(zip(_keys(page, fill_down=True), page.rows)):
        for j, (title, left) in enumerate(zip(page.header, page.left)):
            if left:
                continue
            candidates = [
                (source, source.table.rows[r][titles[s].index(normalise(title))])
                for s, (source, index) in enumerate(indexes)
                if index is not None and normalise(title) in titles[s]
                for r in index.get(key, [])
            ]
            status, run = _resolve(page, row[j], candidates)
            cells.append(Cell(i, j, key, row[j], run, status, tuple(candidates)))
    return TableResult(page, tuple(cells))


def _resolve(page: ParsedTable, value: str, candidates: list[tuple[Source, str]]) -> tuple[str, str | None]:
    """``(status, run value)`` of a page cell from the report cells that have its key and column."""
    if not candidates:
        return "missing", None
    if len({normalise(v) for _, v in candidates}) > 1:
        best = max(_closeness(page, s.table) for s, _ in candidates)
        candidates = [(s, v) for s, v in candidates if _closeness(page, s.table) == best]
        if len({normalise(v) for _, v in candidates}) > 1:
            return "ambiguous", None
    run = candidates[0][1]
    return ("same" if normalise(run) == normalise(value) else "differs"), run


def check_page(markdown: str, reports: Sequence[Source]) -> list[TableResult]:
    """Each table of a page's ``markdown``, checked against the reports for its section (or the rest)."""
    sections = {normalise(s.section) for s in reports if s.section is not None}
    results = []
    for table in parse_tables(markdown):
        # the nearest heading above the table that a report is named for: a subsection's report wins
        mine = next((h for h in map(normalise, reversed(table.headings)) if h in sections), None)
        chosen = [s for s in reports if (s.section is None if mine is None else normalise(s.section or "") == mine)]
        results.append(check_table(table, chosen))
    return results


def split_report(argument: str) -> tuple[Path, str | None]:
    """``REPORT.md#Section`` → (path, section); a plain path → (path, None)."""
    path, _, section = argument.partition("#")
    return Path(path), (section or None)


def read_reports(arguments: Sequence[str | Path]) -> list[Source]:
    """Every table of every report (``REPORT.md`` or ``REPORT.md#Page section``), with its file and section."""
    sources = []
    for argument in arguments:
        path, section = split_report(str(argument))
        text = path.read_bytes().decode("utf-8")
        sources += [Source(str(path), table, section) for table in parse_tables(text)]
    return sources


def _label(cell: Cell, result: TableResult) -> str:
    return f"{' | '.join(cell.key)} / {normalise(result.table.header[cell.column])}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def check_lines(page: str, results: Sequence[TableResult]) -> list[str]:
    """What ``check`` prints: per table its counts and its differing and ambiguous cells, then a summary."""
    lines: list[str] = []
    for result in results:
        counts = f"{result.checked} cells checked, {result.count('differs')} differ"
        if result.count("ambiguous"):
            counts += f", {result.count('ambiguous')} ambiguous"
        lines.append(f"{result.name}: {counts}, {result.count('missing')} not in the reports")
        for cell in result.cells:
            if cell.status == "differs":
                lines.append(
                    f"  {_label(cell, result)}: page '{normalise(cell.page)}' ≠ run '{normalise(cell.run or '')}'"
                )
            elif cell.status == "ambiguous":
                runs = ", ".join(f"'{normalise(v)}' ({s.path}: {nearest(s.table)})" for s, v in cell.candidates)
                lines.append(f"  {_label(cell, result)}: ambiguous, the run has {runs}")
    found = [r for r in results if r.checked]
    absent = [r for r in results if not r.checked and not r.count("ambiguous")]
    summary = (
        f"{page}: {_plural(len(found), 'table')}, {sum(r.checked for r in results)} cells checked, "
        f"{sum(r.count('differs') for r in results)} differ"
    )
    if ambiguous := sum(r.count("ambiguous") for r in results):
        summary += f", {ambiguous} ambiguous"
    if absent:
        summary += f"; {_plural(len(absent), 'table')} not in these reports: " + ", ".join(
            f'"{r.heading}"' for r in absent
        )
    return [*lines, summary]


def _number(cell: str) -> float | None:
    """A cell's leading number (``0.779``, ``−0.006 ± 0.001`` → −0.006), or None."""
    match = re.match(r"[-+]?\d+(?:\.\d+)?", normalise(cell).replace(",", ""))
    return float(match.group()) if match else None


def gap_lines(results: Sequence[TableResult]) -> list[str]:
    """What ``check --gaps`` prints instead of each differing cell: per table, each row's largest
    ``|page − run|`` over its numeric cells and the column it is in, so two runs that are not meant to
    agree bit for bit (a GPU run against a CPU one) are compared by how far apart they are."""
    lines: list[str] = []
    for result in results:
        largest: dict[tuple[str, ...], tuple[float, str]] = {}
        for cell in result.cells:
            if cell.status not in ("same", "differs"):
                continue
            page, run = _number(cell.page), _number(cell.run or "")
            if page is None or run is None:
                continue
            gap = abs(page - run)
            if cell.key not in largest or gap > largest[cell.key][0]:
                largest[cell.key] = (gap, normalise(result.table.header[cell.column]))
        if not largest:
            continue
        lines.append(f"{result.name}: largest |page − run| per row")
        lines += [f"  {' | '.join(k)}: {gap:.3f} ({column})" for k, (gap, column) in largest.items()]
    return lines


def _new_cell(old: str, run: str) -> str:
    """The run's value as the page writes it: in bold where the page had the old value in bold."""
    bold = old.startswith("**") and old.endswith("**") and len(old) > 4
    return f"**{run}**" if bold and not run.startswith("**") else run


def update(markdown: str, results: Sequence[TableResult]) -> tuple[str, list[str]]:
    """``markdown`` with every differing cell rewritten to the run's value (only the text between its
    pipes' padding changes), and a line per change."""
    lines = markdown.split("\n")
    changes: list[str] = []
    for result in results:
        for cell in result.cells:
            if cell.status != "differs" or cell.run is None:
                continue
            number = result.table.lines[cell.row]
            line = lines[number]
            start, end = cell_spans(line)[cell.column]
            text = line[start:end]
            old = text.strip()
            new = _new_cell(old, cell.run)
            # keep the cell's padding: only its content is replaced
            at = start + len(text) - len(text.lstrip())
            lines[number] = line[:at] + new + line[at + len(old) :]
            changes.append(f"{result.name} {_label(cell, result)}: '{old}' → '{new}'")
    return "\n".join(lines), changes


def main(argv: Sequence[str] | None = None) -> int:
    """``check|update PAGE.md REPORT.md...``: 0 when no cell differs (``check``) or after writing (``update``),
    1 when ``check`` finds a differing cell, 2 for a missing file."""
    parser = argparse.ArgumentParser(
        prog="python -m language_agnostic.reporting.page_tables",
        description="Check (or rewrite) a findings page's tables against the markdown reports of a run.",
    )
    parser.add_argument("command", choices=["check", "update"])
    parser.add_argument("page", type=Path)
    parser.add_argument("reports", nargs="+", help="REPORT.md, or REPORT.md#Page section for one section's tables")
    parser.add_argument(
        "--gaps",
        action="store_true",
        help="check: print each row's largest numeric |page - run| instead of each differing cell",
    )
    args = parser.parse_args(argv)
    for path in [args.page, *(split_report(r)[0] for r in args.reports)]:
        if not path.is_file():
            print(f"error: no such file: {path}", file=sys.stderr)
            return 2
    markdown = args.page.read_bytes().decode("utf-8")  # bytes, so "\r\n" and the rest survive an update
    headings = {normalise(h) for t in parse_tables(markdown) for h in t.headings}
    for report in args.reports:
        section = split_report(report)[1]
        if section is not None and normalise(section) not in headings:  # a typo would check nothing
            print(f"error: {args.page} has no table under a heading '{section}' (from {report})", file=sys.stderr)
            return 2
    results = check_page(markdown, read_reports(args.reports))
    if args.command == "check":
        lines = check_lines(str(args.page), results)
        if args.gaps:  # the counts and the summary, each row's largest gap for the listed cells
            lines = [line for line in lines if not line.startswith("  ")][:-1] + gap_lines(results) + lines[-1:]
        print("\n".join(lines))
        return 1 if any(r.count("differs") for r in results) else 0
    text, changes = update(markdown, results)
    if changes:
        args.page.write_bytes(text.encode("utf-8"))
    print("\n".join([*changes, f"{args.page}: {_plural(len(changes), 'cell')} updated"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
