"""Hidden checks for chapter 1 (the corpus and the ground truth): run by the grader, never shipped.

Each check recomputes what it needs from the package and the student's namespace `ns`; none prints or
returns an expected value.
"""

from __future__ import annotations

import re
from functools import cache

from kit.checks.compare import Partly, given, integer, items
from kit.hidden import check
from ragcourse.book.exercises import choose
from ragcourse.corpus import load_corpus, sections
from ragcourse.groundtruth import GroundTruthError, Question, check_needle, load_questions
from ragcourse.words import collapse

EXAMPLE_REPEAT = "A blank line is required following a table."  # the chapter's own example, not accepted


@check("1.1", points=2)
def section_of_rank(ns):
    """answer_section is the (doc id, title) of the headed section of rank RANK by length (end - start),
    ties broken by id, then title."""
    answer = tuple(items(given(ns, "answer_section"), "answer_section", 2))
    rank = choose("1.1", [1, 2, 3])
    found = {(d.id, s.title): s.end - s.start for d in load_corpus() for s in sections(d.text) if s.headed}
    assert answer in found, f"{answer!r} is not a (document id, section title) pair of the corpus"
    ranked = sorted(found, key=lambda k: (-found[k], k[0], k[1]))
    assert ranked.index(answer) == rank - 1, (
        f"that section has {found[answer]:,} characters, and its rank by length is not {rank}")


@check("1.2", points=2)
def repeated_needle(ns):
    """answer_repeat's needle has >= MIN_WORDS words, is not the chapter's example, lies in its doc and is
    rejected by check_needle as repeated; answer_why has a few words (0.75 without it)."""
    answer = given(ns, "answer_repeat")
    assert isinstance(answer, dict) and {"doc", "needle"} <= set(answer), 'expected {"doc": ..., "needle": ...}'
    docs = load_corpus()
    needle, min_words = collapse(str(answer["needle"])), choose("1.2", [8, 10, 6])
    words = len(needle.split())
    assert words >= min_words, f"only {words} words; find a sentence of at least {min_words}"
    assert needle != EXAMPLE_REPEAT, "that is the example from the text; find another one"
    by_id = {d.id: d for d in docs}
    assert answer["doc"] in by_id and needle in collapse(by_id[answer["doc"]].text), (
        f"the sentence is not in the document {answer['doc']!r}")
    try:
        check_needle(Question("ex", answer["doc"], needle, "?", "?"), docs)
    except GroundTruthError as error:
        assert "occurs" in str(error), "check_needle rejects it, but not because it repeats"
    else:
        raise AssertionError("check_needle accepts it: this sentence occurs exactly once")
    why = ns.get("answer_why")
    if not (isinstance(why, str) and len(why.split()) >= 4):
        return Partly(0.75, "the repeated sentence is right; `answer_why` needs a sentence of at least 4 words")
    return None


def _reference_count(text: str) -> int:
    count, fence = 0, None
    for line in text.splitlines():
        stripped = line.lstrip(" >")
        if fence is None:
            opener = re.match(r"`{3,}", stripped)
            if opener:
                count, fence = count + 1, opener.group(0)
        elif stripped.rstrip() == fence:
            fence = None
    return count


HAND_BUILT = [
    "",
    "Plain prose with ``inline literals`` and `roles`, but no fence.\n",
    "Intro.\n\n```\ncode\n```\n",
    "```python\nprint(1)\n```\n\nText.\n\n```\nx = 2\n```\n",
    "````\n```\nnot a close: a shorter run is code\n```\n````\n",
    "- item\n\n  ```\n  indented code\n  ```\n\n> ```\n> quoted code\n> ```\n",
    "```\nnever closed\n",
    "~~~\nnot a backquote fence\n~~~\n",
    "```\nfirst\n```\n````\nsecond, with ``` inside\n````\n",
]


@check("1.3", points=3)
def code_block_counter(ns):
    """count_code_blocks is right on 9 hand-built texts (nested runs, quotes, indents, an unclosed block)
    and on all 13 documents: full marks for both groups, a third for one of them."""
    fn = given(ns, "count_code_blocks")
    assert callable(fn), "count_code_blocks should be a function"
    groups = {"hand-built texts": HAND_BUILT, "documents": [d.text for d in load_corpus()]}
    wrong = {name: [i for i, text in enumerate(texts) if not _counts_right(fn, text)] for name, texts in groups.items()}
    if not any(wrong.values()):
        return None
    feedback = "; ".join(f"{len(w)} of {len(groups[name])} {name} counted wrong" for name, w in wrong.items() if w)
    assert not all(wrong.values()), feedback + " (check fences inside blocks, block quotes and unclosed blocks)"
    return Partly(1 / 3, feedback + " (check fences inside blocks, block quotes and unclosed blocks)")


def _counts_right(fn, text: str) -> bool:
    try:
        got = fn(text)
    except Exception:  # noqa: BLE001 - a student's function may raise anything
        return False
    try:
        return integer(got, "the count") == _reference_count(text)
    except AssertionError:
        return False


@check("1.4", points=1)
def prediction_made(ns):
    """Completion: prediction_unique is an int in [0, questions]; prediction_reason has a few words
    (half marks without it)."""
    integer(given(ns, "prediction_unique"), "prediction_unique", 0, _questions())
    reason = ns.get("prediction_reason")
    if isinstance(reason, str) and len(reason.split()) >= 3:
        return None
    return Partly(0.5, "the prediction is recorded; `prediction_reason` needs a sentence of at least 3 words")


@cache  # the same for every student
def _questions() -> int:
    return len(load_questions())
