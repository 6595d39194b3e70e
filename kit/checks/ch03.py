"""Hidden checks for chapter 3 (dense retrieval): recomputed from the package and the notebook's namespace."""

from __future__ import annotations

import math
import random

import numpy as np

from kit.hidden import check
from ragcourse.evaluation import sign_test, wilson


@check("3.1", points=2)
def wilson_by_hand(ns):
    """answer_wilson equals wilson(s, n) to 1e-4, with s the R@20 hits of STRATEGY_3_1 and n the number of queries."""
    answer = ns.get("answer_wilson")
    assert isinstance(answer, tuple | list) and len(answer) == 2, "answer_wilson must be a (low, high) pair"
    expected = wilson(int(ns["hits"].loc[ns["STRATEGY_3_1"], "R@20"]), len(ns["qs"]))
    low, high = (float(x) for x in answer)
    assert low < high, "low must be below high"
    centre_ok = abs((low + high) / 2 - (expected.low + expected.high) / 2) < 1e-4
    assert np.allclose((low, high), expected, atol=1e-4), (
        "the width is right but the centre is not: check the z^2/2n term" if not centre_ok
        and math.isclose(high - low, expected.high - expected.low, abs_tol=1e-4)
        else "not quite: check s (the strategy's R@20 hits), n (queries), z and the two terms under the root")


@check("3.2", points=2)
def header_gain_query(ns):
    """answer_query is the query with the largest rr gain of E over C, ties broken by the smaller id."""
    answer = ns.get("answer_query")
    assert isinstance(answer, str), "answer_query must be a query id (a string)"
    gain = ns["per_query"]["E"].set_index("query")["rr"] - ns["per_query"]["C"].set_index("query")["rr"]
    assert answer in gain.index, f"{answer!r} is not a query id"
    best = min(gain[gain == gain.max()].index)
    if answer != best:
        assert gain[answer] < gain.max(), "a tie at the top: take the smaller query id"
        raise AssertionError("not the largest gain: subtract C's rr from E's for every query")


@check("3.3", points=2)
def queries_for_half_width(ns):
    """answer_n is the smallest even n whose Wilson interval at n/2 hits has half-width <= HALF_3_3
    (half marks within 2)."""
    answer = ns.get("answer_n")
    assert isinstance(answer, int | np.integer) and not isinstance(answer, bool), "answer_n must be an integer"
    target = ns["HALF_3_3"]

    def half(n: int) -> float:
        low, high = wilson(n // 2, n)
        return (high - low) / 2

    expected = next(n for n in range(2, 100_000, 2) if half(n) <= target)
    if answer == expected:
        return None
    assert answer % 2 == 0, "use an even n"
    if abs(answer - expected) <= 2:
        return 0.5
    raise AssertionError("too few: the interval is still too wide" if answer < expected
                         else "narrow enough, but not the smallest: try fewer")


def _sign_cases() -> list[tuple[int, int]]:
    rng = random.Random(314)
    cases = [(0, 0), (1, 0), (0, 9), (7, 7), (13, 2), (2, 13), (30, 18), (55, 40)]
    cases += [(rng.randint(0, 40), rng.randint(0, 40)) for _ in range(12)]
    return cases


@check("3.4", points=3)
def sign_p_function(ns):
    """sign_p(wins, losses) agrees with the exact two-sided sign test on 20 unseen pairs (partial marks by share)."""
    fn = ns.get("sign_p")
    assert callable(fn), "define a function sign_p(wins, losses)"
    cases = _sign_cases()
    wrong = []
    for wins, losses in cases:
        try:
            ok = math.isclose(float(fn(wins, losses)), sign_test(wins, losses), abs_tol=1e-9)
        except Exception as error:  # a crash on one input costs that input only
            ok, wins = False, f"{wins} (raised {type(error).__name__})"
        if not ok:
            wrong.append((wins, losses))
    if not wrong:
        return None
    share = 1 - len(wrong) / len(cases)
    if share == 0:
        raise AssertionError(f"wrong on every case, e.g. sign_p{wrong[0]}: check the tail sum and the factor 2")
    print(f"Exercise 3.4: wrong on {len(wrong)} of {len(cases)} cases, e.g. sign_p{wrong[0]} "
          "(think of no discordant pairs, of wins == losses, and of the cap at 1)")
    return share


@check("3.5", points=1)
def phrasing_prediction(ns):
    """Completion: prediction_3_5 has shares both/one/none in [0, 1] summing to 1, and a reason of 4+ words."""
    pred = ns.get("prediction_3_5")
    assert isinstance(pred, dict), "prediction_3_5 must be a dict"
    shares = [pred.get(k) for k in ("both", "one", "none")]
    assert all(isinstance(v, int | float) and 0 <= v <= 1 for v in shares), "each share must lie in [0, 1]"
    assert abs(sum(shares) - 1) <= 0.01, "the three shares must add up to 1"
    assert len(str(pred.get("why", "")).split()) >= 4, "give a reason in a sentence ('why')"
