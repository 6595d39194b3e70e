"""Hidden checks for chapter 8 (production): run by the grader on the student's notebook namespace."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from kit.hidden import check
from ragcourse import documents, index_sync
from ragcourse import index as ix
from ragcourse.book.exercises import choose
from ragcourse.corpus import sha256_file
from ragcourse.evaluation import summarize


def _write(folder: Path, name: str, n_lines: int) -> Path:
    path = folder / name
    body = "\n".join(f"Line {i} of a note about a directive option." for i in range(n_lines))
    path.write_text(f"# Note {name}\n\n{body}\n", encoding="utf-8")
    return path


@check("8.1", points=3)
def line_limit(ns):
    """extract_limited returns documents.read_document's document for files at or under MAX_LINES extracted lines and
    raises documents.ExtractionError mentioning 'lines' above it (on unseen files: well under, exactly at, just
    over, far over); line_limited failed exactly the files failing before plus those over the limit; and
    index_sync.read_document is no longer patched."""
    limit = choose("8.1", [250, 200, 300])
    fn = ns["extract_limited"]
    assert index_sync.read_document is documents.read_document, (
        "index_sync.read_document is still patched: use the patch as a context manager")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, n_lines in (("short.md", 12), ("long.txt", 4 * limit)):
            path = _write(folder, name, n_lines)
            expected = documents.read_document(path, name)
            over = len(expected.text.splitlines()) > limit
            try:
                got = fn(path, name)
            except documents.ExtractionError as err:
                assert over, f"a file of {len(expected.text.splitlines())} lines failed, but it is within the limit"
                assert "lines" in str(err), "the reason should mention lines"
                continue
            assert not over, "a file over the limit was let through"
            assert got == expected, "a file within the limit should come back exactly as read_document returns it"
        # Right at the boundary: the extracted text has exactly `limit` lines, then one more.
        for extra, should_fail in ((0, False), (1, True)):
            path = _write(folder, f"edge{extra}.md", 1)
            text = documents.read_document(path, "x").text
            n_body = limit + extra - len(text.splitlines()) + 1
            path = _write(folder, f"edge{extra}.md", n_body)
            assert len(documents.read_document(path, "x").text.splitlines()) == limit + extra
            try:
                fn(path, f"edge{extra}.md")
                failed = False
            except documents.ExtractionError:
                failed = True
            assert failed == should_fail, "check the boundary: more than the limit fails, exactly the limit passes"
    report, broken_dir = ns["line_limited"], ns["broken_dir"]
    before = {r.doc_id for r in ns["after"].failed}
    too_long = set()
    for path in broken_dir.rglob("*"):
        doc_id = path.relative_to(broken_dir).as_posix()
        if path.is_file() and doc_id not in before:
            if len(documents.read_document(path, doc_id).text.splitlines()) > limit:
                too_long.add(doc_id)
    assert {r.doc_id for r in report.failed} == before | too_long, "line_limited did not fail exactly the right files"


@check("8.2", points=2)
def changed_files(ns):
    """changed lists (sorted) exactly the stamped documents whose bytes no longer match their record's
    sha256, and rebuilt holds current hashes for every document while leaving the unchanged ones untouched."""
    stamped, folder = ns["stamped"], ns["stamped_dir"]
    current = {r.doc_id: sha256_file(folder / r.doc_id) for r in stamped.records}
    expected = sorted(d for d, h in current.items() if h != stamped.record(d).sha256)
    changed, rebuilt = list(ns["changed"]), ns["rebuilt"]
    assert changed == expected, f"{len(changed)} document(s) listed, and not the ones whose content changed"
    assert isinstance(rebuilt, ix.Index), "rebuilt should be an ix.Index"
    assert all(rebuilt.record(d).sha256 == current[d] for d in current), (
        "the rebuilt index still holds a stale document")
    assert all(rebuilt.record(d).attempts == 1 for d in current if d not in expected), (
        "an unchanged document was rebuilt: rebuild only what changed")


def _table(value, low=np.nan, high=np.nan, metric="R@8"):
    return pd.DataFrame([{"label": "x", "metric": metric, "value": value, "hits": pd.NA, "n": 100,
                          "low": low, "high": high}])


@check("8.3", points=3)
def regression_gate(ns):
    """gate_passes decides unseen synthetic tables right (drops of 0.5, 0.9, 1.1 and 3 half-widths, a gain,
    another metric, a table with several metrics) and lets hybrid pass against dense on the chapter's run."""
    gate_passes = ns["gate_passes"]
    value, low, high = 0.62, 0.55, 0.69
    half = (high - low) / 2
    base = _table(value, low, high)
    cases = [(base, _table(value - 0.5 * half), "R@8", True), (base, _table(value - 0.9 * half), "R@8", True),
             (base, _table(value + half), "R@8", True), (base, _table(value - 1.1 * half), "R@8", False),
             (base, _table(value - 3 * half), "R@8", False),
             (_table(0.4, 0.3, 0.5, "R@4"), _table(0.33, metric="R@4"), "R@4", True),
             (_table(0.4, 0.3, 0.5, "R@4"), _table(0.29, metric="R@4"), "R@4", False)]
    several = pd.concat([_table(0.9, 0.85, 0.95, "R@1"), base], ignore_index=True)
    cases.append((several, pd.concat([_table(0.1, metric="R@1"), _table(value - 0.2 * half)]), "R@8", True))
    wrong = sum(bool(gate_passes(b, c, metric=m)) != ok for b, c, m, ok in cases)
    assert wrong == 0, f"{wrong} of {len(cases)} unseen cases decided wrongly"
    per_query = ns["per_query"]
    assert gate_passes(summarize(per_query["dense"], "E/dense"), summarize(per_query["hybrid"], "E/hybrid")), (
        "hybrid fails your gate, but it is not below dense by more than the half-width")


@check("8.4", points=2)
def prediction_recorded(ns):
    """Completion: prediction_8_4 has a number 'bm25_r8' in [0, 1], a bool 'passes' and a 'why' of at least
    five words (the rubric in the guide grades the reasoning)."""
    p = ns["prediction_8_4"]
    assert isinstance(p, dict), "prediction_8_4 should be a dict"
    r8 = p.get("bm25_r8")
    is_number = isinstance(r8, int | float) and not isinstance(r8, bool)
    assert is_number and 0 <= r8 <= 1, "bm25_r8 should be a number in [0, 1]"
    assert isinstance(p.get("passes"), bool), "passes should be True or False"
    assert isinstance(p.get("why"), str) and len(p["why"].split()) >= 5, "give a reason of a sentence or two"


@check("8.5", points=2)
def predicted_the_embeddings_of_an_edit(ns):
    """answer_8_5 holds the prediction written before the sync, the count the sync reported and a reason:
    full points when the prediction equals the measurement, half when it is off by one."""
    answer = ns.get("answer_8_5")
    assert isinstance(answer, dict), "answer_8_5 should be a dict with 'predicted', 'measured' and 'why'"
    predicted, measured = answer.get("predicted"), answer.get("measured")
    for name, value in (("predicted", predicted), ("measured", measured)):
        assert isinstance(value, int) and not isinstance(value, bool) and value >= 0, f"{name} should be a count"
    assert isinstance(answer.get("why"), str) and len(answer["why"].split()) >= 5, "give a reason of a sentence"
    assert measured >= 1, "the sync after an edit embeds at least one chunk: read changes.embedded after syncing"
    if predicted == measured:
        return None
    assert abs(predicted - measured) <= 1, f"predicted {predicted}, measured {measured}: count the new chunk texts"
    return 1 / 2
