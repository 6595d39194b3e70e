"""The PDF edition: every page of the built HTML book, in the table of contents' order, printed by headless
Chromium (scripts/book_browser.py) and joined into one book with a bookmark per page.

    python scripts/book_pdf.py [OUT.pdf]        (default book/_build/pdf/ragcourse.pdf; `make pdf`)

A book, not a stack of printouts: a title page and a contents page (front matter, numbered i, ii, ...),
then the pages numbered from 1 at the foot of each page (and as the PDF's page labels); chapters, figures
and tables carry the numbers the HTML gives them. Each page of the book starts a new page of the PDF.
Before a page is printed, MathJax has typeset it and every code toggle is opened; the toggles' labels and
the exercises' solutions are not printed (book/_static/ragcourse.css, `@media print`): this is the student's
edition, the instructor has the HTML. A link to another page of the book goes to that page of the PDF; a
link to another file of the site goes to the published site (`html_baseurl` in book/_config.yml) or, while
none is set, is left as plain text: never a file:// address of the machine that printed it. A printed page
with nothing on it (no text, no image, almost no drawing) is dropped. Writes OUT.json beside the PDF: per
page, its title, first PDF page, page count, the distinct raster images it shows and its typeset formulas,
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
from pypdf.generic import ArrayObject, DictionaryObject, NameObject, TextStringObject

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


def is_blank(page) -> bool:
    """A printed page with no text, no image and (almost) no drawing: what a page break leaves behind."""
    contents = page.get_contents()
    drawn = len(contents.get_data()) if contents is not None else 0
    return not (page.extract_text() or "").strip() and not page.images and drawn < 400


def _print(browser, url: str, **options) -> PdfReader:
    browser.events = []
    browser.send("Page.navigate", {"url": url})
    browser._wait_for("Page.loadEventFired")
    return PdfReader(io.BytesIO(base64.b64decode(browser.send("Page.printToPDF", {**A4, **options})["data"])))


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def front_matter(printed: list[Printed], config: dict, start: int) -> str:
    """The title page and the contents page (every page of the book with its printed page number), as HTML."""
    rows = "".join(f'<tr><td>{_esc(p.title)}</td><td class="n">{p.first - start + 1}</td></tr>' for p in printed)
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>{FRONT_CSS}</style></head><body>"
            f"<section class='title'><h1>{_esc(config['title'])}</h1><p>{_esc(config.get('author', ''))}</p>"
            f"<p class='small'>{_esc(config.get('copyright', ''))}</p></section>"
            f"<section><h2>Contents</h2><table>{rows}</table></section></body></html>")


FRONT_CSS = """body { font-family: serif; } section { break-after: page; }
.title { text-align: center; padding-top: 30%; } .title h1 { font-size: 2.2em; } .small { font-size: 0.8em; }
table { width: 100%; border-collapse: collapse; } td { padding: 0.15em 0; } td.n { text-align: right; }"""


def numbers(count: int) -> str:
    """`count` A4 pages, each with only its number (1, 2, ...) at the foot: laid over the book's pages."""
    pages = "".join(f"<div class='p'><span>{i}</span></div>" for i in range(1, count + 1))
    return ("<!doctype html><html><head><style>@page { size: A4; margin: 0 } body { margin: 0 }"
            ".p { height: 297mm; position: relative; break-after: page; font: 10pt serif }"
            ".p span { position: absolute; bottom: 6mm; width: 100%; text-align: center }</style></head>"
            f"<body>{pages}</body></html>")


def _data_url(html_text: str) -> str:
    return "data:text/html;base64," + base64.b64encode(html_text.encode("utf-8")).decode("ascii")


def relink(writer: PdfWriter, printed: list[Printed], html: Path, site: str | None) -> None:
    """Every file:// link: to the page of the PDF it names, to the published `site`, or (no site) removed."""
    starts = {str((html / p.page).resolve()): p.first for p in printed}
    for page in writer.pages:
        kept = ArrayObject()
        for ref in page.get("/Annots", ArrayObject()):
            annot = ref.get_object()
            action = annot.get("/A")
            uri = action.get_object().get("/URI", "") if action is not None else ""
            if not str(uri).startswith("file://"):
                kept.append(ref)
                continue
            target = str(uri)[len("file://"):].split("#")[0]
            if target in starts:
                destination = ArrayObject([writer.pages[starts[target]].indirect_reference, NameObject("/Fit")])
                annot[NameObject("/A")] = DictionaryObject({NameObject("/S"): NameObject("/GoTo"),
                                                            NameObject("/D"): destination})
                kept.append(ref)
            elif site and target.startswith(str(html.resolve())):
                action.get_object()[NameObject("/URI")] = TextStringObject(
                    site.rstrip("/") + target[len(str(html.resolve())):])
                kept.append(ref)
        if "/Annots" in page:
            page[NameObject("/Annots")] = kept


def _body(browser, driver, html: Path) -> tuple[PdfWriter, list[Printed]]:
    writer, printed = PdfWriter(), []
    for page in toc_pages():
        browser.open(page, html)
        seen = browser.evaluate(PREPARE)
        browser.evaluate(driver.WAIT_FOR_MATH)
        pdf = PdfReader(io.BytesIO(base64.b64decode(browser.send("Page.printToPDF", A4)["data"])))
        kept = [p for p in pdf.pages if not is_blank(p)] or list(pdf.pages[:1])
        first = len(writer.pages)
        for one in kept:
            writer.add_page(one)
        printed.append(Printed(page, seen["title"], first, len(kept), seen["images"], seen["svg"],
                               seen["formulas"], seen["untypeset"], tuple(seen["broken"]), seen["tex"]))
    return writer, printed


def print_book(out: Path = OUT, html: Path | None = None) -> list[Printed]:
    """Print the built book into `out` (and its manifest, `out` with .json); `first` counts the front matter."""
    driver = _driver()
    html = html or driver.HTML
    config = yaml.safe_load((ROOT / "book" / "_config.yml").read_text(encoding="utf-8"))
    site = (config.get("sphinx", {}).get("config", {}) or {}).get("html_baseurl")
    with driver.Chromium(width=1000) as browser:
        body, printed = _body(browser, driver, html)
        overlay = _print(browser, _data_url(numbers(len(body.pages))), marginTop=0, marginBottom=0,
                         marginLeft=0, marginRight=0)
        for page, number in zip(body.pages, overlay.pages, strict=True):
            page.merge_page(number)
        front = _print(browser, _data_url(front_matter(printed, config, 0)))
        start = len(front.pages)
        front = _print(browser, _data_url(front_matter([_moved(p, start) for p in printed], config, start)))
    writer = PdfWriter()
    for page in [*front.pages, *body.pages]:
        writer.add_page(page)
    printed = [_moved(p, start) for p in printed]
    for p in printed:
        writer.add_outline_item(title=p.title, page_number=p.first)
    writer.set_page_label(0, start - 1, style="/r")
    writer.set_page_label(start, len(writer.pages) - 1, style="/D", start=1)
    relink(writer, printed, html, site)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        writer.write(handle)
    out.with_suffix(".json").write_text(json.dumps([asdict(p) for p in printed], indent=1) + "\n", encoding="utf-8")
    return printed


def _moved(p: Printed, by: int) -> Printed:
    return Printed(**{**asdict(p), "first": p.first + by})


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
