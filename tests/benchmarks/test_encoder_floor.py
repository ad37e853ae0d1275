"""benchmarks/encoder_floor.py: the sentences its floor is measured on."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("encoder_floor", ROOT / "benchmarks" / "encoder_floor.py")
encoder_floor = importlib.util.module_from_spec(spec)
sys.modules["encoder_floor"] = encoder_floor
spec.loader.exec_module(encoder_floor)


def _pairs(root: Path) -> Path:
    folder = root / "tatoeba" / "v1"
    folder.mkdir(parents=True)
    (folder / "tatoeba.deu-eng.deu").write_text("Hallo.\nJa.\n\nHallo.\n", encoding="utf-8")
    (folder / "tatoeba.deu-eng.eng").write_text("Hello.\nYes.\n\nHello.\n", encoding="utf-8")
    (folder / "tatoeba.fra-eng.fra").write_text("Oui.\n", encoding="utf-8")
    (folder / "tatoeba.fra-eng.eng").write_text("Yes.\n", encoding="utf-8")
    return root


def test_all_reads_both_sides_of_every_pair_once_each(tmp_path: Path):
    # what the pipeline encodes: every distinct non-empty sentence, English sides included
    assert encoder_floor.sentences(["all"], 0, _pairs(tmp_path)) == ["Hallo.", "Ja.", "Hello.", "Yes.", "Oui."]


def test_named_languages_read_their_own_side_up_to_n(tmp_path: Path):
    root = _pairs(tmp_path)
    assert encoder_floor.sentences(["deu", "fra"], 0, root) == ["Hallo.", "Ja.", "Oui."]
    assert encoder_floor.sentences(["deu", "fra"], 2, root) == ["Hallo.", "Ja."]
