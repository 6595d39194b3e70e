"""Checks on the built HTML book (book/_build/html): it loads nothing from an outside host.

`make test` builds the book first (warnings as errors) and sets RAGCOURSE_REQUIRE_BOOK=1, so a
missing build fails there; a bare `pytest` without a build skips these tests.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from tests.setup_missing import missing

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "book" / "_build" / "html"
MATHJAX = HTML / "mathjax" / "tex-svg-full.js"

# Tags whose URL attributes the browser fetches by itself (plain <a href> links are not fetched).
FETCHING_TAGS = {"script", "link", "img", "iframe", "source", "video", "audio", "embed", "object",
                 "track", "input"}
URL_ATTRS = {"src", "href", "data", "poster", "srcset"}
OUTSIDE_URL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
CSS_OUTSIDE = re.compile(r"(?:@import\s+(?:url\()?|url\()\s*['\"]?(?:https?:)?//", re.IGNORECASE)

if not HTML.is_dir():
    missing(f"the book is not built: {HTML} is missing (run `make book`)", module=True)


class _Fetches(HTMLParser):
    """Collects (tag, attribute, value) for every URL a page makes the browser fetch."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in FETCHING_TAGS:
            return
        for name, value in attrs:
            if name in URL_ATTRS and value:
                for part in value.split(",") if name == "srcset" else [value]:
                    self.urls.append((tag, name, part.strip().split(" ")[0]))


def _fetches(page: Path) -> list[tuple[str, str, str]]:
    parser = _Fetches()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.urls


def _pages() -> list[Path]:
    """The site's pages (not the theme's template fragments in _static, nor MathJax's files)."""
    skip = {"_static", "mathjax", "_sources"}
    return sorted(p for p in HTML.rglob("*.html") if not skip & set(p.relative_to(HTML).parts))


def _local_target(page: Path, url: str) -> Path:
    """The file a relative URL on `page` points to (query and fragment dropped)."""
    return (page.parent / urlsplit(url).path).resolve()


def test_landing_page_and_chapter_one_exist():
    assert (HTML / "index.html").is_file()
    assert (HTML / "intro.html").is_file()
    assert (HTML / "notebooks" / "01-corpus.html").is_file()


def toc_files() -> list[str]:
    """Every file the table of contents lists (root first), with or without parts."""
    toc = yaml.safe_load((ROOT / "book" / "_toc.yml").read_text(encoding="utf-8"))
    parts = toc.get("parts", [{"chapters": toc.get("chapters", [])}])
    return [toc["root"]] + [c["file"] for part in parts for c in part.get("chapters", [])]


def test_every_toc_entry_has_a_page():
    missing = [e for e in toc_files() if not (HTML / f"{e}.html").is_file()]
    assert not missing, f"no HTML page for {missing}"


#: A numbered chapter's page; appendices (notebooks/a2-scale) are notebooks too, but unnumbered.
CHAPTER = re.compile(r"notebooks/\d\d-")


def test_chapters_are_numbered_from_one_and_reference_pages_are_not():
    numbered = {}
    for name in toc_files():
        page = (HTML / f"{name}.html").read_text(encoding="utf-8")
        number = re.search(r'<h1><span class="section-number">([\d.]+)\s*</span>', page)
        numbered[name] = number.group(1) if number else None
    chapters = sorted(n for n in numbered if CHAPTER.match(n))
    assert [numbered[c] for c in chapters] == [f"{i}." for i in range(1, len(chapters) + 1)], numbered
    assert all(numbered[n] is None for n in numbered if not CHAPTER.match(n)), numbered


def test_no_page_fetches_from_an_outside_host():
    outside = [
        (str(page.relative_to(HTML)), tag, attr, url)
        for page in _pages()
        for tag, attr, url in _fetches(page)
        if OUTSIDE_URL.match(url)
    ]
    assert not outside, f"pages load from outside hosts: {outside[:10]}"


def test_stylesheets_import_nothing_from_outside():
    offenders = [
        str(css.relative_to(HTML))
        for css in sorted((HTML / "_static").rglob("*.css"))
        if CSS_OUTSIDE.search(css.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not offenders, f"stylesheets that fetch from outside hosts: {offenders}"


def test_local_scripts_and_styles_exist():
    broken = []
    for page in _pages():
        for tag, _attr, url in _fetches(page):
            if tag in ("script", "link") and not OUTSIDE_URL.match(url) and not url.startswith("data:"):
                if not _local_target(page, url).exists():
                    broken.append((str(page.relative_to(HTML)), url))
    assert not broken, f"references to missing local files: {broken[:10]}"


def test_mathjax_is_served_locally_wherever_there_is_math():
    assert MATHJAX.is_file(), f"{MATHJAX} is missing (make mathjax)"
    with_math = [p for p in _pages() if 'class="math' in p.read_text(encoding="utf-8")]
    assert with_math, "no page contains math, so the MathJax set-up is untested"
    for page in with_math:
        scripts = [url for tag, _a, url in _fetches(page) if tag == "script" and "mathjax" in url]
        assert scripts, f"{page.relative_to(HTML)} has math but loads no MathJax"
        for url in scripts:
            assert not OUTSIDE_URL.match(url), f"{page.relative_to(HTML)} loads MathJax from {url}"
            assert _local_target(page, url) == MATHJAX.resolve(), (page, url)


EXERCISE = re.compile(r'<div class="exercise[^"]*" id="([^"]+)">\s*<p class="admonition-title">'
                      r'<span class="caption-number">Exercise ([\d.]+)\s*</span>')
LINK_TO_EXERCISE = re.compile(r'<a class="reference internal" href="([^"]*)#(ex-\d+-\d+)"[^>]*>(.*?)</a>', re.S)


def test_exercises_are_numbered_per_chapter_with_matching_labels():
    """Chapter N's exercises read "Exercise N.1", "N.2", ... and carry the labels ex-N-1, ex-N-2, ..."""
    chapters = [f for f in toc_files() if CHAPTER.match(f)]
    wrong = []
    for n, name in enumerate(chapters, start=1):
        found = EXERCISE.findall((HTML / f"{name}.html").read_text(encoding="utf-8"))
        expected = [(f"ex-{n}-{k}", f"{n}.{k}") for k in range(1, len(found) + 1)]
        if found != expected:
            wrong.append(f"{name}: {found} (expected {expected})")
    assert not wrong, "\n".join(wrong)


def test_references_to_exercises_read_their_number():
    """{numref}`ex-3-2` renders as a link reading "Exercise 3.2", wherever it is used."""
    wrong = []
    for page in _pages():
        for _target, label, text in LINK_TO_EXERCISE.findall(page.read_text(encoding="utf-8")):
            words = re.sub(r"<[^>]+>", "", text).strip()
            number = label.removeprefix("ex-").replace("-", ".")
            if words not in (f"Exercise {number}", f"exercise {number}"):
                wrong.append(f"{page.relative_to(HTML)}: link to {label} reads {words!r}")
    assert not wrong, "\n".join(wrong[:10])


def test_the_sources_page_lists_every_figure_of_the_data_file():
    """book/sources-checked.md reads data/source_figures.csv at build time: each row is on the page, with its value."""
    from ragcourse.book.sources import load

    page = (HTML / "sources-checked.html").read_text(encoding="utf-8")
    missing = [name for name in load() if f">src_{name}<" not in page]
    assert not missing, f"rows of data/source_figures.csv not on the appendix page (rebuild the book): {missing}"
    tables = re.findall(r'<table[^>]*class="[^"]*\bsource-figures\b', page)
    assert len(tables) == 2, f"expected one table per source, found {len(tables)}"


class _Images(HTMLParser):
    """Collects (src, alt) for every <img> of a page; alt is None when the attribute is missing."""

    def __init__(self) -> None:
        super().__init__()
        self.images: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            found = dict(attrs)
            self.images.append((found.get("src") or "", found.get("alt")))


def test_every_image_says_what_it_shows_to_a_screen_reader():
    # Sphinx falls back to the file name when a figure has no alt text ("../_images/a60a….png").
    lacking = []
    for page in _pages():
        parser = _Images()
        parser.feed(page.read_text(encoding="utf-8"))
        for src, alt in parser.images:
            words = (alt or "").split()
            if len(words) < 4 or re.search(r"\.(png|svg|jpe?g|gif)$", alt or "", re.IGNORECASE):
                lacking.append(f"{page.relative_to(HTML)}: {src} (alt={alt!r})")
    assert not lacking, "images without a describing alt text:\n" + "\n".join(lacking)


def test_bibliography_labels_are_plain_text_and_tell_works_apart():
    """No raw LaTeX in a label ("Aum\\"uller"), and two works never share one, in the list or in the text."""
    page = (HTML / "bibliography.html").read_text(encoding="utf-8")
    labels = [html.unescape(x) for x in re.findall(r'class="label"><span class="fn-bracket">\[</span>(.*?)<span', page)]
    assert len(labels) >= 30 and not [x for x in labels if "\\" in x or "{" in x], labels
    assert len(set(labels)) == len(labels), sorted(x for x in labels if labels.count(x) > 1)
    assert "Aumüller et al. 2020" in labels and {"Gao et al. 2023a", "Gao et al. 2023b"} <= set(labels)
    cited = {p.name: set(re.findall(r"Gao <em>et al\.</em>, 2023[a-z]?", p.read_text(encoding="utf-8")))
             for p in (HTML / "notebooks").glob("*.html")}
    assert cited["07-citations.html"] | cited["10-query-expansion.html"] == {
        "Gao <em>et al.</em>, 2023a", "Gao <em>et al.</em>, 2023b"}, cited


def test_pasted_numbers_are_not_bold():
    """myst-nb makes every glued value bold; book/_static/ragcourse.css, loaded after it, makes it plain text."""
    page = (HTML / "notebooks" / "07-citations.html").read_text(encoding="utf-8")
    sheets = re.findall(r'<link rel="stylesheet"[^>]*href="[^"]*/(mystnb|ragcourse)[^"]*"', page)
    assert sheets.index("ragcourse") > sheets.index("mystnb") and 'class="pasted-text"' in page, sheets
    css = (HTML / "_static" / "ragcourse.css").read_text(encoding="utf-8")
    assert re.search(r"span\.pasted-text\s*\{\s*font-weight:\s*inherit;", css)
