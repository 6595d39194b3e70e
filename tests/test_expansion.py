"""Query expansion on small fixed inputs: each expansion's output written out by hand."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragcourse import expansion as ex
from ragcourse.bm25 import BM25
from ragcourse.fusion import rrf
from ragcourse.groundtruth import Query

TEXTS = [
    "Set the tab width with --tab-width in docutils.conf.",
    "Tables: grid tables and simple tables.",
    "The AUTH_4027 error means the token expired; renew it.",
    "Tab characters expand to tab stops every 8 columns.",
]


@dataclass(frozen=True)
class FakeChunk:
    text: str


@dataclass
class FakeRetriever:
    """BM25 for real; 'dense' is a fixed order, so the expected fusions can be written by hand."""

    texts: list[str]
    dense_order: list[int]
    chunks: list[FakeChunk] = field(init=False)
    bm25: BM25 = field(init=False)

    def __post_init__(self):
        self.chunks = [FakeChunk(t) for t in self.texts]
        self.bm25 = BM25(self.texts)

    def rank(self, query, method="dense", vector=None):
        if method == "bm25":
            return self.bm25.rank(query)
        if method == "dense":
            return list(self.dense_order)
        return [int(i) for i in rrf([self.dense_order, self.bm25.rank(query)])]


@pytest.fixture
def retriever():
    return FakeRetriever(TEXTS, dense_order=[1, 3, 0, 2])


def test_boilerplate_goes_and_the_question_stays():
    ticket = "Hey team! AUTH_4027 again. Any help would be greatly appreciated."
    assert ex.strip_boilerplate(ticket) == "AUTH_4027 again."
    assert ex.strip_boilerplate("Thanks!") == "Thanks!"  # nothing but boilerplate: keep the ticket
    assert ex.strip_boilerplate("why is this?") == "why is this?"


def test_identifiers_of_each_kind():
    ticket = 'with .. code:: and --number-lines I get "Unknown option" from my_conf.py; FooBar, AUTH_4027'
    assert ex.identifiers(ticket) == ("Unknown option", "--number-lines", "code::", "my_conf.py", "AUTH_4027",
                                      "FooBar")  # my_conf is inside my_conf.py: not repeated


def test_exact_ranking_counts_distinct_matches_then_position():
    assert ex.exact_ranking(TEXTS, ["auth_4027"]) == [2]
    assert ex.exact_ranking(TEXTS, ["tab", "docutils.conf"]) == [0, 3]  # 0 has both, 3 has "tab"
    assert ex.exact_ranking(TEXTS, ["nowhere"]) == []


def test_selective_keeps_rare_identifiers_only():
    assert ex.selective(["AUTH_4027", "tab", "absent"], TEXTS, max_share=0.25) == ["AUTH_4027"]
    assert ex.selective(["tab"], TEXTS, max_share=0.5) == ["tab"]  # in 2 of 4 texts


def test_feedback_terms_are_the_relevance_model():
    # "tab" is in texts 0 (10 tokens, tab twice, width twice) and 3 (9 tokens, tab twice); s3 > s0 as 3 is shorter.
    # P(w|R) = sum_d tf(w, d)/|d| * s_d / (s0 + s3): tab leads, width 2/10 s0 beats every 1/9 s3 term, which beat
    # 1/10 s0; ties by the term itself; the three kept are renormalised to sum to 1.
    scores = BM25(TEXTS).scores("tab")
    assert scores[3] > scores[0] > 0 and 2 / 10 * scores[0] > 1 / 9 * scores[3] > 1 / 10 * scores[0]
    s0, s3 = scores[0] / (scores[0] + scores[3]), scores[3] / (scores[0] + scores[3])
    raw = {"tab": 2 / 10 * s0 + 2 / 9 * s3, "width": 2 / 10 * s0, "8": 1 / 9 * s3}
    model = ex.relevance_model(TEXTS, scores, ex.Feedback(texts=2, terms=3, min_idf=0.0))
    assert list(model) == ["tab", "width", "8"]
    assert all(type(v) is float for v in model.values())  # numpy scores in, plain floats out
    assert model == pytest.approx({t: v / sum(raw.values()) for t, v in raw.items()}, abs=1e-6)
    assert ex.feedback_terms(TEXTS, scores, "tab", ex.Feedback(texts=2, terms=3, min_idf=0.0)) == ["width", "8"]


def test_feedback_leaves_out_stopwords_and_common_terms():
    # "the" is in 2 of 4 texts: idf = ln(1 + 2.5 / 2.5) = ln 2 = 0.693; a term in 1 text has ln(1 + 3.5 / 1.5) = 1.204
    scores = BM25(TEXTS).scores("tab")
    no_list = frozenset()
    assert "the" in ex.feedback_terms(TEXTS, scores, "tab", ex.Feedback(2, 50, min_idf=0.69, stopwords=no_list))
    assert "the" not in ex.feedback_terms(TEXTS, scores, "tab", ex.Feedback(2, 50, min_idf=0.70, stopwords=no_list))
    added = ex.feedback_terms(TEXTS, scores, "tab", ex.Feedback(texts=2, terms=50, min_idf=0.0))
    assert "width" in added and not {"the", "with", "in", "to"} & set(added)  # the default list: function words


@given(st.lists(st.text(alphabet="abc the", max_size=20), min_size=1, max_size=6), st.integers(1, 5))
def test_the_relevance_model_is_a_distribution_without_stopwords(texts, terms):
    scores = BM25(texts).scores("a b c")
    model = ex.relevance_model(texts, scores, ex.Feedback(texts=3, terms=terms, min_idf=0.0))
    assert len(model) <= terms and "the" not in model
    assert not model or sum(model.values()) == pytest.approx(1, abs=1e-5)


def test_interpolation_mixes_the_query_and_the_model_by_the_weight():
    assert ex.interpolate("a a b", {"b": 0.5, "c": 0.5}, 0.5) == {"a": round(0.5 * 2 / 3, 6), "b": round(
        0.5 / 3 + 0.25, 6), "c": 0.25}
    assert ex.interpolate("a", {"c": 1.0}, 1.0) == {"a": 1.0, "c": 0.0}
    with pytest.raises(ValueError, match="original_weight"):
        ex.Feedback(original_weight=1.5)


def test_feedback_keeps_the_original_query_in_front_by_its_weight():
    """RM3 mixes P(w|Q) with P(w|R): at weight 0.5 a text with the asked word ("alpha other words") outranks a
    short one holding only the fed-back word ("beta"); with the query's weight at 0 the short one wins."""
    from types import SimpleNamespace

    texts = ["alpha beta", "alpha other words", "beta", *["omega"] * 5]
    stub = SimpleNamespace(chunks=[SimpleNamespace(text=t) for t in texts], bm25=BM25(texts))
    settings = ex.Feedback(texts=1, terms=2, min_idf=0.0)
    assert ex.relevance_model(texts, stub.bm25.scores("alpha"), settings) == {"alpha": 0.5, "beta": 0.5}
    assert ex.Expanded(stub, "feedback", feedback=settings).rank("alpha", "bm25")[:3] == [0, 1, 2]
    only_model = ex.Feedback(texts=1, terms=2, min_idf=0.0, original_weight=0.0)
    assert ex.Expanded(stub, "feedback", feedback=only_model).rank("alpha", "bm25")[:3] == [0, 2, 1]


def test_parse_reformulations():
    out = "1. Transaction error\n2) billing declined\n* payment failed\n\n- ok\n• charge unsuccessful\n"
    assert ex.parse_reformulations(out, "Payment failed") == ["Transaction error", "billing declined",
                                                              "charge unsuccessful"]
    assert ex.parse_reformulations("a\nb\nc\nd\ne\nf\ng", "q", most=5) == []  # shorter than 3 characters
    assert len(ex.parse_reformulations("\n".join(f"rewrite {i}" for i in range(9)), "q")) == 5


def test_a_reply_cut_by_its_budget_loses_only_its_unfinished_last_line():
    out = "How do you set the tab width?\n\nWhat sets tab stops?\nHow do you"  # the 1.5B model's shape
    assert ex.parse_reformulations(out, "tabs", cut=False) == ["How do you set the tab width?", "What sets tab stops?",
                                                               "How do you"]
    assert ex.parse_reformulations(out, "tabs", cut=True) == ["How do you set the tab width?", "What sets tab stops?"]
    assert ex.parse_reformulations(out + "\n", "tabs", cut=True)[-1] == "How do you"  # a newline ended it
    assert ex.parse_reformulations("one long unfinished line", "tabs", cut=True) == []


def test_none_is_the_plain_retriever(retriever):
    x = ex.Expanded(retriever, "none")
    for method in ("dense", "bm25", "hybrid"):
        assert x.rank("tab width", method) == retriever.rank("tab width", method)


def test_clean_adds_the_exact_list_to_rrf(retriever):
    x = ex.Expanded(retriever, "clean", max_share=0.25)
    query = "Hi, what is AUTH_4027? Thanks!"
    lists = x.lists(query, "hybrid")
    assert lists == [[1, 3, 0, 2], retriever.bm25.rank("what is AUTH_4027?"), [2]]
    assert x.rank(query, "hybrid") == [int(i) for i in rrf(lists)]


def test_clean_plus_feedback_feeds_back_from_the_cleaned_query(retriever):
    x = ex.Expanded(retriever, "clean+feedback", max_share=0.25)
    query = "Hello, AUTH_4027 tab? Cheers"
    feedback_only = ex.Expanded(retriever, "feedback").lists("AUTH_4027 tab?", "hybrid")
    assert x.lists(query, "hybrid") == feedback_only + [[2]]


def test_multi_fuses_every_rewrite_and_needs_stored_rewrites(retriever):
    x = ex.Expanded(retriever, "multi", reformulations={"tab": ["tab stops", "tab width"]})
    lists = x.lists("tab", "bm25")
    assert lists == [retriever.bm25.rank(q) for q in ("tab", "tab stops", "tab width")]
    with pytest.raises(KeyError, match="no stored reformulations"):
        x.rank("other", "bm25")


def test_unknown_expansion_and_method_name_the_choices(retriever):
    with pytest.raises(ValueError, match="'rm3' is not one of"):
        ex.Expanded(retriever, "rm3")
    with pytest.raises(ValueError, match="'sparse' is not one of"):
        ex.Expanded(retriever, "none").rank("q", "sparse")


@given(st.text(max_size=200))
def test_cleaning_never_invents_text(ticket):
    cleaned = ex.clean_ticket(ticket)
    assert cleaned.query in ticket or cleaned.query == ticket.strip()
    assert all(i in ticket for i in cleaned.identifiers)


@given(st.lists(st.sampled_from(["tab", "width", "grid", "table", "the", "error"]), min_size=1, max_size=6))
def test_every_ranking_is_a_permutation(words):
    r = FakeRetriever(TEXTS, dense_order=[1, 3, 0, 2])
    for name in ("none", "clean", "feedback", "clean+feedback"):
        for method in ("dense", "bm25", "hybrid"):
            assert sorted(ex.Expanded(r, name).rank(" ".join(words), method)) == [0, 1, 2, 3]


def test_stored_rewrites_are_refused_when_stale(tmp_path):
    path = tmp_path / "expansions.json"
    with pytest.raises(FileNotFoundError, match="benchmarks/expansions.py"):
        ex.stored_rewrites(path)
    path.write_text('{"prompt": "another prompt", "max_new_tokens": 48, "queries": {}}', encoding="utf-8")
    with pytest.raises(ValueError, match="re-run"):
        ex.stored_rewrites(path)
    path.write_text(json.dumps({"prompt": ex.REWRITE_PROMPT, "max_new_tokens": ex.REWRITE_TOKENS, "queries": {}}),
                    encoding="utf-8")
    assert ex.stored_rewrites(path)["queries"] == {}


def _query(qid, text):
    return Query(qid, qid.split("/")[0], qid.split("/")[1], text, "needle", "doc")


def test_recorded_rewrites_reparse_the_output_and_refuse_other_queries():
    live = [_query("q1/doc", "tab width"), _query("q1/ticket", "my tabs are wrong")]
    row = {"query": "my tabs are wrong", "new_tokens": 8, "output": "1. tab stops\n2. tab size", "rewrites": ["stale"]}
    record = {"max_new_tokens": 9, "queries": {"q1/ticket": row}}
    assert ex.recorded_rewrites(record, live) == {"my tabs are wrong": ["tab stops", "tab size"]}
    record["queries"]["q1/ticket"]["new_tokens"] = 9  # stopped by the budget: "tab size" may be unfinished
    assert ex.recorded_rewrites(record, live) == {"my tabs are wrong": ["tab stops"]}
    record["queries"]["q1/ticket"]["query"] = "my tabs are wrong!"
    with pytest.raises(ValueError, match="q1/ticket: the stored query text"):
        ex.recorded_rewrites(record, live)
    with pytest.raises(ValueError, match="'q9/doc'"):
        ex.recorded_rewrites({"queries": {"q9/doc": {"query": "x", "output": ""}}}, live)


def test_count_rewrites_by_hand():
    assert ex.count_rewrites({"a": [], "b": ["x"] * 3, "c": ["x"] * 5, "d": ["x"] * 6}) == (4, 3.5, 2, 1)
    assert ex.count_rewrites({"a": ["x", "y"]}, low=1, high=2) == (1, 2.0, 1, 0)
    with pytest.raises(ValueError, match="no queries"):
        ex.count_rewrites({})
