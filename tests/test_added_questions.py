"""The added questions `data/questions_added.jsonl` (issue: enough questions to decide): valid and apart.

Written document by document, by someone who saw only that document and ran no retrieval, to bring
the ground truth past 200 questions. Checked here: valid on load, ids that continue q01-q32, every
document asked about in proportion to its length, and no needle that shares a sentence with the
original 32 or a paragraph with the held-out confirmatory set.
"""

import re

import pytest

from ragcourse.groundtruth import CONFIRM_FILE, QUESTIONS_FILE, load_questions
from ragcourse.paths import DATA_DIR
from ragcourse.words import collapse

ADDED_FILE = DATA_DIR / "questions_added.jsonl"


@pytest.fixture(scope="module")
def added(corpus):
    return load_questions(ADDED_FILE, corpus=corpus)


def paragraphs(text: str) -> list[str]:
    return [collapse(p) for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_ids_continue_the_original_numbering(added):
    assert [q.id for q in added] == [f"q{i}" for i in range(33, 33 + len(added))]
    assert len(added) + 32 >= 200


def test_documents_are_asked_about_in_proportion_to_their_length(added, corpus):
    original = load_questions(QUESTIONS_FILE, corpus=corpus)
    total = sum(len(d.text) for d in corpus)
    n = len(added) + len(original)
    for doc in corpus:
        asked = sum(q.doc == doc.id for q in added + original)
        fair = n * len(doc.text) / total
        assert abs(asked - fair) <= max(2, 0.15 * fair), (doc.id, asked, round(fair, 1))


def test_no_needle_shared_with_another_set(added, corpus):
    others = load_questions(QUESTIONS_FILE, corpus=corpus) + load_questions(CONFIRM_FILE, corpus=corpus)
    old = [collapse(q.needle) for q in others]
    clashes = [(q.id, o) for q in added for o in old if collapse(q.needle) in o or o in collapse(q.needle)]
    assert clashes == []


def test_the_confirmatory_set_stays_apart(added, corpus):
    by_id = {d.id: d for d in corpus}
    confirm = load_questions(CONFIRM_FILE, corpus=corpus)
    taken = {p for q in confirm for p in paragraphs(by_id[q.doc].text) if collapse(q.needle) in p}
    assert [q.id for q in added if any(collapse(q.needle) in p for p in taken)] == []


def test_ticket_phrasing_is_not_the_documentation_phrasing(added):
    same = [q.id for q in added if collapse(q.ticket).lower() == collapse(q.question).lower()]
    copied = [q.id for q in added if collapse(q.needle).lower() in collapse(q.ticket).lower()]
    assert same == [] and copied == []
