"""The command line: thin shells over the package, with clear errors and exit codes."""

import json

import pytest

from ragcourse.chunking import STRATEGIES
from ragcourse.cli import main, parser
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
    for command in ("chunk", "search", "evaluate", "index"):
        assert choices(command, "--strategy") == list(STRATEGIES) == ["A", "B", "C", "D", "E", "F"]
    for command in ("search", "evaluate"):
        assert choices(command, "--method") == list(METHODS) == ["dense", "bm25", "hybrid"]


@pytest.mark.parametrize("argv", [["search", "q"], ["query", "some-index", "q"]])
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
    assert "1 indexed, 1 failed" in out and "b.txt: not UTF-8" in out
    assert main(["query", str(tmp_path / "idx"), "where do I pitch a tent", "-k", "1"]) == 0
    assert "a.md  #char=10,56" in capsys.readouterr().out


class LastFirst:
    """A stand-in reranker that turns the shortlist upside down: the last chunk scores highest."""

    name, use = "last first", "text"

    def score(self, query, passages):
        return list(range(len(passages)))


def test_search_with_rerank_prints_the_reranked_top_k(corpus, capsys, monkeypatch):
    from ragcourse import rerank
    from ragcourse.pipeline import build

    monkeypatch.setattr(rerank, "default_reranker", LastFirst)
    query = "how do I give a figure a caption"
    assert main(["search", query, "--rerank", "--depth", "10", "-k", "2"]) == 0
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


def test_bad_depth_and_bad_questions_file_are_clear_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["search", "anything", "--rerank", "--depth", "0"])
    assert stop.value.code == 2
    assert "argument --depth: depth=0: expected an integer >= 1" in capsys.readouterr().err
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x1"}\n', encoding="utf-8")
    assert main(["evaluate", "--questions", str(broken)]) == 2
    assert "ragcourse evaluate: error:" in capsys.readouterr().err
