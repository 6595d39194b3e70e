"""Load a local HTML file in headless Debian `chromium` and report what it requested and rendered.

Driven over the DevTools protocol (websocket-client, already in the lock): every request the page
makes is recorded from `Network.requestWillBeSent`, so a request to another host is seen even
when it fails. Tests that need it skip when no `chromium` is installed (`apt-get install chromium`).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
         "--hide-scrollbars", "--remote-debugging-port=0")
PROBE = """JSON.stringify({
  images: document.images.length,
  broken: Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).length,
  text: document.body.innerText,
  height: document.documentElement.scrollHeight,
  wide: Array.from(document.querySelectorAll('table')).filter(t =>
    t.scrollWidth > t.parentElement.clientWidth + 1 || t.getBoundingClientRect().right > window.innerWidth + 1)
    .map(t => (t.closest('[id]') || {id: ''}).id + ': ' + Array.from(t.querySelectorAll('th')).map(h => h.innerText)
    .join('|'))})"""


@dataclass(frozen=True)
class Page:
    """What the browser did with one page."""

    requests: tuple[str, ...]
    outside_requests: tuple[str, ...]
    images: int
    broken_images: int
    text: str
    wide_tables: tuple[str, ...] = ()  # tables wider than their box or the window (a reader scrolls sideways)


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium on this machine (Debian: apt-get install chromium)")
    return path


def _port(profile: Path, process: subprocess.Popen, timeout: float = 30) -> int:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker.is_file() and marker.read_text().strip():
            return int(marker.read_text().split()[0])
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with status {process.returncode}")
        time.sleep(0.1)
    raise TimeoutError("chromium did not open its DevTools port")


class _Session:
    """A DevTools connection to one page target: `call` sends a command and keeps the events."""

    def __init__(self, url: str):
        import websocket

        self.ws = websocket.create_connection(url, timeout=60, suppress_origin=True)
        self.next_id, self.events = 0, []

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == event for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {timeout} s")
            self.events.append(json.loads(self.ws.recv()))


def load_page(html: Path, screenshot: Path | None = None, width: int = 1280) -> Page:
    """Open `html` (a local file), wait for its load event, and probe it; optionally save a full-page PNG."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:  # chromium helpers may still write
        process = subprocess.Popen([chromium(), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port = _port(Path(profile), process)
            request = urllib.request.Request(f"http://127.0.0.1:{port}/json/new?about:blank", method="PUT")
            with urllib.request.urlopen(request, timeout=30) as reply:
                target = json.load(reply)
            session = _Session(target["webSocketDebuggerUrl"])
            session.call("Network.enable")
            session.call("Page.enable")
            session.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1,
                         mobile=False)
            session.call("Page.navigate", url=Path(html).resolve().as_uri())
            session.wait_for("Page.loadEventFired")
            probe = json.loads(session.call("Runtime.evaluate", expression=PROBE, returnByValue=True)
                               ["result"]["value"])
            if screenshot is not None:
                shot = session.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
                Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
            session.ws.close()
        finally:
            process.terminate()
            process.wait(timeout=30)
    urls = tuple(e["params"]["request"]["url"] for e in session.events
                 if e.get("method") == "Network.requestWillBeSent")
    return Page(urls, tuple(u for u in urls if not u.startswith(LOCAL_SCHEMES)), probe["images"],
                probe["broken"], probe["text"], tuple(probe["wide"]))
