"""`ragcourse eval --user`: chapter 11's "a perfect filter" holds for every output of the tool, messages included.

Titles, headings, text and paths are planted in documents the user may not read, and in files there that fail
to read or are not documents; questions and out-of-domain queries probe them every way a message could answer
(a title, a heading, a needle found twice, a needle in the wrong document, a near-miss path). Then stdout,
stderr and every file eval wrote (its output folder and its cache) are searched for each planted string.
Every document is written for the test; a stand-in embedder keeps it fast.
"""

from __future__ import annotations

import json

import pytest
from test_eval_outputs import HashedModel  # the stand-in embedder (hashed 8-dim vectors)

from ragcourse import dense
from ragcourse.cli import main

PUBLIC = """# Visitor guide

The visitor desk opens at eight and closes at six on weekdays.

## Parking

Visitors park on the upper deck, beside the bicycle racks.

## Badges

A visitor badge is returned at the desk before leaving the building.
"""

SALARIES = """# Executive compensation 2026 (CONFIDENTIAL)

The chief officer's base pay rises to four hundred thousand from March.

## Bonus pool allocations

Each director receives a share of the quarterly bonus pool weighted by region.
"""

MERGER = """# Project Heron merger terms

The acquisition of Lanternfish Ltd closes in the second quarter.

## Integration timetable

Each director receives a share of the quarterly bonus pool weighted by region.
"""

SECRETS = ["Executive compensation 2026", "CONFIDENTIAL", "four hundred thousand", "Bonus pool allocations",
           "quarterly bonus pool", "Project Heron", "Lanternfish", "Integration timetable",
           "hr/salaries.md", "board/merger.md", "hr/payroll.pdf", "board/org-chart.png", "salaries", "merger",
           "payroll", "org-chart"]
PERMISSIONS = {"documents": {"public/guide.md": ["staff"], "hr/salaries.md": ["hr"], "board/merger.md": ["board"],
                             "hr/payroll.pdf": ["hr"]},
               "users": {"bob": ["staff"], "hana": ["hr", "staff"]}}
GOOD = [
    {"id": "desk", "needle": "The visitor desk opens at eight and closes at six on weekdays.",
     "question": "When is the visitor desk open?", "ticket": "desk closed??"},
    {"id": "park", "needle": "Visitors park on the upper deck, beside the bicycle racks.",
     "question": "Where do visitors park?", "ticket": "no space in the car park"},
    {"id": "badge", "needle": "A visitor badge is returned at the desk before leaving the building.",
     "question": "Where is a visitor badge returned?"},
]
PROBES = [  # each a question about what bob may not read, one way a message could answer it
    {"id": "p1", "needle": "The chief officer's base pay rises to four hundred thousand from March.",
     "question": "What is the base pay?"},
    {"id": "p2", "needle": "The chief officer's base pay rises to four hundred thousand from March.",
     "question": "What is the base pay?", "doc": "hr/salaries.md"},
    {"id": "p3", "needle": "Executive compensation 2026", "question": "Which page is this?"},
    {"id": "p4", "needle": "Bonus pool allocations", "question": "Which section?"},
    {"id": "p5", "needle": "Each director receives a share of the quarterly bonus pool weighted by region.",
     "question": "How is the bonus shared?"},
    {"id": "p6", "needle": "The acquisition of Lanternfish Ltd closes in the second quarter.",
     "question": "When does it close?", "doc": "public/guide.md"},
    {"id": "p7", "needle": "The visitor desk opens at eight", "question": "x", "doc": "hr/salaries.mdx"},
    {"id": "p8", "needle": "Anything at all.", "question": "x", "doc": "hr/payroll.pdf"},
]


def write_docs(root):
    for path, text in (("public/guide.md", PUBLIC), ("hr/salaries.md", SALARIES), ("board/merger.md", MERGER)):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    (root / "hr" / "payroll.pdf").write_text("not really a PDF\n", encoding="utf-8")  # fails to read
    (root / "board" / "org-chart.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(8))  # not a document
    return root


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    def load(cache_dir=None):
        return dense.Embedder(model=HashedModel(), name="stand-in", fingerprint="stand-in", cache_dir=cache_dir)

    monkeypatch.setattr(dense, "load_embedder", load)


def run_eval(tmp_path, capsys, user="bob", questions=GOOD + PROBES):
    docs = write_docs(tmp_path / "docs")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    (tmp_path / "ood.jsonl").write_text(json.dumps({"id": "o1", "query": "Who owns Lanternfish?"}) + "\n",
                                        encoding="utf-8")
    (tmp_path / "perm.json").write_text(json.dumps(PERMISSIONS), encoding="utf-8")
    status = main(["eval", str(docs), "--questions", str(tmp_path / "q.jsonl"), "--out-of-domain",
                   str(tmp_path / "ood.jsonl"), "--methods", "bm25,dense,hybrid", "--k", "1,2",
                   "--user", user, "--permissions", str(tmp_path / "perm.json"),
                   "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")])
    return status, capsys.readouterr()


def test_nothing_bob_may_not_read_reaches_any_output(tmp_path, stand_in, capsys):
    status, printed = run_eval(tmp_path, capsys)
    assert status == 1  # the probes are left out, the rest measured
    written = [p for folder in ("out", "cache") for p in (tmp_path / folder).rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"results.json", "report.html", "queries-E-bm25.csv", "run-E-bm25.trec"}
    outputs = {"stdout": printed.out, "stderr": printed.err}
    outputs |= {str(p): p.read_bytes().decode("utf-8", "replace") for p in written}
    found = {(name, secret) for name, text in outputs.items() for secret in SECRETS if secret.lower() in text.lower()}
    assert found == set()
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["corpus"]["documents"] == 1 and results["corpus"]["failed"] == []
    assert results["corpus"]["skipped"] == []
    assert results["questions"]["measured"] == 3
    reasons = [r["reason"] for r in results["questions"]["rejected"][:len(PROBES)]]
    assert reasons == [f"{p['id']}: not readable by bob" + (": the needle is in no document bob may read"
                                                            if p["id"] in ("p1", "p3", "p4", "p5", "p6") else "")
                       for p in PROBES]


def test_a_reader_of_more_sees_more(tmp_path, stand_in, capsys):
    """The same probes as hana (hr and staff): her documents are measured, the board's stay unnamed."""
    status, printed = run_eval(tmp_path, capsys, user="hana", questions=GOOD + PROBES[:2])
    assert status == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["corpus"]["documents"] == 2 and [f["path"] for f in results["corpus"]["failed"]] == [
        "hr/payroll.pdf"]
    assert results["questions"]["measured"] == 5
    assert "Project Heron" not in printed.out + printed.err + (tmp_path / "out" / "report.html").read_text()


def test_an_unknown_user_is_named_alone(tmp_path, stand_in, capsys):
    status, printed = run_eval(tmp_path, capsys, user="mallory\x1b[2J")
    assert status == 2
    assert "--user 'mallory\\x1b[2J' is not in the permissions file" in printed.err
    assert "bob" not in printed.err and "hana" not in printed.err and "\x1b" not in printed.err
