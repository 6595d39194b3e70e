"""A Sphinx documentation folder read with nothing lost silently (`ragcourse.rst`, `ragcourse.documents`).

tests/fixtures/sphinx is written for this test in the markup of a Sphinx project's `docs/` (version notes, API
descriptions, glossary, hlist, note/warning/seealso, `:ref:`/`:setting:`/`:class:` roles, a directive no reader
knows, a toctree and an autodoc stub). For every directive in its source, the characters of the directive's
text (its arguments and body, roles reduced to what Sphinx shows) are counted in the source and found in the
extracted text, per directive kind.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from ragcourse import rst
from ragcourse.cli.folder import read_folder

FIXTURE = Path(__file__).parent / "fixtures" / "sphinx"
#: Every kind the reader must keep, and the kind it keeps as plain text though it does not know it.
KINDS = {"versionadded", "versionchanged", "deprecated", "attribute", "method", "function", "class", "exception",
         "setting", "glossary", "hlist", "note", "warning", "seealso", "tab-set"}
ROLE = re.compile(r":[\w:.+-]+:`([^`]*)`")


def words(text: str) -> str:
    """The words of a text, one space apart: what a reader searches, without the punctuation a renderer adds
    ("- term: definition", "New in version 2.1: ...").

    >>> words("- acknowledged: A message, confirmed.")
    'acknowledged A message confirmed'
    """
    return " ".join(re.findall(r"\w+", text))


def directive_texts(source: str) -> list[tuple[str, str]]:
    """(kind, words) of each directive in `source`: the text after `::` and the indented body below it, options
    left out, `:role:`text`` as Sphinx shows it."""
    lines, out = source.split("\n"), []
    for i, line in enumerate(lines):
        found = re.match(r"\.\. ([\w:-]+)::\s*(.*)", line)
        if not found:
            continue
        body = [found.group(2)]
        for following in lines[i + 1:]:
            if following.strip() and not following.startswith(" "):
                break
            if not re.match(r"\s+:[\w-]+:", following):  # an option line
                body.append(following)
        out.append((rst._kind(found.group(1)), words(ROLE.sub(lambda m: rst.role_text(m.group(1)), " ".join(body)))))
    return out


@pytest.fixture(scope="module")
def folder():
    return read_folder(FIXTURE)


def test_every_directive_kind_keeps_all_its_characters(folder):
    extracted = {d.id: words(d.text) for d in folder.documents}
    chars, kept = defaultdict(int), defaultdict(int)
    for path in sorted(FIXTURE.rglob("*.rst")):
        doc = path.relative_to(FIXTURE).as_posix()
        for kind, text in directive_texts(path.read_text(encoding="utf-8")):
            if kind in rst.NO_TEXT or kind == "contents":
                continue
            chars[kind] += len(text)
            kept[kind] += len(text) if text in extracted.get(doc, "") else 0
    assert set(chars) == KINDS  # the fixture holds every kind listed
    assert {kind: kept[kind] / chars[kind] for kind in chars} == dict.fromkeys(chars, 1.0)


def test_roles_show_what_sphinx_shows(folder):
    text = {d.id: d.text for d in folder.documents}
    assert "named by task_default_queue unless" in text["guide.rst"]  # :setting:
    assert "and Router applies the first" in text["guide.rst"]  # :class:`~lantern.routing.Router`
    assert "See also: The routing guide explains" in text["index.rst"]  # :ref:`title <label>`
    assert "Changed in version 3.0: Routes are read once per worker" in text["guide.rst"]
    assert all(":" + role + ":" not in t for t in text.values() for role in ("ref", "setting", "class"))


def test_no_file_with_text_is_reported_as_no_text(folder):
    assert [d.id for d in folder.documents] == ["glossary.rst", "guide.rst", "index.rst", "reference/settings.rst"]
    assert [(f.path, f.no_text) for f in folder.failed] == [("api/lantern.routing.rst", True)]  # autodoc stub
    assert folder.kept_as_text == (("guide.rst", "tab-set", 1),)  # kept as plain text, and counted


def test_sphinx_markup_never_leaks_into_the_next_parse():
    from docutils.parsers.rst import directives, roles

    before = (dict(roles._roles), dict(directives._directives))
    rst.parse(".. versionchanged:: 1.0\n\n   Text with :setting:`x`.\n", "a.rst")
    assert (dict(roles._roles), dict(directives._directives)) == before


def test_a_needle_not_found_shows_the_nearest_passage_and_its_markup_as_read(folder, tmp_path):
    from ragcourse.cli.folder import check_folder_questions

    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"id": "role", "question": "?", "needle": "A task goes to the queue named by :setting:`task_default_queue` '
        'unless a route says otherwise."}\n'
        '{"id": "near", "question": "?", "needle": "Routes may name a queue by a regex pattern."}\n'
        '{"id": "note", "question": "?", "needle": "Routes are read once per worker, not per task."}\n',
        encoding="utf-8")
    checked = check_folder_questions(path, folder.documents, folder.failed)
    assert [q.id for q in checked.questions] == ["note"]  # a version note's body is searchable text
    role, near = (r.reason for r in checked.rejected)
    assert "it carries reStructuredText markup, which reading strips: as read it is 'A task goes to the queue " \
           "named by task_default_queue unless a route says otherwise.', which the folder holds: use that" in role
    assert "nearest passage of the extracted text (guide.rst): 'New in version 2.1: Routes may name a queue by a " \
           "glob pattern.'" in near and "markup" not in near
    assert "could not be read" not in near  # the autodoc stub holds no text: it did not fail


def test_a_needle_in_markup_that_reading_removes_is_found_in_its_source_file(tmp_path):
    from ragcourse.cli.folder import check_folder_questions

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.rst").write_text(
        "Guide\n=====\n\nThe broker keeps every message until a worker acknowledges it.\n\n"
        ".. The retry budget is five attempts per hour.\n\n"
        ".. image:: queue.png\n   :alt: A queue drawn as seven boxes in a row.\n\n"
        ".. toctree::\n\n   routing-for-experts\n", encoding="utf-8")
    read = read_folder(docs)
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"id": "comment", "question": "?", "needle": "The retry budget is five attempts per hour."}\n'
        '{"id": "option", "question": "?", "needle": "A queue drawn as seven boxes in a row."}\n'
        '{"id": "toctree", "question": "?", "needle": "routing-for-experts"}\n'
        '{"id": "typo", "question": "?", "needle": "The broker keeps every message until a worker says so."}\n',
        encoding="utf-8")
    reasons = {r.where.rsplit(":", 1)[1]: r.reason for r in
               check_folder_questions(questions, read.documents, read.failed, root=read.root).rejected}
    assert "it is in the source file 'guide.rst' at line 6, column 4, in a comment, which reading removes" \
        in reasons["1"]
    assert "at line 9, column 10, in an option of the image directive, which reading removes" in reasons["2"]
    assert "at line 13, column 4, in the body of the toctree directive, which reading removes" in reasons["3"]
    assert "source file" not in reasons["4"] and "nearest passage of the extracted text (guide.rst): " \
        "'The broker keeps every message until a worker acknowledges it.'" in reasons["4"]
    for_a_reader = check_folder_questions(questions, read.documents, read.failed, reader="bob", root=read.root)
    assert all("source file" not in r.reason for r in for_a_reader.rejected)  # --user: no file is opened
