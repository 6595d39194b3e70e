"""The held-out question set `data/questions_confirm.jsonl`: valid, complete, and disjoint from `questions.jsonl`.

These questions exist for one confirmatory test of a method fixed in advance, so the checks here are
about independence from the original 32 questions: no shared needle, no needle from the same
paragraph as an original needle, no repeated question text.
"""

import re

import pytest

from ragcourse.groundtruth import QUESTIONS_FILE, load_questions
from ragcourse.paths import DATA_DIR
from ragcourse.words import collapse

CONFIRM_FILE = DATA_DIR / "questions_confirm.jsonl"
LARGE_DOCS = {"ref-rst-directives", "ref-rst-roles", "user-config", "user-rst-quickstart"}


@pytest.fixture(scope="module")
def confirm(corpus):
    return load_questions(CONFIRM_FILE, corpus=corpus)


@pytest.fixture(scope="module")
def original(corpus):
    return load_questions(QUESTIONS_FILE, corpus=corpus)


def paragraphs(text: str) -> list[str]:
    """The blank-line separated blocks of a Markdown text, whitespace collapsed."""
    return [collapse(p) for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_thirty_two_questions_with_ids_c01_to_c32(confirm):
    assert len(confirm) == 32
    assert [q.id for q in confirm] == [f"c{i:02d}" for i in range(1, 33)]


def test_every_document_has_at_least_two_questions(confirm, corpus):
    counts = {d.id: sum(q.doc == d.id for q in confirm) for d in corpus}
    assert len(counts) == 13
    assert {doc: n for doc, n in counts.items() if n < 2} == {}
    # The extra questions go to the four large reference documents, as in questions.jsonl.
    assert sum(counts[doc] for doc in LARGE_DOCS) == 32 - 2 * 9


def test_no_needle_shared_with_the_original_questions(confirm, original):
    old = [collapse(q.needle) for q in original]
    clashes = [(q.id, o) for q in confirm for o in old
               if collapse(q.needle) in o or o in collapse(q.needle)]
    assert clashes == []


def test_no_needle_from_a_paragraph_of_an_original_needle(confirm, original, corpus):
    by_id = {d.id: d for d in corpus}
    taken = {p for q in original for p in paragraphs(by_id[q.doc].text) if collapse(q.needle) in p}
    assert len(taken) == 32
    clashes = [q.id for q in confirm if any(collapse(q.needle) in p for p in taken)]
    assert clashes == []


def test_no_question_text_repeated_from_the_original_questions(confirm, original):
    old_texts = {collapse(t).lower() for q in original for t in (q.question, q.ticket)}
    repeated = [q.id for q in confirm for t in (q.question, q.ticket) if collapse(t).lower() in old_texts]
    assert repeated == []


def test_questions_and_tickets_are_distinct(confirm):
    assert [q.id for q in confirm if collapse(q.question).lower() == collapse(q.ticket).lower()] == []
    assert len({collapse(q.question).lower() for q in confirm}) == 32
    assert len({collapse(q.ticket).lower() for q in confirm}) == 32
    assert len({collapse(q.needle) for q in confirm}) == 32
