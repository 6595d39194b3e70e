"""One speed ratio to rank-bm25, or two set side by side (issue 37: "19× in chapter 4, about 60× in A2").

Two runs time the package's BM25 against rank-bm25: the book's timing record (`timings.json`, which chapter 4
quotes) and appendix A2's own run (`scale.json`). Their ratios differ (the record timed earlier code). A page
may quote the record's ratio alone; a paragraph that quotes the other run's ratio must quote the record's
beside it and name the record, so no reader meets two figures for one thing without the reason. Every ratio is
found by its stored glue value (recomputed here from the two result files), and a ratio typed as a literal
("19 times faster than rank-bm25") fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragcourse.paths import RESULTS_DIR as RESULTS

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "labs").glob("*.ipynb"))
CLAIMS = sorted((ROOT / "book").rglob("*.md"))
PEER = re.compile(r"rank[-_ ]bm25|BM25Okapi", re.IGNORECASE)
# {glue:text}`key:.0f`, {glue}`labs/x.ipynb::key`, {glue:text}`/notebooks/labs/x.ipynb::key:.1f`
PASTE = re.compile(r"\{glue(?::[a-z]*)?\}`(?:([^`:]+\.ipynb)::)?([^`:]+)(?::[^`]*)?`")
LITERAL = re.compile(r"\d+(?:\.\d+)?\s*(?:×|x\b|times)\s+(?:faster|slower|less|more)", re.IGNORECASE)
RECORD_NAMED = re.compile(r"timings\.json|timing record|recorded (?:timing )?run", re.IGNORECASE)


def ratios() -> dict[str, float]:
    """rank-bm25's time over the package's at 807 chunks, in each record."""
    per_query = json.loads((RESULTS / "timings.json").read_text(encoding="utf-8"))["per_query_ms"]
    scale = json.loads((RESULTS / "scale.json").read_text(encoding="utf-8"))
    row = next(r for r in scale["bm25"]["rows"] if r["factor"] == 1)["ms_per_query"]
    return {"timing record": per_query["rank_bm25_scores"] / per_query["bm25_scores"],
            "scale run": row["rank_bm25"] / row["ragcourse"]}


def stored_glue(path: Path) -> dict[str, float]:
    """The numbers a notebook glues, by name."""
    found = {}
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            text = out.get("data", {}).get("application/papermill.record/text/plain")
            try:
                found[name] = float(text)
            except (TypeError, ValueError):
                continue
    return found


def which_record(value: float, records: dict[str, float]) -> str | None:
    """The record whose ratio this stored value is (within 1 %), if any.

    >>> which_record(19.0, {"timing record": 19.0018, "scale run": 59.79})
    'timing record'
    >>> which_record(1.82, {"timing record": 19.0018, "scale run": 59.79}) is None
    True
    """
    return next((name for name, ratio in records.items() if abs(value - ratio) <= 0.01 * ratio), None)


def paragraphs() -> list[tuple[Path, str]]:
    """Every markdown paragraph of the notebooks and the book's pages, with the file that holds it."""
    found = []
    for path in PAGES:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                found += [(path, p) for p in re.split(r"\n\s*\n", source)]
    for path in CLAIMS:
        found += [(path, p) for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))]
    return found


def quoted(path: Path, paragraph: str, records: dict[str, float]) -> set[str]:
    """The records whose rank-bm25 ratio a paragraph pastes."""
    found = set()
    for target, key in PASTE.findall(paragraph):
        if target.startswith("/"):
            notebook = ROOT / target.lstrip("/")
        else:
            notebook = (path.parent / target) if target else path
        value = stored_glue(notebook).get(key) if notebook.suffix == ".ipynb" and notebook.is_file() else None
        record = which_record(value, records) if value is not None else None
        if record:
            found.add(record)
    return found


RECORDS = ratios()
ABOUT_THE_PEER = [(path, p) for path, p in paragraphs() if PEER.search(p)]


def test_the_two_records_differ_so_the_rule_matters():
    assert RECORDS["timing record"] > 1 and RECORDS["scale run"] > 1
    assert which_record(RECORDS["timing record"], {"scale run": RECORDS["scale run"]}) is None


def test_both_pages_quote_a_ratio_to_rank_bm25():
    """Chapter 4 and appendix A2 (lesson or lab) both give the package's lead over rank-bm25."""
    pages = {path.stem for path, p in ABOUT_THE_PEER if quoted(path, p, RECORDS)}
    assert {"04-bm25-hybrid", "a2-scale"} <= pages, pages


@pytest.mark.parametrize("where", range(len(ABOUT_THE_PEER)),
                         ids=[f"{path.parent.name}/{path.stem}" for path, _ in ABOUT_THE_PEER])
def test_a_second_ratio_is_set_beside_the_record_and_named(where):
    path, paragraph = ABOUT_THE_PEER[where]
    found = quoted(path, paragraph, RECORDS)
    bare = re.sub(PASTE, "", paragraph)
    assert not LITERAL.search(bare), f"{path.name}: a ratio typed by hand: {LITERAL.search(bare).group(0)!r}"
    if "scale run" in found:
        assert "timing record" in found, f"{path.name}: the scale run's ratio without the timing record's beside it"
        assert RECORD_NAMED.search(paragraph), f"{path.name}: two ratios, and the timing record is not named"


def test_a_lone_second_ratio_is_caught(tmp_path):
    """The rule fails on the page this issue found: A2 quoting its own run's ratio alone."""
    lab = tmp_path / "labs" / "a2.ipynb"
    lab.parent.mkdir()
    record = {"metadata": {"scrapbook": {"name": "r"}},
              "data": {"application/papermill.record/text/plain": f"{RECORDS['scale run']:.1f}"}}
    lab.write_text(json.dumps({"cells": [{"cell_type": "code", "outputs": [record]}]}), encoding="utf-8")
    found = quoted(tmp_path / "a2.ipynb", "rank-bm25 is {glue:text}`labs/a2.ipynb::r:.0f` times slower.", RECORDS)
    assert found == {"scale run"}
    assert LITERAL.search("the package is 19 times faster than rank-bm25")
