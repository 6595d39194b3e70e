"""Hidden checks for chapter 4 (BM25 and hybrid retrieval): recomputed from the package and the notebook's namespace."""

from __future__ import annotations

import math

from kit.checks.compare import Partly, by_share, given, in_grid, keyed, misses, number, reference
from kit.hidden import check
from ragcourse.bm25 import BM25
from ragcourse.evaluation import evaluate
from ragcourse.fusion import RRF_C, rrf, weighted_rrf
from ragcourse.pipeline import ranked_chunks


def _mrr(ns, rankings) -> float:
    return float(evaluate(ranked_chunks(ns["chunks"], rankings), ns["qs"])["rr"].mean())


def _bm25_mrr(ns, k1: float, b: float) -> float:
    model = BM25(ns["texts"], k1=k1, b=b)
    return _mrr(ns, {q.id: model.rank(q.text) for q in ns["qs"]})


def _hybrid_mrr(ns, w: float, c: float = RRF_C) -> float:
    dense, bm25 = ns["dense_lists"], ns["bm25_lists"]
    return _mrr(ns, {q.id: weighted_rrf([dense[q.id], bm25[q.id]], [1.0, float(w)], c=float(c)) for q in ns["qs"]})


#: How close an MRR must be: the texts ask for 3 decimal places or more, so a value rounded to 3 passes.
MRR_TOLERANCE = 0.0005 + 1e-9


@check("4.1", points=2)
def tuned_bm25(ns):
    """answer_4_1 is the grid pair with the highest BM25 MRR, with that MRR
    (1 point: a grid pair whose MRR recomputes)."""
    answer = keyed(given(ns, "answer_4_1"), "answer_4_1")
    assert {"k1", "b", "mrr"} <= set(answer), "answer_4_1 needs k1, b and mrr"
    k1, b = in_grid(answer["k1"], list(ns["GRID_K1"])), in_grid(answer["b"], list(ns["GRID_B"]))
    assert k1 is not None and b is not None, "(k1, b) must come from the grid"
    with reference("the MRR of each grid pair"):
        grid = [_bm25_mrr(ns, k, c) for k in ns["GRID_K1"] for c in ns["GRID_B"]]
        mine = _bm25_mrr(ns, k1, b)
    return _best_on_grid(number(answer["mrr"], "answer_4_1['mrr']"), mine, grid, "(k1, b)")


@check("4.2", points=2)
def weighted_rrf_weight(ns):
    """answer_4_2 is the weight in GRID_W with the highest hybrid MRR, with that MRR
    (1 point: a correct MRR, not the best)."""
    answer = keyed(given(ns, "answer_4_2"), "answer_4_2")
    assert {"w", "mrr"} <= set(answer), "answer_4_2 needs w and mrr"
    w = in_grid(answer["w"], list(ns["GRID_W"]))
    assert w is not None, "w must come from GRID_W"
    with reference("the MRR of each weight"):
        grid = [_hybrid_mrr(ns, x) for x in ns["GRID_W"]]
        mine = _hybrid_mrr(ns, w)
    return _best_on_grid(number(answer["mrr"], "answer_4_2['mrr']"), mine, grid, "w")


def _best_on_grid(stated: float, mine: float, grid: list[float], what: str) -> Partly | None:
    """Full marks for the grid's best MRR, half for a correct MRR of another point (the student's `what`)."""
    assert abs(mine - stated) <= MRR_TOLERANCE, f"the MRR you give does not recompute for your {what}"
    if not math.isclose(mine, max(grid), abs_tol=1e-12):
        return Partly(0.5, f"your MRR is computed correctly, but another {what} on the grid scores higher")
    return None


@check("4.3", points=2)
def rrf_c_sweep(ns):
    """answer_4_3 maps every c in GRID_RRF_C to the plain-RRF hybrid's MRR
    (partial marks by the share that recompute)."""
    answer = keyed(given(ns, "answer_4_3"), "answer_4_3")
    grid = list(ns["GRID_RRF_C"])
    mine = {in_grid(c, grid): v for c, v in answer.items()}
    assert len(answer) == len(grid) and None not in mine, "one MRR for each c in GRID_RRF_C, no other keys"
    with reference("the MRR at each c"):
        expected = {c: _hybrid_mrr(ns, 1.0, c) for c in grid}
    right = [c for c in grid if abs(number(mine[c], "each MRR") - expected[c]) <= MRR_TOLERANCE]
    if len(right) == len(grid):
        return None
    assert right, "no value recomputes: fuse the dense and BM25 rankings with rrf(..., c=c) for each c"
    return Partly(len(right) / len(grid), f"{len(grid) - len(right)} of {len(grid)} MRRs do not recompute "
                  "(plain RRF of the dense and BM25 rankings at that c)")


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
    # ranks from 0 instead of 1 change the order in each of these four
    ([["d", "c", "f", "a"], ["e", "b", "c"]], 1),
    ([["a", "f"], ["f", "d", "e", "c"], ["b", "f", "e", "c"]], 2),
    ([["e", "f", "b"], ["a", "e", "f", "d"], ["c", "b", "e", "d"]], 1),
    ([["b", "c"], ["e", "a", "b", "f"], ["c", "a", "b"]], 1),
]


@check("4.4", points=3, by_hand=True)
def rrf_function(ns):
    """rrf_by_hand(lists, c) returns the package's rrf order on 13 unseen hand-built cases, ties included and
    4 that ranks counted from 0 get wrong (partial by share)."""
    fn = given(ns, "rrf_by_hand")
    assert callable(fn), "define a function rrf_by_hand(lists, c=60)"
    with reference("the package's rrf"):
        expected = [rrf(lists, c=c) for lists, c in _RRF_CASES]
    # c is passed by position: the constant's name is the student's
    wrong = misses(fn, _RRF_CASES, expected, lambda got, want: list(got) == want)
    return by_share(wrong, len(_RRF_CASES), "sum 1/(c + rank) with ranks from 1, best first",
                    "check that ranks count from 1, and ties: best rank, then first appearance")


@check("4.5", points=1)
def header_prediction(ns):
    """Completion: prediction_4_5 has a direction among up/down/same and a reason of 4+ words."""
    pred = given(ns, "prediction_4_5")
    assert isinstance(pred, dict), "prediction_4_5 must be a dict"
    assert pred.get("direction") in ("up", "down", "same"), "direction must be 'up', 'down' or 'same'"
    assert len(str(pred.get("why", "")).split()) >= 4, "give a reason in a sentence ('why')"
