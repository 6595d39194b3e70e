"""Tests for ragcourse.corpus: the built corpus at run time (load, verify, sections, profile)."""

from __future__ import annotations

import shutil

import pytest

from ragcourse.corpus import (
    CORPUS_DIR,
    SOURCE_FILES,
    CorpusError,
    Document,
    Section,
    doc_id,
    fingerprint,
    load_corpus,
    main,
    profile,
    read_built,
    read_lock,
    sections,
    sha256_file,
)
from ragcourse.words import collapse

EXPECTED_IDS = [
    "dev-repository", "dev-rst-problems", "dev-testing", "eps-ep-001", "eps-ep-010",
    "ref-rst-directives", "ref-rst-mathematics", "ref-rst-roles", "user-config", "user-emacs",
    "user-odt", "user-rst-quickstart", "user-slide-shows",
]


def test_loaded_corpus_matches_the_lock(corpus):
    lock = read_lock()
    assert [d.id for d in corpus] == EXPECTED_IDS
    assert lock["profile"] == {"documents": 13, "characters": 319_513, "sections": 127}
    assert sum(len(d.text) for d in corpus) == 319_513
    assert fingerprint(corpus) == lock["fingerprint"]
    assert lock["fingerprint"].startswith("7c9e0b0916bb")


def test_fingerprint_depends_on_every_field():
    base = [Document("a", "T", "text"), Document("b", "U", "more")]
    fp = fingerprint(base)
    assert fingerprint(list(reversed(base))) == fp  # order-independent (sorted by id)
    assert fingerprint([Document("a", "T", "texT"), base[1]]) != fp
    assert fingerprint([Document("a", "X", "text"), base[1]]) != fp
    assert fingerprint([Document("c", "T", "text"), base[1]]) != fp


def test_corrupted_cache_is_rejected_naming_the_document(corpus, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(CORPUS_DIR, copy)
    assert load_corpus(copy) == corpus  # an exact copy passes
    target = copy / "user-odt.md"
    text = target.read_text(encoding="utf-8")
    target.write_text(text[:500] + ("X" if text[500] != "X" else "Y") + text[501:], encoding="utf-8")
    with pytest.raises(CorpusError) as caught:
        load_corpus(copy)
    message = str(caught.value)
    assert read_lock()["fingerprint"] in message
    assert "documents that differ: user-odt." in message and "user-config" not in message
    assert "`python -m ragcourse.build.corpus --update-lock`" in message


def test_missing_cache_says_how_to_build(tmp_path):
    with pytest.raises(CorpusError, match=r"`make corpus` \(or `python -m ragcourse.build.corpus`\)"):
        load_corpus(tmp_path / "nowhere")


def test_read_built_is_the_one_reader_of_a_built_folder(tmp_path, monkeypatch):
    """Sorted by id, each file read as written; a missing file is named with the caller's label and hint."""
    import json

    (tmp_path / "manifest.json").write_text(json.dumps({"documents": [{"id": "b", "title": "B"},
                                                                      {"id": "a", "title": "A"}]}))
    (tmp_path / "a.md").write_bytes(b"x\r\ny")
    (tmp_path / "b.md").write_text("z")
    assert read_built(tmp_path, "toy", "rebuild it") == [Document("a", "A", "x\r\ny"), Document("b", "B", "z")]
    (tmp_path / "b.md").unlink()
    with pytest.raises(CorpusError, match=r"^toy: .*b\.md is missing; rebuild it$"):
        read_built(tmp_path, "toy", "rebuild it")
    # the main corpus and the genres both read through it (one rule, not two copies)
    import ragcourse.genres

    seen = []
    monkeypatch.setattr(ragcourse.corpus, "read_built", lambda folder, label, hint: seen.append(label) or [])
    monkeypatch.setattr(ragcourse.genres, "read_built", lambda folder, label, hint: seen.append(label) or [])
    with pytest.raises(CorpusError):
        load_corpus(tmp_path)
    with pytest.raises(CorpusError):
        ragcourse.genres.load_genre("wiki", root=tmp_path)
    assert seen == ["corpus", "genre 'wiki'"]


def test_missing_lock_says_who_writes_it(tmp_path):
    with pytest.raises(CorpusError, match="`python -m ragcourse.build.corpus --update-lock`"):
        read_lock(tmp_path / "corpus.lock.json")


def test_check_command(corpus, capsys):
    assert main(["check"]) == 0
    assert capsys.readouterr().out.startswith("corpus OK: 13 documents, fingerprint 7c9e0b0916bb")
    with pytest.raises(SystemExit):  # building is `python -m ragcourse.build.corpus`
        main(["build"])


# ----- small helpers


def test_sha256_file(tmp_path):
    path = tmp_path / "abc.txt"
    path.write_bytes(b"abc")
    assert sha256_file(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    path.write_bytes(b"")
    assert sha256_file(str(path)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_collapse_and_doc_id():
    assert collapse(" a\n\t b  c \n") == "a b c"
    assert doc_id("docs/eps/ep-010.rst") == "eps-ep-010"
    assert sorted(doc_id(f) for f in SOURCE_FILES) == EXPECTED_IDS


# ----- sections: one rule, worked by hand


def test_sections_hand_worked():
    #  "Intro.\n" 0-7 | "## A\n" 7-12 | "x\n" 12-14 | "## B" 14-18 (last line, no newline)
    assert sections("Intro.\n## A\nx\n## B") == [
        Section("", 0, 0, 7), Section("A", 7, 12, 14), Section("B", 14, 18, 18)]
    assert sections("") == []
    assert sections("no heading") == [Section("", 0, 0, 10)]
    assert sections("## T  \r\nbody\r\n") == [Section("T", 0, 8, 14)]  # "\r" and spaces stripped
    assert [s.headed for s in sections("a\n## B\n")] == [False, True]


def test_headings_inside_fenced_code_are_code():
    #  "## A\n" 0-5 | "```py\n" 5-11 | "## no\n" 11-17 | "```\n" 17-21 | "## B\n" 21-26
    assert sections("## A\n```py\n## no\n```\n## B\n") == [Section("A", 0, 5, 21), Section("B", 21, 26, 26)]
    titles = lambda text: [s.title for s in sections(text)]  # noqa: E731
    assert titles("## A\n~~~\n## no\n~~~\n## B\n") == ["A", "B"]  # tildes
    assert titles("## A\n````\n```\n## no\n````\n## B\n") == ["A", "B"]  # a shorter run does not close
    assert titles("## A\n```\n## no\n`````  \n## B\n") == ["A", "B"]  # a longer run does
    assert titles("## A\n```\n## no\n~~~\n## still no\n") == ["A"]  # open to the end
    assert titles("## A\n   ```\n## no\n   ```\n## B\n") == ["A", "B"]  # up to 3 spaces: a fence
    assert titles("## A\n    ```\n## B\n") == ["A", "B"]  # 4 spaces: indented text, not a fence
    assert titles("## A\n```x`y\n## B\n") == ["A", "B"]  # a backtick after the run: inline code
    assert titles("## A\r\n```\r\n## no\r\n```\r\n## B\r\n") == ["A", "B"]  # CRLF
    assert titles("## \n##\n#### deeper\n ## indented\n") == [""]  # none is a `## ` heading


# ----- sections and profile on the built corpus


def test_sections_offsets(corpus):
    for doc in corpus:
        found = sections(doc.text)
        assert found[0].start == 0 and found[-1].end == len(doc.text)
        for here, following in zip(found, found[1:], strict=False):
            assert here.end == following.start
        for section in found:
            if section.headed:
                line = f"## {section.title}\n"
                assert doc.text[section.start:].startswith(line)
                assert section.body == section.start + len(line)
            else:
                assert (section.title, section.start, section.body) == ("", 0, 0)
    assert sum(s.headed for d in corpus for s in sections(d.text)) == 127


def test_profile_rows(corpus):
    table = profile(corpus)
    assert list(table.columns) == ["id", "title", "characters", "sections", "words"]
    assert list(table["id"]) == EXPECTED_IDS
    assert table["sections"].sum() == 127
    assert table["characters"].sum() == 319_513
    assert dict(zip(table["id"], table["sections"], strict=True))["user-slide-shows"] == 27
