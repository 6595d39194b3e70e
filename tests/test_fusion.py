"""Reciprocal rank fusion on hand-made lists; expected scores written as the formula."""

from __future__ import annotations

import pytest

from ragcourse.fusion import Fused, fuse, rrf, weighted_rrf


def test_scores_are_the_formula():
    fused = {f.id: f for f in fuse([["a", "b", "c"], ["c", "d", "a"]], c=60)}
    assert fused["a"].score == round(1 / (60 + 1) + 1 / (60 + 3), 6)
    assert fused["c"].score == round(1 / (60 + 3) + 1 / (60 + 1), 6)
    assert fused["b"].score == round(1 / (60 + 2), 6)
    assert fused["d"].score == round(1 / (60 + 2), 6)
    assert (fused["a"].best_rank, fused["b"].best_rank, fused["d"].best_rank) == (1, 2, 2)


def test_docstring_example():
    assert rrf([[1, 2, 3], [3, 1]]) == [1, 3, 2]  # 1/61+1/62 > 1/63+1/61 > 1/62
    assert fuse([["a", "b"], ["b", "c"]])[0] == Fused("b", round(1 / (60 + 2) + 1 / (60 + 1), 6), 1)


def test_scores_closer_than_the_precision_tie_and_fall_back_to_best_rank():
    # weights 1 and 1 + 1e-9: "b" (first in list 1) would win by 1.6e-11 unrounded;
    # at 6 places both score 1/61 + 1/62, so the tie goes to first appearance ("a", in list 0).
    fused = fuse([["a", "b"], ["b", "a"]], c=60, weights=[1.0, 1.0 + 1e-9])
    assert [f.id for f in fused] == ["a", "b"]
    assert fused[0].score == fused[1].score == round(1 / 61 + 1 / 62, 6)


def test_an_id_in_both_lists_beats_a_single_top_hit():
    # 1/(60+2) + 1/(60+2) > 1/(60+1): agreement between retrievers wins
    assert rrf([["x", "y"], ["z", "y"]]) == ["y", "x", "z"]


def test_equal_scores_and_equal_best_rank_keep_first_appearance():
    # "a" and "b" both score 1/(60+1) + 1/(60+2) and both reached rank 1
    assert rrf([["a", "b"], ["b", "a"]]) == ["a", "b"]
    assert rrf([["b", "a"], ["a", "b"]]) == ["b", "a"]
    assert rrf([["x", "y"], ["z"]]) == ["x", "z", "y"]  # x and z: 1/(60+1) each


def test_equal_scores_broken_by_best_rank():
    # k = 1: "d" is second twice, 1/(1+2) + 1/(1+2) = 2/3; "e" is first once and fifth once,
    # 1/(1+5) + 1/(1+1) = 2/3. Same score; "e" reached rank 1, so it goes first, although
    # "d" appears first when reading the lists in order.
    lists = [["w", "d", "x", "y", "e"], ["e", "d"]]
    fused = {f.id: f for f in fuse(lists, c=1)}
    assert fused["d"].score == fused["e"].score == pytest.approx(1 / (1 + 2) + 1 / (1 + 2))
    assert (fused["e"].best_rank, fused["d"].best_rank) == (1, 2)
    assert rrf(lists, c=1) == ["e", "d", "w", "x", "y"]  # then w: 1/2, x: 1/4, y: 1/5


def test_k_changes_the_order():
    lists = [["a", "p", "q", "b"], ["r", "s", "t", "b"]]
    # k = 1 rewards the top: a = 1/(1+1) = 0.5 beats b = 1/(1+4) + 1/(1+4) = 0.4
    assert rrf(lists, c=1)[:3] == ["a", "r", "b"]
    # k = 60 rewards agreement: b = 1/(60+4) + 1/(60+4) beats a = 1/(60+1)
    assert rrf(lists, c=60)[:3] == ["b", "a", "r"]
    scores = {f.id: f.score for f in fuse(lists, c=60)}
    assert (scores["b"], scores["a"]) == (round(1 / (60 + 4) + 1 / (60 + 4), 6), round(1 / (60 + 1), 6))


def test_weighted_rrf():
    lists = [["a", "b"], ["b", "a"]]
    assert weighted_rrf(lists, [2, 1]) == ["a", "b"]  # a: 2/61 + 1/62 > b: 2/62 + 1/61
    assert weighted_rrf(lists, [1, 2]) == ["b", "a"]
    fused = {f.id: f.score for f in fuse(lists, c=60, weights=[2, 1])}
    assert fused["a"] == round(2 / (60 + 1) + 1 / (60 + 2), 6)
    assert fused["b"] == round(2 / (60 + 2) + 1 / (60 + 1), 6)
    # weight 0 removes a list's influence but its ids still appear, after the others
    assert weighted_rrf([["a"], ["z", "b"]], [1, 0]) == ["a", "z", "b"]
    assert weighted_rrf(lists, [1, 1]) == rrf(lists)


def test_empty_inputs():
    assert rrf([]) == []
    assert rrf([[], []]) == []
    assert rrf([[], [3]]) == [3]


@pytest.mark.parametrize("c", [0, -1, float("nan"), float("inf")])
def test_bad_c_raises(c):
    with pytest.raises(ValueError, match="c="):
        rrf([[1, 2]], c=c)


def test_bad_weights_and_duplicates_raise():
    with pytest.raises(ValueError, match="weights"):
        weighted_rrf([[1], [2]], [1.0])
    with pytest.raises(ValueError, match="weights"):
        weighted_rrf([[1], [2]], [1.0, -1.0])
    with pytest.raises(ValueError, match="list 1 repeats"):
        rrf([[1, 2], [3, 3]])
