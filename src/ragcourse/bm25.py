"""BM25 (Okapi weighting, Lucene-style idf) over a sparse term-by-chunk matrix (chapter 4).

What it implements: the chapter's BM25, term for term. Tokens are the lowercase ``[a-z0-9]+`` runs
of a text; with ``N`` texts, ``n`` of them containing term ``t``, ``f`` its count in text ``d``,
``|d|`` the token count of ``d`` and ``avgdl`` the mean token count,

    idf(t)      = ln(1 + (N - n + 0.5) / (n + 0.5))
    score(q, d) = sum over query tokens t (repeats counted) of
                  idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * |d| / avgdl))

with k1 = 1.2 and b = 0.75 by default (Robertson & Zaragoza, "The Probabilistic Relevance
Framework: BM25 and Beyond", 2009). Every (term, text) contribution is computed once, at build
time, into a ``scipy.sparse`` CSR matrix (one row per term, as bm25s does). Its rows are the
inverted index: term -> (texts containing it, their contributions). A query adds its terms'
postings into one array of scores (``np.add.at``), so it touches only the texts that share a term
with it and no Python code runs per text; a term in most texts is added as a full row instead.

What it leaves out: stemming, stop words, phrase queries, other idf variants. ``rank_bm25``'s
``BM25Okapi`` uses ``ln((N - n + 0.5) / (n + 0.5))`` with a floor for negative values instead; the
tests show the difference. ``benchmarks/bench_scale.py`` times this class against
bm25s and ``BM25Okapi.get_scores``: rank-bm25 is needed by the tests, the benchmarks and chapter 4, not here.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from .precision import stable_order

#: The one tokenizer pattern (after lowercasing): every module that tokenizes, or stamps an index built from
#: tokens (`ragcourse.engines`), reads it from here, so a change marks every such index stale.
TOKEN_PATTERN = r"[a-z0-9]+"
_TOKEN = re.compile(TOKEN_PATTERN)
#: Terms in more than this share of the texts are also stored as full rows (see `BM25.scores`).
DENSE_SHARE = 0.125


def tokenize(text: str) -> list[str]:
    """Lowercase, then keep the ``[a-z0-9]+`` runs.

    >>> tokenize("Grid-Tables, v0.22!")
    ['grid', 'tables', 'v0', '22']
    """
    return _TOKEN.findall(text.lower())


def idf(n_texts: int, doc_freq: np.ndarray) -> np.ndarray:
    """Lucene-style idf, never negative: ``ln(1 + (N - n + 0.5) / (n + 0.5))``.

    A term in half the texts still counts: ``ln(1 + 2.5 / 2.5) = ln 2``.

    >>> idf(4, np.array([2])).round(4).tolist()
    [0.6931]
    """
    doc_freq = np.asarray(doc_freq, dtype=np.float64)
    return np.log1p((n_texts - doc_freq + 0.5) / (doc_freq + 0.5))


def term_weights(
    tf: np.ndarray, doc_len: np.ndarray, avgdl: float, k1: float = 1.2, b: float = 0.75
) -> np.ndarray:
    """Saturated, length-normalised tf: ``f (k1 + 1) / (f + k1 (1 - b + b |d| / avgdl))``.

    A term seen once in a text of average length weighs exactly 1:

    >>> term_weights(np.array([1.0]), np.array([10.0]), 10.0).tolist()
    [1.0]
    """
    tf = np.asarray(tf, dtype=np.float64)
    norm = k1 * (1.0 - b + b * np.asarray(doc_len, dtype=np.float64) / avgdl)
    return tf * (k1 + 1.0) / (tf + norm)


def count_matrix(token_lists: Sequence[Sequence[str]]) -> tuple[dict[str, int], sparse.csr_matrix]:
    """Vocabulary (sorted terms -> row) and a CSR term-by-text matrix of raw counts."""
    vocab = {term: i for i, term in enumerate(sorted({t for toks in token_lists for t in toks}))}
    rows: list[int] = []
    cols: list[int] = []
    counts: list[int] = []
    for col, toks in enumerate(token_lists):
        for term, count in Counter(toks).items():
            rows.append(vocab[term])
            cols.append(col)
            counts.append(count)
    shape = (len(vocab), len(token_lists))
    matrix = sparse.csr_matrix((np.array(counts, dtype=np.float64), (rows, cols)), shape=shape)
    matrix.sort_indices()
    return vocab, matrix


def score_matrix(
    counts: sparse.csr_matrix, doc_len: np.ndarray, k1: float, b: float
) -> sparse.csr_matrix:
    """Replace each count in a term-by-text matrix by that (term, text) BM25 contribution."""
    n_texts = counts.shape[1]
    avgdl = float(doc_len.mean())
    doc_freq = np.diff(counts.indptr)  # stored entries per row = texts containing the term
    row_of_entry = np.repeat(np.arange(counts.shape[0]), doc_freq)
    data = idf(n_texts, doc_freq)[row_of_entry] * term_weights(
        counts.data, doc_len[counts.indices], avgdl, k1, b
    )
    entries = (data, counts.indices.copy(), counts.indptr.copy())
    return sparse.csr_matrix(entries, shape=counts.shape)


def _check_params(k1: float, b: float) -> None:
    if not (math.isfinite(k1) and k1 >= 0):
        raise ValueError(f"k1={k1!r}: expected a finite number >= 0 (conventionally 1.2)")
    if not (math.isfinite(b) and 0 <= b <= 1):
        raise ValueError(f"b={b!r}: expected a number in [0, 1] (conventionally 0.75)")


class BM25:
    """BM25 over a fixed list of texts: ``BM25(texts).scores(query)`` gives one float64 per text."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        if len(texts) == 0:
            raise ValueError("texts is empty: BM25 needs at least one text to index")
        _check_params(k1, b)
        self.k1, self.b = float(k1), float(b)
        token_lists = [tokenize(t) for t in texts]
        self.doc_len = np.array([len(toks) for toks in token_lists], dtype=np.float64)
        self.vocab, counts = count_matrix(token_lists)
        self.matrix = score_matrix(counts, self.doc_len, self.k1, self.b)
        # The inverted index: term -> (ids of the texts containing it, their precomputed contributions).
        # Views into the matrix's rows; ids as numpy's native index type, so adding them never copies.
        ids, bounds, impacts = self.matrix.indices.astype(np.intp), self.matrix.indptr, self.matrix.data
        self.postings = {term: (ids[bounds[row]:bounds[row + 1]], impacts[bounds[row]:bounds[row + 1]])
                         for term, row in self.vocab.items()}
        # A term in more than DENSE_SHARE of the texts ("how", "the") also gets a full row of scores:
        # one vectorised add over every text beats scattering into most of them.
        self.dense_rows = {term: self.matrix.getrow(row).toarray()[0] for term, row in self.vocab.items()
                           if bounds[row + 1] - bounds[row] > DENSE_SHARE * len(token_lists)}

    def __len__(self) -> int:
        return self.matrix.shape[1]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every text for ``query``; unknown query terms add nothing."""
        out = np.zeros(len(self), dtype=np.float64)
        for term, times in Counter(tokenize(query)).items():
            if term in self.dense_rows:  # a common term: add its full row (zeros where it is absent)
                out += self.dense_rows[term] if times == 1 else times * self.dense_rows[term]
            elif term in self.postings:  # any other term: only the texts that contain it
                ids, impacts = self.postings[term]
                np.add.at(out, ids, impacts if times == 1 else times * impacts)
        return out

    def rank(self, query: str) -> list[int]:
        """All text positions, best first: score (rounded to 6 places) descending, then position."""
        return stable_order(self.scores(query), descending=True).tolist()
