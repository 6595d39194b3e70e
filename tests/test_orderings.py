"""Kendall's tau between two sets' method orderings, and its bootstrap interval (chapter 12)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse.orderings import order_tau, tau_interval

METHODS = ("bm25", "dense", "hybrid", "rerank")
scores = st.lists(st.floats(0, 1, allow_nan=False), min_size=4, max_size=4, unique_by=lambda x: round(x, 3))


def test_four_methods_by_hand():
    # orders a: bm25 < dense < hybrid < rerank; b swaps hybrid and rerank: 5 concordant, 1 discordant pair
    a = dict(zip(METHODS, (0.1, 0.2, 0.3, 0.4), strict=True))
    b = dict(zip(METHODS, (0.1, 0.2, 0.4, 0.3), strict=True))
    assert order_tau(a, b) == round((5 - 1) / 6, 3)


def test_a_difference_below_the_published_precision_is_a_tie():
    a = {"x": 0.5001, "y": 0.5004, "z": 0.9}
    b = {"x": 0.6, "y": 0.1, "z": 0.9}
    # x and y round to 0.500 in a: a tie, which tau-b neither counts for nor against
    assert order_tau(a, b) == order_tau({"x": 0.5, "y": 0.5, "z": 0.9}, b)


@settings(max_examples=50, deadline=None)
@given(scores, scores)
def test_tau_is_symmetric_and_bounded(x, y):
    a, b = dict(zip(METHODS, x, strict=True)), dict(zip(METHODS, y, strict=True))
    assert order_tau(a, b) == order_tau(b, a)
    assert -1 <= order_tau(a, b) <= 1
    assert order_tau(a, a) == 1.0
    assert order_tau(a, {m: -v for m, v in a.items()}) == -1.0


def test_the_interval_holds_the_point_and_a_clear_order_is_certain():
    a = {"m1": [0.0] * 30, "m2": [0.5] * 30, "m3": [1.0] * 30}
    found = tau_interval(a, a, resamples=100)
    assert (found.tau, found.low, found.high, found.undefined) == (1.0, 1.0, 1.0, 0)


def test_close_methods_give_a_wide_interval():
    a = {"m1": [0, 1] * 10, "m2": [1, 1, 0, 1, 0] * 4, "m3": [0, 1, 0, 0, 1] * 4}  # means 0.5, 0.6, 0.4
    found = tau_interval(a, a, resamples=300, seed=1)
    assert found.tau == 1.0 and found.low < 0 and found.high == 1.0


def test_sets_with_other_methods_are_refused():
    with pytest.raises(ValueError, match="same"):
        tau_interval({"a": [1, 0]}, {"b": [1, 0]})
    with pytest.raises(ValueError, match="each question"):
        tau_interval({"a": [1, 0], "b": [1]}, {"a": [1, 0], "b": [0, 1]})
