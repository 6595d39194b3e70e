"""The instructor guide's objectives (book/instructor-tables.inc, written by kit/guide.py) are the chapters' own.

Each objective listed under a chapter must appear whole in that chapter's "In this chapter" box: the same
words, starting where a bullet or clause starts and ending where it ends (issue 27: a guide that read
bullets line by line had cut 10 of 40 objectives mid-phrase, and listed chapter 5's as "(not stated yet)").
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kit import guide  # noqa: E402

CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
HEADING = re.compile(r"^### Chapter (\d+): ", re.MULTILINE)
# Where an objective may start and end in the box's text (whitespace collapsed to single spaces).
STARTS = r"(?:^|[-*] |\*\*You will learn:?\*\*:? |; (?:and )?)"
ENDS = r"[;.]?(?= [-*] | \*\*|$)|(?=; )"


@functools.cache
def _tables() -> str:
    return guide.tables(guide.chapters(), ROOT / "kit" / "checks")


def guide_objectives() -> dict[int, list[str]]:
    """Chapter number -> the objectives the guide lists for it (as the book build writes it)."""
    text = _tables()
    parts = HEADING.split(text)[1:]
    found = {}
    for number, section in zip(parts[::2], parts[1::2], strict=True):
        block = section.split("**Objectives.**", 1)[1].split("**Prerequisites.**", 1)[0]
        found[int(number)] = [line[2:] for line in block.strip().splitlines() if line.startswith("- ")]
    return found


def box_text(path: Path) -> str:
    """The chapter's "In this chapter" box, glued values filled in, whitespace collapsed."""
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(c.source for c in nb.cells[:3] if c.cell_type == "markdown")
    match = guide.ADMONITION.search(text)
    assert match, f"{path.name}: no 'In this chapter' box"
    body = guide._glue_values(nb, match.group(1)).split("**Prerequisites", 1)[0]
    return " ".join(body.split())


def is_whole(objective: str, text: str) -> bool:
    """True when `objective` occurs in `text` from the start of a bullet or clause to its end.

    >>> is_whole("to cut a text at a boundary;", "- to cut a text at a boundary; - to count.")
    True
    >>> is_whole("to cut a text at a", "- to cut a text at a boundary; - to count.")
    False
    """
    unlinked = objective.replace("](notebooks/", "](")
    return re.search(STARTS + re.escape(unlinked) + "(?:" + ENDS + ")", text) is not None


def test_every_chapter_is_in_the_guide_with_its_objectives():
    found = guide_objectives()
    assert sorted(found) == [int(p.name[:2]) for p in CHAPTERS], sorted(found)
    empty = [n for n, objectives in found.items() if not objectives or "(not stated yet)" in objectives]
    assert not empty, f"chapters whose objectives the guide does not state: {empty}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_objective_appears_whole_in_its_chapter(path):
    text = box_text(path)
    objectives = guide_objectives()[int(path.name[:2])]
    cut = [o for o in objectives if not is_whole(o, text)]
    assert not cut, f"{path.name}: objectives not found whole in the chapter's box: {cut}"


def test_a_cut_objective_is_caught():
    text = box_text(ROOT / "notebooks" / "02-chunking.ipynb")
    whole = guide_objectives()[2][0]
    assert is_whole(whole, text)
    assert not is_whole(whole.rsplit(" ", 3)[0], text), "an objective cut three words short passed as whole"


def _rubrics() -> dict[str, str]:
    """Exercise id -> its rubric (whitespace collapsed), for every exercise of every chapter that has one."""
    from kit.student import answer_cells

    found = {}
    for path in CHAPTERS:
        for cell in answer_cells(nbformat.read(path, as_version=4)):
            meta = cell.metadata["exercise"]
            if meta.get("kind") in guide.GRADED_BY_RUBRIC and meta.get("rubric", "").strip():
                found[meta["id"]] = " ".join(meta["rubric"].split())
    return found


def _public_pages() -> dict[str, str]:
    """The public guide's sources and, when the book was built, its HTML page, whitespace collapsed."""
    pages = {guide.OUT.name: _tables(), guide.GUIDE.name: guide.GUIDE.read_text(encoding="utf-8")}
    built = ROOT / "book" / "_build" / "html" / "instructor-guide.html"
    if built.is_file():
        pages[built.name] = re.sub(r"<[^>]+>", " ", built.read_text(encoding="utf-8"))
    return {name: " ".join(text.replace("&#x27;", "'").replace("&#39;", "'").split()) for name, text in pages.items()}


def test_the_public_guide_holds_no_rubric_and_the_instructor_edition_every_one(tmp_path):
    """Issue 45: 6.4's rubric printed the expected prediction in the public book."""
    rubrics = _rubrics()
    assert "6.4" in rubrics and "'bluffs' is 'same'" in rubrics["6.4"]
    for name, text in _public_pages().items():
        shown = [ex for ex, rubric in rubrics.items() if rubric[:80] in text]
        assert not shown, f"{name} shows the rubric of {shown}"
        assert "'bluffs' is 'same'" not in text and "'ok' is True" not in text, name
    assert guide.main(["--instructor", str(tmp_path / "guide.md")]) == 0
    edition = " ".join((tmp_path / "guide.md").read_text(encoding="utf-8").split())
    assert [ex for ex in rubrics if rubrics[ex][:80] not in edition] == []
    assert "INSTRUCTOR edition" in edition and "manual.csv" in edition and "PLACEHOLDER" not in edition
    assert "KIT_CACHE" in edition and "JOBS" in edition  # the measured costs and the sandbox layouts
