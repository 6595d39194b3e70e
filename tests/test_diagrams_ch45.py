"""Chapters 4 and 5's diagrams are what scripts/diagrams_ch45.py draws, and the RRF example is the package's RRF."""

from __future__ import annotations

from pathlib import Path

from ragcourse.fusion import fuse

ROOT = Path(__file__).resolve().parents[1]


def test_committed_diagrams_are_what_the_script_draws(tmp_path, script):
    written = script("diagrams_ch45").write_all(tmp_path)
    stale = [p.name for p in written if p.read_bytes() != (ROOT / "book" / "figures" / p.name).read_bytes()]
    assert not stale, f"book/figures is out of date for {stale}: run `python scripts/diagrams_ch45.py`"
    assert all("<dc:date>" not in p.read_text(encoding="utf-8") for p in written)


def test_the_drawn_rrf_example_is_the_packages_fusion(script):
    script = script("diagrams_ch45")
    drawn = [(item, round(score, 6)) for item, score, _ in script.rrf_scores()]
    assert drawn == [(f.id, f.score) for f in fuse([script.DENSE, script.SPARSE], c=script.RRF_C)]
