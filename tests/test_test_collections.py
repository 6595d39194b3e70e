"""Chapter 12's judged pool: the judgements file as stored, and nDCG@k and MAP on it equal ir_measures'.

The runs here are BM25's (no model loads in a test); the lab asserts the same equality for all four methods
on its own runs, and `tests/test_graded.py` checks the measures on random runs.
"""

from __future__ import annotations

import json

import ir_measures
import pytest
from ir_measures import AP, Bpref, Qrel, ScoredDoc, nDCG

from ragcourse import graded
from ragcourse.pipeline import build
from ragcourse.question_sets import QUESTION_SETS_DIR
from ragcourse.records import parse_judgements

JUDGED = QUESTION_SETS_DIR / "pool_judged.jsonl"
POOLED = QUESTION_SETS_DIR / "pool_questions.jsonl"


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def grades():
    found = {}
    for j in _lines(JUDGED):
        found.setdefault(j["qid"], {})[j["docno"]] = int(j["grade"])
    return found


def test_every_pooled_question_is_judged_by_a_named_judge_with_a_reason():
    judged, rejected = parse_judgements(JUDGED)
    assert not rejected
    records = _lines(JUDGED)
    assert {r["judge"] for r in records} == {"engineer A"}
    assert all(r["grade"] in (0, 1, 2) and len(r["note"].split()) >= 3 for r in records)
    assert {r["qid"] for r in records} == {q["id"] for q in _lines(POOLED)}
    assert len(judged) == len({(r["qid"], r["docno"]) for r in records})


def test_every_judged_passage_is_a_chunk_of_the_book():
    chunks = {c.id for c in build("E", dense=False).chunks}
    assert {r["docno"] for r in _lines(JUDGED)} <= chunks


def test_ndcg_map_and_bpref_equal_ir_measures_on_the_bm25_run(grades):
    retriever = build("E", dense=False)
    questions = _lines(POOLED)
    rankings = {q["id"]: [retriever.chunks[i].id for i in retriever.bm25.rank(q["question"])] for q in questions}
    qrels = [Qrel(qid, docno, grade) for qid, found in grades.items() for docno, grade in found.items()]
    run = [ScoredDoc(qid, docno, float(-rank)) for qid, ranked in rankings.items()
           for rank, docno in enumerate(ranked, start=1)]
    theirs = {(m.query_id, str(m.measure)): m.value
              for m in ir_measures.iter_calc([nDCG @ 10, nDCG @ 3, AP, Bpref], qrels, run)}
    for qid, ranked in rankings.items():
        ours = graded.measures(ranked, grades[qid], [3, 10])
        assert ours["graded_ndcg@10"] == pytest.approx(theirs[(qid, "nDCG@10")], abs=1e-9)
        assert ours["graded_ndcg@3"] == pytest.approx(theirs[(qid, "nDCG@3")], abs=1e-9)
        assert ours["ap"] == pytest.approx(theirs[(qid, "AP")], abs=1e-9)
        assert ours["bpref"] == pytest.approx(theirs[(qid, "Bpref")], abs=1e-9)
