"""One value per quantity (issue 27): no two chapters glue different values for the same quantity.

Every glued value is read from the notebooks' stored outputs. A glue name used in more than one chapter is
one quantity unless tests/quantities.yml declares it `distinct`; names that differ but name one quantity
(chapter 4's `ms_ours` and the appendix's `record_bm25_scores_ms`) are grouped under `same` there. Values
must agree: numbers at the coarser of the two precisions shown (16.38 and 16.4 agree), text exactly.
Quantities still in dispute are listed under `open` and expected to fail until they agree.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TABLE = yaml.safe_load((ROOT / "tests" / "quantities.yml").read_text(encoding="utf-8"))
# A chapter is its lesson and, once split, its lab (notebooks/labs/, issue 37): both under the chapter's number.
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9a][0-9]-*.ipynb")) + sorted(
    (ROOT / "notebooks" / "labs").glob("[0-9a][0-9]-*.ipynb"))


def glued() -> dict[str, dict[str, str]]:
    """name -> {chapter ("01", "a2"): the stored text of its value}."""
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for out in cell.get("outputs", []):
                name = out.get("metadata", {}).get("scrapbook", {}).get("name")
                if name:
                    found[name][path.name[:2]] = out["data"].get("application/papermill.record/text/plain", "")
    return found


GLUED = glued()


def agree(a: str, b: str) -> bool:
    """Two stored values agree: numbers at the coarser precision of the two, anything else exactly.

    >>> agree("16.38", "16.4"), agree("0.05", "0.06"), agree("'q182'", "'q182'"), agree("0.0554", "0.055")
    (True, False, True, True)
    """
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a == b
    places = min(len(v.split(".")[1]) if "." in v else 0 for v in (a, b))
    return round(x, places) == round(y, places)


def members(names: list[str]) -> list[tuple[str, str, str]]:
    """(chapter, name, value) of every glue a `same` entry names."""
    out = []
    for entry in names:
        chapter, _, name = entry.rpartition(":")
        out += [(c, name, v) for c, v in GLUED.get(name, {}).items() if not chapter or c == chapter]
    return out


def quantities() -> dict[str, list[tuple[str, str, str]]]:
    """quantity -> its glues: the declared groups, then every name glued in two chapters."""
    found = {q: members(entry["names"]) for q, entry in TABLE["same"].items()}
    grouped = {name for entry in TABLE["same"].values() for n in entry["names"] for name in [n.rpartition(":")[2]]}
    for name, where in GLUED.items():
        if len(where) > 1 and name not in grouped and name not in TABLE["distinct"]:
            found[name] = [(c, name, v) for c, v in where.items()]
    return found


QUANTITIES = quantities()


def _param(quantity: str):
    reason = TABLE["open"].get(quantity)
    marks = [pytest.mark.xfail(strict=True, reason=f"open: {reason}")] if reason else []
    return pytest.param(quantity, marks=marks, id=quantity)


def test_every_declared_name_is_glued_somewhere():
    missing = [n for entry in TABLE["same"].values() for n in entry["names"] if not members([n])]
    assert not missing, f"tests/quantities.yml names glues no notebook stores: {missing}"
    stale = [q for q in TABLE["open"] if q not in QUANTITIES]
    assert not stale, f"open entries that are no quantity (renamed or gone?): {stale}"


@pytest.mark.parametrize("quantity", [_param(q) for q in QUANTITIES])
def test_one_value_per_quantity(quantity):
    glues = QUANTITIES[quantity]
    first = glues[0]
    differ = [g for g in glues[1:] if not agree(first[2], g[2])]
    assert not differ, f"{quantity}: chapter {first[0]} glues {first[1]} = {first[2]}, but " + "; ".join(
        f"chapter {c} glues {n} = {v}" for c, n, v in differ)


def test_a_disagreement_is_caught():
    assert agree("0.055", "0.0554") and not agree("0.031", "0.055") and not agree("0.05", "0.06")
    assert not agree("'a'", "'b'")
