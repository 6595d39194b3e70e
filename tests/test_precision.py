"""The precision rules: scores rounded before ranking, published numbers rounded at the source."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from ragcourse.precision import DECIMALS, rounded, rounded_scores, stable_order


def test_rounded_scores_keep_six_places():
    assert rounded_scores([0.1234564, 0.1234566, -0.0000004]).tolist() == [0.123456, 0.123457, -0.0]
    assert DECIMALS == 6


def test_noise_below_the_precision_cannot_reorder():
    # 0.3 and 0.3 + 4e-7 are one score: position decides, on every machine
    assert stable_order([0.3 + 4e-7, 0.3, 0.1]).tolist() == [2, 0, 1]
    assert stable_order([0.3, 0.3 + 4e-7, 0.1]).tolist() == [2, 0, 1]
    assert stable_order([0.3 + 4e-7, 0.3, 0.5], descending=True).tolist() == [2, 0, 1]


@given(st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=40))
def test_order_is_sorted_by_rounded_value_then_position(values):
    order = stable_order(values).tolist()
    assert sorted(order) == list(range(len(values)))
    keys = [(round(values[i], DECIMALS), i) for i in order]
    assert keys == sorted(keys)


def test_rounded_walks_containers_and_keeps_other_types():
    value = {"mrr": np.float32(0.514888), "n": np.int64(64), "name": "E", "ok": True,
             "ci": [0.51820850, 0.74711597], "inf": math.inf}
    assert rounded(value) == {"mrr": 0.515, "n": 64, "name": "E", "ok": True,
                              "ci": [0.518, 0.747], "inf": math.inf}
    assert isinstance(rounded(value)["n"], int)
    assert rounded(-0.0001) == 0.0 and math.copysign(1, rounded(-0.0001)) == 1.0


def test_rounded_rounds_arrays_and_frames():
    assert rounded(np.array([0.12345, 2.0]), 2).tolist() == [0.12, 2.0]
    frame = pd.DataFrame({"d": [0.80636358, 0.32585144], "n": [1, 2]})
    assert rounded(frame, 4).to_dict("list") == {"d": [0.8064, 0.3259], "n": [1, 2]}
    tiny = rounded(pd.DataFrame({"d": [-1.1e-16, 1.1e-16]}))  # machine noise around an exact zero
    assert [math.copysign(1, x) for x in tiny["d"]] == [1.0, 1.0]
    assert [math.copysign(1, x) for x in rounded(pd.Series([-1e-9]))] == [1.0]


def test_dense_distances_are_rounded_before_they_rank():
    from ragcourse.dense import cosine_distances, order

    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.6000001, 0.7999999]], dtype=np.float32)
    distances = cosine_distances(vectors, np.array([0.6, 0.8], dtype=np.float32))
    assert distances.tolist() == [0.4, 0.0, 0.0]  # 1 - 0.99999999...: the same at 6 places
    assert order(distances).tolist() == [1, 2, 0]  # the tie goes to the earlier chunk


def test_bm25_ranks_by_rounded_score_then_position():
    from ragcourse.bm25 import BM25

    bm = BM25(["apple pie", "apple tart", "pear"])
    assert bm.scores("apple")[0] == bm.scores("apple")[1]
    assert bm.rank("apple") == [0, 1, 2]
