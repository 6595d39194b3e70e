"""Every page of the built book, opened in a real headless Chromium at 1280 px and 400 px (scripts/book_browser.py).

Per page at 1280 px: nothing inside the main column is wider than the column (tables, display math, figures,
printed output; code that scrolls sideways is allowed), no raw role or glue placeholder is left in
the text, and the page requests nothing from another host. At both widths: no table cell breaks a word
across lines (a column is at least as wide as its longest word), and nothing reaches past the window's
edge unless a box that scrolls sideways holds it (at 400 px wide tables and code scroll in their box).
Pages are opened as file:// URLs, so the test runs offline. `make test` builds the book and installs
Debian's chromium first, and sets RAGCOURSE_REQUIRE_BOOK=1, so there a missing book or browser is a
failure; a bare `pytest` skips.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.setup_missing import missing

ROOT = Path(__file__).resolve().parents[1]


def _driver():
    spec = importlib.util.spec_from_file_location("book_browser", ROOT / "scripts" / "book_browser.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is being made
    spec.loader.exec_module(module)
    return module


book_browser = _driver()
if not (book_browser.HTML / "intro.html").is_file():
    missing(f"the book is not built: {book_browser.HTML} is missing (run `make book`)", module=True)
if book_browser.find_chromium() is None:
    missing("chromium is not installed: `make test` installs it (apt-get install chromium)", module=True)

PAGES = book_browser.pages()
# The browser's DevTools socket is on 127.0.0.1; tests/conftest.py still blocks every other host.
pytestmark = pytest.mark.enable_socket


NARROW = 400  # a phone held upright


def _visits(width: int):
    """page -> Visit, each page opened and measured once, in one browser `width` px wide."""
    found: dict[str, object] = {}
    with book_browser.Chromium(width=width) as browser:

        def visit(page: str):
            if page not in found:
                found[page] = browser.check(page)
            return found[page]

        yield visit


@pytest.fixture(scope="module")
def visits():
    yield from _visits(book_browser.WIDTH)


@pytest.fixture(scope="module")
def narrow_visits():
    yield from _visits(NARROW)


def test_every_chapter_and_reference_page_is_checked():
    names = {Path(p).stem for p in PAGES}
    assert {"intro", "sources", "glossary", "bibliography", "01-corpus"} <= names, sorted(names)


@pytest.mark.parametrize("page", PAGES)
def test_nothing_is_wider_than_the_main_column(visits, page):
    visit = visits(page)
    left, right = visit.column
    assert right - left > 500, f"{page}: the main column is only {right - left} px wide at 1280 px"
    assert not visit.overflow, (f"{page}: wider than the main column ({right - left} px):\n  "
                                + "\n  ".join(visit.overflow))


@pytest.mark.parametrize("page", PAGES)
def test_no_raw_role_or_glue_placeholder_is_left(visits, page):
    visit = visits(page)
    assert not visit.raw, f"{page}: role or directive text left unrendered: {visit.raw}"
    assert not visit.placeholders, f"{page}: placeholder output instead of content: {visit.placeholders}"


@pytest.mark.parametrize("page", PAGES)
def test_no_script_fails_and_every_local_file_loads(visits, page):
    visit = visits(page)
    assert not visit.errors, f"{page}: {visit.errors}"


@pytest.mark.parametrize("page", PAGES)
def test_the_page_requests_nothing_from_another_host(visits, page):
    visit = visits(page)
    assert visit.requests, f"{page}: no request recorded at all, so this check saw nothing"
    assert not visit.outside, f"{page}: requests to other hosts: {visit.outside}"


@pytest.mark.parametrize("page", PAGES)
def test_tables_keep_words_whole_and_nothing_runs_off_screen_at_1280_px(visits, page):
    visit = visits(page)
    assert not visit.broken, f"{page}: table cells narrower than a word:\n  " + "\n  ".join(visit.broken)
    assert not visit.offscreen, f"{page}: past the window's edge:\n  " + "\n  ".join(visit.offscreen)


@pytest.mark.parametrize("page", PAGES)
def test_tables_keep_words_whole_and_nothing_runs_off_screen_at_400_px(narrow_visits, page):
    visit = narrow_visits(page)
    assert not visit.broken, f"{page}: table cells narrower than a word:\n  " + "\n  ".join(visit.broken)
    assert not visit.offscreen, f"{page}: past the window's edge:\n  " + "\n  ".join(visit.offscreen)


FAULTY_PAGE = """<!doctype html><html><head><style>article { width: 600px; padding: 0 10px; }</style></head>
<body><article class="bd-article">
<h2>A section</h2>
<p>The value is {glue:text}<code>missing</code>, see {numref}<code>ex-3-2</code>.</p>
<div style="overflow-x: auto"><table><tr><th>cut</th><td style="white-space: nowrap">answered_with_needle
answered_without_needle wrongly_refused ood_refused answered_with_needle bluffed</td></tr></table></div>
<p>fits</p><pre>a long line of typed code that scrolls {glue:text} inside its own box, which is fine ......</pre>
<div class="cell_output"><pre>&lt;Figure size 640x480 with 1 Axes&gt;</pre></div>
<img src="https://example.invalid/logo.png" alt=""><script src="//cdn.example.invalid/x.js"></script>
<script>const twice = 1;</script><script>const twice = 2;</script><script>console.error("a logged error")</script>
<link rel="stylesheet" href="missing.css">
</article></body></html>"""


def test_the_checks_catch_a_faulty_page(tmp_path):
    """A hand-made page with one fault of each kind: every check reports it (and only it)."""
    (tmp_path / "faulty.html").write_text(FAULTY_PAGE, encoding="utf-8")
    with book_browser.Chromium() as browser:
        visit = browser.check("faulty.html", html=tmp_path)
    assert visit.column == (18, 618), visit.column  # body margin 8 px + padding 10 px; 600 px wide
    assert len(visit.overflow) == 1 and '<div> under "A section": "cut answered_with_needle' in visit.overflow[0], (
        visit.overflow)
    assert visit.raw == ["{glue:text}", "{numref}"], visit.raw
    assert visit.placeholders == ["<Figure size 640x480 with 1 Axes>"], visit.placeholders
    expected = ["file://cdn.example.invalid/x.js", "https://example.invalid/logo.png"]
    assert sorted(visit.outside) == expected, visit.outside
    errors = " / ".join(visit.errors)
    assert len(visit.errors) == 3 and "'twice' has already been declared" in errors, visit.errors
    assert "console: a logged error" in errors and "missing.css (net::ERR_FILE_NOT_FOUND)" in errors, visit.errors


NARROW_PAGE = """<!doctype html><html><head><style>
body { margin: 0 } article { padding: 0 } th { overflow-wrap: anywhere } .scroll { overflow-x: auto }
</style></head><body><article class="bd-article">
<h2>Squeezed</h2>
<table style="width: 120px"><tr><th>strategy</th><th>chunks</th><th>questions</th><th>destroyed</th></tr></table>
<h2>Scrolled</h2>
<div class="scroll"><table><tr><td style="white-space: nowrap">""" + "wide " * 150 + """</td></tr></table></div>
<pre>code that scrolls in its own box """ + "x" * 200 + """</pre>
<h2>Loose</h2>
<p><span style="display: inline-block; width: 700px">a banner wider than the phone</span></p>
</article></body></html>"""


def test_the_narrow_checks_catch_a_squeezed_header_and_a_loose_element(tmp_path):
    """At 400 px: a header squeezed below its longest word and an element past the edge are reported;
    a table and a code block that scroll inside their own boxes are not."""
    (tmp_path / "narrow.html").write_text(NARROW_PAGE, encoding="utf-8")
    with book_browser.Chromium(width=NARROW) as browser:
        visit = browser.check("narrow.html", html=tmp_path)
    assert visit.broken and all('under "Squeezed"' in b for b in visit.broken), visit.broken
    assert any('"questions"' in b for b in visit.broken), visit.broken
    loose = [o for o in visit.offscreen if "page itself" not in o]
    assert len(loose) == 1 and 'under "Loose"' in loose[0] and "a banner" in loose[0], visit.offscreen


# ---- lesson budgets (issue 37) ----------------------------------------------------------------------------
# A chapter with a lab (notebooks/labs/NN-name.ipynb) is a LESSON: what a student reads in one sitting.
# Measured at 1280 px with every toggle closed (as the page opens): at most 18,000 px tall and at most 120
# lines of code in view (code cells' inputs and listings; a closed toggle's code is not in view). Chapters
# not split yet are measured and reported (pytest -rs), not held to the budget.
MAX_HEIGHT, MAX_CODE_LINES = 18_000, 120
BUDGET = """(() => {
  const main = document.querySelector('article.bd-article') || document.body;
  const seen = el => el.getClientRects().length > 0 && el.innerText.trim() !== '';  // a closed toggle: ''
  const code = Array.from(main.querySelectorAll('div.highlight pre'))
    .filter(el => seen(el) && !el.closest('.cell_output'))
    .reduce((n, el) => n + el.innerText.replace(/\\n+$/, '').split('\\n').length, 0);
  const clone = main.cloneNode(true);
  clone.querySelectorAll('pre, .cell_output, details, script, style, table, .MathJax, mjx-container')
    .forEach(el => el.remove());
  const words = (clone.textContent.match(/[A-Za-z0-9][\\w'’.,-]*/g) || []).length;
  return {height: document.documentElement.scrollHeight, code: code, words: words};
})()"""
CHAPTERS = sorted(p for p in PAGES if Path(p).parent.name == "notebooks")


def has_lab(page: str) -> bool:
    """Whether a chapter page (notebooks/NN-name.html) has its lab notebook, which makes it a lesson."""
    return (ROOT / "notebooks" / "labs" / Path(page).with_suffix(".ipynb").name).is_file()


@pytest.fixture(scope="module")
def budgets():
    found: dict[str, dict] = {}
    with book_browser.Chromium(width=book_browser.WIDTH) as browser:

        def measure(page: str) -> dict:
            if page not in found:
                browser.open(page)
                found[page] = browser.evaluate(BUDGET)
            return found[page]

        yield measure


@pytest.mark.parametrize("page", CHAPTERS)
def test_a_lesson_fits_its_budget(budgets, page):
    found = budgets(page)
    figures = f"{page}: {found['height']:,} px, {found['code']} code lines in view, {found['words']:,} words"
    print(figures)
    if not has_lab(page):
        pytest.skip(f"not split into lesson and lab yet: {figures}")
    assert found["height"] <= MAX_HEIGHT and found["code"] <= MAX_CODE_LINES, (
        f"{figures} (a lesson: at most {MAX_HEIGHT:,} px and {MAX_CODE_LINES} code lines)")


BUDGET_PAGE = """<!doctype html><html><body><article class="bd-article">
<p>Five words of prose here.</p>
<div class="highlight"><pre>a = 1
b = 2
</pre></div>
<details><summary>Show code</summary><div class="highlight"><pre>hidden = 1
also = 2</pre></div></details>
<div class="cell_output"><div class="highlight"><pre>printed output</pre></div></div>
<div style="height: 3000px"></div>
</article></body></html>"""


def test_the_budget_counts_code_in_view_and_the_page_height(tmp_path):
    (tmp_path / "budget.html").write_text(BUDGET_PAGE, encoding="utf-8")
    with book_browser.Chromium() as browser:
        browser.open("budget.html", html=tmp_path)
        found = browser.evaluate(BUDGET)
    assert found["code"] == 2 and found["words"] == 5 and found["height"] > 3000, found
