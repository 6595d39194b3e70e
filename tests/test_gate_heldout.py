"""The held-out gate set `data/gate_heldout.jsonl`: valid on load, large enough, independent of the other sets.

It judges chapter 6's gates once, so the checks are about independence: no needle shared with (or from
a paragraph of) any question set, no out-of-domain query repeated from `out_of_domain.jsonl`.
"""

import json
import re

import pytest

from ragcourse.groundtruth import (
    ADDED_FILE,
    CONFIRM_FILE,
    GATE_HELDOUT_FILE,
    QUESTIONS_FILE,
    GateQuery,
    GroundTruthError,
    load_gate_heldout,
    load_out_of_domain,
    load_questions,
)
from ragcourse.words import collapse


@pytest.fixture(scope="module")
def heldout(corpus):
    return load_gate_heldout(corpus=corpus)


@pytest.fixture(scope="module")
def others(corpus):
    return [q for path in (QUESTIONS_FILE, ADDED_FILE, CONFIRM_FILE) for q in load_questions(path, corpus=corpus)]


def test_at_least_thirty_of_each_side_most_out_of_domain_ones_near(heldout):
    kinds = [q.kind for q in heldout]
    assert kinds.count("in") >= 30 and kinds.count("near") + kinds.count("absurd") >= 30
    assert kinds.count("near") > 2 * kinds.count("absurd")
    assert all((q.doc is None) == (q.needle is None) == (q.kind != "in") for q in heldout)


def test_every_document_has_an_answerable_query(heldout, corpus):
    assert {q.doc for q in heldout if q.kind == "in"} == {d.id for d in corpus}


def test_needles_are_independent_of_every_question_set(heldout, others, corpus):
    old = [collapse(q.needle) for q in others]
    mine = [collapse(q.needle) for q in heldout if q.kind == "in"]
    assert [n for n in mine if any(n in o or o in n for o in old)] == []
    by_id = {d.id: d for d in corpus}
    taken = {p for q in others for p in (collapse(x) for x in re.split(r"\n\s*\n", by_id[q.doc].text))
             if collapse(q.needle) in p}
    assert [n for n in mine if any(n in p for p in taken)] == []


def test_queries_are_new(heldout, others):
    seen = {collapse(t).lower() for q in others for t in (q.question, q.ticket)}
    seen |= {collapse(o.query).lower() for o in load_out_of_domain()}
    texts = [collapse(q.query).lower() for q in heldout]
    assert len(set(texts)) == len(texts) and [t for t in texts if t in seen] == []


@pytest.mark.parametrize(("record", "message"), [
    ({"id": "g1", "query": "q?", "kind": "in", "doc": "user-config"}, "fields ['needle'] are required for kind 'in'"),
    ({"id": "x1", "query": "q?", "kind": "near", "needle": "Some text."}, "fields ['needle'] are not allowed"),
    ({"id": "x1", "query": "q?", "kind": "odd"}, "kind 'odd' is not one of ['in', 'near', 'absurd']"),
    ({"id": "x1", "kind": "near"}, "missing ['query']"),
])
def test_a_malformed_line_is_named(tmp_path, corpus, record, message):
    path = tmp_path / "gate.jsonl"
    good = json.dumps({"id": "x0", "query": "How do I bake bread?", "kind": "absurd"})
    path.write_text(good + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(GroundTruthError, match=re.escape(f"{path}:2: ") + ".*" + re.escape(message)):
        load_gate_heldout(path, corpus=corpus)


def test_a_needle_not_in_its_document_is_refused(tmp_path, corpus):
    path = tmp_path / "gate.jsonl"
    path.write_text(json.dumps({"id": "g1", "query": "q?", "kind": "in", "doc": "user-config",
                                "needle": "This sentence is in no document at all."}) + "\n", encoding="utf-8")
    with pytest.raises(GroundTruthError, match="gate.jsonl:1: g1: needle not found"):
        load_gate_heldout(path, corpus=corpus)


def test_out_of_domain_lines_load_without_a_corpus(tmp_path):
    path = tmp_path / "gate.jsonl"
    record = {"id": "x1", "query": "How do I bake bread?", "kind": "absurd"}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert load_gate_heldout(path) == [GateQuery("x1", "How do I bake bread?", "absurd")]
    assert GATE_HELDOUT_FILE.name == "gate_heldout.jsonl"
