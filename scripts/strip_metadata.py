"""Strip volatile metadata from executed notebooks, so re-running them gives a minimal diff.

Removes per-cell timing (`metadata.execution`), widget state and Colab/VS Code leftovers, and
normalises the kernelspec to `python3`; outputs and execution counts are kept (the book shows them
and nbval compares them). Run by `make reproduce`.

Usage: python scripts/strip_metadata.py notebooks/*.ipynb
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CELL_KEYS = ("execution", "collapsed", "scrolled", "ExecuteTime", "vscode", "colab", "id_hidden")
NOTEBOOK_KEYS = ("widgets", "colab", "vscode", "toc", "varInspector", "interpreter")
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def strip(nb: dict) -> dict:
    """Return the notebook without volatile metadata (the input is not modified)."""
    nb = json.loads(json.dumps(nb))
    for key in NOTEBOOK_KEYS:
        nb["metadata"].pop(key, None)
    nb["metadata"]["kernelspec"] = dict(KERNELSPEC)
    for cell in nb["cells"]:
        for key in CELL_KEYS:
            cell.get("metadata", {}).pop(key, None)
    return nb


def main(paths: list[str]) -> int:
    for name in paths:
        path = Path(name)
        nb = json.loads(path.read_text(encoding="utf-8"))
        text = json.dumps(strip(nb), indent=1, ensure_ascii=False, sort_keys=True) + "\n"
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
            print(f"stripped {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
