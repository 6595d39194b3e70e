"""The retrieval pipeline assembled: chunk a corpus, index it twice (dense and BM25), retrieve (chapters 3-6).

`build("E")` chunks the corpus with one strategy and returns a `Retriever` that ranks chunks for a
query by `dense`, `bm25` or `hybrid` (reciprocal rank fusion of the two). `rankings` runs a whole
query set, which is what `ragcourse.evaluation.evaluate` scores. BM25 indexes the same `text` the
embedder sees (header and overlap included), so both retrievers judge the same chunk.

Left out: rerankers (see `ragcourse.rerank`) and the gate (see `ragcourse.gate`), which sit on top.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from .bm25 import BM25
from .chunking import Chunk, chunk_corpus
from .corpus import Document
from .dense import DenseIndex, Embedder, Hit
from .fusion import rrf

METHODS = ("dense", "bm25", "hybrid")


@dataclass
class Retriever:
    """One strategy's chunks with a dense index and a BM25 index over the same texts."""

    strategy: str
    chunks: list[Chunk]
    dense: DenseIndex
    bm25: BM25
    _vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def query_vector(self, query: str) -> np.ndarray:
        """The query's unit vector, embedded once per retriever (dense, hybrid and gate share it)."""
        if query not in self._vectors:
            self._vectors[query] = self.dense.embedder.encode_query(query)
        return self._vectors[query]

    def rank(self, query: str, method: str = "dense") -> list[int]:
        """Every chunk position, best first, by one method; hybrid fuses the two full rankings with RRF (k=60)."""
        if method == "dense":
            return self.dense.rank(self.query_vector(query)).tolist()
        if method == "bm25":
            return self.bm25.rank(query).tolist()
        if method == "hybrid":
            dense = self.dense.rank(self.query_vector(query)).tolist()
            return [int(i) for i in rrf([dense, self.bm25.rank(query).tolist()])]
        raise ValueError(f"method {method!r} is not one of {list(METHODS)}")

    def retrieve(self, query: str, k: int = 4, method: str = "dense") -> list[Hit]:
        """The top k as Hits carrying the cosine distance (whatever ranked them), rank from 1."""
        distances = self.dense.distances(self.query_vector(query))
        top = self.rank(query, method)[:k]
        return [Hit(self.chunks[i], float(distances[i]), r) for r, i in enumerate(top, start=1)]

    def rankings(self, queries: Iterable, method: str = "dense", depth: int | None = None) -> dict[str, list[Chunk]]:
        """query id -> chunks best first (all of them, or the first `depth`), for `evaluation.evaluate`."""
        return {q.id: [self.chunks[i] for i in self.rank(q.text, method)[:depth]] for q in queries}


def build(strategy: str = "E", corpus: list[Document] | None = None, embedder: Embedder | None = None,
          target: int = 512, overlap: int = 64, progress: bool | None = None) -> Retriever:
    """Chunk the corpus (default: `load_corpus()`) with one strategy and index it both ways."""
    if corpus is None:
        from .corpus import load_corpus

        corpus = load_corpus()
    chunks = chunk_corpus(corpus, strategy, target=target, overlap=overlap)
    dense = DenseIndex.build(chunks, embedder, progress=progress)
    return Retriever(strategy, chunks, dense, BM25([c.text for c in chunks]))


def distances_to_needle(retriever: Retriever, query: str, needle: str) -> float:
    """Cosine distance from a query to the nearest chunk that contains the needle (inf if none does)."""
    from .evaluation import contains_needle

    distances = retriever.dense.distances(query)
    holders = [i for i, c in enumerate(retriever.chunks) if contains_needle(c.content, needle)]
    return float(np.min(distances[holders])) if holders else float("inf")
