"""Open the built book in headless Chromium (Debian's `chromium`) over the DevTools protocol.

    python scripts/book_browser.py check [PAGE ...]        what tests/test_book_browser.py checks, as a report
    python scripts/book_browser.py screenshots [PAGE ...]  full-page PNGs into book/_build/screenshots/

PAGE is a path under book/_build/html (default: every page). Pages are opened as file:// URLs at a
1280 px wide window, so nothing is served and nothing needs the network; every request a page makes
is recorded, and one to another host is a failure. The protocol is spoken directly (websocket-client),
so no driver binary and no browser download are needed. RAGCOURSE_BROWSER_WIDTH=400 checks at a phone's
width instead (tests/test_book_browser.py checks both). Leaves out: other browsers.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import websocket

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "book" / "_build" / "html"
SHOTS = ROOT / "book" / "_build" / "screenshots"
WIDTH = 1280
LOCAL_HOSTS = {"", "localhost", "127.0.0.1", "[::1]", "::1"}
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions", "--no-first-run",
         "--no-default-browser-check", "--hide-scrollbars", "--mute-audio", "--disable-dev-shm-usage",
         "--remote-debugging-port=0", "--remote-allow-origins=*"]

# Runs in the page once it has loaded and MathJax has typeset: opens every toggle and dropdown, then
# measures. Returns {column: [left, right], overflow: [...], raw: [...], placeholders: [...], broken: [...],
# offscreen: [...], viewport: px}.
MEASURE = r"""
(() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  if (!article) return {error: 'no article element'};
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('.dropdown').forEach(e => e.classList.add('toggle-shown'));
  const style = getComputedStyle(article);
  const box = article.getBoundingClientRect();
  const left = box.left + parseFloat(style.paddingLeft), right = box.right - parseFloat(style.paddingRight);
  // Code (cell inputs, code blocks in the prose) scrolls sideways by design: a long line of code is not a
  // layout fault. What a cell prints is checked: a printed table wider than the column hides its last columns.
  const skip = '.margin, aside.sidebar, .sidebar, .tag_margin, .marginnote, .headerlink, script, style';
  const isCode = (el) => el.closest('pre') && !el.closest('.cell_output');
  const describe = (el) => {
    const cls = (el.getAttribute('class') || '').split(/\s+/).filter(Boolean).slice(0, 3).join('.');
    let heading = '', node = el;
    while (node && node !== article && !heading) {
      let prev = node.previousElementSibling;
      while (prev && !heading) {
        const h = prev.matches('h1,h2,h3,h4') ? prev : prev.querySelector('h1,h2,h3,h4');
        if (h) heading = h.textContent.replace('#', '').trim();
        prev = prev.previousElementSibling;
      }
      node = node.parentElement;
    }
    const text = (el.innerText || el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 70);
    return `<${el.tagName.toLowerCase()}${cls ? '.' + cls : ''}> under "${heading.slice(0, 60)}": "${text}"`;
  };
  const flagged = new Set(), overflow = [];
  for (const el of article.querySelectorAll('*')) {
    if (el.ownerSVGElement || el.closest(skip) || isCode(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
    const wide = r.right > right + 1 || r.left < left - 1;
    // Content wider than its own box: scrolled or clipped out of sight, or (overflow: visible) sticking out.
    const scrolls = getComputedStyle(el).overflowX !== 'visible';
    const hidden = el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1
      && (scrolls || r.left + el.scrollWidth > right + 1);
    if (!wide && !hidden) continue;
    flagged.add(el);
    if (el.parentElement && flagged.has(el.parentElement)) continue;
    const width = Math.round(wide ? r.width : el.scrollWidth);
    overflow.push(`${describe(el)} is ${width} px wide` + (wide ? '' : ' inside a box that scrolls or clips it'));
  }
  const prose = [], all = [];
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const parent = t.parentElement;
    if (!parent || parent.closest('script, style, mjx-container')) continue;
    all.push(t.data);
    if (!parent.closest('pre, .highlight, .output, .cell_output')) prose.push(t.data);
  }
  const role = /\{(?:glue(?::\w*)?|term|cite(?::\w+)?|numref|ref|doc|eq|download|abbr|srcfig|prf:\w+)\}`?/g;
  const raw = [...new Set((prose.join(' ').match(role) || []).concat(
      prose.join(' ').match(/(?:^|\s)(?::::|```)\{[\w:-]+\}/g) || []))];
  const placeholder = new RegExp(['<Figure size \\d+x\\d+ with \\d+ Axes>', '<IPython\\.core\\.display\\.\\w+ object>',
                                  ' object at 0x[0-9a-f]+>'].join('|'), 'g');
  const placeholders = [...new Set(all.join(' ').match(placeholder) || [])];
  // A table cell narrower than its longest word breaks that word across lines ("chunk s", the row index
  // "1 0"): each word of each cell (a line may break after a hyphen) must sit on one line.
  const broken = [], range = document.createRange();
  for (const cell of article.querySelectorAll('th, td')) {
    if (cell.closest(skip) || cell.getClientRects().length === 0) continue;
    const texts = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let t = texts.nextNode(); t; t = texts.nextNode()) {
      for (const m of t.data.matchAll(/[^\s-]+-?/g)) {
        range.setStart(t, m.index);
        range.setEnd(t, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(`<${cell.tagName.toLowerCase()}> breaks "${m[0].slice(0, 40)}" across `
                                       + `${tops.size} lines (${describe(cell)})`);
      }
    }
  }
  // Nothing may reach past the window's right edge unless a box that scrolls sideways holds it.
  const viewport = document.documentElement.clientWidth, offscreen = [];
  const scroller = (el) => {
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (['auto', 'scroll'].includes(getComputedStyle(a).overflowX)) return true;
    }
    return false;
  };
  const seen = new Set();
  for (const el of article.querySelectorAll('*')) {
    if (el.ownerSVGElement || el.closest('script, style, .headerlink')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= viewport + 1 || scroller(el)) continue;
    seen.add(el);
    if (el.parentElement && seen.has(el.parentElement)) continue;
    offscreen.push(`${describe(el)} reaches ${Math.round(r.right)} px`);
  }
  if (document.documentElement.scrollWidth > viewport + 1) {
    offscreen.push(`the page itself is ${document.documentElement.scrollWidth} px wide`);
  }
  return {column: [Math.round(left), Math.round(right)], overflow, raw, placeholders, broken, offscreen,
          viewport};
})()
"""

WAIT_FOR_MATH = """
(window.MathJax && MathJax.startup && MathJax.startup.promise)
  ? MathJax.startup.promise.then(() => true) : Promise.resolve(false)
"""


@dataclass
class Visit:
    """What one page did: the URLs it requested, and what MEASURE found."""

    page: str
    requests: list[str] = field(default_factory=list)
    column: tuple[int, int] = (0, 0)
    overflow: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    offscreen: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def outside(self) -> list[str]:
        """Requests to any host but this machine (file:// with a host counts: "//cdn..." on a file page)."""
        return [u for u in self.requests if urlsplit(u).scheme not in ("data", "blob", "about", "chrome")
                and (urlsplit(u).hostname or "") not in LOCAL_HOSTS]


def find_chromium() -> str | None:
    """Debian's chromium (or another Chromium-based browser) on PATH; $CHROMIUM wins."""
    names = [os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"]
    return next((shutil.which(n) for n in names if n and shutil.which(n)), None)


def _is_redirect(path: Path) -> bool:
    return 'http-equiv="refresh"' in path.read_text(encoding="utf-8", errors="replace")[:2000].lower()


def pages(html: Path = HTML) -> list[str]:
    """Every page of the built site, relative to `html`: not the theme's fragments, MathJax's files, or
    a redirect stub (index.html sends the reader on to intro.html)."""
    skip = {"_static", "mathjax", "_sources", "_images"}
    found = (p for p in html.rglob("*.html") if not skip & set(p.relative_to(html).parts))
    return sorted(str(p.relative_to(html)) for p in found if not _is_redirect(p))


def _errors(events: list[dict]) -> list[str]:
    """What the page's scripts threw or logged as errors, and the local files it failed to load (a request
    to another host is reported by `Visit.outside`, not here)."""
    urls = {e["params"]["requestId"]: e["params"]["request"]["url"] for e in events
            if e.get("method") == "Network.requestWillBeSent"}
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            found.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Network.loadingFailed":
            url = urlsplit(urls.get(params.get("requestId"), ""))
            if url.scheme == "file" and not url.hostname:
                found.append(f"failed to load {url.path} ({params.get('errorText')})")
    return found


class Chromium:
    """One headless Chromium and one tab, driven over the DevTools protocol (use as a context manager)."""

    def __init__(self, binary: str | None = None, width: int = WIDTH, height: int = 900, timeout: float = 60):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise FileNotFoundError("no chromium on PATH (Debian: apt-get install chromium)")
        self.width, self.height, self.timeout = width, height, timeout
        self._ids = itertools.count(1)
        self.events: list[dict] = []

    def __enter__(self) -> Chromium:
        self._profile = tempfile.mkdtemp(prefix="ragcourse-chromium-")
        args = [self.binary, *FLAGS, f"--user-data-dir={self._profile}",
                f"--window-size={self.width},{self.height}", "about:blank"]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.is_file() and len(port_file.read_text().split()) >= 2):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(f"{self.binary} did not start (exit code {self._proc.returncode})")
            time.sleep(0.05)
        port, path = port_file.read_text().split()[:2]
        self._ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=self.timeout,
                                               suppress_origin=True)
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self._session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                  session=False)["sessionId"]
        for method in ("Page.enable", "Network.enable", "Runtime.enable"):
            self.send(method)
        # The browser never goes out: requests to other hosts are blocked (and still recorded as attempts).
        self.send("Network.setBlockedURLs", {"urls": ["http://*", "https://*", "ws://*", "wss://*", "ftp://*"]})
        self._window(self.height)
        return self

    def _window(self, height: int) -> None:
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def __exit__(self, *exc) -> None:
        if getattr(self, "_ws", None):
            self._ws.close()
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    def send(self, method: str, params: dict | None = None, session: bool = True) -> dict:
        """Send one command and return its result; events that arrive meanwhile are kept in `events`."""
        message = {"id": next(self._ids), "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        self._ws.send(json.dumps(message))
        while True:
            reply = json.loads(self._ws.recv())
            if reply.get("id") == message["id"]:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _wait_for(self, event: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == event for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {self.timeout} s")
            self.events.append(json.loads(self._ws.recv()))

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (promises are awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True, "timeout": self.timeout * 1000})
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def open(self, page: str, html: Path = HTML) -> Visit:
        """Load one page (relative to `html`), wait for MathJax, and record its requests."""
        self.events = []
        self.send("Page.navigate", {"url": (html / page).resolve().as_uri()})
        self._wait_for("Page.loadEventFired")
        self.evaluate(WAIT_FOR_MATH)
        requests = [e["params"]["request"]["url"] for e in self.events
                    if e.get("method") == "Network.requestWillBeSent"]
        return Visit(page, requests)

    def check(self, page: str, html: Path = HTML) -> Visit:
        """Open a page and measure it (see MEASURE); requests made while measuring count too."""
        visit = self.open(page, html)
        found = self.evaluate(MEASURE)
        if "error" in found:
            raise RuntimeError(f"{page}: {found['error']}")
        visit.requests += [e["params"]["request"]["url"] for e in self.events
                           if e.get("method") == "Network.requestWillBeSent" and e["params"]["request"]["url"]
                           not in visit.requests]
        visit.column, visit.overflow = tuple(found["column"]), found["overflow"]
        visit.raw, visit.placeholders = found["raw"], found["placeholders"]
        visit.broken, visit.offscreen = found["broken"], found["offscreen"]
        visit.errors = _errors(self.events)
        return visit

    def screenshot(self, page: str, out: Path, html: Path = HTML, max_height: int = 16_000) -> Path:
        """A PNG of the whole page (up to `max_height` px tall) at the window's width."""
        self.open(page, html)
        height = min(int(self.evaluate("document.documentElement.scrollHeight")), max_height)
        # A window as tall as the page, so that sticky headers are drawn once, at the top.
        self._window(height)
        try:
            self.evaluate(WAIT_FOR_MATH)
            shot = self.send("Page.captureScreenshot", {"format": "png"})
        finally:
            self._window(self.height)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(shot["data"]))
        return out


def _report(visit: Visit) -> list[str]:
    lines = [f"  outside request: {u}" for u in visit.outside]
    lines += [f"  overflow: {o}" for o in visit.overflow]
    lines += [f"  raw role or directive: {r}" for r in visit.raw]
    lines += [f"  placeholder output: {p}" for p in visit.placeholders]
    lines += [f"  word broken in a table: {b}" for b in visit.broken]
    lines += [f"  past the window's edge: {o}" for o in visit.offscreen]
    return lines


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("check", "screenshots"):
        print(__doc__)
        return 2
    if not (HTML / "intro.html").is_file():
        print("build the book first: make book", file=sys.stderr)
        return 1
    chosen = argv[1:] or pages()
    failed = 0
    width = int(os.environ.get("RAGCOURSE_BROWSER_WIDTH", WIDTH))
    with Chromium(width=width) as browser:
        for page in chosen:
            if argv[0] == "screenshots":
                name = page.removesuffix(".html").replace("/", "-").removeprefix("notebooks-")
                print(browser.screenshot(page, SHOTS / f"{name}.png"))
                continue
            problems = _report(browser.check(page))
            failed += bool(problems)
            print(f"{'FAIL' if problems else 'ok  '} {page}", *problems, sep="\n" if problems else "")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
