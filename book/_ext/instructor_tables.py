"""The instructor guide's tables are written at build time from the notebooks and kit/checks, never committed.

`book/instructor-guide.md` includes `instructor-tables.inc`; this extension writes it (`kit.guide.write_tables`)
before Sphinx reads a page, so an exercise added to a notebook and its check appears in the guide without a
third file to edit. The file is rewritten only when its text changes, so an unchanged guide is not re-read.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def write(app) -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # kit/ is not installed: it is imported from the repository's root
    from kit.guide import write_tables

    write_tables()


def setup(app):
    app.connect("builder-inited", write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
