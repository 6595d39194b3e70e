"""The PDF edition: every page of the built HTML book, in the table of contents' order, printed by headless
Chromium (scripts/book_browser.py) and joined into one file with a bookmark per page.

    python scripts/book_pdf.py [OUT.pdf]        (default book/_build/pdf/ragcourse.pdf; `make pdf`)

Each page of the book starts a new page of the PDF. Before a page is printed, MathJax has typeset it and
every toggle and dropdown is opened (a printed solution cannot be clicked open). Writes OUT.json beside the
PDF: per page, its title, first PDF page, page count, the distinct raster images it shows and its typeset formulas,
which tests/test_book_pdf.py compares with the PDF. Runs offline, from book/_build/html (`make book`).
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml
from pypdf import PdfReader, PdfWriter

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "_build" / "pdf" / "ragcourse.pdf"
A4 = {"paperWidth": 8.27, "paperHeight": 11.69, "marginTop": 0.6, "marginBottom": 0.6,
      "marginLeft": 0.5, "marginRight": 0.5, "printBackground": True, "preferCSSPageSize": False}
# Runs once MathJax has typeset the page: opens what is folded, then counts what the PDF must show.
PREPARE = r"""
(() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('.dropdown').forEach(e => e.classList.add('toggle-shown'));
  const article = document.querySelector('article.bd-article') || document.body;
  const images = [...article.querySelectorAll('img')];
  const raster = images.filter(i => !/\.svg(\?|$)/i.test(i.currentSrc || i.src));
  const title = (article.querySelector('h1') || document.querySelector('title')).textContent;
  // TeX the page shows as text on purpose (code, printed output): the PDF may hold as much, and no more.
  const tex = Object.fromEntries(MARKERS.map(m => [m, 0]));
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (t.parentElement && t.parentElement.closest('mjx-container, script, style')) continue;
    for (const m of MARKERS) tex[m] += t.data.split(m).length - 1;
  }
  return {title: title.replace(/[#¶]/g, '').trim(),
          images: new Set(raster.map(i => i.currentSrc || i.src)).size, svg: images.length - raster.length,
          broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
          formulas: article.querySelectorAll('mjx-container').length,
          untypeset: article.querySelectorAll('.math:not(:has(mjx-container))').length, tex};
})()
"""
# What a formula MathJax never typeset leaves as text.
TEX_MARKERS = ("$$", "\\frac", "\\sum", "\\begin{", "\\mathrm", "\\(", "\\[")
PREPARE = f"var MARKERS = {json.dumps(TEX_MARKERS)};" + PREPARE


@dataclass(frozen=True)
class Printed:
    """One page of the book in the PDF: where it starts, how long it is, what it shows."""

    page: str
    title: str
    first: int
    pages: int
    images: int
    svg: int
    formulas: int
    untypeset: int
    broken: tuple[str, ...]
    tex: dict[str, int]


def toc_pages(toc: Path = ROOT / "book" / "_toc.yml") -> list[str]:
    """The HTML pages in reading order: the root, then every part's chapters.

    >>> toc_pages()[:2]
    ['intro.html', 'sources.html']
    """
    data = yaml.safe_load(toc.read_text(encoding="utf-8"))
    files = [data["root"]] + [c["file"] for part in data.get("parts", []) for c in part["chapters"]]
    return [f"{f}.html" for f in files]


def _driver():
    spec = importlib.util.spec_from_file_location("book_browser", ROOT / "scripts" / "book_browser.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return sys.modules[spec.name]


def print_book(out: Path = OUT, html: Path | None = None) -> list[Printed]:
    """Print every page of the built book into `out` (and its manifest, `out` with .json)."""
    driver = _driver()
    html = html or driver.HTML
    writer, printed = PdfWriter(), []
    with driver.Chromium(width=1000) as browser:
        for page in toc_pages():
            browser.open(page, html)
            seen = browser.evaluate(PREPARE)
            browser.evaluate(driver.WAIT_FOR_MATH)
            pdf = PdfReader(io.BytesIO(base64.b64decode(browser.send("Page.printToPDF", A4)["data"])))
            first = len(writer.pages)
            writer.append(pdf)
            writer.add_outline_item(title=seen["title"], page_number=first)
            printed.append(Printed(page, seen["title"], first, len(pdf.pages), seen["images"], seen["svg"],
                                   seen["formulas"], seen["untypeset"], tuple(seen["broken"]), seen["tex"]))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        writer.write(handle)
    out.with_suffix(".json").write_text(json.dumps([asdict(p) for p in printed], indent=1) + "\n", encoding="utf-8")
    return printed


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUT
    if not (ROOT / "book" / "_build" / "html" / "intro.html").is_file():
        print("build the book first: make book", file=sys.stderr)
        return 1
    printed = print_book(out)
    print(f"wrote {out}: {sum(p.pages for p in printed)} pages, {len(printed)} chapters and pages of the book")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
