"""`ragcourse eval --judgements`: graded judgements (TREC qrels or JSON Lines) give every run nDCG@k, MAP and bpref
with intervals and paired tests, equal to ir_measures on the files eval writes; a bad line costs only itself.
BM25 only on a three-page folder (no model): each eval takes well under a second."""

from __future__ import annotations

import json

import ir_measures
import pytest
from test_eval_outputs import stand_in, write_folder, write_questions  # noqa: F401 (a fixture)

from ragcourse.cli import main


def bm25_eval(tmp_path, name, *extra):
    docs, questions = tmp_path / "docs", tmp_path / "q.jsonl"
    if not docs.exists():
        write_folder(docs), write_questions(questions)
    status = main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--k", "1,2,4",
                   "--out", str(tmp_path / name), *extra])
    return status, json.loads((tmp_path / name / "results.json").read_text(encoding="utf-8"))


def ranked(path):
    """query id -> docnos, best first, of a TREC run file."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, docno, *_ = line.split()
        out.setdefault(qid, []).append(docno)
    return out


@pytest.fixture
def judged(tmp_path, stand_in):  # noqa: F811
    """A first eval (no judgements) to learn the chunk ids; then judgements per question: the needle's chunk 2,
    BM25's first other chunk of the doc phrasing 1 (knot: 0), the rest unjudged."""
    status, plain = bm25_eval(tmp_path, "plain")
    top = ranked(tmp_path / "plain" / "run-E-bm25.trec")
    needle = {d["question"]: d["needle_chunk"]["id"] for d in plain["runs"][0]["per_query"]}
    lines = []
    for question, chunk in needle.items():
        other = next(c for c in top[f"{question}/doc"] if c != chunk)
        lines += [f"{question} 0 {chunk} 2", f"{question} 0 {other} {0 if question == 'knot' else 1}"]
    qrels = tmp_path / "judged.qrels"
    qrels.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return qrels, needle


def test_graded_figures_equal_ir_measures_on_the_files_eval_writes(tmp_path, judged, capsys):
    qrels, _ = judged
    status, results = bm25_eval(tmp_path, "out", "--judgements", str(qrels))
    assert status == 0
    out = tmp_path / "out"
    written = list(ir_measures.read_trec_qrels(str(out / "qrels-graded.trec")))
    assert len(written) == 5 * 2 * 2  # each question's two lines, for each of its two phrasings
    run = list(ir_measures.read_trec_run(str(out / "run-E-bm25.trec")))
    measures = [ir_measures.nDCG @ 1, ir_measures.nDCG @ 2, ir_measures.nDCG @ 4, ir_measures.AP, ir_measures.Bpref,
                ir_measures.nDCG(judged_only=True) @ 4, ir_measures.AP(judged_only=True), ir_measures.Judged @ 4]
    expected = ir_measures.calc_aggregate(measures, written, run)
    graded = results["runs"][0]["graded"]
    assert graded["queries"] == 10
    assert graded["ndcg"] == {str(k): round(expected[ir_measures.nDCG @ k], 3) for k in (1, 2, 4)}
    assert graded["map"] == round(expected[ir_measures.AP], 3)
    assert graded["bpref"] == round(expected[ir_measures.Bpref], 3)
    assert graded["condensed_ndcg"]["4"] == round(expected[ir_measures.nDCG(judged_only=True) @ 4], 3)
    assert graded["condensed_map"] == round(expected[ir_measures.AP(judged_only=True)], 3)
    assert graded["judged"]["4"] == round(expected[ir_measures.Judged @ 4], 3)
    low, high = graded["map_interval"]
    assert low <= graded["map"] <= high and 0 <= low and high <= 1
    assert set(results["runs"][0]["by_phrasing"]["doc"]["graded"]) == set(graded)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "id='graded'" in page and "MAP'" in page and "judged@4" in page
    assert "graded nDCG@4" in capsys.readouterr().out


def test_a_run_file_and_a_second_method_get_graded_paired_tests(tmp_path, judged):
    qrels, _ = judged
    mine = tmp_path / "mine.trec"  # BM25's ranking reversed: worse on every graded measure
    bm25_eval(tmp_path, "plain2")
    mine.write_text("".join(f"{q} Q0 {d} {r} {100 - r} mine\n" for q, ids in
                            ranked(tmp_path / "plain2" / "run-E-bm25.trec").items()
                            for r, d in enumerate(reversed(ids), 1)), encoding="utf-8")
    status, results = bm25_eval(tmp_path, "out", "--judgements", str(qrels), "--run", str(mine))
    assert status == 0
    pairs = {(e["split"], e["metric"]): e for e in results["splits"]}
    assert {m for _, m in pairs} >= {"MAP", "nDCG@4 graded", "MRR"}
    e = pairs["all", "MAP"]
    assert (e["a"], e["b"], e["questions"]) == ("E/bm25", "run/mine", 5)
    assert e["difference"] == round(results["runs"][0]["graded"]["map"] - results["runs"][1]["graded"]["map"], 3)
    assert e["wins"] + e["losses"] <= 5 and 0 < e["p"] <= 1 and e["p_holm"] >= e["p"]


def test_the_json_lines_form_a_pool_file_filled_in_gives_the_same_figures(tmp_path, judged):
    qrels, needle = judged
    records = []
    for line in qrels.read_text(encoding="utf-8").splitlines():
        qid, _, docno, grade = line.split()
        doc, span = docno.rsplit("#", 1)
        start, end = span.split("-")  # the same passage by offsets, as the report's locators name it
        records.append({"qid": qid, "docno": f"{doc}#char={start},{end}", "question": "?", "excerpt": "…",
                        "grade": int(grade)})
    as_json = tmp_path / "judged.jsonl"
    as_json.write_text("# a pool file, filled in\n" + "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    _, from_qrels = bm25_eval(tmp_path, "a", "--judgements", str(qrels))
    _, from_json = bm25_eval(tmp_path, "b", "--judgements", str(as_json))
    assert from_json["runs"][0]["graded"] == from_qrels["runs"][0]["graded"]


HOSTILE = [
    ("knot 0 {chunk}", "expected 4 fields (qid 0 docno grade), got 3"),
    ("knot 0 {chunk} -1", "grade '-1': expected an integer from 0 to 10"),
    ("knot 0 {chunk} 2.5", "grade '2.5': expected an integer"),
    ("nobody 0 {chunk} 1", "query 'nobody' is not one of the questions measured"),
    ("dry 0 rope.rst#0-999999 1", "names no passage of the documents read"),
    ("dry 0 ../../etc/passwd#char=0,4 1", "names no passage of the documents read"),
    ("pitch 0 {pitch} 1", "is judged again for query 'pitch'"),
]


def test_each_bad_judgement_costs_only_its_own_line_and_the_file_is_left_as_it_was(tmp_path, judged, capsys):
    qrels, needle = judged
    good = qrels.read_text(encoding="utf-8")
    bad = [line.format(chunk=needle["knot"], pitch=needle["pitch"]) for line, _ in HOSTILE]
    hostile = tmp_path / "hostile.qrels"
    hostile.write_bytes((good + "\n".join(bad) + "\n").encode() + b"fuel 0 caf\xe9 1\n")
    before = hostile.read_bytes()
    status, results = bm25_eval(tmp_path, "out", "--judgements", str(hostile))
    assert status == 1  # measured, with lines left out
    first = len(good.splitlines()) + 1
    left = {r["where"]: r["reason"] for r in results["questions"]["rejected"]}
    for i, (_, reason) in enumerate(HOSTILE):
        assert reason in left[f"{hostile}:{first + i}"]
    assert "not UTF-8" in left[f"{hostile}:{first + len(HOSTILE)}"] and len(left) == len(HOSTILE) + 1
    assert results["runs"][0]["graded"]["queries"] == 10  # every good line kept
    assert hostile.read_bytes() == before
    assert f"left out {hostile}:{first + 3}" in capsys.readouterr().err


def test_a_blank_grade_is_not_judged_yet_and_a_useless_file_stops_the_run(tmp_path, judged, capsys):
    qrels, needle = judged
    blank = tmp_path / "blank.jsonl"
    blank.write_text(json.dumps({"qid": "knot", "docno": needle["knot"], "grade": None}) + "\n", encoding="utf-8")
    docs, questions = tmp_path / "docs", tmp_path / "q.jsonl"
    argv = ["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(tmp_path / "o")]
    assert main([*argv, "--judgements", str(blank)]) == 2
    err = capsys.readouterr().err
    assert "no line judges a passage" in err and f"{blank}:1: grade is blank: not judged yet" in err
    assert main([*argv, "--judgements", str(tmp_path)]) == 2  # a folder, not a file
    assert "is a folder" in capsys.readouterr().err


def test_a_judgement_of_a_document_the_user_may_not_read_is_told_as_one_that_is_not_there(
        tmp_path, stand_in, capsys):  # noqa: F811
    from test_eval_permissions import GOOD, PERMISSIONS, write_docs

    docs = write_docs(tmp_path / "docs")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in GOOD), encoding="utf-8")
    (tmp_path / "perm.json").write_text(json.dumps(PERMISSIONS), encoding="utf-8")
    lines = ["desk 0 public/guide.md#char=0,20 2", "park 0 hr/salaries.md#char=0,20 2",
             "park 0 hr/nothing.md#char=0,20 2"]
    (tmp_path / "j.qrels").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(tmp_path / "q.jsonl"), "--methods", "bm25", "--user", "bob",
                 "--permissions", str(tmp_path / "perm.json"), "--judgements", str(tmp_path / "j.qrels"),
                 "--out", str(tmp_path / "out")]) == 1
    left = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["questions"]["rejected"]
    reasons = [r["reason"] for r in left]
    assert len(reasons) == 2 and reasons[0].replace("salaries", "nothing") == reasons[1]
    assert "chief officer" not in capsys.readouterr().err


def test_the_graded_tables_fit_1280_px_in_a_browser(tmp_path, judged):
    from browser import load_page

    qrels, _ = judged
    docs, questions, out = tmp_path / "docs", tmp_path / "q.jsonl", tmp_path / "out"
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25,dense,hybrid", "--k", "1,2,4",
                 "--judgements", str(qrels), "--out", str(out)]) == 0
    page = load_page(out / "report.html", width=1280)
    assert page.wide_tables == ()
    assert page.text.index("Graded judgements") < page.text.index("Every pair, every phrasing")
    assert "MAP" in page.text.split("Every pair, every phrasing")[1]  # the graded measures are tested in pairs
