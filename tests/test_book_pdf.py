"""The PDF edition (`make pdf`, scripts/book_pdf.py), printed from the built book by headless Chromium.

A book (issue 37): a title page and a contents page whose page numbers are the pages where each part starts,
page numbers printed on every page and given as page labels, numbered chapters, links that stay inside the PDF
or go to the published site (never file://), no toggle label, no blank page, no solution printed inline.

Checked against what each page of the book shows (the manifest the script writes while printing): every
page of the table of contents is in the PDF, in order, starting a PDF page of its own with a bookmark; no
image is broken and every raster image reaches the PDF; every formula was typeset, and the PDF's text holds
no more raw TeX ("$$", "\\frac", ...) than the page shows as text on purpose (code, printed output).
Like tests/test_book_browser.py: needs the built book and chromium (a failure under `make test`, else a skip).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.setup_missing import missing

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return sys.modules[spec.name]


book_browser = _script("book_browser")
book_pdf = _script("book_pdf")
if not (book_browser.HTML / "intro.html").is_file() or book_browser.find_chromium() is None:
    missing("the book is not built or chromium is missing (`make test` builds and installs both)", module=True)

pytestmark = pytest.mark.enable_socket  # the browser's DevTools socket is on 127.0.0.1


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    """(manifest, reader) of a PDF printed afresh from the built book."""
    from pypdf import PdfReader

    out = tmp_path_factory.mktemp("pdf") / "ragcourse.pdf"
    printed = book_pdf.print_book(out)
    return printed, PdfReader(out)


def _text(reader, first: int, count: int) -> str:
    return "\n".join(reader.pages[i].extract_text() or "" for i in range(first, first + count))


def test_every_page_of_the_book_starts_its_own_pages_in_order(edition):
    printed, reader = edition
    assert [p.page for p in printed] == book_pdf.toc_pages()
    assert all(p.pages >= 1 for p in printed), [(p.page, p.pages) for p in printed if p.pages < 1]
    front = printed[0].first  # the title and contents pages
    assert front >= 2 and len(reader.pages) == front + sum(p.pages for p in printed)
    starts = [p.first for p in printed]
    assert starts == [front + sum(p.pages for p in printed[:i]) for i in range(len(printed))]
    marks = [(item.title, reader.get_destination_page_number(item)) for item in reader.outline]
    assert marks == [(p.title, p.first) for p in printed], marks
    chapters = [p for p in printed if p.page.startswith("notebooks/")]
    # A chapter of the book is tens of screens: a handful of PDF pages would mean it was cut short.
    assert all(p.pages >= 5 for p in chapters), [(p.page, p.pages) for p in chapters]


def test_no_image_is_missing(edition):
    printed, reader = edition
    assert not [p for p in printed if p.broken], [(p.page, p.broken) for p in printed if p.broken]
    assert sum(p.images for p in printed) > 0, "no raster image in the book at all: nothing was checked"
    for p in printed:
        found = sum(len(reader.pages[i].images) for i in range(p.first, p.first + p.pages))
        assert found >= p.images, f"{p.page}: {p.images} raster images on the page, {found} in its PDF pages"


def test_every_formula_is_typeset(edition):
    printed, reader = edition
    assert sum(p.formulas for p in printed) > 50, "MathJax typeset almost nothing: is book/_extra/mathjax there?"
    assert not [p for p in printed if p.untypeset], [(p.page, p.untypeset) for p in printed if p.untypeset]
    for p in printed:
        text = _text(reader, p.first, p.pages)
        extra = {m: text.count(m) for m in book_pdf.TEX_MARKERS if text.count(m) > p.tex[m]}
        assert not extra, f"{p.page}: raw TeX in the PDF beyond what the page shows as text: {extra}, {p.tex}"


def test_title_page_and_contents_with_page_numbers(edition):
    printed, reader = edition
    front = printed[0].first
    assert "Production RAG" in _text(reader, 0, 1)
    contents = _text(reader, 1, front - 1)
    assert "Contents" in contents
    for p in printed:
        number = p.first - front + 1
        assert re.search(rf"{re.escape(p.title[:40])}.*?\b{number}\b", contents, re.S), (p.title, number)


def test_every_page_is_numbered_and_labelled(edition):
    printed, reader = edition
    front = printed[0].first
    labels = reader.page_labels
    assert labels[:front] == ["i", "ii", "iii", "iv"][:front] and labels[front] == "1", labels[:front + 2]
    unnumbered = [i for i in range(front, len(reader.pages))
                  if str(i - front + 1) not in (reader.pages[i].extract_text() or "").split()]
    assert not unnumbered, f"PDF pages without their printed number: {unnumbered[:10]}"


def test_chapters_are_numbered(edition):
    printed, _ = edition
    chapters = [p for p in printed if re.fullmatch(r"notebooks/\d\d-.*", p.page)]
    assert chapters and all(re.match(rf"{int(p.page[10:12])}\. ", p.title) for p in chapters), [
        p.title for p in chapters]


def test_no_link_to_a_file_of_the_printing_machine(edition):
    _, reader = edition
    found = [a.get_object().get("/A", {}).get("/URI") for page in reader.pages for a in page.get("/Annots", [])
             if str(a.get_object().get("/A", {}).get("/URI", "")).startswith("file:")]
    assert not found, found[:5]


def test_no_toggle_label_no_blank_page_no_inline_solution(edition):
    _, reader = edition
    texts = [page.extract_text() or "" for page in reader.pages]
    labels = [i for i, t in enumerate(texts) if re.search(r"(Show|Hide) code cell (source|output|content)", t)]
    assert not labels, f"toggle labels printed on pages {labels[:10]}"
    blank = [i for i, page in enumerate(reader.pages) if book_pdf.is_blank(page)]
    assert not blank, f"blank pages {blank[:10]}"
    solutions = [i for i, t in enumerate(texts) if re.search(r"Solution to Exercise", t)]
    assert not solutions, f"solutions printed on pages {solutions[:10]}"
