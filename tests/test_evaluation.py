"""Evaluation: needles, R@k, MRR, Wilson intervals, paired tests; checked by hand and by scipy."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from ragcourse.evaluation import (
    Interval,
    Paired,
    answers_destroyed,
    compare,
    contains_needle,
    evaluate,
    first_hit_rank,
    from_ranks,
    holm,
    mrr,
    normalize,
    paired,
    randomization_test,
    recall_at_k,
    sign_test,
    summarize,
    wilson,
)


@dataclass(frozen=True)
class FakeChunk:
    content: str


@dataclass(frozen=True)
class FakeQuery:
    id: str
    needle: str
    phrasing: str


# --- needles ---


def test_normalize_and_contains_needle():
    assert normalize("  a\n\tb   c ") == "a b c"
    assert contains_needle("The parser\n   reads   the file.", "parser reads the\nfile")
    assert not contains_needle("The parser reads", "parser reads the file")
    with pytest.raises(ValueError, match="needle"):
        contains_needle("anything", " \n ")


def test_first_hit_rank_on_strings_and_chunks():
    ranked = ["no", "still no", "the needle\nis here", "the needle is here too"]
    assert first_hit_rank(ranked, "needle is here") == 3
    assert first_hit_rank([FakeChunk(t) for t in ranked], "needle is here") == 3
    assert first_hit_rank(ranked, "absent") is None
    assert first_hit_rank([], "absent") is None


def test_answers_destroyed():
    chunks = [FakeChunk("Alpha beta gamma. Delta"), FakeChunk("epsilon. Zeta\neta theta.")]
    needles = ["beta gamma.", "Delta epsilon.", "Zeta eta", "iota"]
    assert answers_destroyed(chunks, needles) == ["Delta epsilon.", "iota"]
    assert answers_destroyed(["Delta epsilon."], needles) == ["beta gamma.", "Zeta eta", "iota"]


# --- R@k and MRR ---


def test_recall_at_k():
    ranks = [1, 3, None, 9]
    assert recall_at_k(ranks, 1) == 1 / 4
    assert recall_at_k(ranks, 4) == 2 / 4
    assert recall_at_k(ranks, 9) == 3 / 4
    with pytest.raises(ValueError, match="k="):
        recall_at_k(ranks, 0)
    with pytest.raises(ValueError, match="empty"):
        recall_at_k([], 1)


def test_mrr_full_ranking_and_cutoff():
    ranks = [1, 2, None, 4]
    assert mrr(ranks) == pytest.approx((1 / 1 + 1 / 2 + 0 + 1 / 4) / 4)
    assert mrr(ranks, cutoff=2) == pytest.approx((1 / 1 + 1 / 2) / 4)
    assert mrr([None, None]) == 0.0
    with pytest.raises(ValueError, match="cutoff"):
        mrr(ranks, cutoff=0)


# --- Wilson ---


def test_wilson_reproduces_the_chapter():
    low, high = wilson(38, 64)
    assert (round(low, 3), round(high, 3)) == (0.471, 0.705)
    low, high = wilson(53, 64)
    assert (round(low, 3), round(high, 3)) == (0.718, 0.901)
    low, high = wilson(32, 64)
    assert (high - low) / 2 == pytest.approx(0.12, abs=0.005)
    assert 0.5 - low == pytest.approx(high - 0.5)  # symmetric at p = 0.5


@pytest.mark.parametrize(
    ("k", "n"), [(0, 10), (1, 10), (38, 64), (53, 64), (64, 64), (7, 1000), (1, 1)]
)
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_scipy(k, n, confidence):
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    got = wilson(k, n, confidence)
    assert isinstance(got, Interval)
    assert got.low == pytest.approx(ci.low, abs=1e-12)
    assert got.high == pytest.approx(ci.high, abs=1e-12)


@pytest.mark.parametrize(
    ("k", "n", "conf"), [(5, 0, 0.95), (-1, 5, 0.95), (6, 5, 0.95), (1, 5, 1.0)]
)
def test_wilson_bad_input(k, n, conf):
    with pytest.raises(ValueError):
        wilson(k, n, conf)


# --- paired tests ---


@pytest.mark.parametrize(
    ("wins", "losses", "printed", "digits"),
    [
        (18, 3, 0.0015, 4),
        (12, 2, 0.0129, 4),
        (8, 6, 0.79, 2),
        (9, 7, 0.80, 2),
        (10, 3, 0.09, 2),
        (10, 6, 0.45, 2),
    ],
)
def test_sign_test_reproduces_the_chapter(wins, losses, printed, digits):
    assert round(sign_test(wins, losses), digits) == printed


@pytest.mark.parametrize(("wins", "losses"), [(0, 1), (1, 0), (5, 5), (0, 12), (30, 17), (18, 3)])
def test_sign_test_matches_scipy(wins, losses):
    want = binomtest(wins, wins + losses, 0.5, alternative="two-sided").pvalue
    assert sign_test(wins, losses) == pytest.approx(want, rel=1e-12)


def test_sign_test_by_hand():
    # +2/-0: P(all 2 discordant pairs go one way, either way) = 2 * (1/2)^2
    assert sign_test(2, 0) == 2 * 0.5**2
    assert sign_test(0, 0) == 1.0
    assert sign_test(3, 3) == 1.0
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def exact_sign_flip_p(a, b):
    """Every one of the 2^n sign patterns, one at a time: share with |sum| >= observed."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    observed = abs(sum(d))
    patterns = list(itertools.product([1, -1], repeat=len(d)))
    hits = sum(
        abs(sum(s * x for s, x in zip(p, d, strict=True))) >= observed - 1e-12 for p in patterns
    )
    return hits / len(patterns)


def test_randomization_identical_runs_give_one():
    a = [0.5, 1.0, 0.0, 0.25] * 10
    assert randomization_test(a, a) == 1.0


def test_randomization_large_consistent_shift_is_small():
    rng = np.random.default_rng(1)
    b = rng.random(64)
    p = randomization_test(b + 0.3, b, n_resamples=5000)
    assert p == 1 / 5001  # no random flip reaches an all-positive sum; only the observed one counts


def test_randomization_exact_on_tiny_case():
    a = [1.0, 0.5, 0.0, 1.0, 0.2, 0.0]
    b = [0.0, 0.5, 0.5, 0.0, 0.1, 0.0]
    want = exact_sign_flip_p(a, b)  # 2^6 = 64 <= 10000: the function enumerates too
    assert randomization_test(a, b) == pytest.approx(want, abs=1e-12)
    assert 0 < want < 1


def test_randomization_monte_carlo_close_to_exact_and_deterministic():
    rng = np.random.default_rng(7)
    a = rng.random(16).round(2)
    b = (a + rng.normal(0.08, 0.3, 16)).round(2)
    want = exact_sign_flip_p(a, b)  # 65,536 patterns; the test uses 10,000 random ones
    got = randomization_test(a, b, n_resamples=10_000, seed=0)
    assert got == pytest.approx(want, abs=0.02)  # about 4 standard errors
    assert randomization_test(a, b, seed=0) == got
    assert randomization_test(a, b, seed=1) != got


def test_randomization_bad_input():
    with pytest.raises(ValueError):
        randomization_test([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        randomization_test([], [])
    with pytest.raises(ValueError, match="n_resamples"):
        randomization_test([1.0], [0.0], n_resamples=0)


def test_paired_counts_discordant_pairs():
    a = [True, True, False, True, False, True]
    b = [False, True, True, False, False, False]
    assert paired(a, b) == Paired(3, 1, sign_test(3, 1))
    assert paired(b, a) == Paired(1, 3, sign_test(1, 3))
    with pytest.raises(ValueError):
        paired([True], [True, False])


# --- tables ---

QUERIES = [
    FakeQuery("q1-doc", "alpha beta", "doc"),
    FakeQuery("q1-ticket", "alpha beta", "ticket"),
    FakeQuery("q2-doc", "gamma delta", "doc"),
]
RANKINGS_A = {
    "q1-doc": ["alpha\nbeta", "x", "y"],  # rank 1
    "q1-ticket": ["x", "y", "z", "w", "alpha beta"],  # rank 5
    "q2-doc": ["x", "y"],  # never
}
RANKINGS_B = {
    "q1-doc": [FakeChunk("x"), FakeChunk("alpha beta")],  # rank 2
    "q1-ticket": [FakeChunk("alpha beta")],  # rank 1
    "q2-doc": [FakeChunk("gamma delta")],  # rank 1
}


def test_evaluate_rows():
    table = evaluate(RANKINGS_A, QUERIES, ks=(1, 4, 8))
    assert list(table.columns) == ["query", "phrasing", "rank", "hit@1", "hit@4", "hit@8", "rr"]
    assert table["query"].tolist() == ["q1-doc", "q1-ticket", "q2-doc"]
    assert table["phrasing"].tolist() == ["doc", "ticket", "doc"]
    assert table["rank"].tolist()[:2] == [1, 5] and pd.isna(table["rank"].iloc[2])
    assert table["hit@1"].tolist() == [True, False, False]
    assert table["hit@4"].tolist() == [True, False, False]
    assert table["hit@8"].tolist() == [True, True, False]
    assert table["rr"].tolist() == [1.0, 1 / 5, 0.0]


def test_evaluate_bad_input():
    with pytest.raises(ValueError, match="q2-doc"):
        evaluate({"q1-doc": [], "q1-ticket": []}, QUERIES)
    with pytest.raises(ValueError, match="ks"):
        evaluate(RANKINGS_A, QUERIES, ks=(0,))


def test_summarize():
    table = summarize(evaluate(RANKINGS_A, QUERIES, ks=(1, 8)), "A")
    assert list(table.columns) == ["label", "metric", "value", "hits", "n", "low", "high"]
    assert table["metric"].tolist() == ["R@1", "R@8", "MRR"]
    assert table["label"].tolist() == ["A", "A", "A"]
    assert table["value"].tolist() == pytest.approx([1 / 3, 2 / 3, (1 + 1 / 5 + 0) / 3])
    assert table["hits"].tolist()[:2] == [1, 2]
    r8 = table.iloc[1]
    assert (r8["low"], r8["high"]) == pytest.approx(tuple(wilson(2, 3)))
    assert math.isnan(table.iloc[2]["low"])


def test_compare_matches_queries_by_id():
    a = evaluate(RANKINGS_A, QUERIES, ks=(1, 4))
    b = evaluate(RANKINGS_B, list(reversed(QUERIES)), ks=(1, 4))  # row order must not matter
    assert compare(a, b, "hit@1") == Paired(1, 2, sign_test(1, 2))  # A wins q1-doc, loses two
    assert compare(b, a, "hit@4") == Paired(2, 0, sign_test(2, 0))
    assert compare(a, b, "rr") == Paired(1, 2, sign_test(1, 2))  # 1 > 1/2, 1/5 < 1, 0 < 1
    with pytest.raises(ValueError, match="metric"):
        compare(a, b, "hit@20")
    with pytest.raises(ValueError, match="different queries"):
        compare(a, b.iloc[:2], "hit@1")


def test_holm_by_hand():
    # sorted: 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04, raised to 0.06 to stay monotone)
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.2]) == [0.2]
    assert holm([0.5, 0.6]) == [1.0, 1.0]


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_properties(ps):
    adjusted = holm(ps)
    assert all(a >= p - 1e-12 and a <= 1 for a, p in zip(adjusted, ps, strict=True))
    assert min(adjusted) == pytest.approx(min(1.0, len(ps) * min(ps)))  # Bonferroni for the smallest
    ranked = sorted(zip(ps, adjusted, strict=True))
    assert all(x[1] <= y[1] + 1e-12 for x, y in zip(ranked, ranked[1:], strict=False))  # order kept


@pytest.mark.parametrize("bad", [[], [1.5], [-0.1], [float("nan")]])
def test_holm_rejects_bad_input(bad):
    with pytest.raises(ValueError, match="p_values"):
        holm(bad)


def test_from_ranks_matches_evaluate_and_rejects_bad_ranks():
    Q = type("Q", (), {})
    qs = []
    for qid, phrasing, needle in (("a/doc", "doc", "alpha"), ("b/ticket", "ticket", "beta")):
        q = Q()
        q.id, q.phrasing, q.needle = qid, phrasing, needle
        qs.append(q)
    rankings = {"a/doc": ["x", "the alpha here"], "b/ticket": ["nothing", "at all"]}
    table = from_ranks({"a/doc": 2, "b/ticket": None}, qs, ks=(1, 2))
    pd.testing.assert_frame_equal(table, evaluate(rankings, qs, ks=(1, 2)))
    assert table["rr"].tolist() == [0.5, 0.0] and table["hit@2"].tolist() == [True, False]
    for bad in ({"a/doc": 0, "b/ticket": None}, {"a/doc": 1.5, "b/ticket": None}, {"a/doc": 1}):
        with pytest.raises(ValueError, match="a/doc|b/ticket"):
            from_ranks(bad, qs)


def test_with_interval_prints_the_value_and_its_interval():
    from ragcourse.evaluation import with_interval

    assert with_interval(0.5, 0.38102, 0.61898) == "0.500 [0.381, 0.619]"
    assert with_interval(0.51489, float("nan"), float("nan")) == "0.515"
    assert with_interval(0.5) == "0.500"


def test_interval_table_is_one_row_per_label_in_first_seen_order():
    from ragcourse.evaluation import interval_table, summarize

    per_query = pd.DataFrame({"query": ["a", "b"], "hit@1": [True, False], "rr": [1.0, 0.25]})
    table = interval_table(pd.concat([summarize(per_query, "Z"), summarize(per_query, "A")]))
    assert list(table.index) == ["Z", "A"] and list(table.columns) == ["R@1", "MRR"]
    low, high = wilson(1, 2)
    assert table.loc["Z", "R@1"] == f"0.500 [{low:.3f}, {high:.3f}]"
    assert table.loc["A", "MRR"] == "0.625"  # (1 + 1/4) / 2
