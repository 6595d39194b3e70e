"""The command line: thin shells over the package, with clear errors and exit codes."""

import json

from ragcourse.cli import main


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
    try:
        main(["chunk", str(path), "--strategy", "Z"])
    except SystemExit as stop:
        assert stop.code == 2
    assert "invalid choice: 'Z'" in capsys.readouterr().err


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


def test_search_with_rerank_prints_the_reranked_top_k(corpus, capsys, monkeypatch):
    from ragcourse.pipeline import build
    from ragcourse.rerank import default_reranker, rerank

    monkeypatch.delenv("RAGCOURSE_RERANKER", raising=False)
    query = "how do I give a figure a caption"
    assert main(["search", query, "--rerank", "--depth", "10", "-k", "2"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    shortlist = [h.chunk for h in build("E").retrieve(query, k=10, method="hybrid")]
    expected = [r.chunk for r in rerank(default_reranker(), query, shortlist, top=2)]
    assert len(printed) == 2
    for line, chunk in zip(printed, expected, strict=True):
        assert f"{chunk.doc_id} > {chunk.section}  #char={chunk.start},{chunk.end}" in line


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
    try:
        main(["search", "anything", "--rerank", "--depth", "0"])
    except SystemExit as stop:
        assert stop.code == 2
    assert "'0': expected an integer >= 1" in capsys.readouterr().err
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x1"}\n', encoding="utf-8")
    assert main(["evaluate", "--questions", str(broken)]) == 2
    assert "ragcourse evaluate: error:" in capsys.readouterr().err
