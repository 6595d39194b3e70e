"""The student edition holds no verification (issue 37): no glue call, no assert, no hidden cell, and package
source shown as code, while every name a kept cell reads is still defined by the cells before it."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import nbformat
import pytest

from kit.student import (
    HIDE_TAGS,
    _stored_and_read,
    chapter_notebooks,
    included_source,
    strip_verification,
    student_edition,
    tags,
    with_included_source,
    without_verification,
)

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = chapter_notebooks(ROOT / "notebooks")


@functools.cache
def _edition(path: Path):
    return student_edition(nbformat.read(path, as_version=4))


def _code(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def test_there_are_chapters():
    assert len(CHAPTERS) >= 10, CHAPTERS


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_glue_no_assert_no_hidden_cell(path: Path):
    edition = _edition(path)
    glue = [c.source[:60] for c in _code(edition) if re.search(r"\bglue\s*\(", c.source)]
    asserts = [c.source[:60] for c in _code(edition)
               if any(isinstance(n, ast.Assert) for n in ast.walk(ast.parse(c.source.replace("%matplotlib", "#"))))]
    hidden = [c.source[:60] for c in edition.cells if tags(c) & HIDE_TAGS]
    raw = [c.source[:60] for c in edition.cells if "literalinclude" in c.source]
    assert not glue and not asserts and not hidden and not raw, (glue, asserts, hidden, raw)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_name_read_is_still_defined(path: Path):
    """A name the chapter's own cells define (answers aside: those are the student's) and a kept cell reads
    is still defined by a kept cell: dropping a hidden cell never takes away what the edition needs."""
    reference = nbformat.read(path, as_version=4)
    chapter = [c for c in _code(reference) if not tags(c) & {"answer", "solution"}]
    defined_by_chapter = set().union(*(_stored_and_read(c.source)[0] for c in chapter))
    kept = [_stored_and_read(c.source) for c in _code(_edition(path))]
    defined = set().union(*(stored for stored, _ in kept))
    read = set().union(*(reads for _, reads in kept))
    assert not (read & defined_by_chapter) - defined, f"{path.name}: no kept cell defines them any more"


def test_strip_verification_keeps_everything_else():
    code = ("import numpy as np\nfrom ragcourse.book.glue import glue  # rounds\n\n"
            "x = np.arange(3)\nfor i in x:\n    glue(f'x{i}', int(i))\n    assert i >= 0\n"
            "if x.sum():\n    glue('s', 1)\nelse:\n    print('none')\nprint(x)")
    kept = strip_verification(code)
    assert "glue" not in kept and "assert" not in kept
    assert "x = np.arange(3)" in kept and "print(x)" in kept and "print('none')" in kept
    ast.parse(kept)


def test_a_removed_cell_stays_only_when_a_later_cell_needs_it():
    cells = [nbformat.v4.new_code_cell("a = 1\nglue('a', a)", metadata={"tags": ["remove-cell"]}),
             nbformat.v4.new_code_cell("b = 2\nglue('b', b)", metadata={"tags": ["remove-cell"]}),
             nbformat.v4.new_code_cell("results['c'] = 3", metadata={"tags": ["remove-cell"]}),
             nbformat.v4.new_code_cell("print(b, results)", metadata={"tags": ["hide-input"]})]
    kept = without_verification(cells)
    assert [c.source for c in kept] == ["b = 2", "results['c'] = 3", "print(b, results)"]
    assert not any(tags(c) for c in kept)


def test_a_function_that_only_glues_goes_with_its_calls():
    cells = [nbformat.v4.new_code_cell("def p_glue(name, p):\n    glue(name, round(p, 4))\n\nq = 0.5\np_glue('q', q)"),
             nbformat.v4.new_code_cell("print(q)")]
    assert [c.source for c in without_verification(cells)] == ["q = 0.5", "print(q)"]


def test_literalinclude_becomes_the_source_sphinx_shows():
    markdown = "It reads:\n\n```{literalinclude} /../src/ragcourse/precision.py\n:language: python\n" \
               ":pyobject: rounded_scores\n```\n\nThen more."
    shown = with_included_source(markdown)
    source = (ROOT / "src" / "ragcourse" / "precision.py").read_text(encoding="utf-8")
    body = included_source("/../src/ragcourse/precision.py", ":pyobject: rounded_scores")
    assert body.startswith("def rounded_scores(") and body in source
    assert shown == f"It reads:\n\n```python\n{body}\n```\n\nThen more."
    with pytest.raises(ValueError, match="no object"):
        included_source("/../src/ragcourse/precision.py", ":pyobject: no_such_function")
