"""`ragcourse pool`: the union of several methods' top k per question, deduplicated, in an order that reveals no
method, never over an existing file without --force, hostile names escaped, and read back by eval --judgements.
A three-page folder with the stand-in embedder (hashed vectors): no model loads."""

from __future__ import annotations

import json

import pytest
from test_eval_outputs import QUESTIONS, stand_in, write_folder, write_questions  # noqa: F401 (a fixture)

from ragcourse.cli import main


@pytest.fixture
def folder(tmp_path, stand_in):  # noqa: F811
    return write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")


def pool(docs, questions, out, *extra):
    return main(["pool", str(docs), "--questions", str(questions), "--out", str(out), *extra])


def records(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ragcourse pool:")
    return [json.loads(line) for line in lines[1:]]


def tops(path, k):
    """query id -> the first k docnos of a TREC run file eval wrote."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, docno, rank, *_ = line.split()
        if int(rank) <= k:
            out.setdefault(qid, []).append(docno)
    return out


def test_each_question_pools_the_union_of_every_methods_top_k_once(tmp_path, folder):
    docs, questions = folder
    assert pool(docs, questions, tmp_path / "pool.jsonl", "-k", "2", "--methods", "bm25,dense,hybrid") == 0
    pooled = records(tmp_path / "pool.jsonl")
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25,dense,hybrid",
                 "--out", str(tmp_path / "eval")]) == 0  # eval's own rankings, another path through the code
    runs = [tops(tmp_path / "eval" / f"run-E-{m}.trec", 2) for m in ("bm25", "dense", "hybrid")]
    for q in QUESTIONS:
        mine = [r["docno"] for r in pooled if r["qid"] == q["id"]]
        expected = {d for run in runs for phrasing in ("doc", "ticket") for d in run[f"{q['id']}/{phrasing}"]}
        assert len(mine) == len(set(mine)) and set(mine) == expected
        assert len(expected) > 2  # the methods and phrasings disagree: a real union, not one list
        doc_order = [(d.rsplit("#", 1)[0], int(d.rsplit("#", 1)[1].split("-")[0])) for d in mine]
        assert doc_order == sorted(doc_order)  # by document and offset, never by method or rank
    assert {tuple(sorted(r)) for r in pooled} == {("docno", "excerpt", "grade", "qid", "question", "section",
                                                   "ticket")}  # no method, rank or score anywhere
    assert all(r["grade"] is None and r["excerpt"] for r in pooled)
    assert [r["qid"] for r in pooled] == sorted([r["qid"] for r in pooled], key=[q["id"] for q in QUESTIONS].index)


def test_a_second_run_writes_the_same_bytes_and_never_overwrites_without_force(tmp_path, folder, capsys):
    docs, questions = folder
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert pool(docs, questions, first, "--methods", "bm25") == 0
    assert pool(docs, questions, second, "--methods", "bm25") == 0
    assert first.read_bytes() == second.read_bytes()
    first.write_text("graded by hand\n", encoding="utf-8")
    assert pool(docs, questions, first, "--methods", "bm25") == 2
    assert "nothing was overwritten" in capsys.readouterr().err and first.read_text() == "graded by hand\n"
    assert pool(docs, questions, tmp_path, "--methods", "bm25") == 2  # a folder
    assert pool(docs, questions, first, "--methods", "bm25", "--force") == 0
    assert first.read_bytes() == second.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".pool-")) == []  # no temporary left


def test_hostile_names_and_text_are_escaped_and_read_back_exactly(tmp_path, stand_in):  # noqa: F811
    docs = tmp_path / "docs"
    docs.mkdir()
    name = "evil\u202egnp.md"  # a bidirectional override in a file name
    (docs / name).write_text("# Evil\n\nThe stove\u2028burns \x1b[31mred\x1b[0m fuel on \"windy\" ridges.\n",
                             encoding="utf-8")
    (docs / "plain.md").write_text("# Plain\n\nRopes are coiled in loops before storage.\n", encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"id": "q\u2028one", "question": "Which fuel burns red?"}) + "\n"
                         + json.dumps({"id": "two", "question": "How are ropes stored?\u202e"}) + "\n"
                         + '{"id": "three", "question": "  "}\n', encoding="utf-8")
    out = tmp_path / "pool.jsonl"
    assert pool(docs, questions, out, "--methods", "bm25") == 1  # the blank question is left out
    raw = out.read_text(encoding="utf-8")
    assert not any(ch in raw for ch in "\u202e\u2028\x1b") and raw.count("\n") == 1 + 2 * 2
    pooled = records(out)
    assert {r["docno"].rsplit("#", 1)[0] for r in pooled} == {name, "plain.md"}
    assert any("\x1b[31mred" in r["excerpt"] for r in pooled) and {r["qid"] for r in pooled} == {"q\u2028one", "two"}
    for r in pooled:  # the judge's work, then eval reads the file back
        r["grade"] = 2 if ("fuel" in r["excerpt"]) == (r["qid"] == "q\u2028one") else 0
    filled = tmp_path / "filled.jsonl"
    filled.write_text("".join(json.dumps(r) + "\n" for r in pooled), encoding="utf-8")
    needle = 'fuel on "windy" ridges.'
    questions.write_text(json.dumps({"id": "q\u2028one", "needle": needle, "question": "Which fuel?"}) + "\n"
                         + json.dumps({"id": "two", "needle": "Ropes are coiled", "question": "Ropes?"}) + "\n",
                         encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--judgements", str(filled),
                 "--out", str(tmp_path / "eval")]) == 0
    results = json.loads((tmp_path / "eval" / "results.json").read_text(encoding="utf-8"))
    assert results["runs"][0]["graded"]["queries"] == 2 and results["runs"][0]["graded"]["judged"]["1"] == 1.0


def test_a_judge_given_as_user_is_shown_only_what_they_may_read(tmp_path, stand_in):  # noqa: F811
    from test_eval_permissions import GOOD, PERMISSIONS, SECRETS, write_docs

    docs = write_docs(tmp_path / "docs")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in GOOD), encoding="utf-8")
    (tmp_path / "perm.json").write_text(json.dumps(PERMISSIONS), encoding="utf-8")
    out = tmp_path / "pool.jsonl"
    assert pool(docs, tmp_path / "q.jsonl", out, "--methods", "bm25", "--user", "bob", "--permissions",
                str(tmp_path / "perm.json")) == 0
    text = out.read_text(encoding="utf-8")
    assert {r["docno"].rsplit("#", 1)[0] for r in records(out)} == {"public/guide.md"}
    assert [s for s in SECRETS if s.lower() in text.lower()] == []
