"""The command line: thin shells over the package, with clear errors and exit codes."""

import json
import subprocess
import sys

import pytest

from ragcourse.chunking import STRATEGIES
from ragcourse.cli.main import main, parser
from ragcourse.pipeline import METHODS


def test_chunk_prints_json_lines_whose_offsets_slice(tmp_path, capsys):
    text = "Intro.\n\n## Tents\n\nPitch the tent on flat ground.\n"
    path = tmp_path / "notes.md"
    path.write_text(text, encoding="utf-8")
    assert main(["chunk", str(path), "--strategy", "E", "--title", "Camping"]) == 0
    chunks = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [c["content"] for c in chunks] == ["Intro.", "Pitch the tent on flat ground."]
    assert all(text[c["start"]:c["end"]] == c["content"] for c in chunks)
    assert chunks[1]["text"] == "[Camping > Tents]\nPitch the tent on flat ground."


def test_bad_strategy_is_rejected_by_the_parser(tmp_path, capsys):
    path = tmp_path / "n.md"
    path.write_text("x", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        main(["chunk", str(path), "--strategy", "Z"])
    assert stop.value.code == 2
    assert "invalid choice: 'Z'" in capsys.readouterr().err


def choices(command: str, option: str) -> list:
    sub = next(a for a in parser()._actions if a.dest == "command").choices[command]
    return next(a for a in sub._actions if option in a.option_strings).choices


def test_choices_come_from_the_package_tables():
    for command in ("chunk", "query", "search", "evaluate", "index"):
        assert choices(command, "--strategy") == list(STRATEGIES) == ["A", "B", "C", "D", "E", "F"]
    for command in ("query", "search", "evaluate"):
        assert choices(command, "--method") == list(METHODS) == ["dense", "bm25", "hybrid"]


@pytest.mark.parametrize("argv", [["query", "q"], ["search", "q"], ["query", "some-index", "q"]])
@pytest.mark.parametrize("k", ["0", "-1", "two", "2.5"])
def test_k_below_one_or_not_an_integer_exits_2_naming_the_value(argv, k, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*argv, "-k", k])
    assert stop.value.code == 2
    shown = k if k.lstrip("-").isdigit() else repr(k)
    assert f"argument -k: k={shown}: expected an integer >= 1" in capsys.readouterr().err


def test_missing_file_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    assert main(["chunk", str(tmp_path / "absent.md")]) == 2
    assert "ragcourse chunk: error:" in capsys.readouterr().err


def test_index_and_query_a_folder_with_a_broken_file(tmp_path, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("## Tents\n\nPitch the tent on flat ground away from trees.\n", encoding="utf-8")
    (docs / "b.txt").write_bytes(b"caf\xe9")
    assert main(["index", str(docs), "--out", str(tmp_path / "idx")]) == 1  # a failure is reported, not hidden
    out = capsys.readouterr().out
    assert "1 indexed, 1 failed" in out and "b.txt: undecodable: not UTF-8" in out
    assert main(["query", str(tmp_path / "idx"), "where do I pitch a tent", "-k", "1"]) == 0
    assert "a.md > Tents  #char=10,56" in capsys.readouterr().out


class LastFirst:
    """A stand-in reranker that turns the shortlist upside down: the last chunk scores highest."""

    name, use = "last first", "text"

    def score(self, query, passages):
        return list(range(len(passages)))


def test_query_with_rerank_prints_the_reranked_top_k(corpus, capsys, monkeypatch):
    from ragcourse import rerank
    from ragcourse.pipeline import build

    monkeypatch.setattr(rerank, "default_reranker", LastFirst)
    query = "how do I give a figure a caption"
    assert main(["query", query, "--rerank", "--depth", "10", "-k", "2"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    shortlist = build("E").retrieve(query, k=10, method="hybrid")
    expected = [shortlist[9], shortlist[8]]  # upside down, cut to k = 2, each with its own distance
    assert len(printed) == 2
    for rank, (line, hit) in enumerate(zip(printed, expected, strict=True), start=1):
        c = hit.chunk
        assert line == f"[{rank}] d={hit.distance:.3f}  {c.doc_id} > {c.section}  #char={c.start},{c.end}"


def test_evaluate_reads_a_questions_file_and_reranks(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RAGCOURSE_RERANKER", raising=False)
    from ragcourse.groundtruth import QUESTIONS_FILE

    mine = tmp_path / "mine.jsonl"
    mine.write_text(QUESTIONS_FILE.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    assert main(["evaluate", "--questions", str(mine), "--method", "hybrid", "--rerank", "--depth", "5"]) == 0
    out = capsys.readouterr().out
    assert "E/hybrid + late interaction" in out and "top 5" in out
    assert [line.split()[-3] for line in out.splitlines() if " R@1 " in line] == ["2"]  # n = 2 queries


def test_evaluate_takes_questions_without_doc_or_ticket(corpus, tmp_path, capsys):
    """An outsider's file names only the needle: the document is found, the ticket phrasing skipped."""
    from ragcourse.groundtruth import load_questions

    first = load_questions()[0]
    mine = tmp_path / "mine.jsonl"
    mine.write_text(json.dumps({"id": "x1", "needle": first.needle, "question": first.question}) + "\n",
                    encoding="utf-8")
    assert main(["evaluate", "--questions", str(mine)]) == 0
    assert [line.split()[-3] for line in capsys.readouterr().out.splitlines() if " R@1 " in line] == ["1"]
    mine.write_text(json.dumps({"id": "x1", "needle": "not in the corpus at all", "question": "?"}) + "\n",
                    encoding="utf-8")
    assert main(["evaluate", "--questions", str(mine)]) == 2
    assert "mine.jsonl:1: " in capsys.readouterr().err


def test_bad_depth_and_bad_questions_file_are_clear_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["query", "anything", "--rerank", "--depth", "0"])
    assert stop.value.code == 2
    assert "argument --depth: depth=0: expected an integer >= 1" in capsys.readouterr().err
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x1"}\n', encoding="utf-8")
    assert main(["evaluate", "--questions", str(broken)]) == 2
    assert "ragcourse evaluate: error:" in capsys.readouterr().err


EGG, CAPTION = "How long should I boil an egg for a runny yolk?", "How do I add a caption to a figure?"


def test_query_gate_refuses_what_the_recommended_gate_refuses(corpus, capsys):
    from ragcourse.gate import RECOMMENDED_GATE
    from ragcourse.pipeline import build
    from ragcourse.signals import nearest_distance

    retriever = build("E")
    answers = {q: RECOMMENDED_GATE.answers({"distance": nearest_distance(retriever, q)}) for q in (EGG, CAPTION)}
    assert answers == {EGG: False, CAPTION: True}  # one of each, so both branches are exercised
    assert main(["query", EGG, "--gate"]) == 0
    assert capsys.readouterr().out == f'NO ANSWER: the recommended gate (chapter 6) refuses "{EGG}"\n'
    assert main(["query", CAPTION, "--gate", "-k", "2"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    expected = retriever.retrieve(CAPTION, k=2, method="hybrid")
    assert [line.split()[2] for line in printed] == [h.chunk.doc_id for h in expected]


def test_query_queries_writes_one_json_line_per_query(corpus, tmp_path, capsys):
    from ragcourse.pipeline import build

    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": "egg", "query": EGG}) + "\n\n" + json.dumps({"id": "cap", "query": CAPTION})
                    + "\n", encoding="utf-8")
    assert main(["query", "--queries", str(path), "--gate", "--method", "dense", "-k", "3"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["id"], r["answered"]) for r in lines] == [("egg", False), ("cap", True)]
    assert lines[0]["hits"] == []
    expected = build("E").retrieve(CAPTION, k=3, method="dense")
    assert lines[1]["hits"] == [{"doc": h.chunk.doc_id, "start": h.chunk.start, "end": h.chunk.end,
                                 "distance": round(h.distance, 4)} for h in expected]
    assert main(["query", "--queries", str(path), "--method", "dense", "-k", "1"]) == 0  # no gate: all answered
    assert [json.loads(line)["answered"] for line in capsys.readouterr().out.splitlines()] == [True, True]


@pytest.mark.parametrize(("second_line", "message"), [
    ('{"id": "b"}', ":2: required fields ['id', 'query']"),
    ('{"id": "b", "query": "x"', ":2: not valid JSON"),
    ('["b", "x"]', ":2: expected a JSON object"),
    ('{"id": "a", "query": "again"}', ":2: duplicate id 'a' (first on line 1)"),
])
def test_query_queries_with_a_malformed_line_exits_2_naming_it(tmp_path, capsys, second_line, message):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "query": "fine"}\n' + second_line + "\n", encoding="utf-8")
    assert main(["query", "--queries", str(path), "--gate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragcourse query: error: ") and message in err and str(path) in err


@pytest.mark.parametrize("argv", [["query"], ["query", "--gate", "--cut", "0.5", "q"], ["query", "."],
                                  ["search", "q", "--queries", "f.jsonl"], ["search", "idx", "q"]])
def test_query_needs_one_query_source_and_one_refusal_rule(argv, capsys):
    assert main(argv) == 2
    assert f"ragcourse {argv[0]}: error:" in capsys.readouterr().err


class Confident:
    """A stand-in reranker: every passage of a query with 'caption' in it scores 1, others 0."""

    name, use = "confident", "text"

    def score(self, query, passages):
        return [1.0 if "caption" in query else 0.0] * len(passages)


def test_a_multi_signal_gate_measures_its_signals_with_the_default_reranker(corpus, capsys, monkeypatch):
    from ragcourse import gate, rerank

    monkeypatch.setattr(rerank, "default_reranker", Confident)
    monkeypatch.setattr(gate, "RECOMMENDED_GATE", gate.SignalGate(("rerank_top",), (0.0,), (1.0,), (1.0,), 0.0, 0.5))
    assert main(["query", EGG.replace("egg", "caption"), "--gate"]) == 0
    assert not capsys.readouterr().out.startswith("NO ANSWER")
    assert main(["query", CAPTION.replace("caption", "title"), "--gate"]) == 0
    assert capsys.readouterr().out.startswith("NO ANSWER")


def test_search_is_the_old_spelling_of_query_and_says_where_to_go(corpus, capsys):
    assert main(["search", CAPTION, "-k", "2"]) == 0
    searched = capsys.readouterr()
    assert "renamed `ragcourse query`" in searched.err
    assert main(["query", CAPTION, "-k", "2"]) == 0
    assert capsys.readouterr().out == searched.out


def test_python_dash_m_runs_the_same_command():
    done = subprocess.run([sys.executable, "-m", "ragcourse", "search", "q", "-k", "0"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "k=0" in done.stderr and "usage: ragcourse" in done.stderr


def test_version(capsys):
    from ragcourse import __version__

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"ragcourse {__version__}\n"
