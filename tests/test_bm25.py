"""BM25: parity with a plain transcription of the formula, and with rank_bm25 up to the idf."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ragcourse.bm25 import BM25, idf, term_weights, tokenize

# --- an independent, dict-based transcription of the formula (the chapter's loop, in Python) ---


def reference_scores(texts: list[str], query: str, k1: float = 1.2, b: float = 0.75) -> list[float]:
    toks = [re.findall(r"[a-z0-9]+", t.lower()) for t in texts]
    tfs = [Counter(t) for t in toks]
    lens = [len(t) for t in toks]
    avg = sum(lens) / len(lens)
    df: Counter[str] = Counter()
    for tf in tfs:
        df.update(tf.keys())
    n_docs = len(texts)
    idfs = {w: math.log(1 + (n_docs - n + 0.5) / (n + 0.5)) for w, n in df.items()}
    out = []
    for tf, length in zip(tfs, lens, strict=True):
        s = 0.0
        for w in re.findall(r"[a-z0-9]+", query.lower()):
            f = tf.get(w, 0)
            if f:
                s += idfs[w] * f * (k1 + 1) / (f + k1 * (1 - b + b * length / avg))
        out.append(s)
    return out


HAND_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "A dog, a DOG, and another dog: dogs everywhere!",
    "Grid tables and simple tables are both supported in reStructuredText.",
    "",
    "Error E0042 appears when the table has no header row (see v0.22 notes).",
    "the the the the the the the the",
    "Fox",
]
HAND_QUERIES = [
    "dog",
    "the dog",
    "dog dog fox",  # repeated query tokens count twice
    "GRID Tables",
    "e0042 header",
    "v0 22",
    "unknownword",
    "",
    "the the",
]


def test_tokenize_lowercases_and_keeps_alnum_runs():
    assert tokenize("Grid-Tables, v0.22! ÄB_c") == ["grid", "tables", "v0", "22", "b", "c"]
    assert tokenize("") == []


@pytest.mark.parametrize("query", HAND_QUERIES)
def test_matches_plain_transcription_on_hand_texts(query):
    got = BM25(HAND_TEXTS).scores(query)
    assert got.dtype == np.float64 and got.shape == (len(HAND_TEXTS),)
    np.testing.assert_allclose(got, reference_scores(HAND_TEXTS, query), rtol=0, atol=1e-9)


@pytest.mark.parametrize(("k1", "b"), [(0.0, 0.0), (2.0, 1.0), (0.9, 0.4)])
def test_matches_transcription_for_other_parameters(k1, b):
    got = BM25(HAND_TEXTS, k1=k1, b=b).scores("the dog fox tables")
    want = reference_scores(HAND_TEXTS, "the dog fox tables", k1=k1, b=b)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_three_document_toy_by_hand():
    # N = 3, lengths 3, 2, 1, avgdl = 2; "cat" is in 1 text, "dog" in 2.
    bm = BM25(["cat cat dog", "dog bird", "fish"])
    idf_cat = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    idf_dog = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    norm0 = 1.2 * (1 - 0.75 + 0.75 * 3 / 2)  # text 0 is longer than average
    norm1 = 1.2 * (1 - 0.75 + 0.75 * 2 / 2)  # text 1 has exactly average length
    want = [
        idf_dog * 1 * 2.2 / (1 + norm0) + idf_cat * 2 * 2.2 / (2 + norm0),
        idf_dog * 1 * 2.2 / (1 + norm1),
        0.0,
    ]
    np.testing.assert_allclose(bm.scores("dog cat"), want, rtol=0, atol=1e-12)
    assert want[1] == pytest.approx(math.log(1.6))  # f = 1 at average length weighs exactly 1
    assert bm.rank("dog cat") == [0, 1, 2]


def test_pieces():
    np.testing.assert_allclose(idf(4, np.array([2, 4])), [math.log(2), math.log(1 + 0.5 / 4.5)])
    np.testing.assert_allclose(term_weights(np.array([1.0]), np.array([10.0]), 10.0), [1.0])
    # more repetitions help less and less; never beyond k1 + 1
    w = term_weights(np.array([1.0, 2.0, 100.0]), np.array([5.0, 5.0, 5.0]), 5.0)
    assert w[0] < w[1] < w[2] < 2.2


def test_repeated_query_token_counts_twice():
    bm = BM25(HAND_TEXTS)
    np.testing.assert_allclose(bm.scores("fox fox"), 2 * bm.scores("fox"), rtol=0, atol=1e-12)


def test_rank_breaks_ties_by_position():
    bm = BM25(["apple pie", "banana", "apple pie", "apple pie", "cherry"])
    assert bm.rank("apple") == [0, 2, 3, 1, 4]
    assert bm.rank("nothing matches") == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    ("texts", "kwargs"),
    [([], {}), (["a"], {"k1": -0.1}), (["a"], {"b": 1.5}), (["a"], {"b": float("nan")})],
)
def test_bad_input_raises(texts, kwargs):
    with pytest.raises(ValueError):
        BM25(texts, **kwargs)


def test_texts_without_tokens_score_zero():
    np.testing.assert_array_equal(BM25(["...", "!!"]).scores("a"), [0.0, 0.0])


# --- rank_bm25: same saturation and length terms, different idf ---

TOY = ["the cat sat", "the dog ran", "a cat and a bird", "fish swim"]  # "the": 2 of 4 texts


def test_rank_bm25_idf_is_zero_for_a_term_in_half_the_texts():
    okapi = BM25Okapi([tokenize(t) for t in TOY], k1=1.2, b=0.75, epsilon=0.25)
    assert okapi.idf["the"] == pytest.approx(math.log((4 - 2 + 0.5) / (2 + 0.5)), abs=1e-15)
    assert okapi.idf["the"] == pytest.approx(0.0, abs=1e-15)
    assert okapi.get_scores(["the"]).tolist() == pytest.approx([0, 0, 0, 0], abs=1e-15)
    ours = BM25(TOY).scores("the")
    assert ours[0] > 0 and ours[1] > 0  # Lucene idf: ln(1 + 2.5/2.5) = ln 2
    assert BM25(TOY).scores("the")[0] == pytest.approx(
        math.log(2) * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / 3.25))
    )


def test_rank_bm25_floors_negative_idf_with_epsilon():
    texts = ["x a", "x b", "x c", "d"]  # "x" in 3 of 4 texts: raw Okapi idf ln(1.5/3.5) < 0
    okapi = BM25Okapi([tokenize(t) for t in texts], k1=1.2, b=0.75, epsilon=0.25)
    raw = {
        w: math.log((4 - n + 0.5) / (n + 0.5))
        for w, n in {"x": 3, "a": 1, "b": 1, "c": 1, "d": 1}.items()
    }
    assert raw["x"] < 0
    assert okapi.idf["x"] == pytest.approx(0.25 * sum(raw.values()) / len(raw))


@pytest.mark.parametrize("epsilon", [0.0, 0.25, 1.0])
def test_rank_bm25_differs_from_ours_exactly_by_idf(epsilon):
    texts = HAND_TEXTS + TOY
    tokenized = [tokenize(t) for t in texts]
    ours = BM25(texts)
    n_docs = len(texts)
    df = Counter(w for toks in tokenized for w in set(toks))
    our_idf = {w: math.log(1 + (n_docs - n + 0.5) / (n + 0.5)) for w, n in df.items()}
    okapi = BM25Okapi(tokenized, k1=1.2, b=0.75, epsilon=epsilon)
    # one term at a time: same saturation, same length normalisation, scaled by the idf ratio
    for term in df:
        np.testing.assert_allclose(
            ours.scores(term) * okapi.idf[term],
            okapi.get_scores([term]) * our_idf[term],
            atol=1e-12,
        )
    # and with our idf swapped in, rank_bm25 gives our scores for any query
    okapi.idf = our_idf
    for query in HAND_QUERIES:
        np.testing.assert_allclose(okapi.get_scores(tokenize(query)), ours.scores(query), atol=1e-9)


# --- the real corpus, strategy E chunks ---


@pytest.fixture(scope="module")
def strategy_e_chunks(corpus):
    from ragcourse.chunking import chunk_corpus

    return chunk_corpus(corpus, "E")


def _real_queries(chunks) -> list[str]:
    sections = sorted({c.section for c in chunks if c.section})[:10]
    starts = [" ".join(c.content.split()[:8]) for c in chunks[:: max(1, len(chunks) // 10)]]
    return [*sections, *starts, "role directive option", "latex math math"]


def _evaluation_queries(corpus) -> list[str]:
    """All 64 ground-truth queries and the 30 out-of-domain ones: every query the book scores."""
    from ragcourse.groundtruth import load_out_of_domain, load_questions, queries

    return [q.text for q in queries(load_questions(corpus=corpus))] + [o.query for o in load_out_of_domain()]


def test_matches_plain_transcription_on_real_chunks(strategy_e_chunks, corpus):
    """Every (query, chunk) pair of strategy E, for every query the book runs, equals the formula."""
    texts = [c.text for c in strategy_e_chunks]
    bm = BM25(texts)
    queries = [*_real_queries(strategy_e_chunks), *_evaluation_queries(corpus)]
    assert len(queries) > 94
    for query in queries:
        np.testing.assert_allclose(
            bm.scores(query), reference_scores(texts, query), rtol=0, atol=1e-9
        )
