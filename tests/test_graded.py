"""Graded measures (`ragcourse.graded`): values by hand, invariants by hypothesis, and equality with ir_measures
(trec_eval's conventions, through pytrec_eval) on random runs and graded judgements."""

from __future__ import annotations

import math

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse.graded import (
    average_precision,
    bpref,
    condensed,
    dcg,
    judged_at,
    ndcg_at,
    recall_at,
    reciprocal_rank,
)

PASSAGES = [f"p{i}" for i in range(12)]


@st.composite
def judged_runs(draw, min_relevant=0):
    """(ranking, grades): a ranking of distinct passages and grades 0-2 of some passages (judged or not retrieved)."""
    ranking = draw(st.lists(st.sampled_from(PASSAGES), unique=True, max_size=10))
    judged = draw(st.lists(st.sampled_from(PASSAGES), unique=True, min_size=1))
    grades = {p: draw(st.integers(0, 2)) for p in judged}
    if sum(g >= 1 for g in grades.values()) < min_relevant:
        grades[judged[0]] = 2
    return ranking, grades


MEASURES = {"ndcg": lambda r, g: ndcg_at(r, g, 5), "ap": average_precision, "recall": lambda r, g: recall_at(r, g, 5),
            "rr": reciprocal_rank, "bpref": bpref}


def test_one_question_worked_by_hand():
    ranking, grades = ["z", "a", "b", "c"], {"a": 2, "b": 0, "c": 1}
    assert ndcg_at(ranking, grades, 3) == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert ndcg_at(ranking, grades, 4) == pytest.approx((2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3)))
    assert average_precision(ranking, grades) == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert recall_at(ranking, grades, 1) == 0.0 and recall_at(ranking, grades, 4) == 1.0
    assert reciprocal_rank(ranking, grades) == 0.5
    assert bpref(ranking, grades) == pytest.approx((1 + (1 - 1 / 1)) / 2)
    assert judged_at(ranking, grades, 4) == 0.75
    assert ndcg_at(condensed(ranking, grades), grades, 3) == pytest.approx((2 + 1 / math.log2(4)) /
                                                                             (2 + 1 / math.log2(3)))


def test_nothing_relevant_judged_scores_zero_and_bad_input_is_refused():
    assert [f(["a"], {"a": 0}) for f in MEASURES.values()] == [0.0] * 5
    with pytest.raises(ValueError, match="more than once"):
        ndcg_at(["a", "a"], {"a": 1}, 2)
    with pytest.raises(ValueError, match="integers >= 0"):
        average_precision(["a"], {"a": -1})
    with pytest.raises(ValueError, match="k"):
        ndcg_at(["a"], {"a": 1}, 0)


@settings(max_examples=200, deadline=None)
@given(judged_runs())
def test_every_measure_lies_between_0_and_1(run):
    for name, measure in MEASURES.items():
        assert 0.0 <= measure(*run) <= 1.0 + 1e-12, name


@settings(max_examples=200, deadline=None)
@given(judged_runs(min_relevant=1))
def test_the_ideal_ranking_scores_1(run):
    _, grades = run
    ideal = sorted(grades, key=lambda p: (-grades[p], p))
    relevant = sum(g >= 1 for g in grades.values())
    for name, measure in MEASURES.items():  # recall@5 cannot reach 1 with more than 5 relevant passages
        assert measure(ideal, grades) == pytest.approx(min(relevant, 5) / relevant if name == "recall" else 1.0), name


@settings(max_examples=200, deadline=None)
@given(judged_runs(), st.randoms(use_true_random=False))
def test_reordering_the_non_relevant_passages_among_themselves_changes_nothing(run, random):
    ranking, grades = run
    slots = [i for i, p in enumerate(ranking) if grades.get(p, 0) < 1]
    moved = [ranking[i] for i in slots]
    random.shuffle(moved)
    shuffled = list(ranking)
    for i, p in zip(slots, moved, strict=True):
        shuffled[i] = p
    for name, measure in MEASURES.items():
        if name != "bpref":  # bpref tells judged non-relevant from unjudged: only those two kinds may swap
            assert measure(shuffled, grades) == pytest.approx(measure(ranking, grades)), name


@settings(max_examples=200, deadline=None)
@given(judged_runs(), st.integers(0, 9))
def test_moving_a_better_passage_up_never_lowers_a_measure(run, at):
    ranking, grades = run
    if at + 1 >= len(ranking) or grades.get(ranking[at + 1], 0) <= grades.get(ranking[at], 0):
        return
    swapped = list(ranking)
    swapped[at], swapped[at + 1] = swapped[at + 1], swapped[at]
    for name, measure in MEASURES.items():
        assert measure(swapped, grades) >= measure(ranking, grades) - 1e-12, name


@settings(max_examples=100, deadline=None)
@given(judged_runs(), st.lists(st.sampled_from([f"u{i}" for i in range(5)]), unique=True))
def test_unjudged_passages_move_neither_bpref_nor_condensed_lists(run, unjudged):
    ranking, grades = run
    padded = [p for pair in zip(unjudged, ranking, strict=False) for p in pair] + ranking[len(unjudged):]
    padded += unjudged[len(ranking):]
    assert bpref(padded, grades) == pytest.approx(bpref(ranking, grades))
    before = ndcg_at(condensed(ranking, grades), grades, 5)
    assert ndcg_at(condensed(padded, grades), grades, 5) == pytest.approx(before)


def test_dcg_is_the_formula():
    assert dcg([3, 2, 3, 0, 1, 2]) == pytest.approx(3 + 2 / math.log2(3) + 3 / 2 + 0 + 1 / math.log2(6)
                                                    + 2 / math.log2(7))


# ----- equality with ir_measures (trec_eval through pytrec_eval)

K = 5
PEERS = {ir_measures.nDCG @ K: lambda r, g: ndcg_at(r, g, K), ir_measures.AP: average_precision,
         ir_measures.R @ K: lambda r, g: recall_at(r, g, K), ir_measures.RR: reciprocal_rank,
         ir_measures.Bpref: bpref, ir_measures.nDCG(judged_only=True) @ K:
             lambda r, g: ndcg_at(condensed(r, g), g, K),
         ir_measures.AP(judged_only=True): lambda r, g: average_precision(condensed(r, g), g),
         ir_measures.Judged @ K: lambda r, g: judged_at(r, g, K)}


@settings(max_examples=60, deadline=None)
@given(st.lists(judged_runs(), min_size=1, max_size=6))
def test_every_measure_equals_ir_measures_on_random_runs_and_graded_judgements(collection):
    qrels, run, mine = [], [], {}
    for i, (ranking, grades) in enumerate(collection):
        qid = f"q{i}"
        qrels += [ir_measures.Qrel(qid, p, g) for p, g in grades.items()]
        run += [ir_measures.ScoredDoc(qid, p, float(len(ranking) - r)) for r, p in enumerate(ranking)]
        mine |= {(qid, str(m)): f(ranking, grades) for m, f in PEERS.items()}
    theirs = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(list(PEERS), qrels, run)}
    for key, value in theirs.items():
        assert value == pytest.approx(mine[key], abs=1e-9), key
    # a query that retrieved nothing is absent from a TREC run, so trec_eval does not score it: we score it 0
    scored = {q for q, _ in theirs}
    assert all(v == 0.0 for (q, m), v in mine.items() if q not in scored and "Judged" not in m)
