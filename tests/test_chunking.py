"""Tests for ragcourse.chunking: hand-worked examples, errors, and parity with the seed's rule."""

from __future__ import annotations

import dataclasses
import hashlib
import re

import pytest
import seed_chunker

from ragcourse import corpus as corpus_module
from ragcourse.chunking import (
    PIPELINE_VERSION,
    STRATEGIES,
    Chunk,
    Section,
    boundary_spans,
    chunk,
    chunk_corpus,
    header,
    pack,
    sections,
)
from ragcourse.corpus import Document

# Offsets, worked by hand:
#   "Preface line." 0-13 | "## Alpha" 15-23 | "First para\nstill first." 24-47
#   "Second para." 49-61 | "## Beta" 63-70 | "One. Two. Three." 71-87 | len 88
#   sentence pieces of "One. Two. Three.": 71-76, 76-81, 81-87
HAND = Document(
    "hand",
    "Doc",
    "Preface line.\n\n## Alpha\nFirst para\nstill first.\n\nSecond para.\n\n## Beta\n"
    "One. Two. Three.\n",
)


def spans(chunks: list[Chunk]) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in chunks]


def seed_view(chunks) -> list[tuple]:
    """What the seed's reference returns, per chunk: text, content, section, start, end."""
    return [(c.text, c.content, c.section, c.start, c.end) for c in chunks]


def expected_from_seed(doc: Document, target: int = 512) -> list[tuple]:
    """The oracle's chunks, plus the oracle's chunks of the pre-heading text we keep."""
    full = seed_chunker.seed_chunk_document(doc.text, doc.title, target)
    at = seed_chunker.first_heading(doc.text)
    if at is None:
        return seed_view(full)
    prefix = seed_chunker.seed_chunk_document(doc.text[:at], doc.title, target)
    return seed_view(prefix) + seed_view(full)


# --- the docstring examples of the functions chapter 2 prints (the others are doctests) ---


def docstring_example(function) -> tuple[str, str]:
    """The `call` -> `value` example of a docstring the chapter prints (it cannot hold a doctest block)."""
    found = re.search(r"Example: `([^`]+)`\s*->\s*`([^`]+)`", " ".join(function.__doc__.split()))
    assert found, f"{function.__name__}'s docstring has no `call` -> `value` example"
    return found.group(1), found.group(2)


@pytest.mark.parametrize("function", [boundary_spans])
def test_printed_docstring_examples_hold(function):
    call, value = docstring_example(function)
    assert eval(call, {function.__name__: function, "Section": Section}) == eval(value)  # noqa: S307 (our docstring)


def test_pack_and_chunk_examples_hold():
    """`pack` and `chunk` state their examples in words (shown as printed in chapter 2); the same, run."""
    assert "`pack([(0, 3), (5, 6), (8, 12)], target=6) -> [(0, 6), (8, 12)]`" in pack.__doc__
    assert pack([(0, 3), (5, 6), (8, 12)], target=6) == [(0, 6), (8, 12)]
    assert chunk(Document("d", "Doc", "## S\nHello.")) == [
        Chunk("d", "Doc", "S", 5, 11, "Hello.", "[Doc > S]\nHello.", "E", 0)
    ]


def test_sections_heading_at_end_without_newline_is_skipped():
    assert sections("a\n## Last") == [Section("", 0, 0, 2), Section("Last", 2, 9, 9)]
    assert chunk(Document("d", "D", "a\n## Last"), "C") == [
        Chunk("d", "D", "", 0, 1, "a", "a", "C", 0)
    ]


def test_heading_inside_fenced_code_does_not_start_a_section():
    #  "## S\n" 0-5 | "```\n" 5-9 | "## not a heading\n" 9-26 | "```\n" 26-30
    doc = Document("d", "D", "## S\n```\n## not a heading\n```\n")
    assert chunk(doc, "E") == [
        Chunk("d", "D", "S", 5, 29, "```\n## not a heading\n```", "[D > S]\n```\n## not a heading\n```", "E", 0)
    ]
    assert sections is corpus_module.sections and Section is corpus_module.Section  # one rule, one type


def test_deeper_headings_are_paragraph_text():
    doc = Document("d", "D", "## Top\n### Sub\ntext here")
    (only,) = chunk(doc, "E")
    assert (only.section, only.content) == ("Top", "### Sub\ntext here")


# --- strategies on one hand-worked document, target 12, overlap 4 ---


def test_boundaries_hand_worked():
    got = chunk(HAND, "E", target=12, overlap=4)
    assert [(c.section, c.start, c.end, c.content) for c in got] == [
        ("", 0, 13, "Preface line."),  # one sentence longer than 12: kept whole
        ("Alpha", 24, 47, "First para\nstill first."),  # likewise
        ("Alpha", 49, 61, "Second para."),  # 12 characters: fits exactly
        ("Beta", 71, 80, "One. Two."),  # 71-81 is 10 <= 12, adding "Three." makes 16
        ("Beta", 81, 87, "Three."),
    ]
    assert [c.text for c in got] == [
        "[Doc]\nPreface line.",
        "[Doc > Alpha]\nFirst para\nstill first.",
        "[Doc > Alpha]\nSecond para.",
        "[Doc > Beta]\nOne. Two.",
        "[Doc > Beta]\nThree.",
    ]
    assert [c.index for c in got] == [0, 1, 2, 3, 4]
    assert {c.strategy for c in got} == {"E"}
    assert [c.text for c in chunk(HAND, "C", 12, 4)] == [c.content for c in got]


def test_overlap_hand_worked():
    d = chunk(HAND, "D", target=12, overlap=4)
    assert [c.text for c in d] == [
        "Preface line.",
        "ine. First para\nstill first.",
        "rst. Second para.",
        "ara. One. Two.",
        "Two. Three.",  # 80 != 81: a space joins them
    ]
    f = chunk(HAND, "F", target=12, overlap=4)
    assert f[1].text == "[Doc > Alpha]\nine. First para\nstill first."


def test_blind_hand_worked():
    a = chunk(HAND, "A", target=12, overlap=4)
    assert [(c.start, c.end, c.section) for c in a] == [
        (0, 12, ""),
        (12, 23, ""),  # ".\n\n## Alpha": blind does not look, heading included
        (24, 36, "Alpha"),
        (36, 47, "Alpha"),
        (49, 60, "Alpha"),
        (60, 72, "Alpha"),  # starts before "## Beta" at 63
        (72, 84, "Beta"),
        (84, 87, "Beta"),
    ]
    assert a[1].content == ".\n\n## Alpha"
    assert all(c.text == c.content for c in a)
    b = chunk(HAND, "B", target=12, overlap=4)
    assert b[1].text == "line" + ".\n\n## Alpha"  # 12 == 12: cut fell inside the text, no joiner
    assert b[2].text == "lpha" + " " + "First para\ns"
    assert b[3].text == "ra\ns" + "till first."


def test_overlap_zero_copies_nothing():
    # content[-0:] would be the whole content; overlap=0 must add nothing
    assert [c.text for c in chunk(HAND, "B", 12, 0)] == [c.content for c in chunk(HAND, "A", 12, 0)]
    assert [c.text for c in chunk(HAND, "D", 12, 0)] == [c.content for c in chunk(HAND, "C", 12, 0)]


def test_overlap_is_previous_content_tail_within_one_document():
    doc2 = Document("two", "Two", "## S\n" + "Words and more words. " * 60)
    got = chunk_corpus([HAND, doc2], "F", target=100, overlap=64)
    for prev, cur in zip(got, got[1:], strict=False):
        if cur.doc_id != prev.doc_id:
            assert cur.index == 0
            assert cur.text == header(cur.doc_title, cur.section) + "\n" + cur.content
            continue
        joiner = "" if prev.end == cur.start else " "
        head = header(cur.doc_title, cur.section) + "\n"
        assert cur.text == head + prev.content[-64:] + joiner + cur.content
    assert got[0].text == "[Doc]\nPreface line."


def test_header_format_and_sections():
    for c in chunk(HAND, "E"):
        title_line, rest = c.text.split("\n", 1)
        assert title_line == (f"[Doc > {c.section}]" if c.section else "[Doc]")
        assert rest == c.content


# --- input errors ---


def test_unknown_strategy_lists_valid_letters():
    with pytest.raises(ValueError, match=r"'G'.*A, B, C, D, E, F"):
        chunk(HAND, "G")
    with pytest.raises(ValueError, match="'e'"):
        chunk_corpus([HAND], "e")


@pytest.mark.parametrize("strategy", ["B", "D", "F"])
@pytest.mark.parametrize(("target", "overlap"), [(0, 0), (-5, 0), (12, -1), (12, 12), (12, 13)])
def test_bad_budget(strategy, target, overlap):
    with pytest.raises(ValueError, match=str(target) if target <= 0 else str(overlap)):
        chunk(HAND, strategy, target=target, overlap=overlap)


@pytest.mark.parametrize("strategy", ["A", "C", "E"])
def test_a_strategy_without_overlap_ignores_it_but_refuses_a_negative_one(strategy):
    # The default overlap (64) is over a small target; A, C and E never copy it, so it cannot matter.
    assert chunk(HAND, strategy, target=12) == chunk(HAND, strategy, target=12, overlap=0)
    with pytest.raises(ValueError, match="-1"):
        chunk(HAND, strategy, target=12, overlap=-1)
    with pytest.raises(ValueError, match="target"):
        chunk(HAND, strategy, target=0)


def test_strategy_table():
    assert list(STRATEGIES) == ["A", "B", "C", "D", "E", "F"]
    rows = {k: (s.cutter, s.header, s.overlap) for k, s in STRATEGIES.items()}
    assert rows == {
        "A": ("blind", False, False),
        "B": ("blind", False, True),
        "C": ("boundaries", False, False),
        "D": ("boundaries", False, True),
        "E": ("boundaries", True, False),
        "F": ("boundaries", True, True),
    }
    assert all(s.letter == k for k, s in STRATEGIES.items())


def test_pipeline_version_is_bumped_when_the_chunks_change():
    # The index stamps every document with PIPELINE_VERSION, so a change to the chunks must bump it.
    # This fingerprint of every strategy's chunks of HAND (two budgets) is recorded with the version:
    # when it fails, bump PIPELINE_VERSION and record the new pair.
    made = [dataclasses.astuple(c) for letter in STRATEGIES for target in (12, 512)
            for c in chunk(HAND, letter, target, 4)]
    fingerprint = hashlib.sha256(repr(made).encode()).hexdigest()[:16]
    assert (PIPELINE_VERSION, len(made), fingerprint) == ("chunking-1", 50, "ac3162d7c9a3f26d")


def test_chunk_is_frozen_and_has_stable_id():
    c = chunk(HAND, "E", 12, 4)[2]
    assert c.id == "hand#49-61"
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.start = 0  # type: ignore[misc]


def test_empty_and_blank_documents():
    for letter in STRATEGIES:
        assert chunk(Document("e", "E", ""), letter) == []
        assert chunk(Document("w", "W", " \n\n \r\n\t"), letter) == []
    heading_only = Document("h", "H", "## Only a heading\n")
    for letter in "CDEF":
        assert chunk(heading_only, letter, 20, 4) == []
    for letter in "AB":  # blind does not look: the heading line is content
        assert [(c.start, c.end, c.content) for c in chunk(heading_only, letter, 20, 4)] == [
            (0, 17, "## Only a heading")
        ]


def test_characters_are_code_points_and_only_newline_starts_a_heading():
    """Two deviations from the original's TypeScript, as the module docstring lists them.

    Run under node, the original splits the first document at "🙂" * 300 + "." (602 UTF-16 code units) into
    (5, 306) and (308, 408), and reads "## B" after a lone "\\r" or U+2028 as a second section.
    """
    astral = Document("d", "D", "## E\n" + "\U0001F642" * 300 + ".\n\n" + "a" * 100)
    assert [(c.start, c.end) for c in chunk(astral, "E", target=512, overlap=0)] == [(5, 408)]
    for line_break in ("\r", "\u2028"):
        chunks = chunk(Document("d", "D", f"## A\nx{line_break}## B\ny"), "E")
        assert [(c.section, c.start, c.end) for c in chunks] == [("A", 5, 13)]


def test_crlf_paragraphs_split_like_lf():
    lf = "## S\nFirst line\nsecond line.\n\nOther paragraph here.\n"
    crlf = lf.replace("\n", "\r\n")
    got_lf = chunk(Document("d", "D", lf), "C", target=30, overlap=0)
    got_crlf = chunk(Document("d", "D", crlf), "C", target=30, overlap=0)
    assert [c.content for c in got_lf] == ["First line\nsecond line.", "Other paragraph here."]
    assert [c.content.replace("\r\n", "\n") for c in got_crlf] == [c.content for c in got_lf]
    assert all(crlf[c.start : c.end] == c.content for c in got_crlf)
    assert got_crlf[0].section == "S"  # the "\r" is not part of the title


# --- parity with the seed's reference rule ---

SYNTHETIC = [
    HAND,
    Document("none", "No headings", "Just text. With two sentences.\n\nAnd a paragraph."),
    Document("long", "Long", "## L\n" + "A sentence that repeats itself. " * 50 + "\n\nTail."),
    Document("mix", "Mix", "## A\n\n\n## B\n  indented\n\n   \n\nx\n## C\n" + "word " * 200),
    Document("uni", "Uni", "Intro ĉi tie.\n## Título\nNaïve café? Oui! 日本語の文。" * 20),
]


@pytest.mark.parametrize("doc", SYNTHETIC, ids=lambda d: d.id)
@pytest.mark.parametrize("target", [40, 100, 512])
def test_strategy_e_equals_seed_rule(doc, target):
    assert seed_view(chunk(doc, "E", target, 16)) == expected_from_seed(doc, target)


def test_seed_rule_drops_pre_heading_text_and_we_keep_it():
    oracle = seed_chunker.seed_chunk_document(HAND.text, HAND.title, 12)
    assert "Preface line." not in [c.content for c in oracle]
    ours = chunk(HAND, "E", 12, 4)
    assert ours[0].content == "Preface line."
    assert seed_view(ours[1:]) == seed_view(oracle)


@pytest.fixture(scope="module")
def corpus() -> list[Document]:
    """The real corpus; skipped only when its cache has not been built."""
    cache = getattr(corpus_module, "CORPUS_DIR", corpus_module.DATA_DIR / "corpus")
    if not cache.exists():
        pytest.skip("run make corpus")
    return corpus_module.load_corpus()


def test_real_corpus_strategy_e_equals_seed_rule(corpus):
    assert len(corpus) == 13
    for doc in corpus:
        assert seed_view(chunk(doc, "E")) == expected_from_seed(doc), doc.id


@pytest.mark.parametrize("letter", list(STRATEGIES))
def test_real_corpus_offsets_budget_coverage(corpus, letter):
    chunks = chunk_corpus(corpus, letter)
    by_doc = {d.id: [c for c in chunks if c.doc_id == d.id] for d in corpus}
    for doc in corpus:
        covered = bytearray(len(doc.text))
        for c in by_doc[doc.id]:
            assert doc.text[c.start : c.end] == c.content
            assert c.text.endswith(c.content)
            assert len(c.content) <= 512 or re.fullmatch(r"[^.!?]*[.!?]*", c.content)
            covered[c.start : c.end] = b"\x01" * (c.end - c.start)
        if STRATEGIES[letter].cutter == "boundaries":  # heading lines are the only thing left out
            for m in re.finditer(r"^## .+", doc.text, re.MULTILINE):
                covered[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
        lost = [i for i, ch in enumerate(doc.text) if not ch.isspace() and not covered[i]]
        assert lost == [], (doc.id, lost[:5])
