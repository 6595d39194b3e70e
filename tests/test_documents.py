"""The one reader (`ragcourse.documents`): formats into sections, the folder walk, and the same chunks everywhere.

Every document here is written for the test (no third-party text).
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from ragcourse import documents
from ragcourse.chunking import chunk_corpus
from ragcourse.cli import main
from ragcourse.cli.folder import read_folder
from ragcourse.corpus import profile
from ragcourse.documents import ExtractionError, read_document, walk
from ragcourse.index_sync import ingest_folder

RST = """Rope handling
=============

Coil the rope in loops of equal length so it pays out without tangles.

Knots
-----

A figure eight knot at each end stops the rope sliding through a belay device.
Call :meth:`Rope.tie` with ``tight=True`` and see `the guide <https://example.invalid>`_.

Storage
-------

.. note:: Dry the rope away from sunlight before you store it.

.. code-block:: python

   rope.store(dry=True)

Long term
~~~~~~~~~

Check the sheath for cuts every spring.
"""

HTML = """<!DOCTYPE html><html><head><title>Trail food (site)</title><script>track()</script></head>
<body><nav><a href="/">Home</a> | <a href="/food">Food</a></nav>
<h1>Trail food</h1><p>Oats with powdered <b>milk</b> make a breakfast that needs only hot water.</p>
<h2>Snacks</h2><p>Salted nuts replace the salt lost by sweating on long climbs.</p>
<ul><li>Dried apricots keep for weeks.</li><li>Chocolate melts in summer.</li></ul>
<h3>Sweet snacks</h3><p>Honey sticks give quick energy.</p>
<h2>Cooking</h2><pre>boil(water, minutes=1)
add(oats)</pre>
<table><tr><th>Meal</th><th>Grams</th></tr><tr><td>Breakfast</td><td>120</td></tr></table>
</body></html>
"""

MARKDOWN = "# Camping guide\n\nA short guide to camping.\n\n## Tents\n\nPitch the tent on flat ground.\n\n" \
           "## Stoves\n\nNever cook inside the inner tent.\n"


def test_rst_is_parsed_by_docutils_into_sections(tmp_path):
    (tmp_path / "rope.rst").write_text(RST, encoding="utf-8")
    doc = read_document(tmp_path / "rope.rst", "rope.rst")
    assert doc.title == "Rope handling"
    assert "Rope handling" not in doc.text  # the title leaves the text, as the course corpus keeps it
    assert [line for line in doc.text.splitlines() if line.startswith("#")] == ["## Knots", "## Storage",
                                                                               "### Long term"]
    assert int(profile([doc])["sections"].sum()) == 2
    assert "Call Rope.tie with tight=True and see the guide." in doc.text  # markup gone, words kept
    assert ":meth:" not in doc.text and "``tight" not in doc.text and ".. code-block" not in doc.text
    assert "```python\nrope.store(dry=True)\n```" in doc.text
    assert "Note: Dry the rope away from sunlight before you store it." in doc.text


def test_html_is_parsed_into_sections_without_scripts_or_navigation(tmp_path):
    (tmp_path / "food.html").write_text(HTML, encoding="utf-8")
    doc = read_document(tmp_path / "food.html", "food.html")
    assert doc.title == "Trail food"
    assert doc.text.split("\n\n") == [
        "Oats with powdered milk make a breakfast that needs only hot water.", "## Snacks",
        "Salted nuts replace the salt lost by sweating on long climbs.",
        "- Dried apricots keep for weeks.\n- Chocolate melts in summer.", "### Sweet snacks",
        "Honey sticks give quick energy.", "## Cooking", "```\nboil(water, minutes=1)\nadd(oats)\n```",
        "Meal | Grams\nBreakfast | 120\n"]


def test_markdown_keeps_its_text_and_gives_its_title(tmp_path):
    (tmp_path / "guide.md").write_text(MARKDOWN, encoding="utf-8")
    doc = read_document(tmp_path / "guide.md")
    assert (doc.id, doc.title, doc.text) == ("guide.md", "Camping guide", MARKDOWN.split("\n", 2)[2])


@pytest.fixture
def three(tmp_path):
    """One Markdown, one RST and one HTML file at the top of a folder (plus a PNG that is not a document)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in (("guide.md", MARKDOWN), ("rope.rst", RST), ("food.html", HTML)):
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))
    return folder


def fake_embed(texts):
    rows = np.array([[len(t), t.count(" ") + 1, t.count("e") + 1, 1.0] for t in texts], dtype=np.float32)
    return rows


def test_chunk_index_and_eval_give_the_same_chunks(three, capsys):
    """Same text, offsets, titles and sections for the same file, whichever command reads it."""
    by_eval = chunk_corpus(list(read_folder(three).documents), "E")
    indexed = ingest_folder(three, embed=fake_embed, model_name="fake", dim=4)
    assert [r.doc_id for r in indexed.attempted] == ["food.html", "guide.md", "rope.rst"]  # the PNG is no document
    assert not indexed.failed
    for name in ("guide.md", "rope.rst", "food.html"):
        assert main(["chunk", str(three / name)]) == 0
        by_chunk = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        mine = [dataclasses.asdict(c) for c in by_eval if c.doc_id == name]
        assert by_chunk == mine and len(mine) >= 2, name
        assert [dataclasses.asdict(c) for c in indexed.index.chunks if c.doc_id == name] == mine
    sections = {c.section for c in by_eval}
    assert {"Tents", "Stoves", "Knots", "Storage", "Snacks", "Cooking"} <= sections


# ---------------------------------------------------------------- the walk: nothing lost or hidden


@pytest.fixture
def tricky(tmp_path, monkeypatch):
    """Links out and in, a loop, a link to a parent folder, a FIFO, an unreadable folder, a hidden folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("A secret sentence that lives outside the folder.\n", encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "sub" / "private").mkdir(parents=True)
    (docs / ".git").mkdir()
    (docs / ".git" / "HEAD").write_text("ref: main\n", encoding="utf-8")
    (docs / "guide.md").write_text(MARKDOWN, encoding="utf-8")
    (docs / "sub" / "private" / "hidden.md").write_text("Never read.\n", encoding="utf-8")
    (docs / "notes.csv").write_text("a,b\n", encoding="utf-8")
    os.symlink(outside / "secret.md", docs / "leak.md")
    os.symlink(docs / "guide.md", docs / "sub" / "alias.md")
    os.symlink(docs / "loop-b.md", docs / "loop-a.md")
    os.symlink(docs / "loop-a.md", docs / "loop-b.md")
    os.symlink(docs, docs / "sub" / "up")
    os.mkfifo(docs / "pipe.md")
    real = documents._scandir

    def scandir(folder):
        if folder.name == "private":  # tests run as root, where chmod 000 does not stop a read
            raise PermissionError(13, "Permission denied", str(folder))
        return real(folder)

    monkeypatch.setattr(documents, "_scandir", scandir)
    return docs, outside


EXPECTED_PROBLEMS = {
    "leak.md": "symbolic link to {outside}/secret.md, outside the folder: not followed",
    "loop-a.md": "symbolic link loop: not followed",
    "loop-b.md": "symbolic link loop: not followed",
    "pipe.md": "a named pipe (FIFO), not a file: never opened",
    "sub/private": "unreadable folder: Permission denied",
    "sub/up": "symbolic link to the folder {docs}: not followed (a folder inside is read where it is)",
}


def test_the_walk_reports_every_entry_it_does_not_read(tricky):
    docs, outside = tricky
    found = walk(docs)
    assert found.files == ("guide.md", "sub/alias.md")  # a link inside the folder is read
    assert found.skipped == (".git/", "notes.csv")
    expected = {k: v.format(outside=outside.resolve(), docs=docs.resolve()) for k, v in EXPECTED_PROBLEMS.items()}
    assert {p.path: p.reason for p in found.problems} == expected


def test_eval_and_index_list_the_same_problems_and_never_read_outside(tricky):
    docs, outside = tricky
    corpus = read_folder(docs)
    failed = {f.path: f.reason for f in corpus.failed}
    assert set(failed) == set(EXPECTED_PROBLEMS)
    assert all("secret sentence" not in d.text for d in corpus.documents)
    report = ingest_folder(docs, embed=fake_embed, model_name="fake", dim=4)
    assert {k.path: k.reason for k in report.skipped if k.path in failed} == failed  # the same reasons, no hang
    assert not report.failed
    assert [r.doc_id for r in report.indexed] == ["guide.md", "sub/alias.md"]
    assert all("secret sentence" not in c.content for c in report.index.chunks)


def test_reading_a_link_out_of_its_folder_directly_is_refused_too(tricky):
    docs, _ = tricky
    with pytest.raises(ExtractionError, match="outside the folder: not followed"):
        read_document(docs / "leak.md", "leak.md")


def test_a_file_nested_past_the_parsers_limits_fails_alone(tmp_path):
    """A list nested 200 deep (RST) or 5,000 nested <div>s (HTML) took the whole eval down with 'maximum
    recursion depth exceeded'; each now fails with its reason and the other files are read."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "deep.rst").write_text("Deep\n====\n\n" + "".join(f"{' ' * 2 * i}- item {i}\n\n" for i in range(200)),
                                     encoding="utf-8")
    (folder / "deep.html").write_text("<div>" * 5000 + "<p>Deep.</p>" + "</div>" * 5000, encoding="utf-8")
    (folder / "fine.md").write_text("# Fine\n\nA plain sentence.\n", encoding="utf-8")
    corpus = read_folder(folder)
    assert [d.id for d in corpus.documents] == ["fine.md"]
    reasons = {f.path: f.reason for f in corpus.failed}
    assert set(reasons) == {"deep.rst", "deep.html"}
    assert all(r.startswith("could not be parsed as .") and "RecursionError" in r for r in reasons.values())


def test_a_file_name_that_is_not_utf8_fails_alone_and_prints(tmp_path):
    """One such name stopped the whole eval ('surrogates not allowed' when the report was written)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "fine.md").write_text("# Fine\n\nA plain sentence.\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.md"), "wb") as handle:
        handle.write(b"# Cafe\n\nEspresso at nine.\n")
    os.mkdir(os.path.join(os.fsencode(folder), b"d\xe9j\xe0"))
    corpus = read_folder(folder)
    assert [d.id for d in corpus.documents] == ["fine.md"]
    assert [(f.path, f.reason) for f in corpus.failed] == [
        ("caf\\xe9.md", "file name is not UTF-8: rename it to be read"),
        ("d\\xe9j\\xe0", "file name is not UTF-8: rename it to be read")]
    json.dumps([f.path for f in corpus.failed], ensure_ascii=False).encode("utf-8")  # savable and printable
