"""Hidden checks for chapter 8 (production): run by the grader on the student's notebook namespace."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from kit.checks.compare import Partly, given, integer, items, number, reference
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
    fn = given(ns, "extract_limited")
    assert callable(fn), "define a function extract_limited(path, doc_id)"
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
                assert over, "a file within the limit failed"
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
    report, broken_dir = given(ns, "line_limited"), ns["broken_dir"]
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
    changed, rebuilt = [str(d) for d in items(given(ns, "changed"), "changed")], given(ns, "rebuilt")
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
    another metric, a lopsided interval, a table with several metrics) and lets hybrid pass against dense on the
    chapter's run."""
    gate_passes = given(ns, "gate_passes")
    assert callable(gate_passes), "define a function gate_passes(baseline, candidate, metric)"
    value, low, high = 0.62, 0.55, 0.69
    half = (high - low) / 2
    base = _table(value, low, high)
    cases = [(base, _table(value - 0.5 * half), "R@8", True), (base, _table(value - 0.9 * half), "R@8", True),
             (base, _table(value + half), "R@8", True), (base, _table(value - 1.1 * half), "R@8", False),
             (base, _table(value - 3 * half), "R@8", False),
             (_table(0.4, 0.3, 0.5, "R@4"), _table(0.33, metric="R@4"), "R@4", True),
             (_table(0.4, 0.3, 0.5, "R@4"), _table(0.29, metric="R@4"), "R@4", False)]
    skewed = _table(0.9, 0.8, 0.95)  # a Wilson interval near 1 is lopsided: the half-width is not value - low
    cases += [(skewed, _table(0.815), "R@8", False), (skewed, _table(0.83), "R@8", True)]
    several = pd.concat([_table(0.9, 0.85, 0.95, "R@1"), base], ignore_index=True)
    cases.append((several, pd.concat([_table(0.1, metric="R@1"), _table(value - 0.2 * half)]), "R@8", True))
    wrong = sum(_decides(gate_passes, (b, c, m)) != ok for b, c, m, ok in cases)
    assert wrong == 0, f"{wrong} of {len(cases)} unseen cases decided wrongly"
    per_query = ns["per_query"]
    with reference("the chapter's tables"):
        tables = summarize(per_query["dense"], "E/dense"), summarize(per_query["hybrid"], "E/hybrid")
    assert _decides(gate_passes, (*tables, "R@8")) is True, (
        "hybrid fails your gate, but it is not below dense by more than the half-width")


def _decides(fn, args: tuple) -> bool | None:
    """fn's verdict as a bool (a numpy bool too); None when it raised or returned something else."""
    try:
        got = fn(args[0], args[1], metric=args[2])
    except Exception:  # noqa: BLE001 - a crash on one input costs that input only
        return None
    return bool(got) if isinstance(got, bool | np.bool_) else None


@check("8.4", points=2)
def prediction_recorded(ns):
    """Completion: prediction_8_4 has a number 'bm25_r8' in [0, 1], a bool 'passes' and a 'why' of at least
    five words (the rubric in the guide grades the reasoning)."""
    p = given(ns, "prediction_8_4")
    assert isinstance(p, dict), "prediction_8_4 should be a dict"
    assert 0 <= number(p.get("bm25_r8"), "bm25_r8") <= 1, "bm25_r8 should be a number in [0, 1]"
    assert isinstance(p.get("passes"), bool), "passes should be True or False"
    assert isinstance(p.get("why"), str) and len(p["why"].split()) >= 5, "give a reason of a sentence or two"


@check("8.5", points=2)
def predicted_the_embeddings_of_an_edit(ns):
    """answer_8_5 holds the count worked out before the sync and a reason; the check counts the new chunk
    texts of the edited file itself (the student's 'measured' is not read): full points when the worked-out
    count equals it, half when it is off by one. Each term edits another file of several chunks."""
    answer = given(ns, "answer_8_5")
    assert isinstance(answer, dict), "answer_8_5 should be a dict with 'predicted', 'measured' and 'why'"
    predicted = integer(answer.get("predicted"), "predicted", 0, 10**6)
    assert isinstance(answer.get("why"), str) and len(answer["why"].split()) >= 5, "give a reason of a sentence"
    with reference("the count of new chunk texts"):
        measured = _new_texts(Path(ns["target"]), ns["original"])
    if predicted == measured:
        return None
    assert abs(predicted - measured) <= 1, "your prediction is off by more than one: count the chunk texts that change"
    return Partly(0.5, "your prediction is off by one: which chunks' texts does the edit change?")


def _new_texts(target: Path, original: str) -> int:
    """How many chunk texts (strategy E) of the edited file the sync must embed: those not among the original's."""
    from ragcourse.chunking import chunk

    doc_id = f"{target.parent.name}/{target.name}"
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / target.name
        before.write_text(original, encoding="utf-8")
        old = {c.text for c in chunk(documents.read_document(before, doc_id), "E")}
    return sum(c.text not in old for c in chunk(documents.read_document(target, doc_id), "E"))
