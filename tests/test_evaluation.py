"""Evaluation: needles, R@k, MRR, Wilson intervals, paired tests, verdicts, the gate's sweep; by hand and by scipy."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from scipy.stats import binomtest

from ragcourse.chunking import Chunk
from ragcourse.dense import Hit
from ragcourse.evaluation import (
    SWEEP_COLUMNS,
    Interval,
    Paired,
    answers_destroyed,
    compare,
    contains_needle,
    distances_to_needle,
    evaluate,
    first_hit_rank,
    from_ranks,
    holm,
    interval_table,
    randomization_test,
    share_cell,
    share_over_questions,
    share_table,
    sign_test,
    summarize,
    sweep,
    verdict,
    wilson,
    with_interval,
)
from ragcourse.words import collapse


@dataclass(frozen=True)
class FakeChunk:
    content: str


@dataclass(frozen=True)
class FakeQuery:
    id: str
    needle: str
    phrasing: str


# --- needles ---


def test_collapse_and_contains_needle():
    assert collapse("  a\n\tb   c ") == "a b c"
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
    with pytest.raises(ValueError, match=r"ks\[1\]=0: expected an integer >= 1"):
        evaluate(RANKINGS_A, QUERIES, ks=(1, 0))
    with pytest.raises(ValueError, match=r"ks=\(\): expected a non-empty sequence"):
        evaluate(RANKINGS_A, QUERIES, ks=())


def test_a_repeated_query_id_is_refused_not_counted_twice():
    """Rankings are keyed by query id, so a repeated id would score one ranking twice (against two needles)."""
    repeated = [*QUERIES, FakeQuery("q1-doc", "gamma delta", "doc")]
    with pytest.raises(ValueError, match=r"queries: query ids \['q1-doc'\] occur more than once"):
        evaluate(RANKINGS_A, repeated)
    with pytest.raises(ValueError, match=r"query ids \['q1-doc'\] occur more than once"):
        from_ranks({"q1-doc": 1, "q1-ticket": None, "q2-doc": 2}, repeated)
    a = evaluate(RANKINGS_A, QUERIES, ks=(1,))
    doubled = pd.concat([a, a.iloc[:1]], ignore_index=True)
    with pytest.raises(ValueError, match=r"per_query_b: query ids \['q1-doc'\]"):
        compare(a, doubled, "hit@1")


def test_summarize():
    table = summarize(evaluate(RANKINGS_A, QUERIES, ks=(1, 8)), "A")
    assert list(table.columns) == ["label", "metric", "value", "hits", "n", "low", "high"]
    assert table["metric"].tolist() == ["R@1", "R@8", "MRR"]
    assert table["label"].tolist() == ["A", "A", "A"]
    assert table["value"].tolist() == pytest.approx([1 / 3, 2 / 3, (1 + 1 / 5 + 0) / 3])
    assert table["hits"].tolist()[:2] == [1, 2]
    r8 = table.iloc[1]
    peer = binomtest(2, 3).proportion_ci(confidence_level=0.95, method="wilson")
    assert (r8["low"], r8["high"]) == pytest.approx((peer.low, peer.high), abs=1e-12)
    assert math.isnan(table.iloc[2]["low"])


def test_compare_matches_queries_by_id():
    a = evaluate(RANKINGS_A, QUERIES, ks=(1, 4))
    b = evaluate(RANKINGS_B, list(reversed(QUERIES)), ks=(1, 4))  # row order must not matter
    # sign test by hand: +1/-2 -> 2 * (C(3,0) + C(3,1)) / 2^3 = 1 (capped at 1); +2/-0 -> 2 * 1 / 2^2
    assert compare(a, b, "hit@1") == Paired(1, 2, 1.0)  # A wins q1-doc, loses two
    assert compare(b, a, "hit@4") == Paired(2, 0, 2 * 0.5**2)
    assert compare(a, b, "rr") == Paired(1, 2, 1.0)  # 1 > 1/2, 1/5 < 1, 0 < 1
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


def test_from_ranks_by_hand_and_rejects_bad_ranks():
    Q = type("Q", (), {})
    qs = []
    for qid, phrasing, needle in (("a/doc", "doc", "alpha"), ("b/ticket", "ticket", "beta")):
        q = Q()
        q.id, q.phrasing, q.needle = qid, phrasing, needle
        qs.append(q)
    table = from_ranks({"a/doc": 2, "b/ticket": None}, qs, ks=(1, 2))
    assert list(table.columns) == ["query", "phrasing", "rank", "hit@1", "hit@2", "rr"]
    assert table["query"].tolist() == ["a/doc", "b/ticket"]
    assert table["phrasing"].tolist() == ["doc", "ticket"]
    assert table["rank"].iloc[0] == 2 and pd.isna(table["rank"].iloc[1]) and table["rank"].dtype == "Int64"
    assert table["hit@1"].tolist() == [False, False] and table["hit@2"].tolist() == [True, False]
    assert table["rr"].tolist() == [1 / 2, 0.0]
    for bad in ({"a/doc": 0, "b/ticket": None}, {"a/doc": 1.5, "b/ticket": None}, {"a/doc": 1}):
        with pytest.raises(ValueError, match="a/doc|b/ticket"):
            from_ranks(bad, qs)


def test_with_interval_prints_the_value_and_its_interval():
    assert with_interval(0.5, 0.38102, 0.61898) == "0.500 [0.381, 0.619]"
    assert with_interval(0.51489, float("nan"), float("nan")) == "0.515"
    assert with_interval(0.5) == "0.500"


def test_share_cell_is_the_count_the_share_and_its_wilson_interval():
    # 0 of 4: p = 0, z^2 = 3.8415; centre = (z^2/8) / (1 + z^2/4) = 0.2449 = half, so [0, 0.4899]
    assert share_cell(0, 4) == "0/4, 0.00 [0.00, 0.49]"
    # 1 of 2: centre 0.5, half = z / (1 + z^2/2) * sqrt(1/8 + z^2/16) = 0.4055
    assert share_cell(1, 2, digits=3) == "1/2, 0.500 [0.095, 0.905]"
    with pytest.raises(ValueError):
        share_cell(3, 2)


def test_share_table_counts_each_pair_in_first_seen_order():
    frame = pd.DataFrame({"defence": ["rule", "rule", "as is", "as is", "as is", "as is"],
                          "model": ["b", "a", "b", "a", "b", "a"],
                          "obeyed": [True, False, True, False, True, False]})
    table = share_table(frame, "obeyed", "defence", "model")
    assert list(table.index) == ["rule", "as is"] and list(table.columns) == ["b", "a"]
    assert table.loc["as is", "b"] == "2/2, 1.00 [0.34, 1.00]"  # 1 - 0.6576, the mirror of 0 of 2
    assert table.loc["as is", "a"] == "0/2, 0.00 [0.00, 0.66]"
    assert table.loc["rule", "b"] == "1/1, 1.00 [0.21, 1.00]"  # 1 of 1: 1 - z^2 / (1 + z^2) = 0.2065


def test_interval_table_is_one_row_per_label_in_first_seen_order():
    per_query = pd.DataFrame({"query": ["a", "b"], "hit@1": [True, False], "rr": [1.0, 0.25]})
    table = interval_table(pd.concat([summarize(per_query, "Z"), summarize(per_query, "A")]))
    assert list(table.index) == ["Z", "A"] and list(table.columns) == ["R@1", "MRR"]
    assert table.loc["Z", "R@1"] == "0.500 [0.095, 0.905]"  # Wilson, 1 of 2: 0.0945..., 0.9054...
    assert table.loc["A", "MRR"] == "0.625"  # (1 + 1/4) / 2


# --- verdicts: the sentence the prose prints ---


@pytest.mark.parametrize(
    ("result", "short", "sentence"),
    [
        (Paired(12, 2, 0.0129), "significant at 0.05, in favour of E",
         "E vs C at R@20: +12/\u22122, significant at 0.05, in favour of E (p = 0.013)"),
        (Paired(2, 12, 0.0129), "significant at 0.05, in favour of C",
         "E vs C at R@20: +2/\u221212, significant at 0.05, in favour of C (p = 0.013)"),
        (Paired(20, 0, 2 * 0.5**20), "significant at 0.05, in favour of E",
         "E vs C at R@20: +20/\u22120, significant at 0.05, in favour of E (p < 0.001)"),
        (Paired(8, 6, 0.79), "not significant at 0.05",
         "E vs C at R@20: +8/\u22126, not significant at 0.05 (p = 0.79)"),
        (Paired(5, 0, 0.05), "not significant at 0.05",  # p == alpha is not below it
         "E vs C at R@20: +5/\u22120, not significant at 0.05 (p = 0.05)"),
    ],
)
def test_verdict_says_no_more_than_the_test(result, short, sentence):
    assert verdict(result, "E", "C") == short
    assert verdict(result, "E", "C", metric="R@20") == sentence


def test_verdict_other_alpha_and_bad_alpha():
    assert verdict(Paired(12, 2, 0.0129), "E", "C", alpha=0.01) == "not significant at 0.01"
    with pytest.raises(ValueError, match="alpha=5"):
        verdict(Paired(12, 2, 0.0129), "E", "C", alpha=5)


# --- chapter 6: distance to the answer, and the gate's sweep ---


def make_hit(distance: float, rank: int, content: str = "filler words") -> Hit:
    """A Hit on a one-chunk document whose content is `content`."""
    chunk = Chunk(f"doc{rank}", f"Doc {rank}", "S", 0, len(content), content,
                  "[Doc > S]\n" + content, "E", 0)
    return Hit(chunk, distance, rank)


@dataclass
class FakeDense:
    fixed: np.ndarray

    def distances(self, query):
        return self.fixed


@dataclass
class FakeRetriever:
    chunks: list
    dense: FakeDense


def test_distances_to_needle_is_the_nearest_chunk_holding_it():
    chunks = [FakeChunk("no"), FakeChunk("the needle"), FakeChunk("x the  needle\ny"), FakeChunk("nope")]
    retriever = FakeRetriever(chunks, FakeDense(np.array([0.1, 0.5, 0.3, 0.2])))
    assert distances_to_needle(retriever, "any query", "the needle") == 0.3  # chunks 1 and 2 hold it
    assert distances_to_needle(retriever, np.zeros(3), "absent") == math.inf


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


def test_per_question_averages_the_phrasings():
    from ragcourse.evaluation import per_question

    per_query = pd.DataFrame({"query": ["q1/doc", "q1/ticket", "q2/doc", "q2/ticket"],
                              "rr": [1.0, 0.5, 0.25, 0.0], "hit@1": [True, False, False, False]})
    assert per_question(per_query).tolist() == [0.75, 0.125]
    assert per_question(per_query, "hit@1").tolist() == [0.5, 0.0]
    with pytest.raises(ValueError, match="column='mrr'"):
        per_question(per_query, "mrr")


def test_mean_interval_is_the_t_interval_written_out():
    from ragcourse.evaluation import mean_interval

    values = [0.2, 0.4, 0.9, 0.5]
    mean, sd = 0.5, math.sqrt(((0.3**2) + (0.1**2) + (0.4**2) + 0) / 3)
    half = 3.182446305284263 * sd / 2  # t(0.975, 3) = 3.1824...
    low, high = mean_interval(values)
    assert low == pytest.approx(mean - half) and high == pytest.approx(mean + half)


def test_smallest_detectable_difference_and_questions_needed():
    from ragcourse.evaluation import questions_needed, smallest_detectable

    z = 1.959963984540054 + 0.8416212335729143  # z(0.975) + z(0.80)
    assert smallest_detectable(0.25, 210) == pytest.approx(z * 0.25 / math.sqrt(210))
    assert questions_needed(0.25, 0.05) == math.ceil((z * 0.25 / 0.05) ** 2) == 197
    assert smallest_detectable(0.25, questions_needed(0.25, 0.05)) <= 0.05
    with pytest.raises(ValueError):
        questions_needed(0.25, 0.0)


def test_smallest_testable_is_where_the_exact_test_first_reaches_alpha():
    from ragcourse.evaluation import smallest_testable

    # 5 questions all won: p = 2 / 2**5 = 0.0625 > 0.05; 6 all won: 0.03125 (issue 37: "n for 0.05" was 5)
    assert (sign_test(5, 0), sign_test(6, 0)) == (0.0625, 0.03125)
    assert smallest_testable(0.05) == 6 and smallest_testable(0.0625) == 5 and smallest_testable(0.5) == 2
    assert randomization_test([1.0] * 6, [0.0] * 6) == 0.03125  # the sign-flip test, exact at 6: the same floor
    for bad in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            smallest_testable(bad)


@given(sd=st.floats(0, 2), difference=st.floats(1e-3, 1), alpha=st.floats(1e-6, 0.99),
       power=st.floats(0.5, 0.99))
def test_questions_needed_never_goes_below_what_the_test_can_reach(sd, difference, alpha, power):
    from ragcourse.evaluation import questions_needed, smallest_testable

    n, floor = questions_needed(sd, difference, alpha, power), smallest_testable(alpha)
    assert n >= floor
    assert sign_test(floor, 0) <= alpha and (floor == 1 or sign_test(floor - 1, 0) > alpha)  # the floor is tight
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    assert n == max(floor, math.ceil((z * sd / difference) ** 2))  # the normal approximation above the floor


def test_detectable_with_identical_differences_needs_the_smallest_testable_n():
    from ragcourse.evaluation import detectable

    a = pd.DataFrame({"query": [f"q{i}/doc" for i in range(5)], "rr": [1.0] * 5})
    result = detectable(a, a.assign(rr=0.5))  # sd 0: five questions all won, yet p = 0.0625
    assert (result.sd, result.p, result.n_to_detect) == (0.0, 0.0625, 6)


def test_detectable_compares_questions_not_queries():
    from ragcourse.evaluation import detectable

    a = pd.DataFrame({"query": ["q1/doc", "q1/ticket", "q2/doc", "q2/ticket", "q3/doc", "q3/ticket"],
                      "rr": [1.0, 1.0, 0.5, 0.5, 1.0, 0.0]})
    b = a.assign(rr=[0.5, 0.5, 0.5, 0.5, 0.0, 0.0])
    result = detectable(a, b)
    # per-question differences: 0.5, 0.0, 0.5
    assert result.n == 3 and result.difference == pytest.approx(1 / 3)
    assert result.sd == pytest.approx(math.sqrt(((1 / 6) ** 2 * 2 + (1 / 3) ** 2) / 2))
    assert result.p == 0.5  # exact: 4 of the 8 sign patterns give |sum| >= 1.0 (the 0 difference cannot move)
    # questions to detect a difference of 0.05 at 80 % power: ceil(((z_0.975 + z_0.8) sd / 0.05) ** 2)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert result.n_to_detect == math.ceil((z * result.sd / 0.05) ** 2) == result.needed_for_005  # the old name


def test_share_over_questions_averages_phrasings_then_takes_a_clipped_t_interval():
    ids = ["a/doc", "a/ticket", "b/doc", "b/ticket", "c/doc", "c/ticket", "d/doc", "d/ticket"]
    flags = [True, True, True, False, False, True, True, True]  # per question: 1, 0.5, 0.5, 1
    share, low, high = share_over_questions(ids, flags)
    half = stats.t.ppf(0.975, 3) * np.std([1, 0.5, 0.5, 1], ddof=1) / 2
    assert share == 0.75
    assert low == pytest.approx(0.75 - half) and high == 1.0  # 0.75 + half > 1: clipped
    estimate = share_over_questions(ids, flags)  # a named result, not a bare tuple to slice
    assert (estimate.value, estimate.interval) == (share, (low, high)) and estimate.interval.high == 1.0
