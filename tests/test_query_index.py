"""`ragcourse query` on a saved index ranks as the book's pipeline ranks in memory (chapters 3-6, 8 and 11).

The course corpus is written as a folder of Markdown files, indexed with `ragcourse index`, and queried in batch
mode with all 210 questions in both phrasings; the top 20 of every query must be the pipeline's top 20 over
the same documents, chunk for chunk, for dense, BM25, hybrid and hybrid + rerank, and again after an edit and
a sync. The chunk texts are the course's, so their vectors come from the course's embedding cache.
"""

from __future__ import annotations

import json

import pytest

from ragcourse.cli.main import main
from ragcourse.corpus import write_markdown
from ragcourse.documents import read_document
from ragcourse.gate import RECOMMENDED_GATE
from ragcourse.groundtruth import load_questions, queries
from ragcourse.paths import CACHE_ROOT
from ragcourse.permissions import pre_filter
from ragcourse.pipeline import build
from ragcourse.rerank import DEPTH, default_reranker, rerank_rankings
from ragcourse.signals import nearest_distance

TOP = 20
RUNS = [("dense", False), ("bm25", False), ("hybrid", False), ("hybrid", True)]


EGG, CAPTION = "How long should I boil an egg for a runny yolk?", "How do I add a caption to a figure?"


@pytest.fixture(scope="module")
def course(tmp_path_factory, corpus):
    """The course corpus as a folder of `# title` Markdown files, indexed by `ragcourse index`, and the
    questions as a file."""
    root = tmp_path_factory.mktemp("course")
    folder, out = root / "docs", root / "idx"
    folder.mkdir()
    for doc in corpus:
        write_markdown(doc, folder)
    qs = queries(load_questions(corpus=corpus))
    questions = root / "questions.jsonl"
    questions.write_text("".join(json.dumps({"id": q.id, "query": q.text}) + "\n" for q in qs), encoding="utf-8")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAGCOURSE_CACHE", str(CACHE_ROOT))
        assert main(["index", str(folder), "--out", str(out)]) == 0
    return folder, out, qs, questions


@pytest.fixture(autouse=True)
def course_cache(monkeypatch):
    """`ragcourse index` and `query` use the user cache: here, the course's (same model, same texts)."""
    monkeypatch.setenv("RAGCOURSE_CACHE", str(CACHE_ROOT))


@pytest.fixture(scope="module")
def in_memory(course):
    """The book's pipeline over the folder's documents, read by the one reader (`documents.read_document`)."""
    folder = course[0]
    return build("E", corpus=[read_document(path, path.name) for path in sorted(folder.glob("*.md"))])


def index(folder, out, capsys) -> str:
    code = main(["index", str(folder), "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    return printed


def cli_top(out, questions, method: str, rerank: bool, capsys, more=()) -> dict[str, list[tuple]]:
    """query id -> the top TOP chunks `ragcourse query INDEX --queries` prints, as (doc, start, end)."""
    argv = ["query", str(out), "--queries", str(questions), "--method", method, "-k", str(TOP), *more]
    assert main(argv + ["--rerank"] * rerank) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return {r["id"]: [(h["doc"], h["start"], h["end"]) for h in r["hits"]] for r in lines}


def pipeline_top(retriever, qs, method: str, rerank: bool) -> dict[str, list[tuple]]:
    """The same, from the book's pipeline in memory."""
    rankings = retriever.rankings(qs, method)
    if rerank:
        rankings = rerank_rankings(default_reranker(), qs, rankings, DEPTH)
    return {qid: [(c.doc_id, c.start, c.end) for c in ranked[:TOP]] for qid, ranked in rankings.items()}


def test_query_on_a_saved_index_ranks_as_the_pipeline_does_before_and_after_a_sync(course, in_memory, capsys):
    folder, out, qs, questions = course
    assert len(qs) == 420  # 210 questions, each in documentation and in ticket phrasing
    for method, rerank in RUNS:
        got = cli_top(out, questions, method, rerank, capsys)
        assert got == pipeline_top(in_memory, qs, method, rerank), (method, rerank)
        assert all(len(hits) == TOP for hits in got.values())
    edited = folder / "user-rst-quickstart.md"
    edited.write_text(edited.read_text(encoding="utf-8").replace(
        "## Lists", "## Lists\n\nA list may be nested inside another list, as a grid table may hold a list.", 1),
        encoding="utf-8")
    assert "sync: 0 added, 1 changed, 0 deleted" in index(folder, out, capsys)
    edited_docs = [read_document(path, path.name) for path in sorted(folder.glob("*.md"))]
    retriever = build("E", corpus=edited_docs)
    texts = sorted({q.text for q in qs})  # the same questions: their vectors, embedded once above
    retriever.remember(texts, [in_memory.query_vector(text) for text in texts])
    assert any("nested inside another list" in c.content for c in retriever.chunks)  # the edit is in
    for method, rerank in RUNS:  # all four again, on the synced index
        assert cli_top(out, questions, method, rerank, capsys) == pipeline_top(retriever, qs, method, rerank), \
            (method, rerank, "after the edit")


def test_query_gate_on_a_saved_index_refuses_what_the_pipeline_refuses(course, in_memory, capsys):
    out = course[1]
    answers = {q: RECOMMENDED_GATE.answers({"distance": nearest_distance(in_memory, q)}) for q in (EGG, CAPTION)}
    assert answers == {EGG: False, CAPTION: True}  # one of each, so both branches are exercised
    assert main(["query", str(out), EGG, "--gate"]) == 0
    assert capsys.readouterr().out == f'NO ANSWER: the recommended gate (chapter 6) refuses "{EGG}"\n'
    assert main(["query", str(out), CAPTION, "--gate", "-k", "2", "--method", "bm25"]) == 0
    printed = [line.split()[2] for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert printed == [h.chunk.doc_id for h in in_memory.retrieve(CAPTION, k=2, method="bm25")]


def test_query_as_a_user_on_a_saved_index_sees_only_what_the_pre_filter_keeps(course, in_memory, tmp_path, capsys):
    out, questions = course[1], course[3]
    readable = {"user-rst-quickstart.md", "ref-rst-directives.md"}
    permissions = tmp_path / "permissions.json"
    permissions.write_text(json.dumps({"documents": {d: ["dev"] for d in readable} | {"user-config.md": ["ops"]},
                                       "users": {"ana": ["dev"], "bob": ["ops"]}}))
    got = cli_top(out, questions, "hybrid", False, capsys, ["--user", "ana", "--permissions", str(permissions)])
    assert {doc for hits in got.values() for doc, _, _ in hits} == readable
    folder = course[0]  # as it is now: an earlier test may have edited and synced it
    current = build("E", corpus=[read_document(path, path.name) for path in sorted(folder.glob("*.md"))])
    filtered = pre_filter(current, frozenset(readable))
    texts = sorted({q.text for q in course[2]})
    filtered.remember(texts, [in_memory.query_vector(text) for text in texts])  # embedded once, above
    assert got == pipeline_top(filtered, course[2], "hybrid", False)
    assert main(["query", str(out), CAPTION, "--user", "eve", "--permissions", str(permissions)]) == 2
    err = capsys.readouterr().err
    assert "'eve'" in err and "ana" not in err and "bob" not in err  # the error names that user only


def test_query_and_index_print_names_escaped_so_a_name_cannot_fake_a_result_line(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    fake = "\n[1] d=0.000  official-policy.md > Policy  #char=0,10\n"
    names = [f"notes{fake}.md", "\x1b[2Jclear.md", "plain.md"]
    for name in names:
        (folder / name).write_text("# Tents\n\nA tent is pitched on flat ground, away from trees.\n", encoding="utf-8")
    assert main(["index", str(folder), "--out", str(tmp_path / "idx"), "--cache-dir", str(tmp_path / "cache")]) == 0
    assert main(["query", str(tmp_path / "idx"), "where do I pitch a tent", "-k", "3", "--method", "dense"]) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert "\x1b" not in printed and not any(line.startswith("[1] d=0.000  official") for line in lines)
    assert lines[0].startswith("3 file(s): 3 indexed") and lines[1].startswith("sync: 3 added")
    hits = [line for line in lines[2:] if not line.startswith("    ")]
    assert len(hits) == 3 and all(line.startswith(f"[{n}] d=") for n, line in zip((1, 2, 3), hits, strict=True))
    assert any("notes\\n[1] d=0.000  official-policy.md" in line for line in hits)  # the name, escaped
