"""The README is read in two minutes: at most 1,200 words, no prose paragraph over 150, and every
link it gives leads to a file of the project."""

from __future__ import annotations

import re
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
README = PROJECT_ROOT / "README.md"
MAX_WORDS = 1200
MAX_PARAGRAPH = 150


def prose_paragraphs(markdown: str) -> list[str]:
    """The blocks between blank lines that are prose: not a heading, table, list, code, image or comment."""
    blocks, in_code = [], False
    current: list[str] = []
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            current = []
            continue
        if in_code:
            continue
        if not line.strip():
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return [b for b in blocks if not b.lstrip().startswith(("#", "|", "-", "*", "!", "<!--", "1."))]


def test_prose_paragraphs_leave_out_tables_lists_and_code():
    text = "# Title\n\nOne two three.\n\n| a | b |\n|---|---|\n\n- item\n\n```bash\nx y z\n```\n\nFour five."
    assert prose_paragraphs(text) == ["One two three.", "Four five."]


def test_the_readme_is_short():
    text = README.read_text()
    assert len(text.split()) <= MAX_WORDS, f"README.md has {len(text.split())} words (at most {MAX_WORDS})"
    long = [p[:60] for p in prose_paragraphs(text) if len(p.split()) > MAX_PARAGRAPH]
    assert not long, f"prose paragraphs over {MAX_PARAGRAPH} words in README.md: {long}"


def test_the_readme_links_lead_to_project_files():
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    missing = sorted({t for t in targets if not t.startswith("http") and not (PROJECT_ROOT / t).exists()})
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_readme_test_command_is_what_ci_runs():
    assert "make test" in (PROJECT_ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test\b", README.read_text(), re.MULTILINE)
