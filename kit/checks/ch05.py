"""Hidden checks for chapter 5's exercises (reranking). Expected values are recomputed, never typed."""

from __future__ import annotations

import numpy as np

from kit.checks.compare import Partly, close, given, in_grid, integer, keyed, number, reference
from kit.hidden import check
from ragcourse.book.exercises import choose
from ragcourse.chunking import chunk_corpus
from ragcourse.evaluation import answers_destroyed, evaluate, holm
from ragcourse.rerank import maxsim, rerank_rankings

DEPTHS = (10, 25, 50)
TOLERANCE = 0.0005 + 1e-9  # the texts ask for 3 decimal places or more


@check("5.1", points=1)
def depth_prediction(ns):
    """A prediction written before the measurement: a depth among 10, 25 and 50, and a reason of a few words."""
    depth, reason = given(ns, "prediction_depth"), ns.get("prediction_reason")
    assert in_grid(depth, list(DEPTHS)) is not None, "prediction_depth should be one of the depths 10, 25 or 50"
    if not isinstance(reason, str) or len(reason.split()) < 5:
        return Partly(0.5, "the depth is recorded; `prediction_reason` needs a sentence of at least 5 words")
    return None


@check("5.2", points=2)
def rerank_depths(ns):
    """answer_depth[d] is (R@1, MRR) over the lesson's queries `few` after reranking the hybrid top d (10, 25, 50)."""
    answer = {in_grid(k, list(DEPTHS)): v for k, v in keyed(given(ns, "answer_depth"), "answer_depth").items()}
    assert sorted(answer, key=str) == sorted(DEPTHS, key=str), "answer_depth needs the keys 10, 25 and 50"
    qs = ns["few"]  # the lesson reranks a handful of queries; the lab measures all of them
    with reference("the reranked scores at each depth"):
        tables = {d: evaluate(rerank_rankings(ns["reranker"], qs, ns["hybrid_chunks"], d), qs, (1,)) for d in DEPTHS}
    right = sum(close(answer[d], (t["hit@1"].mean(), t["rr"].mean()), TOLERANCE) for d, t in tables.items())
    assert right, "no depth matches: rerank the top d of each hybrid ranking, keep the rest, then evaluate `few`"
    if right == len(DEPTHS):
        return None
    return Partly(right / len(DEPTHS), f"{len(DEPTHS) - right} of {len(DEPTHS)} depths do not match (an (R@1, MRR) "
                  "pair over the queries of `few`, after reranking the hybrid top d)")


@check("5.3", points=2, by_hand=True)
def maxsim_function(ns):
    """maxsim_by_hand(q, p) equals the package's maxsim on random unit-length matrices of several shapes."""
    fn = given(ns, "maxsim_by_hand")
    assert callable(fn), "define a function maxsim_by_hand(q, p)"
    rng = np.random.default_rng(5003)
    shapes = [(1, 1, 4), (2, 5, 8), (7, 3, 16), (4, 12, 384)]
    right = 0
    for n_q, n_p, dim in shapes:
        q = rng.normal(size=(n_q, dim))
        p = rng.normal(size=(n_p, dim))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        p /= np.linalg.norm(p, axis=1, keepdims=True)
        with reference("the package's maxsim"):
            expected = maxsim(q, p)
        right += _scores(fn, (q, p), expected)
    assert right, "not quite: for each query row take its largest dot product with any passage row, then sum"
    if right == len(shapes):
        return None
    return Partly(right / len(shapes), f"wrong on {len(shapes) - right} of {len(shapes)} unseen matrix pairs "
                  "(check shapes other than square, and that you sum over query rows)")


def _scores(fn, args: tuple, expected: float) -> bool:
    try:
        return abs(number(fn(*args), "the score") - expected) < 1e-6
    except Exception:  # noqa: BLE001 - a crash on one input costs that input only
        return False


#: The exercise's window size for each term (the book's first). Strategies A and B destroyed the same needles,
#: so B's answer was the book's; these three sizes leave 94, 132 and 62 queries unreachable.
SIZES_5_4 = [512, 400, 640]


@check("5.4", points=2)
def unreachable_queries(ns):
    """answer_unreachable counts the queries whose needle no chunk of blind strategy A, at the exercise's size,
    holds whole."""
    answer = integer(given(ns, "answer_unreachable"), "answer_unreachable")
    with reference("the unreachable queries"):
        blind = chunk_corpus(ns["corpus"], "A", target=choose("5.4", SIZES_5_4))
        destroyed = set(answers_destroyed(blind, [q.needle for q in ns["questions"]]))
        expected = sum(q.needle in destroyed for q in ns["qs"])
    if answer * 2 == expected:
        raise AssertionError("that counts questions; count queries (each question has two phrasings)")
    assert answer == expected, "not quite: a query is unreachable when no chunk's content holds its needle whole"


@check("5.5", points=3, by_hand=True)
def holm_function(ns):
    """holm_by_hand matches the package's holm on unseen lists (ties, one p, unsorted), and answer_holm on family_p."""
    fn = given(ns, "holm_by_hand")
    assert callable(fn), "define a function holm_by_hand(p_values)"
    cases = [[0.01, 0.04, 0.03], [0.2], [0.001, 0.2, 0.2, 0.049, 0.8], [0.02, 0.02, 0.02], [0.6, 0.0, 0.3, 0.01]]
    with reference("the package's holm"):
        expected = [holm(case) for case in cases]
        table = holm(list(ns["family_p"]))
    right = sum(_adjusted(fn, case, want) for case, want in zip(cases, expected, strict=True))
    table_right = close(ns.get("answer_holm"), table, 1e-9)
    assert right or table_right, ("not quite: sort, multiply the i-th smallest by (m - i), cap at 1, "
                                  "take a running maximum, then put the values back in the original order")
    score = (right / len(cases)) * 2 / 3 + table_right / 3
    if score > 1 - 1e-9:
        return None
    why = [f"wrong on {len(cases) - right} of {len(cases)} unseen lists"] if right < len(cases) else []
    wrong_table = [] if table_right else ["answer_holm does not match Holm's correction of family_p"]
    return Partly(score, "; ".join(why + wrong_table))


def _adjusted(fn, case: list[float], expected: list[float]) -> bool:
    try:
        return close(fn(list(case)), expected, 1e-9)
    except Exception:  # noqa: BLE001 - a crash on one input costs that input only
        return False
