"""Hidden checks for chapter 12 (test collections): recomputed from the package on cases the notebook never shows."""

from __future__ import annotations

import math
import random

from sklearn.metrics import cohen_kappa_score

from kit.checks.compare import by_share, given, misses, number, reference
from kit.hidden import check
from ragcourse.graded import ndcg_at

#: How close a value must be: float32 arithmetic (7 digits) is right too.
TOLERANCE = 1e-6


def _ndcg_cases() -> list[tuple[list[str], dict[str, int], int]]:
    """Rankings and grades the notebook never shows: unjudged passages, nothing relevant, k past the ranking,
    a relevant passage never retrieved (it still counts in the ideal list)."""
    cases = [(["a", "b", "c"], {"a": 0, "b": 0}, 2), (["x"], {"x": 2, "y": 2}, 5), (["p", "q"], {"q": 1}, 1),
             (["m", "n", "o"], {"o": 2, "z": 1}, 3), (["d", "e"], {}, 2)]
    rng = random.Random(1212)
    for _ in range(15):
        ids = [f"c{i}" for i in range(rng.randint(3, 12))]
        ranking = rng.sample(ids, rng.randint(1, len(ids)))
        grades = {i: rng.choice((0, 1, 2)) for i in rng.sample(ids, rng.randint(1, len(ids)))}
        cases.append((ranking, grades, rng.randint(1, 8)))
    return cases


@check("12.1", points=3, by_hand=True)
def ndcg_function(ns):
    """ndcg_at_k(ranking, grades, k) equals the package's nDCG@k (linear gain, log2 discount, ideal over every
    judged passage) on 20 unseen cases (partial by share)."""
    fn = given(ns, "ndcg_at_k")
    assert callable(fn), "define a function ndcg_at_k(ranking, grades, k)"
    cases = _ndcg_cases()
    with reference("the package's ndcg_at"):
        expected = [ndcg_at(ranking, grades, k) for ranking, grades, k in cases]
    wrong = misses(lambda ranking, grades, k: fn(list(ranking), dict(grades), k), cases, expected,
                   lambda got, want: math.isclose(number(got, "ndcg_at_k(...)"), want, abs_tol=TOLERANCE))
    return by_share(wrong, len(cases), "DCG sums grade / log2(rank + 1), divided by the ideal DCG",
                    "check a query with nothing relevant, k longer than the ranking, and a relevant passage the "
                    "ranking lacks")


def _kappa_cases() -> list[tuple[list[int], list[int]]]:
    """Two judges' grades the notebook never shows: perfect agreement, opposite ends, one grade unused."""
    cases = [([0, 1, 2, 2], [0, 1, 2, 2]), ([0, 0, 2, 2], [2, 2, 0, 0]), ([0, 1, 1, 0, 1], [1, 1, 0, 0, 1]),
             ([2, 2, 1, 0, 0, 1], [2, 1, 1, 0, 1, 1])]
    rng = random.Random(1213)
    for _ in range(12):
        a = [rng.choice((0, 1, 2)) for _ in range(rng.randint(6, 30))]
        cases.append((a, [g if rng.random() < 0.6 else rng.choice((0, 1, 2)) for g in a]))
    return cases


@check("12.2", points=3, by_hand=True)
def weighted_kappa_function(ns):
    """weighted_kappa(a, b) equals linearly weighted Cohen's kappa over the grades 0, 1, 2 (scikit-learn's
    cohen_kappa_score, weights="linear") on 16 unseen pairs of judges (partial by share)."""
    fn = given(ns, "weighted_kappa")
    assert callable(fn), "define a function weighted_kappa(a, b)"
    cases = _kappa_cases()
    with reference("scikit-learn's weighted kappa"):
        expected = [cohen_kappa_score(a, b, labels=[0, 1, 2], weights="linear") for a, b in cases]
    wrong = misses(lambda a, b: fn(list(a), list(b)), cases, expected,
                   lambda got, want: math.isclose(number(got, "weighted_kappa(...)"), want, abs_tol=TOLERANCE))
    return by_share(wrong, len(cases), "1 - observed over expected weighted disagreement",
                    "weights |i - j| / 2, expected disagreement from each judge's own grade shares")


@check("12.3", points=1)
def writer_prediction(ns):
    """Completion: prediction_12_3 has a tau in [-1, 1] and a reason of 4+ words."""
    pred = given(ns, "prediction_12_3")
    assert isinstance(pred, dict), "prediction_12_3 must be a dict"
    tau = number(pred.get("tau"), "prediction_12_3['tau']")
    assert -1 <= tau <= 1, "a Kendall's tau lies between -1 and 1"
    assert len(str(pred.get("why", "")).split()) >= 4, "give a reason in a sentence ('why')"
