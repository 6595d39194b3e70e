"""The screenshot of `report.html` on the book's page about your own documents (book/figures/eval-report.png).

Exports the course corpus as files, runs `ragcourse eval` on it with the original chapter's 32
questions and the out-of-domain queries (strategies C and E, dense and hybrid), opens the report in
headless chromium (tests/browser.py, 1280 px wide) and keeps the top of the page. Beside the picture it writes
how it was made (book/figures/eval-report.json: the command, the report's sections in order, the picture's
sha256), which tests/test_eval_outputs.py compares with the report the code writes today:

    python scripts/screenshot_eval_report.py [--out book/figures/eval-report.png] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import load_page  # noqa: E402
from PIL import Image  # noqa: E402

from ragcourse.cli import main as cli  # noqa: E402
from ragcourse.cli.folder import export_corpus  # noqa: E402
from ragcourse.corpus import load_corpus  # noqa: E402
from ragcourse.groundtruth import OUT_OF_DOMAIN_FILE, load_questions  # noqa: E402
from ragcourse.paths import CACHE_ROOT  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "book" / "figures" / "eval-report.png")
    parser.add_argument("--height", type=int, default=1500, help="pixels kept from the top of the page")
    parser.add_argument("--cache-dir", type=Path, default=CACHE_ROOT, help="the vector cache (default: the "
                        "chapters')")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus = load_corpus()
        export_corpus(corpus, root / "my-docs")
        questions = root / "questions.jsonl"
        questions.write_text("".join(json.dumps({"id": q.id, "needle": q.needle, "question": q.question,
                                                 "ticket": q.ticket}) + "\n"
                                     for q in load_questions(corpus=corpus, subset="original")), encoding="utf-8")
        options = ["--strategies", "C,E", "--methods", "dense,hybrid"]
        status = cli(["eval", str(root / "my-docs"), "--questions", str(questions), "--out-of-domain",
                      str(OUT_OF_DOMAIN_FILE), *options, "--cache-dir", str(args.cache_dir),
                      "--out", str(root / "report")])
        if status:
            return status
        page = load_page(root / "report" / "report.html", root / "full.png")
        assert page.outside_requests == () and page.broken_images == 0, page
        with Image.open(root / "full.png") as full:
            top = full.crop((0, 0, full.width, min(full.height, args.height)))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            top.save(args.out, optimize=True)
        page_html = (root / "report" / "report.html").read_text(encoding="utf-8")
    record = {"made_by": "python scripts/screenshot_eval_report.py",
              "eval": "ragcourse eval COURSE-CORPUS --questions ORIGINAL-32 --out-of-domain OUT-OF-DOMAIN "
                      + " ".join(options), "width": 1280, "height": args.height,
              "sections": re.findall(r"<(?:h2|div) id='([\w-]+)'", page_html),
              "png_sha256": hashlib.sha256(args.out.read_bytes()).hexdigest()}
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
