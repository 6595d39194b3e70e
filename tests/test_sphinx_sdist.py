"""A real Sphinx folder read with nothing lost: celery 5.7.0's `docs/`, the folder of issue 42, from its pinned sdist.

`make sphinx-docs` (scripts/sphinx_docs.py, run by `make test`) fetches the sdist once and checks its sha256; this
test never downloads it and skips, saying so, where that set-up did not run (it fails instead when
RAGCOURSE_REQUIRE_SPHINX_DOCS=1, as in `make test`).

The measure is line by line: every source line a reader would see (not a comment, a target, a directive's option,
a title underline, or the body of `toctree`/`index`/`literalinclude`...) is reduced to the words Sphinx shows
(roles as `ragcourse.rst.role_text`, references as their text, substitutions and footnote numbers cut out, table
cells apart), and each piece must occur, in order, in the extracted text of its own file. Characters are summed
per enclosing directive kind. celery's docs hold no `function`/`class`/`exception` directive (its API pages are
autodoc); tests/test_sphinx_reading.py covers those on its fixture.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from ragcourse import rst
from ragcourse.cli.folder import read_folder
from tests.setup_missing import SPHINX_DOCS, missing

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import sphinx_docs  # noqa: E402

#: The directive kinds issue 42 lists that celery's docs use (every one of them must keep all its text).
KINDS = {"versionadded", "versionchanged", "deprecated", "attribute", "method", "data", "setting", "glossary",
         "hlist", "note", "warning", "seealso"}
DIRECTIVE = re.compile(r"^(\s*)\.\.\s+([\w:.+-]+)::\s*(.*)$")
EXPLICIT = re.compile(r"^\s*\.\.(\s|$)")  # a comment, a target, a footnote, a substitution definition
OPTION = re.compile(r"^\s*:[\w -]+:(\s|$)")
UNDERLINE = re.compile(r"^\s*([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")
#: Bodies that are not text (navigation, file names, generated content); autodoc's bodies are written text.
SKIP_BODY = {k for k in rst.NO_TEXT if not k.startswith("auto")} | {"contents", "image", "raw", "include"}
#: Directives whose argument is not shown as text (a language, a file, a condition).
ARG_NOT_TEXT = rst.NO_TEXT | {"code-block", "code", "sourcecode", "figure", "image", "include", "contents",
                              "only", "raw", "csv-table", "list-table", "table", "glossary", "hlist"}
#: `:role:`text``, `text`:role:` and `text <target>`_, across lines too.
ROLE = re.compile(r"(?<!`):[\w:.+-]+:`([^`]+)`|(?<!`)`([^`]+)`:[\w:.+-]+:|(?<!`)`([^`]+?)\s*(<[^<>`]*>)?`__?")


@pytest.fixture(scope="module")
def docs() -> Path:
    found = sphinx_docs.folder()
    if not (found / sphinx_docs.DONE).is_file():
        message = f"no Sphinx docs folder at {found}: {sphinx_docs.HINT} first"
        missing(message, SPHINX_DOCS)
    return found


@pytest.fixture(scope="module")
def read(docs):
    return read_folder(docs)


def _roles(source: str) -> str:
    """Each role and hyperlink reference as Sphinx shows it (its lines kept: the line count does not change)."""
    def shown(m: re.Match) -> str:
        text = " ".join((m.group(1) or m.group(2) or m.group(3)).split())
        return (text if m.group(3) else rst.role_text(text)) + "\n" * m.group(0).count("\n")
    source = re.sub(r":[\w:.+-]+:`([^`]+)``(?!`)", r"\1", source)  # closed by two backquotes: docutils keeps it all
    return ROLE.sub(shown, source)


def shown(line: str) -> list[str]:
    """The pieces of words a reader sees of one line (`name_` is a reference, but not inside backquotes).

    >>> shown("See ``__init__``, `CELERY_` and |version| of Broker_ [1]_ here.")
    ['See __init__ CELERY_ and', 'of Broker', 'here']
    >>> shown("``A``        ``B``")
    ['A', 'B']
    """
    line = re.sub(r"\[[#*\w-]*\]_|\|[^|\s][^|]*\|_{0,2}", "|", line)  # footnote numbers, substitutions: cut
    parts = re.split(r"(`[^`]*`)", line)
    line = "".join(p if p.startswith("`") else re.sub(r"\b([^\W_]\w*?)__?(?=\W|$)", r"\1", p) for p in parts)
    pieces = re.split(r"\||(?<=\S)\s{2,}", line.replace("\\", ""))  # table cells (grid or simple) apart
    return [" ".join(w) for piece in pieces if (w := re.findall(r"\w+", piece))]


def _is_title(lines: list[str], i: int) -> bool:
    """Whether line i is a section title (an underline or overline beside it)."""
    return any(0 <= j < len(lines) and UNDERLINE.match(lines[j]) and lines[i].strip() for j in (i - 1, i + 1))


def source_lines(source: str):
    """(enclosing directive kinds, line number, pieces) of each text line of a reStructuredText source."""
    lines, stack = _roles(source).split("\n"), []  # stack: (indent, kind, body skipped)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        while stack and indent <= stack[-1][0]:
            stack.pop()
        kinds, skipped = [k for _, k, _ in stack], any(s for _, _, s in stack)
        found, option = DIRECTIVE.match(line), stack and OPTION.match(line) and _in_options(lines, i, stack[-1][0])
        if found:
            kind = rst._kind(found.group(2).lower())
            stack.append((indent, kind, skipped or kind in SKIP_BODY))
            if not skipped and kind not in SKIP_BODY | ARG_NOT_TEXT and found.group(3):
                yield [*kinds, kind], i + 1, shown(found.group(3))
        elif EXPLICIT.match(line):
            stack.append((indent, "comment", True))
        elif not (skipped or option or UNDERLINE.match(line) or re.fullmatch(r"\s*:\w+: \|\w+\|\s*", line)):
            yield kinds, i + 1, shown(line)  # (a `:Release: |version|` field is front matter)


def _in_options(lines: list[str], i: int, indent: int) -> bool:
    """Whether line i is in the option block right under a directive at `indent`."""
    j = i - 1
    while j >= 0 and OPTION.match(lines[j]):
        j -= 1
    return j >= 0 and DIRECTIVE.match(lines[j]) is not None and len(lines[j]) - len(lines[j].lstrip()) == indent


def measure(root: Path, documents) -> tuple[dict[str, int], dict[str, int], list[tuple[str, int, str]]]:
    """(characters per kind in the source, of them found in the extracted text, the pieces not found)."""
    extracted = {d.id: " " + " ".join(re.findall(r"\w+", d.title + "\n" + d.text)) + " " for d in documents}
    chars, kept, lost = defaultdict(int), defaultdict(int), []
    for path in sorted(root.rglob("*.rst")):
        doc = path.relative_to(root).as_posix()
        for kinds, number, pieces in source_lines(path.read_text(encoding="utf-8")):
            for piece in pieces:
                found = f" {piece} " in extracted.get(doc, "")
                for kind in set(kinds) or {""}:
                    chars[kind] += len(piece)
                    kept[kind] += len(piece) * found
                lost += [] if found or not set(kinds) & KINDS else [(doc, number, piece)]
    return chars, kept, lost


def test_the_folder_is_the_pinned_one(docs):
    assert (docs / sphinx_docs.DONE).read_text(encoding="utf-8").strip() == sphinx_docs.PIN["sha256"]
    assert len(list(docs.rglob("*.rst"))) == 234 and (docs / "glossary.rst").is_file()


def test_every_listed_directive_kind_keeps_all_its_text(docs, read):
    chars, kept, lost = measure(docs, read.documents)
    assert KINDS <= {kind for kind, n in chars.items() if n}  # the folder uses every kind named
    assert lost == []
    assert {kind: kept[kind] / chars[kind] for kind in KINDS} == dict.fromkeys(KINDS, 1.0)


def test_no_file_with_text_is_reported_as_no_text(docs, read):
    assert [f for f in read.failed if not f.no_text] == []  # every file was read
    for failure in (f for f in read.failed if f.no_text):
        source = (docs / failure.path).read_text(encoding="utf-8")
        lines = source.split("\n")
        text = [piece for _, number, pieces in source_lines(source) if not _is_title(lines, number - 1)
                for piece in pieces]
        assert text == [], failure.path  # a title alone (an autodoc stub, a toctree page) is no text


def test_directives_kept_as_plain_text_are_celerys_own(read):
    kinds = {kind for _, kind, _ in read.kept_as_text}
    assert kinds == {"click", "control", "event", "signal", "state", rst.MALFORMED_TABLE}


def test_the_glossary_and_autodoc_bodies_are_text(read):
    text = {d.id: d.text for d in read.documents}
    assert "- acknowledged: Workers acknowledge messages" in text["glossary.rst"]
    assert "Broker connection class used. Default is kombu.Connection." in text["reference/celery.app.amqp.rst"]
    assert "CELERY_CACHE_BACKEND_OPTIONS" in text["userguide/configuration.rst"]  # the table docutils refuses
