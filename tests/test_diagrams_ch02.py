"""Chapter 2's diagram (book/figures/strategies-cut.svg) is what scripts/diagrams_ch02.py draws, byte for byte."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("diagrams_ch02", ROOT / "scripts" / "diagrams_ch02.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_diagram_is_what_the_script_draws(tmp_path):
    (written,) = _module().write_all(tmp_path)
    committed = ROOT / "book" / "figures" / written.name
    assert written.read_bytes() == committed.read_bytes(), "run `python scripts/diagrams_ch02.py`"


def test_the_cuts_drawn_are_the_packages():
    module = _module()
    blind = module.chunk(module.TOY, "A", target=module.TARGET, overlap=module.OVERLAP)
    boundary = module.chunk(module.TOY, "C", target=module.TARGET, overlap=module.OVERLAP)
    # the blind cutter splits the answer sentence, the boundary cutter keeps it in one chunk
    assert not any(module.NEEDLE in c.content for c in blind)
    assert any(c.content == module.NEEDLE for c in boundary)
