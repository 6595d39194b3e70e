"""The book's diagrams (book/figures/*.svg) are what scripts/diagrams.py draws, byte for byte."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "book" / "figures"


def test_committed_diagrams_are_what_the_script_draws(tmp_path, script):
    written = script("diagrams").write_all(tmp_path)
    assert sorted(p.name for p in written) == ["gate-outcomes.svg", "pipeline.svg", "text-content.svg"]
    stale = [p.name for p in written if p.read_bytes() != (FIGURES / p.name).read_bytes()]
    assert not stale, f"book/figures is out of date for {stale}: run `python scripts/diagrams.py`"


def test_diagrams_carry_no_date_and_name_every_outcome(tmp_path, script):
    diagrams = script("diagrams")
    written = {p.stem: p.read_text(encoding="utf-8") for p in diagrams.write_all(tmp_path)}
    assert all("<dc:date>" not in svg for svg in written.values())
    # Text is drawn as paths, so the outcome names are checked where they are drawn: in the script's table.
    source = (ROOT / "scripts" / "diagrams.py").read_text(encoding="utf-8")
    from ragcourse.evaluation import SWEEP_COLUMNS

    missing = [c for c in SWEEP_COLUMNS[1:] if f'"{c}"' not in source]
    assert not missing, f"gate-outcomes does not draw {missing}"
