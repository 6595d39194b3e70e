"""Each page's height in px at a given window width, measured in headless Chromium (scripts/book_browser.py).

    python scripts/page_heights.py OUT.json [--width 1280] [PAGE ...]

Heights are `document.documentElement.scrollHeight` once MathJax has typeset, with every toggle and
dropdown left as the reader first sees it (closed), so a table moved behind a dropdown counts as short.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _driver():
    spec = importlib.util.spec_from_file_location("book_browser", ROOT / "scripts" / "book_browser.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("pages", nargs="*")
    args = parser.parse_args(argv)
    driver = _driver()
    heights = {}
    with driver.Chromium(width=args.width) as browser:
        for page in args.pages or driver.pages():
            browser.open(page)
            heights[page] = int(browser.evaluate("document.documentElement.scrollHeight"))
            print(f"{heights[page]:>7} px  {page}")
    args.out.write_text(json.dumps({"width": args.width, "heights": heights}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
