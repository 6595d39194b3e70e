"""Tests for ragcourse.citations: quotes, locators, text fragments and the answer checker."""

from __future__ import annotations

import pytest

from ragcourse.chunking import chunk, chunk_corpus
from ragcourse.citations import (
    REFUSAL,
    CharRange,
    Citation,
    MediaTime,
    PdfPage,
    SheetRange,
    build_context,
    check_answer,
    content_words,
    escape_markers,
    invented_identifiers,
    sentences,
    support,
    text_fragment_url,
    unescape_markers,
    unsupported_sentences,
)
from ragcourse.corpus import Document
from ragcourse.dense import Hit

DOC = Document(
    id="guide",
    title="Field Guide",
    text=(
        "Intro line before any heading.\n\n"
        "## Tents\n"
        "A tent needs a flat pitch. Stake the corners first.\n\n"
        "Guy lines take the wind load. Tighten them after rain.\n\n"
        "## Stoves\n"
        "Never cook inside the tent. Carbon monoxide has no smell.\n\n"
        "Carry fuel in a marked bottle. Keep it away from food.\n"
    ),
)


@pytest.fixture
def f_chunks():
    chunks = chunk(DOC, strategy="F", target=60, overlap=12)
    assert len(chunks) >= 4  # small target: several chunks, so the overlap is really exercised
    return chunks


def hits_for(chunks):
    return [Hit(c, 0.1 + 0.01 * i, i + 1) for i, c in enumerate(chunks)]


def test_quotes_are_exact_slices_without_header_or_overlap(f_chunks):
    context = build_context("how do I pitch a tent?", hits_for(f_chunks))
    assert [c.n for c in context.citations] == list(range(1, len(f_chunks) + 1))
    for cit, ch in zip(context.citations, f_chunks, strict=True):
        start, end = (int(x) for x in cit.fragment.removeprefix("#char=").split(","))
        assert (start, end) == (ch.start, ch.end)
        assert cit.quote == DOC.text[start:end]
        assert "[Field Guide" not in cit.quote  # the header is embedded, never quoted
        header, _, rest = ch.text.partition("\n")
        assert header.startswith("[Field Guide") and rest.endswith(ch.content)
        carried = rest[: len(rest) - len(ch.content)].strip()  # the overlap copied in front
        assert (carried != "") == (ch.index > 0)
        if carried:
            assert carried not in cit.quote
    # The chunk after "Stake the corners first." embeds that tail (12 chars) but never quotes it.
    later = [c for c in context.citations if c.quote.startswith("Guy lines")]
    assert len(later) == 1 and "rners first." not in later[0].quote
    assert "rners first. Guy lines" in next(c.text for c in f_chunks if c.content == later[0].quote)


def test_prompt_numbers_sources_and_states_the_rules(f_chunks):
    hits = hits_for(f_chunks[:2])
    context = build_context("how do I pitch a tent?", hits)
    first = context.citations[0]
    assert f"[1] Field Guide - {first.label}\n{first.quote}" in context.prompt
    assert "[2] Field Guide - " in context.prompt and "[3]" not in context.prompt
    assert "ONLY the numbered sources" in context.prompt
    assert REFUSAL in context.prompt
    assert context.prompt.endswith("QUESTION\nhow do I pitch a tent?")
    assert "#char=" not in context.prompt  # locators stay on the server side
    assert first.label == "Field Guide"  # text before the first heading: no section title
    assert context.citations[1].label in {"Field Guide", "Tents"}
    assert first.line() == f"[1] guide  Field Guide  {first.fragment}  d=0.100"


def test_char_range():
    loc = CharRange(25873, 26272)
    assert loc.fragment() == "#char=25873,26272"
    assert loc.label() == "characters 25873-26272"
    with pytest.raises(ValueError, match="start <= end"):
        CharRange(10, 9)
    with pytest.raises(ValueError):
        CharRange(-1, 3)


def test_pdf_page():
    assert PdfPage(12).fragment() == "#page=12"
    assert PdfPage(12).label() == "page 12"
    for bad in (0, -3, 1.5, True):
        with pytest.raises(ValueError, match="page"):
            PdfPage(bad)


def test_media_time():
    loc = MediaTime(132.4, 158.9)
    assert loc.fragment() == "#t=132.4,158.9"
    assert loc.label() == "2:12.4-2:38.9"
    assert MediaTime(0, 3725).fragment() == "#t=0,3725"
    assert MediaTime(0, 3725).label() == "0:00.0-1:02:05.0"
    with pytest.raises(ValueError, match="start <= end"):
        MediaTime(20.0, 10.0)


def test_sheet_range():
    loc = SheetRange("Sheet1", "B2:D9")
    assert loc.address() == "Sheet1!B2:D9"
    assert loc.fragment() == "#Sheet1!B2:D9"
    assert loc.label() == "sheet Sheet1, cells B2:D9"
    assert SheetRange("Q1 sales", "$A$1").address() == "'Q1 sales'!$A$1"
    assert SheetRange("Q1 sales", "A1").fragment() == "#'Q1%20sales'!A1"
    assert SheetRange("S", "XFD1048576").cells == "XFD1048576"


@pytest.mark.parametrize(
    ("sheet", "cells"),
    [("Sheet1", "B0"), ("Sheet1", "2B"), ("Sheet1", "b2"), ("Sheet1", "A1:B2:C3"),
     ("Sheet1", "D9:B2"), ("Sheet1", "XFE1"), ("Sheet1", "A1048577"), ("", "A1"),
     ("a/b", "A1"), ("x" * 32, "A1")],
)
def test_sheet_range_rejects_bad_input(sheet, cells):
    with pytest.raises(ValueError):
        SheetRange(sheet, cells)


def test_text_fragment_url_short_quote_is_encoded():
    url = text_fragment_url("https://example.org/book/ch7.html", "pre-built, fast & cheap")
    assert url == ("https://example.org/book/ch7.html#:~:text="
                   "pre%2Dbuilt%2C%20fast%20%26%20cheap")


def test_text_fragment_url_long_quote_uses_a_range_and_keeps_an_existing_fragment():
    quote = "Never cook inside the tent.\nCarbon monoxide has   no smell at all."
    url = text_fragment_url("https://example.org/ch7.html#stoves", quote, words=3)
    assert url == ("https://example.org/ch7.html#stoves:~:text="
                   "Never%20cook%20inside,smell%20at%20all.")
    with pytest.raises(ValueError, match="quote"):
        text_fragment_url("https://example.org", "   ")


CITES = [Citation(n, "guide", "Field Guide", "Tents", f"#char={n},{n + 5}", "q", 0.2)
         for n in (1, 2)]


def test_checker_accepts_a_good_answer():
    text = ("Stake the corners of the tent first [1]. Guy lines take the wind load [2]. "
            "Tighten the guy lines again after rain. [2]\nYes.")
    check = check_answer(text, CITES)
    assert check.ok, check


def test_checker_accepts_the_refusal():
    assert check_answer(REFUSAL, CITES).ok
    assert check_answer("The provided sources don't contain information about paella.", CITES).ok


def test_checker_flags_unknown_refs_and_uncited_claims():
    text = ("Stake the corners first [1, 3]. Carbon monoxide has no smell [7].\n"
            "- Fuel should be stored in a marked bottle.")
    check = check_answer(text, CITES)
    assert check.unknown_refs == (3, 7)
    assert check.uncited_sentences == ("Fuel should be stored in a marked bottle.",)
    assert check.invented_links == ()
    assert not check.ok


def test_checker_flags_identifiers_the_model_wrote():
    text = ("See arXiv:1907.06432 for contrastive embeddings [1]. "
            "Also https://example.com/paper.pdf and doi:10.1145/3397271.3401075 [2]. "
            "The passage is at #char=10,20 and [this page](notes.html) [1]. "
            "Another preprint is 1809.08669v2 [2].")
    assert check_answer(text, CITES).invented_links == (
        "arXiv:1907.06432", "https://example.com/paper.pdf", "doi:10.1145/3397271.3401075",
        "#char=10,20", "[this page](notes.html)", "1809.08669v2",
    )


def test_identifier_patterns_leave_plain_numbers_alone():
    assert invented_identifiers("The cut was 0.675 and R@20 reached 0.705 on 64 queries.") == []


def test_sentences_keep_markers_that_follow_the_full_stop():
    assert sentences("A is B. [1] C is D [2].\n1. E is F [1][2].") == [
        "A is B [1].", "C is D [2].", "E is F [1][2]."]


# --- the corpus's own [n] markers never reach the model as citations -----------------------------

FOOTNOTED = Document(
    id="primer",
    title="A Primer",
    text=("## What Next?\n"
          "The specification is the place to go [1]. Tables follow the grammar [2, 3].\n\n"
          "Code keeps its index: argv[1] is the first argument.\n"),
)


def _source_block(context, n: int) -> str:
    """The text shown to the model under source [n]: from its header line to the next header."""
    heads = [context.prompt.index(f"\n[{c.n}] {c.doc_name} - {c.label}\n") for c in context.citations]
    ends = heads[1:] + [context.prompt.index("\n\nQUESTION\n")]
    block = context.prompt[heads[n - 1] + 1:ends[n - 1]]
    return block.split("\n", 1)[1].removesuffix("\n")


def test_escape_markers_turns_every_marker_into_a_footnote_and_back():
    text = FOOTNOTED.text
    escaped = escape_markers(text)
    assert escaped.count("[^") == 3 and "go [^1]." in escaped and "[^2, 3]" in escaped and "argv[^1]" in escaped
    assert check_answer(escaped, []).unknown_refs == ()  # nothing left that reads as a citation
    assert check_answer(text, []).unknown_refs == (1, 2, 3)  # ... while the raw text had three
    assert unescape_markers(escaped) == text


def test_prompt_escapes_markers_but_citation_keeps_the_exact_slice():
    chunks = chunk(FOOTNOTED, strategy="E")
    context = build_context("where do I go next?", hits_for(chunks))
    cit = context.citations[0]
    start, end = (int(x) for x in cit.fragment.removeprefix("#char=").split(","))
    assert cit.quote == FOOTNOTED.text[start:end] and "go [1]." in cit.quote  # the reader's quote: untouched
    shown = _source_block(context, 1)
    assert shown == escape_markers(cit.quote) and unescape_markers(shown) == cit.quote
    copied = next(s for s in sentences(shown) if "place to go" in s)  # the model copies the sentence
    assert copied == "The specification is the place to go [^1]."
    verdict = check_answer(copied, context.citations)
    assert verdict.unknown_refs == () and verdict.uncited_sentences == (copied,)  # not a citation of [1]


def test_real_corpus_chunks_with_markers_reach_the_prompt_escaped(corpus):
    chunks = [c for c in chunk_corpus(corpus, strategy="E") if check_answer(c.content, []).unknown_refs]
    assert len(chunks) == 113  # docutils' footnote references, as chapter 7 counts them
    context = build_context("q", hits_for(chunks))
    for cit, ch in zip(context.citations, chunks, strict=True):
        shown = _source_block(context, cit.n)
        assert cit.quote == ch.content and check_answer(shown, []).unknown_refs == ()
        assert unescape_markers(shown) == ch.content  # the mapping back to the exact slice is lossless


# --- the lexical support score ----------------------------------------------------------------------

def test_content_words_drop_stopwords_markers_and_a_plural_s():
    assert content_words("The lists are NOT in tables [2].") == {"list", "table"}
    assert content_words("classes") == {"classe"}  # the crude rule: only the final s goes
    assert content_words("It is what it is.") == set()


def test_support_is_the_share_of_content_words_found_in_the_quotes():
    assert support("Blank lines separate paragraphs [1].", ["A blank line ends a paragraph."]) == 3 / 4
    assert support("Blank lines separate paragraphs [1].", ["Blank.", "separate them"]) == 2 / 4
    assert support("It is so [1].", ["anything"]) == 1.0  # no content words: nothing to support
    assert support("Tables [1].", []) == 0.0


def test_unsupported_sentences_use_only_real_cited_sources():
    cits = [Citation(1, "g", "G", "S", "#char=0,1", "Stake the corners of the tent first.", 0.1),
            Citation(2, "g", "G", "S", "#char=1,2", "Carbon monoxide has no smell.", 0.2)]
    text = ("Stake the tent corners first [1]. Carbon monoxide smells of roses [1]. "
            "Carbon monoxide smells of roses [1][2]. Stoves explode daily [9]. Uncited claims pass here too.")
    assert unsupported_sentences(text, cits) == ("Carbon monoxide smells of roses [1].",)
    assert unsupported_sentences(text, cits, threshold=1.0) == (
        "Carbon monoxide smells of roses [1].", "Carbon monoxide smells of roses [1][2].")
    assert check_answer(text, cits).unsupported == ("Carbon monoxide smells of roses [1].",)
    with pytest.raises(ValueError, match="threshold"):
        unsupported_sentences(text, cits, threshold=1.5)


def test_support_cannot_see_negation_or_a_wrong_number():
    quote = ["Lists must appear after two blank lines."]
    assert support("Lists must not appear after blank lines [1].", quote) == 1.0  # negation is invisible
    assert support("Lists appear after two lines [1].", quote) == 1.0
    assert support("Lists appear after three lines [1].", quote) == 0.75  # a changed number costs one word
