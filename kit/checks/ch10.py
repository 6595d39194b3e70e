"""Hidden checks for chapter 10 (query expansion). Never shipped with the student edition."""

from __future__ import annotations

from kit.checks.compare import by_count, given, items, misses, number, reference
from kit.hidden import check


@check("10.1", points=1)
def predicted_before_measuring(ns):
    """A prediction was written: a number in [0, 1] and a sentence of reasoning (completion; rubric in the guide)."""
    value, reason = number(given(ns, "prediction_10_1"), "prediction_10_1"), ns.get("reason_10_1")
    assert 0 <= value <= 1, "prediction_10_1 must be an MRR, between 0 and 1"
    assert isinstance(reason, str) and len(reason.split()) >= 5, "reason_10_1 needs a sentence of reasoning"


UNSEEN = [
    ("Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    f()\nValueError: bad width\n",
     "ValueError: bad width"),
    ("it broke again\n  raise KeyError(x)\n   KeyError: 'title'   \nany idea?", "KeyError: 'title'"),
    ("first\nTypeError: one\nDuring handling of the above exception, another exception occurred:\n"
     "docutils.utils.SystemMessageError: two", "docutils.utils.SystemMessageError: two"),
    ("json.decoder.JSONDecodeError: Expecting value: line 1 column 1",
     "json.decoder.JSONDecodeError: Expecting value: line 1 column 1"),
    ("UserWarning: deprecated option --foo", "UserWarning: deprecated option --foo"),
    ("no traceback here, the output is just empty", "no traceback here, the output is just empty"),
    ("MyException: custom\nthen text", "MyException: custom"),
    ("", ""),
]


@check("10.2", points=3)
def last_error_line_on_unseen_tickets(ns):
    """last_error_line on 8 tickets the notebook never shows: plain and chained tracebacks, dotted names,
    warnings, padding, no traceback at all, the empty ticket. 8 right: full; 6-7: two thirds; 3-5: one third."""
    fn = given(ns, "last_error_line")
    assert callable(fn), "define last_error_line(ticket) -> str"
    right = len(UNSEEN) - misses(fn, [(ticket,) for ticket, _ in UNSEEN], [want for _, want in UNSEEN],
                                 lambda got, want: got == want)
    return by_count(right, len(UNSEEN), (3, 6),
                    f"{right} of {len(UNSEEN)} unseen tickets right: check chained tracebacks and padding")


@check("10.3", points=2)
def feedback_under_the_reranker(ns):
    """answer_10_3 equals (difference, p) of detectable(feedback, none), both reranked, on the first 32
    questions' tickets, recomputed from the lesson's `rerank_runs`."""
    from ragcourse import evaluation

    runs = ns["rerank_runs"]
    with reference("the paired difference"):
        d = evaluation.detectable(runs["feedback"], runs["none"])
    answer = [number(x, "answer_10_3") for x in items(given(ns, "answer_10_3"), "answer_10_3", 2)]
    assert abs(answer[0] - d.difference) <= 0.0015, "the difference is off: feedback + rerank minus none + rerank"
    assert abs(answer[1] - d.p) <= 0.002, "the p-value is off: use evaluation.detectable, paired by question"
