"""Hidden checks for chapter 4 (BM25 and hybrid retrieval): recomputed from the package and the notebook's namespace."""

from __future__ import annotations

import math

from kit.hidden import check
from ragcourse.bm25 import BM25
from ragcourse.evaluation import evaluate
from ragcourse.fusion import rrf, weighted_rrf
from ragcourse.pipeline import ranked_chunks


def _mrr(ns, rankings) -> float:
    return float(evaluate(ranked_chunks(ns["chunks"], rankings), ns["qs"])["rr"].mean())


def _bm25_mrr(ns, k1: float, b: float) -> float:
    model = BM25(ns["texts"], k1=k1, b=b)
    return _mrr(ns, {q.id: model.rank(q.text) for q in ns["qs"]})


def _hybrid_mrr(ns, w: float, k: float = 60) -> float:
    dense, bm25 = ns["dense_lists"], ns["bm25_lists"]
    return _mrr(ns, {q.id: weighted_rrf([dense[q.id], bm25[q.id]], [1.0, w], k=k) for q in ns["qs"]})


@check("4.1", points=2)
def tuned_bm25(ns):
    """answer_4_1 is the grid pair with the highest BM25 MRR, with that MRR
    (1 point: a grid pair whose MRR recomputes)."""
    answer = ns.get("answer_4_1")
    assert isinstance(answer, dict) and {"k1", "b", "mrr"} <= set(answer), "answer_4_1 needs k1, b and mrr"
    assert answer["k1"] in ns["GRID_K1"] and answer["b"] in ns["GRID_B"], "(k1, b) must come from the grid"
    grid = [_bm25_mrr(ns, k1, b) for k1 in ns["GRID_K1"] for b in ns["GRID_B"]]
    return _best_on_grid("4.1", answer, _bm25_mrr(ns, answer["k1"], answer["b"]), grid, "(k1, b)")


@check("4.2", points=2)
def weighted_rrf_weight(ns):
    """answer_4_2 is the weight in GRID_W with the highest hybrid MRR, with that MRR
    (1 point: a correct MRR, not the best)."""
    answer = ns.get("answer_4_2")
    assert isinstance(answer, dict) and {"w", "mrr"} <= set(answer), "answer_4_2 needs w and mrr"
    assert answer["w"] in ns["GRID_W"], "w must come from GRID_W"
    grid = [_hybrid_mrr(ns, w) for w in ns["GRID_W"]]
    return _best_on_grid("4.2", answer, _hybrid_mrr(ns, answer["w"]), grid, "w")


def _best_on_grid(exercise: str, answer: dict, mine: float, grid: list[float], what: str) -> float | None:
    """Full marks for the grid's best MRR, half for a correct MRR of another point (the student's `what`)."""
    assert math.isclose(mine, float(answer["mrr"]), abs_tol=1e-6), f"the MRR does not recompute for your {what}"
    if not math.isclose(mine, max(grid), abs_tol=1e-12):
        print(f"Exercise {exercise}: your MRR is computed correctly, but another {what} on the grid scores higher")
        return 0.5
    return None


@check("4.3", points=2)
def rrf_k_sweep(ns):
    """answer_4_3 maps every k in GRID_RRF_K to the plain-RRF hybrid's MRR
    (partial marks by the share that recompute)."""
    answer = ns.get("answer_4_3")
    assert isinstance(answer, dict), "answer_4_3 must be a dict {k: mrr}"
    assert sorted(answer) == sorted(ns["GRID_RRF_K"]), "one MRR for each k in GRID_RRF_K, no other keys"
    right = [k for k in answer if math.isclose(float(answer[k]), _hybrid_mrr(ns, 1.0, k), abs_tol=1e-6)]
    if len(right) == len(answer):
        return None
    assert right, "no value recomputes: fuse the dense and BM25 rankings with rrf(..., k=k) for each k"
    print(f"Exercise 4.3: {len(answer) - len(right)} of {len(answer)} values do not recompute")
    return len(right) / len(answer)


_RRF_CASES = [
    ([["x", "y", "z"], ["z", "y", "w"]], 60),
    ([["p", "q"], ["q", "p"]], 60),  # a tie on score and best rank: first appearance decides
    ([["a"], ["b"], ["c", "a"]], 1),
    ([["m", "n", "o", "p"], [], ["p", "o"]], 10),
    ([[3, 1, 2], [2, 3], [1]], 60),
    ([["s1", "s2", "s3", "s4", "s5"], ["s5", "s4", "s3", "s2", "s1"]], 2),
    ([["u", "v"], ["v", "t"], ["t", "u"]], 60),
    ([["a", "b"], ["c", "b"]], 1),  # ranks count from 1: b (2nd twice) beats a and c (1st once)
    ([["a", "b", "y"], ["x", "c", "y"]], 1),  # a, x and y tie at 0.5: the best rank, then first appearance
]


@check("4.4", points=3, by_hand=True)
def rrf_function(ns):
    """rrf_by_hand(lists, k) returns the package's rrf order on 9 unseen hand-built cases, ties included
    (partial by share)."""
    fn = ns.get("rrf_by_hand")
    assert callable(fn), "define a function rrf_by_hand(lists, k=60)"
    wrong = 0
    for lists, k in _RRF_CASES:
        try:
            ok = list(fn(lists, k=k)) == rrf(lists, k=k)
        except Exception:  # a crash on one case costs that case only
            ok = False
        wrong += not ok
    if wrong == 0:
        return None
    assert wrong < len(_RRF_CASES), "wrong on every case: sum 1/(k + rank) with ranks from 1, best first"
    print(f"Exercise 4.4: {wrong} of {len(_RRF_CASES)} cases differ (check ties: best rank, then first appearance)")
    return 1 - wrong / len(_RRF_CASES)


@check("4.5", points=1)
def header_prediction(ns):
    """Completion: prediction_4_5 has a direction among up/down/same and a reason of 4+ words."""
    pred = ns.get("prediction_4_5")
    assert isinstance(pred, dict), "prediction_4_5 must be a dict"
    assert pred.get("direction") in ("up", "down", "same"), "direction must be 'up', 'down' or 'same'"
    assert len(str(pred.get("why", "")).split()) >= 4, "give a reason in a sentence ('why')"
