"""Tests for ragcourse.gate: the cut, k, rank order, the boundary; the sweep is in test_evaluation."""

from __future__ import annotations

import math
import re

import pytest

from ragcourse.chunking import Chunk
from ragcourse.citations import GroundedAnswer, answer
from ragcourse.dense import Hit
from ragcourse.gate import Answered, NoAnswer, gate


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


@pytest.mark.parametrize(("cut", "k", "message"), [
    (math.nan, 4, "cut=nan: expected a number"), ("0.5", 4, "cut='0.5': expected a number"),
    (0.5, 0, "k=0: expected an integer >= 1"), (0.5, 2.0, "k=2.0: expected an integer >= 1"),
])
def test_bad_cut_or_k_raises_naming_the_value(cut, k, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        gate([make_hit(0.1, 1)], cut=cut, k=k)


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
