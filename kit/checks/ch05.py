"""Hidden checks for chapter 5's exercises (reranking). Expected values are recomputed, never typed."""

from __future__ import annotations

import numpy as np

from kit.hidden import check
from ragcourse.book.exercises import choose
from ragcourse.chunking import chunk_corpus
from ragcourse.evaluation import answers_destroyed, evaluate, holm
from ragcourse.rerank import maxsim, rerank_rankings

DEPTHS = (10, 25, 50)


@check("5.1", points=1)
def depth_prediction(ns):
    """A prediction written before the measurement: a depth among 10, 25 and 50, and a reason of a few words."""
    depth, reason = ns.get("prediction_depth"), ns.get("prediction_reason")
    assert depth in DEPTHS, "prediction_depth should be one of the depths 10, 25 or 50"
    if not isinstance(reason, str) or len(reason.split()) < 5:
        return 0.5  # a depth without a reason earns half
    return None


@check("5.2", points=2)
def rerank_depths(ns):
    """answer_depth[d] is (R@1, MRR) over all queries after reranking the hybrid top d, for d in 10, 25, 50."""
    answer = ns.get("answer_depth")
    assert isinstance(answer, dict) and sorted(answer) == list(DEPTHS), "answer_depth needs the keys 10, 25 and 50"
    qs, right = ns["qs"], 0
    for depth in DEPTHS:
        table = evaluate(rerank_rankings(ns["reranker"], qs, ns["hybrid_chunks"], depth), qs, (1,))
        expected = (table["hit@1"].mean(), table["rr"].mean())
        right += bool(np.allclose(answer[depth], expected, atol=1e-9))
    assert right, "no depth matches: rerank the top d of each hybrid ranking, keep the rest, then evaluate all queries"
    return None if right == len(DEPTHS) else right / len(DEPTHS)


@check("5.3", points=2, by_hand=True)
def maxsim_function(ns):
    """maxsim_by_hand(q, p) equals the package's maxsim on random unit-length matrices of several shapes."""
    fn = ns.get("maxsim_by_hand")
    assert callable(fn), "define a function maxsim_by_hand(q, p)"
    rng = np.random.default_rng(5003)
    shapes = [(1, 1, 4), (2, 5, 8), (7, 3, 16), (4, 12, 384)]
    right = 0
    for n_q, n_p, dim in shapes:
        q = rng.normal(size=(n_q, dim))
        p = rng.normal(size=(n_p, dim))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        p /= np.linalg.norm(p, axis=1, keepdims=True)
        got = fn(q, p)
        right += bool(np.size(got) == 1 and abs(float(got) - maxsim(q, p)) < 1e-6)
    assert right, "not quite: for each query row take its largest dot product with any passage row, then sum"
    return None if right == len(shapes) else right / len(shapes)


@check("5.4", points=2)
def unreachable_queries(ns):
    """answer_unreachable counts the queries whose needle no chunk of the exercise's blind strategy holds whole."""
    answer = ns.get("answer_unreachable")
    assert isinstance(answer, int | np.integer), "answer_unreachable should be an integer"
    blind = chunk_corpus(ns["corpus"], choose("5.4", ["A", "B"]))
    destroyed = set(answers_destroyed(blind, [q.needle for q in ns["questions"]]))
    expected = sum(q.needle in destroyed for q in ns["qs"])
    if answer * 2 == expected:
        raise AssertionError("that counts questions; count queries (each question has two phrasings)")
    assert answer == expected, "not quite: a query is unreachable when no chunk's content holds its needle whole"


@check("5.5", points=3, by_hand=True)
def holm_function(ns):
    """holm_by_hand matches the package's holm on unseen lists (ties, one p, unsorted), and answer_holm on the table."""
    fn = ns.get("holm_by_hand")
    assert callable(fn), "define a function holm_by_hand(p_values)"
    cases = [[0.01, 0.04, 0.03], [0.2], [0.001, 0.2, 0.2, 0.049, 0.8], [0.02, 0.02, 0.02], [0.6, 0.0, 0.3, 0.01]]
    right = sum(bool(np.allclose(list(fn(list(case))), holm(case), atol=1e-12)) for case in cases)
    table = ns["variants_original"]["p"].tolist()
    answer = ns.get("answer_holm")
    table_right = answer is not None and len(answer) == len(table) and np.allclose(answer, holm(table), atol=1e-12)
    assert right or table_right, ("not quite: sort, multiply the i-th smallest by (m - i), cap at 1, "
                                  "take a running maximum, then put the values back in the original order")
    score = (right / len(cases)) * 2 / 3 + table_right / 3
    return None if score > 1 - 1e-9 else score
