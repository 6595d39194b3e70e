"""ragcourse.tuning: the grid helpers chapter 4's exercises and lab share."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from ragcourse import tuning
from ragcourse.groundtruth import Query


@given(st.dictionaries(st.tuples(st.integers(0, 3), st.integers(0, 3)), st.sampled_from([0.1, 0.2, 0.3]), min_size=1))
def test_best_is_a_highest_setting_and_the_smallest_among_ties(scores):
    winner = tuning.best(scores)
    top = max(scores.values())
    assert scores[winner] == top and winner == min(k for k, v in scores.items() if v == top)


def _toy():
    chunks = [SimpleNamespace(text="grid table syntax", content="grid table"),
              SimpleNamespace(text="bullet list items", content="bullet list")]
    qs = [Query(id="q1/doc", question_id="q1", phrasing="doc", text="bullet list", needle="bullet list", doc="d")]
    return chunks, qs


def test_bm25_and_weighted_rrf_score_the_toy_by_hand():
    chunks, qs = _toy()
    assert tuning.bm25_mrr(chunks, qs, 1.2, 0.75) == 1.0  # the needle's chunk is the only match
    assert tuning.bm25_per_query(chunks, qs, field="content")["rank"].tolist() == [1]
    # dense puts the needle's chunk second, BM25 first: with w = 0 only dense counts, with w = 3 BM25 wins
    assert tuning.weighted_hybrid(chunks, qs, {"q1/doc": [0, 1]}, {"q1/doc": [1, 0]}, 0.0)["rank"].tolist() == [2]
    assert tuning.weighted_hybrid(chunks, qs, {"q1/doc": [0, 1]}, {"q1/doc": [1, 0]}, 3.0)["rank"].tolist() == [1]
