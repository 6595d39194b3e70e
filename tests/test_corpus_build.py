"""Tests for ragcourse.build.corpus: the pinned docutils sdist rendered to Markdown, written, locked."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docutils import nodes
from docutils.parsers.rst import roles

from ragcourse import corpus
from ragcourse.build import corpus as corpus_build
from ragcourse.corpus import CorpusError, Document
from ragcourse.words import collapse

EXPECTED_IDS = [
    "dev-repository", "dev-rst-problems", "dev-testing", "eps-ep-001", "eps-ep-010",
    "ref-rst-directives", "ref-rst-mathematics", "ref-rst-roles", "user-config", "user-emacs",
    "user-odt", "user-rst-quickstart", "user-slide-shows",
]


@pytest.fixture(scope="session")
def sdist() -> Path:
    path = corpus_build.SOURCES_DIR / corpus_build.SDIST_FILENAME
    if not path.is_file():
        pytest.skip(f"{path} is absent: run `python -m ragcourse.build.corpus` first")
    return path


@pytest.fixture(scope="session")
def fresh(sdist) -> list[Document]:
    """A fresh in-memory build (nothing written)."""
    return corpus_build.build_documents(sdist)


@pytest.fixture(scope="session")
def doctrees(sdist) -> dict[str, nodes.document]:
    sources = corpus_build.read_sources(sdist)
    s5defs = sources[corpus_build.S5DEFS_PATH]
    return {corpus.doc_id(name): corpus_build.parse(corpus_build.preprocess(sources[name], s5defs), name)
            for name in corpus.SOURCE_FILES}


def prose_lines(text: str) -> list[str]:
    """Lines outside fenced code blocks (fences may sit under list indentation or '> ')."""
    out, mark = [], ""
    for line in text.split("\n"):
        bare = re.sub(r"^[ >]*", "", line)
        if mark:
            mark = "" if bare == mark else mark
            continue
        match = re.match(r"(`{3,})", bare)
        if match:
            mark = match.group(1)
            continue
        out.append(line)
    return out


# ----- the build


def test_thirteen_documents_sorted_by_id(fresh):
    assert [d.id for d in fresh] == EXPECTED_IDS
    assert fresh[0].title == "The Docutils Version Repository"
    assert {d.title for d in fresh} >= {"A ReStructuredText Primer", "LaTeX syntax for mathematics"}


def test_127_sections_one_per_top_level_doctree_section(fresh, doctrees):
    counts = {d.id: sum(s.headed for s in corpus.sections(d.text)) for d in fresh}
    assert sum(counts.values()) == 127
    for doc_id, doctree in doctrees.items():
        top = [c for c in doctree.children if isinstance(c, nodes.section)]
        assert counts[doc_id] == len(top), doc_id


def test_characters_in_expected_band(fresh):
    # The brief expected roughly 320k-360k; this renderer measures 319.5k (see the report).
    total = sum(len(d.text) for d in fresh)
    assert 310_000 <= total <= 360_000, total


def test_lock_matches_a_fresh_build(fresh):
    lock = corpus.read_lock()
    assert lock["source"]["sha256"] == corpus_build.SDIST_SHA256
    assert lock["source"]["files"] == list(corpus.SOURCE_FILES)
    assert lock["profile"] == {"documents": 13, "characters": sum(len(d.text) for d in fresh),
                               "sections": 127}
    assert corpus.fingerprint(fresh) == lock["fingerprint"], (
        "the rendering changed: rebuild and, if deliberate, run "
        "`python -m ragcourse.build.corpus --update-lock`")


def test_deterministic_across_hash_seeds(sdist, fresh):
    code = ("import sys; from ragcourse import corpus; from ragcourse.build import corpus as corpus_build; "
            "print(corpus.fingerprint(corpus_build.build_documents(sys.argv[1])))")
    prints = set()
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", code, str(sdist)], env=env,
                              capture_output=True, text=True, check=True)
        prints.add(done.stdout.strip())
    assert prints == {corpus.fingerprint(fresh)}


# ----- writing the cache and the lock


def test_written_cache_loads_back_unchanged(fresh, tmp_path):
    corpus_build.write_corpus(fresh, tmp_path / "out")
    assert corpus.load_corpus(tmp_path / "out") == fresh
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["fingerprint"] == corpus.read_lock()["fingerprint"]
    assert [e["id"] for e in manifest["documents"]] == EXPECTED_IDS
    odt = next(d for d in fresh if d.id == "user-odt")
    entry = next(e for e in manifest["documents"] if e["id"] == "user-odt")
    assert entry["sha256"] == hashlib.sha256(odt.text.encode("utf-8")).hexdigest()


def test_make_lock_reproduces_the_committed_lock(fresh):
    assert corpus_build.make_lock(fresh) == corpus.read_lock()


def test_wrong_sdist_hash_is_rejected(tmp_path):
    fake = tmp_path / corpus_build.SDIST_FILENAME
    fake.write_bytes(b"not the docutils sdist")
    with pytest.raises(CorpusError, match=corpus_build.SDIST_SHA256):
        corpus_build.fetch_sdist(tmp_path)  # present, so no download: only the check runs
    with pytest.raises(CorpusError, match="sha256"):
        corpus_build.build_corpus(fake, tmp_path / "out")


def test_one_pinned_download_serves_the_corpus_and_the_genres(tmp_path, monkeypatch):
    """`fetch_pinned` checks what it fetched; the docutils sdist and the genres' wheels both go through it."""
    from ragcourse.build import genres as genres_build

    pin = {"name": "toy", "version": "1.0", "filename": "toy-1.0.whl", "sha256": "0" * 64}
    (tmp_path / pin["filename"]).write_bytes(b"not the pinned file")
    with pytest.raises(CorpusError, match=r"toy wheel: .* expected 0{64}; delete the file and fix it"):
        corpus_build.fetch_pinned(pin, tmp_path, "toy wheel", "fix it")  # present: no download, only the check
    calls = []
    monkeypatch.setattr(corpus_build, "fetch_pinned", lambda pin, dest, what, *rest, **options: calls.append(
        (pin["name"], options)) or dest)
    corpus_build.fetch_sdist(tmp_path)
    genres_build.fetch_wheel(genres_build.NETWORKX, ["--only-binary", ":all:"], tmp_path)
    assert calls == [("docutils", {"no_binary": ":all:"}), ("networkx", {"options": ["--only-binary", ":all:"]})]


def test_parsing_does_not_leak_roles():
    before = dict(roles._roles)
    corpus_build.parse(".. role:: custom\n.. default-role:: math\n\n`x^2`\n", "t.rst")
    assert dict(roles._roles) == before


# ----- the rendering


def test_no_title_line_and_no_front_matter(fresh):
    for doc in fresh:
        assert not doc.text.startswith("# ") and not doc.text.startswith(doc.title)
        for line in prose_lines(doc.text):
            assert not line.startswith("# "), (doc.id, line)
            assert not re.match(r":(Author|Authors|Date|Revision|Copyright|Contact|Status):",
                                line), (doc.id, line)
        assert "$Date: " not in doc.text.split("\n## ")[0], doc.id


VERBATIM = (nodes.literal_block, nodes.doctest_block, nodes.math, nodes.math_block,
            nodes.comment, nodes.raw, nodes.system_message)

RESIDUE = {
    "directive": re.compile(r"^[ >]*(?:[-*] )?\.\. \S"),
    "literal marker": re.compile(r"::$"),
    "role": re.compile(r":[\w-]+:`|`:[\w-]+:"),
    "backquote": re.compile(r"`"),
    "emphasis": re.compile(r"(?<![\w*])\*{1,2}\w[^*\n]*\w\*{1,2}(?![\w*])"),
    "substitution": re.compile(r"(?<![\w|])\|\w[\w -]*\|(?![\w|])"),
}


def _text_pieces(doctree: nodes.document) -> list[str]:
    """The words docutils kept as text (markup already consumed), outside verbatim nodes."""
    return [collapse(t.astext()) for t in doctree.findall(nodes.Text)
            if not any(isinstance(a, VERBATIM) for a in _ancestors(t))]


def test_no_rst_residue_outside_code(fresh, doctrees):
    """Markup characters in the prose may only come from the text itself (quoted examples)."""
    for doc in fresh:
        lines = [re.sub(r"\$[^$\n]+\$", "", line) for line in prose_lines(doc.text)]
        lines = [re.sub(r"^(?:[-*] |\d+\. |> )+", "", line.strip()) for line in lines]
        pieces = _text_pieces(doctrees[doc.id])
        for name, pattern in RESIDUE.items():
            found = sum(len(pattern.findall(line)) for line in lines)
            allowed = sum(len(pattern.findall(piece)) for piece in pieces)
            assert found <= allowed, (doc.id, name, [x for x in lines if pattern.search(x)][:5])


def test_no_markup_residue_in_a_hand_checked_passage(fresh):
    doc = next(d for d in fresh if d.id == "ref-rst-roles")
    assert "The default \"default role\" is \":title-reference:\"." in doc.text
    assert ":title:`" not in "\n".join(prose_lines(doc.text)).replace(
        "This is :title:`interpreted text`", "")


def test_substitutions_are_resolved(fresh, sdist):
    sources = corpus_build.read_sources(sdist)
    names = {m for name in corpus.SOURCE_FILES
             for m in re.findall(r"^\.\. \|([^|]+)\| ", sources[name], flags=re.M)}
    assert {"latex", "bullet"} <= names  # defined in mathematics.rst and slide-shows.rst
    for doc in fresh:
        for name in names:
            assert f"|{name}|" not in "\n".join(prose_lines(doc.text)), (doc.id, name)
    assert render("|tex| ok\n\n.. |tex| replace:: T\\ :sub:`E`\\ X\n") == "TEX ok\n"


def test_code_fences_balanced_and_complete(fresh, doctrees):
    for doc in fresh:
        opened, mark = 0, ""
        for line in doc.text.split("\n"):
            bare = re.sub(r"^[ >]*", "", line)
            if mark and bare == mark:
                mark = ""
            elif not mark and re.match(r"`{3,}", bare):
                mark, opened = re.match(r"`+", bare).group(0), opened + 1
        assert mark == "", doc.id
        code = doctrees[doc.id].findall(
            lambda n: isinstance(n, nodes.literal_block | nodes.doctest_block))
        skipped = nodes.table | nodes.system_message  # cells collapse code; messages are dropped
        blocks = [n for n in code if not any(isinstance(a, skipped) for a in _ancestors(n))]
        assert opened == len(blocks), doc.id


def _ancestors(node: nodes.Node):
    while node.parent is not None:
        node = node.parent
        yield node


def test_paragraphs_are_single_lines(fresh):
    doc = next(d for d in fresh if d.id == "user-rst-quickstart")
    assert ("From the outset, let me say that \"Structured Text\" is probably a bit of a misnomer. "
            "It's more like \"Relaxed Text\" that uses certain consistent patterns.") in doc.text




# ----- the walker on small inputs (expected Markdown written by hand)


def render(rst: str) -> str:
    return corpus_build.render_document(corpus_build.parse(rst, "t.rst"))[1]


def test_render_inline_and_admonition():
    rst = "Para with *em*, **strong**, ``lit`` and a `link <http://x>`_.\n\n.. note:: Be careful.\n"
    assert render(rst) == "Para with em, strong, lit and a link.\n\nNote: Be careful.\n"


def test_render_code_fence_longer_than_content():
    rst = "Example::\n\n    ```\n    x\n"
    assert render(rst) == "Example:\n\n````\n```\nx\n````\n"


def test_render_math():
    rst = "Inline :math:`a^2` here.\n\n.. math:: E = mc^2\n"
    assert render(rst) == "Inline $a^2$ here.\n\n$$\nE = mc^2\n$$\n"


def test_render_grid_table_with_spans_and_list():
    rst = ("+----+----+\n| H1 | H2 |\n+====+====+\n| a  | - x|\n+----+ - y|\n| b  |    |\n"
           "+----+----+\n| spans   |\n+---------+\n")
    assert render(rst) == "| H1 | H2 |\n| --- | --- |\n| a | x; y |\n| b |  |\n| spans |  |\n"


def test_render_headerless_table_one_line_per_row():
    rst = "==  ==\na   1\nb   2\n==  ==\n"
    assert render(rst) == "a | 1\nb | 2\n"


def test_render_lists_and_sections():
    rst = ("Title\n=====\n\nIntro.\n\nPart\n----\n\n- one\n- two\n\nSub\n~~~\n\nterm\n  def.\n\n"
           "1. first\n\n   more\n")
    expected = "Intro.\n\n## Part\n\n- one\n- two\n\n### Sub\n\n- term: def.\n\n1. first\n\n   more\n"
    assert render(rst) == expected
