"""BM25's fast path: bit-identical to adding the matrix rows, equal to bm25s up to its float32, on real chunks."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ragcourse.bm25 import BM25, tokenize


@pytest.fixture(scope="module")
def texts(corpus):
    from ragcourse.chunking import chunk_corpus

    return [c.text for c in chunk_corpus(corpus, "E")]


@pytest.fixture(scope="module")
def queries(corpus):
    from ragcourse.groundtruth import load_questions, queries

    return [q.text for q in queries(load_questions(corpus=corpus))] + ["how how how to to table", "zzz unknown"]


def row_sum(bm: BM25, query: str) -> np.ndarray:
    """The matrix rows of the query's terms, times their counts, added in first-appearance order."""
    out = np.zeros(len(bm))
    m = bm.matrix
    for term, times in Counter(tokenize(query)).items():
        if term in bm.vocab:
            lo, hi = m.indptr[bm.vocab[term]], m.indptr[bm.vocab[term] + 1]
            out[m.indices[lo:hi]] += times * m.data[lo:hi]
    return out


def test_postings_give_bit_identical_scores_to_the_matrix_rows(texts, queries):
    """Same additions in the same order: every stored score and ranking of chapter 4 is unchanged."""
    bm = BM25(texts)
    for query in queries:
        assert np.array_equal(bm.scores(query), row_sum(bm, query)), query


def test_postings_are_views_of_the_matrix(texts):
    bm = BM25(texts)
    ids, impacts = bm.postings["table"]
    row = bm.matrix.getrow(bm.vocab["table"])
    assert ids.tolist() == row.indices.tolist() and np.shares_memory(impacts, bm.matrix.data)
    assert len(bm.postings) == len(bm.vocab)


def test_equal_to_bm25s_lucene_times_k1_plus_1(texts, queries):
    """bm25s' "lucene" variant drops the (k1 + 1) factor and keeps float32; otherwise the same numbers."""
    bm25s = pytest.importorskip("bm25s")
    bm = BM25(texts)
    peer = bm25s.BM25(method="lucene", k1=bm.k1, b=bm.b)
    peer.index([tokenize(t) for t in texts], show_progress=False)
    for query in queries[:64]:
        tokens = [t for t in tokenize(query) if t in peer.vocab_dict]
        np.testing.assert_allclose(bm.scores(query), (bm.k1 + 1) * peer.get_scores(tokens), rtol=2e-6, atol=2e-6)
