"""Chapter 2's diagram (book/figures/strategies-cut.svg) is what scripts/diagrams_ch02.py draws, byte for byte."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_committed_diagram_is_what_the_script_draws(tmp_path, script):
    (written,) = script("diagrams_ch02").write_all(tmp_path)
    committed = ROOT / "book" / "figures" / written.name
    assert written.read_bytes() == committed.read_bytes(), "run `python scripts/diagrams_ch02.py`"


def test_the_cuts_drawn_are_the_packages(script):
    module = script("diagrams_ch02")
    blind = module.chunk(module.TOY, "A", target=module.TARGET, overlap=module.OVERLAP)
    boundary = module.chunk(module.TOY, "C", target=module.TARGET, overlap=module.OVERLAP)
    # the blind cutter splits the answer sentence, the boundary cutter keeps it in one chunk
    assert not any(module.NEEDLE in c.content for c in blind)
    assert any(c.content == module.NEEDLE for c in boundary)
