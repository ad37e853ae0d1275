"""scripts/check_doc_commands.py: every figure in the docs shares its section with the command behind it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("check_doc_commands", ROOT / "scripts" / "check_doc_commands.py")
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

PAGE = """\
# Speed

## Extraction

The stage encodes 10,000 utterances in 41.2 s, 3.1× the plain loop.

```bash
.venv/bin/python -u benchmarks/embedding.py --n 10000
```

## Training

| method | s / epoch |
|---|---|
| fmda | 12.5 |

One epoch costs 12.5 s; bf16 saves 30%.

## Notes

Nothing measured here, only 3 epochs and a word with s in it.
"""


def test_a_section_with_its_command_passes_and_one_without_is_named_by_line() -> None:
    # "Extraction" has its command in a code block; "Training" has a table (line 13) and a prose
    # figure (line 17) but no command; "Notes" states no measured number
    assert check.check_text(PAGE, "page.md") == [
        "page.md:13: table with numbers without a command in its section",
        "page.md:17: measured number: 12.5 s without a command in its section",
    ]


def test_kedro_and_make_commands_count_and_a_heading_inside_code_does_not_split() -> None:
    text = "## Run\n\nIt takes 55 min.\n\n```bash\n# not a heading\nkedro run --pipelines=slu\n```\n"
    assert check.check_text(text, "p.md") == []
    assert check.check_text("## Run\n\n`make test` passes in 4 min.\n", "p.md") == []
    assert check.check_text("## P\n\nThe difference has p = 0.03.\n", "p.md") == [
        "p.md:3: measured number: p = 0.03 without a command in its section"
    ]


def test_main_exits_1_on_a_figure_without_command_and_0_without(tmp_path: Path, capsys) -> None:
    (tmp_path / "bad.md").write_text("## A\n\nA 2.0× speed-up.\n")
    (tmp_path / "good.md").write_text("## A\n\nA 2.0× speed-up: `python benchmarks/x.py`.\n")
    assert check.main([str(tmp_path / "good.md")]) == 0
    assert check.main([str(tmp_path)]) == 1
    expected = f"{tmp_path / 'bad.md'}:3: measured number: 2.0× without a command in its section\n"
    assert capsys.readouterr().out == expected


def test_a_parameter_table_holds_settings_not_figures() -> None:
    # a table with a "default" header column is a parameter reference; the same numbers as results are a figure
    params = "## Parameters\n\n| key | default | meaning |\n|---|---|---|\n| `lr` | 0.001 | the rate |\n"
    results = "## Results\n\n| key | ours | meaning |\n|---|---|---|\n| `lr` | 0.001 | the rate |\n"
    assert check.check_text(params, "p.md") == []
    assert check.check_text(results, "p.md") == ["p.md:3: table with numbers without a command in its section"]


def test_every_figure_of_the_readme_and_docs_keeps_its_command(capsys) -> None:
    assert check.main([str(ROOT / "README.md"), str(ROOT / "docs")]) == 0, capsys.readouterr().out
