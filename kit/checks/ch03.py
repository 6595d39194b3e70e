"""Hidden checks for chapter 3 (dense retrieval): recomputed from the package and the notebook's namespace."""

from __future__ import annotations

import math
import random

import numpy as np

from kit.checks.compare import Partly, close, given, integer, items, number, reference
from kit.hidden import check
from ragcourse.evaluation import sign_test, wilson


@check("3.1", points=2)
def wilson_by_hand(ns):
    """answer_wilson equals wilson(s, n) to 1e-4, with s the R@20 hits of STRATEGY_3_1 and n the number of queries."""
    low, high = (number(x, "answer_wilson") for x in items(given(ns, "answer_wilson"), "answer_wilson", 2))
    with reference("the expected interval"):
        expected = wilson(int(ns["hits"].loc[ns["STRATEGY_3_1"], "R@20"]), len(ns["qs"]))
    assert low < high, "low must be below high"
    centre_ok = abs((low + high) / 2 - (expected.low + expected.high) / 2) < 1e-4
    assert close((low, high), tuple(expected), 1e-4), (
        "the width is right but the centre is not: check the z^2/2n term" if not centre_ok
        and math.isclose(high - low, expected.high - expected.low, abs_tol=1e-4)
        else "not quite: check s (the strategy's R@20 hits), n (queries), z and the two terms under the root")


@check("3.2", points=2)
def header_gain_query(ns):
    """answer_query is the query with the largest rr gain of E over C, ties broken by the smaller id."""
    answer = given(ns, "answer_query")
    answer = answer.item() if isinstance(answer, np.str_) else answer
    assert isinstance(answer, str), "answer_query must be a query id (a string)"
    with reference("the gains per query"):
        gain = ns["per_query"]["E"].set_index("query")["rr"] - ns["per_query"]["C"].set_index("query")["rr"]
    assert answer in gain.index, "that is not a query id of the table"
    best = min(gain[gain == gain.max()].index)
    if answer != best:
        assert gain[answer] < gain.max(), "a tie at the top: take the smaller query id"
        raise AssertionError("not the largest gain: subtract C's rr from E's for every query")


@check("3.3", points=2)
def queries_for_half_width(ns):
    """answer_n is the smallest even n whose Wilson interval at n/2 hits has half-width <= HALF_3_3
    (half marks within 2)."""
    answer = integer(given(ns, "answer_n"), "answer_n")
    target = float(ns["HALF_3_3"])

    def half(n: int) -> float:
        low, high = wilson(n // 2, n)
        return (high - low) / 2

    expected = next(n for n in range(2, 100_000, 2) if half(n) <= target)
    if answer == expected:
        return None
    assert answer % 2 == 0, "use an even n"
    if abs(answer - expected) <= 2:
        return Partly(0.5, "close, but not the smallest even n: check where your search starts and stops")
    raise AssertionError("too few: the interval is still too wide" if answer < expected
                         else "narrow enough, but not the smallest: try fewer")


def _sign_cases() -> list[tuple[int, int]]:
    rng = random.Random(314)
    cases = [(0, 0), (1, 0), (0, 9), (7, 7), (13, 2), (2, 13), (30, 18), (55, 40)]
    cases += [(rng.randint(0, 40), rng.randint(0, 40)) for _ in range(12)]
    return cases


@check("3.4", points=3, by_hand=True)
def sign_p_function(ns):
    """sign_p(wins, losses) agrees with the exact two-sided sign test on 20 unseen pairs (partial marks by share)."""
    fn = given(ns, "sign_p")
    assert callable(fn), "define a function sign_p(wins, losses)"
    cases = _sign_cases()
    with reference("the exact sign test"):
        expected = [sign_test(wins, losses) for wins, losses in cases]
    wrong = sum(not _agrees(fn, case, want) for case, want in zip(cases, expected, strict=True))
    if not wrong:
        return None
    assert wrong < len(cases), "wrong on every unseen pair: check the tail sum and the factor 2"
    return Partly(1 - wrong / len(cases), f"wrong on {wrong} of {len(cases)} unseen pairs (think of no discordant "
                  "pairs, of wins == losses, and of the cap at 1)")


def _agrees(fn, case: tuple[int, int], expected: float) -> bool:
    try:
        return math.isclose(number(fn(*case), "sign_p"), expected, abs_tol=1e-9)
    except Exception:  # noqa: BLE001 - a crash on one input costs that input only
        return False


@check("3.5", points=1)
def phrasing_prediction(ns):
    """Completion: prediction_3_5 has shares both/one/none in [0, 1] summing to 1, and a reason of 4+ words."""
    pred = given(ns, "prediction_3_5")
    assert isinstance(pred, dict), "prediction_3_5 must be a dict"
    shares = [number(pred.get(k), f"prediction_3_5[{k!r}]") for k in ("both", "one", "none")]
    assert all(0 <= v <= 1 for v in shares), "each share must lie in [0, 1]"
    assert abs(sum(shares) - 1) <= 0.01, "the three shares must add up to 1"
    assert len(str(pred.get("why", "")).split()) >= 4, "give a reason in a sentence ('why')"
