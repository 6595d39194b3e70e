"""Tables in the chapters are HTML (a displayed DataFrame or Styler), never text printed with to_string().

A printed table cannot be styled, does not fit the column and, in the built book, wraps or hides its
last columns (the browser test checks the width of what is displayed). Read from the notebooks' code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
PRINTED_TABLE = re.compile(r"\.to_(?:string|markdown)\(")
ASSIGNED = re.compile(r"^\s*[\w.]+\s*=[^=]")


def printed_tables(cells: list[dict]) -> list[str]:
    """The lines of code cells that turn a table into text (an assignment is not a display: the text may
    be compared with what a command line prints).

    >>> printed_tables([{"cell_type": "code", "source": ["x = 1\\n", "print(df.to_string(index=False))"]}])
    ['print(df.to_string(index=False))']
    >>> printed_tables([{"cell_type": "code", "source": "display(df.style.format(precision=3))"}])
    []
    >>> printed_tables([{"cell_type": "code", "source": "expected = summary.to_string()"}])
    []
    """
    found = []
    for cell in cells:
        if cell["cell_type"] == "code":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            found += [line.strip() for line in source.splitlines()
                      if PRINTED_TABLE.search(line) and not ASSIGNED.match(line)]
    return found


def test_there_are_chapters_to_check():
    assert len(NOTEBOOKS) >= 8, [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_table_is_printed_as_text(path):
    found = printed_tables(json.loads(path.read_text(encoding="utf-8"))["cells"])
    assert not found, f"{path.name}: display the DataFrame (or a Styler) instead of printing it: {found}"
