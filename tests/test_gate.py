"""Tests for ragcourse.gate: the cut, k, rank order, the boundary, and the sweep's counts."""

from __future__ import annotations

import math

import pytest

from ragcourse.chunking import Chunk
from ragcourse.citations import GroundedAnswer, answer
from ragcourse.dense import Hit
from ragcourse.gate import SWEEP_COLUMNS, Answered, NoAnswer, gate, sweep


def make_hit(distance: float, rank: int, content: str = "filler words") -> Hit:
    """A Hit on a one-chunk document whose content is `content`."""
    chunk = Chunk(f"doc{rank}", f"Doc {rank}", "S", 0, len(content), content,
                  "[Doc > S]\n" + content, "E", 0)
    return Hit(chunk, distance, rank)


def test_no_hit_under_the_cut_is_no_answer_with_nearest_distance():
    hits = [make_hit(0.70, 1), make_hit(0.80, 2)]
    result = gate(hits, cut=0.675, query="how do i renew my spanish passport")
    assert result == NoAnswer("how do i renew my spanish passport", 0.675, 0.70)
    assert str(result) == ('NO ANSWER: nothing under cosine distance 0.675 for '
                           '"how do i renew my spanish passport"')


def test_empty_hit_list_is_no_answer_without_a_nearest_distance():
    assert gate([], cut=0.5) == NoAnswer("", 0.5, None)


def test_keeps_at_most_k_hits_in_rank_order():
    hits = [make_hit(0.1 * r, r) for r in range(1, 7)]  # 0.1 .. 0.6, all under 0.65
    result = gate(list(reversed(hits)), cut=0.65, k=4)  # given out of order on purpose
    assert isinstance(result, Answered)
    assert [h.rank for h in result.hits] == [1, 2, 3, 4]


def test_rank_order_is_kept_even_when_distances_are_not_monotonic():
    # A reranked list: rank 1 is farther than rank 2; rank 3 fails the cut and is skipped.
    hits = [make_hit(0.55, 1), make_hit(0.30, 2), make_hit(0.90, 3), make_hit(0.50, 4)]
    result = gate(hits, cut=0.6, k=4)
    assert [h.rank for h in result.hits] == [1, 2, 4]


def test_distance_equal_to_cut_is_refused():
    assert isinstance(gate([make_hit(0.5, 1)], cut=0.5), NoAnswer)
    assert [h.rank for h in gate([make_hit(0.5, 1), make_hit(0.4999, 2)], cut=0.5).hits] == [2]


def test_infinite_cut_is_no_threshold():
    assert len(gate([make_hit(1.9, 1)], cut=math.inf).hits) == 1


@pytest.mark.parametrize(("cut", "k"), [(math.nan, 4), ("0.5", 4), (0.5, 0), (0.5, 2.0)])
def test_bad_cut_or_k_raises(cut, k):
    with pytest.raises(ValueError, match="cut|k must"):
        gate([make_hit(0.1, 1)], cut=cut, k=k)


def test_sweep_counts_on_a_hand_made_example():
    needle = "the needle sentence"
    in_domain = [
        # q1: needle at rank 1, d=0.30
        ([make_hit(0.30, 1, "has the needle sentence here"), make_hit(0.50, 2)], needle),
        # q2: needle only at rank 2, d=0.60; rank 1 d=0.40 has no needle
        ([make_hit(0.40, 1), make_hit(0.60, 2, "the  needle\nsentence")], needle),
        # q3: nearest is 0.70 and has no needle
        ([make_hit(0.70, 1), make_hit(0.75, 2)], needle),
    ]
    out_of_domain = [[make_hit(0.45, 1)], [make_hit(0.65, 1)], [make_hit(0.90, 1)]]
    table = sweep(in_domain, out_of_domain, cuts=[0.3, 0.5, 0.65, 0.8, math.inf])
    assert list(table.columns) == list(SWEEP_COLUMNS)
    assert table.columns[-1] == "bluffed"
    # Worked by hand, per cut (strictly below):
    # 0.3:  nothing passes anywhere                     -> 0 with, 0 without, 3 refused; 3 ood ok
    # 0.5:  q1 keeps 0.30 (needle); q2 keeps 0.40 (no)  -> 1, 1, 1; ood 0.45 passes -> 2 ok, 1 bluff
    # 0.65: q2 keeps 0.40, 0.60 (needle); q3 refused    -> 2, 0, 1; 0.65 == cut refused -> 2, 1
    # 0.8:  q3 keeps 0.70, 0.75 (no needle)             -> 2, 1, 0; 0.90 refused -> 1, 2
    # inf:  same as 0.8 for in-domain; ood all answered -> 2, 1, 0; 0, 3
    expected = [
        [0, 0, 3, 3, 0],
        [1, 1, 1, 2, 1],
        [2, 0, 1, 2, 1],
        [2, 1, 0, 1, 2],
        [2, 1, 0, 0, 3],
    ]
    assert table.drop(columns="cut").values.tolist() == expected
    assert table["cut"].tolist() == [0.3, 0.5, 0.65, 0.8, math.inf]


def test_sweep_respects_k_when_the_needle_is_beyond_it():
    hits = [make_hit(0.1, 1), make_hit(0.2, 2), make_hit(0.3, 3, "the needle")]
    table = sweep([(hits, "the needle")], [], cuts=[0.5], k=2)
    assert table.loc[0, "answered_without_needle"] == 1
    assert table.loc[0, "answered_with_needle"] == 0


def test_sweep_needs_cuts():
    with pytest.raises(ValueError, match="cuts"):
        sweep([], [], cuts=[])


def test_generate_is_never_called_after_no_answer():
    def must_not_run(prompt: str) -> str:
        raise AssertionError("the generator was called although the gate refused")

    result = answer("what is the offside rule", [make_hit(0.8, 1)], must_not_run, cut=0.675)
    assert isinstance(result, NoAnswer)
    assert result.nearest_distance == 0.8


def test_generate_gets_only_the_kept_hits():
    prompts: list[str] = []

    def fake_generate(prompt: str) -> str:
        prompts.append(prompt)
        return "The kept source says so [1]."

    hits = [make_hit(0.2, 1, "kept content"), make_hit(0.9, 2, "dropped content")]
    result = answer("q", hits, fake_generate, cut=0.5)
    assert isinstance(result, GroundedAnswer)
    assert len(prompts) == 1
    assert "kept content" in prompts[0] and "dropped content" not in prompts[0]
    assert [c.n for c in result.citations] == [1]
    assert result.check.ok
