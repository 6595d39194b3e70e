"""Hidden checks for chapter 7 (citations): run by the grader on the student's notebook namespace."""

from __future__ import annotations

import re

import numpy as np

from kit.checks.compare import Partly, given, integer, items
from kit.hidden import check
from ragcourse.book.exercises import choose
from ragcourse.citations import (
    Citation,
    PdfPage,
    SheetRange,
    cited_sentences,
    sentences,
    text_fragment_url,
    unsupported_sentences,
)


@check("7.1", points=2)
def locators_by_hand(ns):
    """pdf_fragment equals PdfPage(page).fragment() and sheet_fragment equals SheetRange(sheet, cells).fragment()
    for the exercise's page, sheet and cells (1 point each)."""
    page, sheet, cells = choose("7.1", [(12, "Q1 sales", "B2:D9"), (7, "Q3 costs", "C4:F20"),
                                        (31, "EU returns", "A2:A40")])
    pdf_ok = str(given(ns, "pdf_fragment")) == PdfPage(page).fragment()
    sheet_ok = str(given(ns, "sheet_fragment")) == SheetRange(sheet, cells).fragment()
    if pdf_ok and sheet_ok:
        return None
    if pdf_ok or sheet_ok:
        wrong = "sheet_fragment (check the sheet's quoting)" if pdf_ok else "pdf_fragment (check the parameter name)"
        return Partly(0.5, f"one fragment is right; {wrong} is not")
    raise AssertionError("neither fragment is right: check the PDF parameter name and the sheet's quoting")


@check("7.2", points=2)
def text_fragment_by_hand(ns):
    """my_link equals text_fragment_url(html_page(doc), quote, words=3) for the exercise's source of the
    opening question."""
    number = choose("7.2", [4, 2, 3])
    source = ns["context"].citations[number - 1]
    expected = text_fragment_url(ns["html_page"](source.doc_id), source.quote, words=3)
    link = given(ns, "my_link")
    link = str(link) if type(link).__name__ == "str_" else link
    assert isinstance(link, str), "my_link should be a string"
    base, _, directive = link.partition("#:~:text=")
    assert base == ns["html_page"](source.doc_id), "the page URL before #:~:text= is not the source's page"
    assert link == expected, "the page is right; compare the words you took and their encoding"


def _citation(n, quote):
    return Citation(n=n, doc_id=f"doc-{n}", doc_name=f"Document {n}", label="Section", fragment="#char=0,1",
                    quote=quote, distance=0.1)


_SOURCES = (
    _citation(1, "Enumerated lists need a blank line before the first item."),
    _citation(2, "Hyperlink targets are resolved after parsing the whole document."),
    _citation(3, "The parser reports warnings through the reporter object."),
)


def _reference(answer, cits):
    quotes = {c.n: c.quote for c in cits}

    def long_words(text):
        return {w.lower() for w in re.findall(r"[A-Za-z]{5,}", text)}

    flagged = []
    for sentence in sentences(answer):
        cited = [int(n) for n in re.findall(r"\[(\d+)\]", sentence) if int(n) in quotes]
        if cited and not any(long_words(re.sub(r"\[\d+\]", " ", sentence)) & long_words(quotes[n]) for n in cited):
            flagged.append(sentence)
    return flagged


_CASES = (
    "Lists require a blank line [1].",                                   # shares "blank"
    "Lists require a blank line [2].",                                   # cites the wrong source
    "Lists require a blank line [2][1].",                                # one of two cited sources supports
    "Warnings go through the reporter [3]. Targets resolve late [1].",   # second one flagged
    "Nothing here cites anything at all today.",                         # no marker: skipped
    "Targets are resolved at the end [7].",                              # unknown source: skipped
    "HYPERLINK TARGETS are RESOLVED late [2].",                          # case does not matter
    "Every claim is cited [1]. Short words only [3]. Parser output [3].",
)


@check("7.3", points=3)
def weakly_supported_function(ns):
    """weakly_supported(answer, cits) returns exactly the sentences a reference implementation flags, on
    hand-built sources and answers (wrong source, several markers, unknown markers, no markers, case)."""
    fn = given(ns, "weakly_supported")
    assert callable(fn), "define a function weakly_supported(answer, cits)"
    wrong = sum(not _flags(fn, answer) for answer in _CASES)
    assert wrong == 0, f"{wrong} of {len(_CASES)} unseen answers were flagged wrongly"


def _flags(fn, answer: str) -> bool:
    """fn flags exactly the reference's sentences of `answer`; a crash is a wrong answer on that input only."""
    try:
        return [str(s).strip() for s in items(fn(answer, _SOURCES), "the result")] == [
            s.strip() for s in _reference(answer, _SOURCES)]
    except Exception:  # noqa: BLE001 - a student's function may raise anything
        return False


@check("7.4", points=2)
def prediction_recorded(ns):
    """Completion: prediction_7_4 has a bool 'ok' and a 'why' of at least five words (the rubric in the
    guide grades the reasoning)."""
    p = given(ns, "prediction_7_4")
    assert isinstance(p, dict), "prediction_7_4 should be a dict"
    assert isinstance(p.get("ok"), bool | np.bool_), "prediction_7_4['ok'] should be True or False"
    assert isinstance(p.get("why"), str) and len(p["why"].split()) >= 5, "give a reason of a sentence or two"


@check("7.5", points=2)
def support_threshold_counts(ns):
    """answer_7_5 equals (flagged, cited): the cited sentences of the notebook's stored in-domain answers that
    unsupported_sentences flags at the exercise's threshold, and all their cited sentences, recomputed with the
    package (half marks when only the cited count is right)."""
    threshold = choose("7.5", [0.75, 0.25, 0.6])
    answered = [m for m in ns["measured"] if m["group"] == "in" and m["answered"]]
    flagged = sum(len(unsupported_sentences(m["text"], m["citations"], threshold)) for m in answered)
    cited = sum(len(cited_sentences(m["text"], m["citations"])) for m in answered)
    got = tuple(integer(x, "each count") for x in items(given(ns, "answer_7_5"), "answer_7_5", 2))
    if got == (flagged, cited):
        return None
    if got[1] == cited:
        return Partly(0.5, "the count of cited sentences is right; the count flagged at the threshold is not")
    raise AssertionError("neither count is right: count sentences of the answered in-domain queries only, "
                         "with citations.cited_sentences and the exercise's threshold")
