"""The retrieval pipeline assembled: chunk a corpus, index it twice (dense and BM25), retrieve (chapters 3-6).

`build("E")` chunks the corpus with one strategy into a `store.Store` (chunks, unit vectors, BM25
statistics, stamp) and returns a `Retriever` over it that ranks chunks for a query by `dense`, `bm25`
or `hybrid` (reciprocal rank fusion of the two), optionally reranking the head of the ranking
(`ragcourse.rerank`). `Retriever.over` ranks any store the same way: the course corpus in memory, or
an index saved by `ragcourse index` (`index.Index.store`). `rankings` runs a whole query set, which is
what `ragcourse.evaluation.evaluate` scores. BM25 indexes the same `text` the embedder sees (header
and overlap included), so both retrievers judge the same chunk.

Left out: the gate (see `ragcourse.gate`), which sits on top, and every measurement (see
`ragcourse.evaluation`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from .bm25 import BM25
from .chunking import OVERLAP, TARGET, Chunk, chunk_corpus
from .corpus import Document
from .dense import DenseIndex, Embedder, Hit, top_hits
from .fusion import rrf
from .rerank import DEPTH, Reranker, rerank
from .store import Stamp, Store

METHODS = ("dense", "bm25", "hybrid")

T = TypeVar("T")


def ranked_chunks(chunks: Sequence[T], positions: Mapping[str, Iterable[int]],
                  depth: int | None = None) -> dict[str, list[T]]:
    """query id -> chunks best first, from query id -> chunk positions best first (what `evaluate` reads).

    >>> ranked_chunks(["c0", "c1", "c2"], {"q1": [2, 0, 1], "q2": [1, 2, 0]}, depth=2)
    {'q1': ['c2', 'c0'], 'q2': ['c1', 'c2']}
    """
    return {qid: [chunks[i] for i in list(ranking)[:depth]] for qid, ranking in positions.items()}


def rank_all(rank: Callable[..., list[int]], chunks: Sequence[T], queries: Iterable, method: str,
             depth: int | None = None, vectors: Mapping[str, np.ndarray] | None = None) -> dict[str, list[T]]:
    """query id -> chunks best first, from `rank(text, method[, vector])` per query: what `evaluate` reads.

    The one `rankings` of every ranker (`Retriever`, `expansion.Expanded`, `engines.QdrantEngine`).
    `vectors` (query id -> vector), when given, are handed to `rank`. A toy ranker that reverses:

    >>> from types import SimpleNamespace as Q
    >>> rank_all(lambda text, method: [2, 1, 0], ["c0", "c1", "c2"], [Q(id="q1", text="t")], "any", depth=2)
    {'q1': ['c2', 'c1']}
    """
    if vectors is None:
        positions = {q.id: rank(q.text, method) for q in queries}
    else:
        positions = {q.id: rank(q.text, method, vectors.get(q.id)) for q in queries}
    return ranked_chunks(chunks, positions, depth)


@dataclass
class Retriever:
    """One strategy's chunks with a dense index and a BM25 index over the same texts."""

    strategy: str
    chunks: list[Chunk]
    dense: DenseIndex | None  # None: built for BM25 alone
    bm25: BM25
    _vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def over(cls, store: Store, embedder: Embedder) -> Retriever:
        """A retriever over any store (`embedder` embeds the queries: the model that embedded the store)."""
        chunks = list(store.chunks)
        return cls(store.stamp.strategy, chunks, DenseIndex(chunks, store.vectors, embedder), store.bm25)

    def with_chunks(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> Retriever:
        """A retriever of the same strategy and embedder over other chunks (their vectors given, none embedded),
        with BM25 statistics of their own: a reader's pre-filter (chapter 11), planted chunks added (chapter 11)."""
        chunks = list(chunks)
        return Retriever(self.strategy, chunks, DenseIndex(chunks, np.asarray(vectors), self.dense.embedder),
                         BM25([c.text for c in chunks]))

    def query_vector(self, query: str) -> np.ndarray:
        """The query's unit vector, embedded once per retriever (dense, hybrid and gate share it)."""
        if query not in self._vectors:
            self._vectors[query] = self.dense.embedder.encode_query(query)
        return self._vectors[query]

    def remember(self, queries: Sequence[str], vectors: np.ndarray) -> None:
        """Take the vectors of `queries` embedded elsewhere (once, as a batch) instead of embedding each again."""
        self._vectors.update(zip(queries, vectors, strict=True))

    def rank(self, query: str, method: str = "dense", vector: np.ndarray | None = None,
             reranker: Reranker | None = None, depth: int = DEPTH) -> list[int]:
        """Every chunk position, best first, by one method; hybrid fuses the two full rankings with RRF (c=60).

        `vector` is the query's vector when the caller embedded it already (dense and hybrid use it);
        `reranker` reorders the first `depth` positions (`rerank.rerank_head`'s rule) and leaves the rest.
        """
        if method not in METHODS:
            raise ValueError(f"method {method!r} is not one of {list(METHODS)}")
        if method == "bm25":
            ranking = self.bm25.rank(query)
        else:
            ranking = self.dense.rank(self.query_vector(query) if vector is None else vector)
        if method == "hybrid":
            ranking = rrf([ranking, self.bm25.rank(query)])
        return ranking if reranker is None else self._reranked(ranking, reranker, query, depth)

    def _reranked(self, ranking: list[int], reranker: Reranker, query: str, depth: int) -> list[int]:
        """`ranking` with its first `depth` positions in the reranker's order."""
        head = ranking[:depth]
        return [head[r.old_rank - 1] for r in rerank(reranker, query, [self.chunks[i] for i in head])] + ranking[depth:]

    def retrieve(self, query: str, k: int = 4, method: str = "dense", reranker: Reranker | None = None,
                 depth: int = DEPTH) -> list[Hit]:
        """The top k (reranked from the top `depth`, given a reranker) as Hits carrying the cosine distance
        (whatever ranked them), rank from 1."""
        distances = self.dense.distances(self.query_vector(query))
        return top_hits(self.chunks, distances, k, ranking=self.rank(query, method, reranker=reranker, depth=depth))

    def rankings(self, queries: Iterable, method: str = "dense", depth: int | None = None,
                 vectors: Mapping[str, np.ndarray] | None = None) -> dict[str, list[Chunk]]:
        """query id -> chunks best first (all of them, or the first `depth`), for `evaluation.evaluate`.

        `vectors` (query id -> vector) lets several retrievers share query vectors embedded once.
        """
        return rank_all(self.rank, self.chunks, queries, method, depth, vectors)


def build(strategy: str = "E", corpus: list[Document] | None = None, embedder: Embedder | None = None,
          target: int = TARGET, overlap: int = OVERLAP, progress: bool | None = None,
          dense: bool = True) -> Retriever:
    """Chunk the corpus (default: `load_corpus()`) with one strategy and index it both ways (BM25 alone: dense=False,
    which loads no model)."""
    if corpus is None:
        from .corpus import load_corpus

        corpus = load_corpus()
    chunks = chunk_corpus(corpus, strategy, target=target, overlap=overlap)
    if not dense:  # BM25 alone: no model loaded, nothing embedded
        return Retriever(strategy, chunks, None, BM25([c.text for c in chunks]))
    index = DenseIndex.build(chunks, embedder, progress=progress)
    stamp = Stamp(index.embedder.name, int(index.vectors.shape[1]), strategy)
    return Retriever.over(Store.of(chunks, index.vectors, stamp), index.embedder)
