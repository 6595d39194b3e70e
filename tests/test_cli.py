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
