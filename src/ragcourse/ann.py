"""Approximate nearest neighbours: an HNSW graph (faiss) behind the `DenseIndex` interface (appendix 2).

`HNSWIndex.from_dense(index)` wraps the vectors of an exact `DenseIndex` in a hierarchical navigable
small-world graph (Malkov & Yashunin, 2018): `search` walks the graph instead of scanning every
vector, so it reads a few thousand vectors whatever the corpus size, and may miss a true neighbour.
Each returned Hit carries the exact, rounded cosine distance, like the scan's, so the gate and the
tie rules read the same numbers; only *which* chunks come back can differ. `recall` measures that.

The exact scan stays the default: `choose` keeps it below `CROSSOVER` vectors, where a scan and
sort cost less than embedding the query (about 12 ms) and lose nothing. The graph answers faster
from some thousands of vectors on (the appendix's benchmark), so set the crossover from your own run.

Leaves out: inserts after build (rebuild instead), deletion, quantization, the index on disk.
Built on one thread, so the same vectors always give the same graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .counts import check_k
from .dense import DenseIndex, Hit, cosine_distances, order

#: Below this many vectors `choose` keeps the exact scan: fast enough, next to embedding the query.
CROSSOVER = 50_000
#: Graph degree, effort at build time and at query time (faiss' defaults are 32, 40 and 16).
M, EF_CONSTRUCTION, EF_SEARCH = 32, 80, 64


@dataclass
class HNSWIndex(DenseIndex):
    """A `DenseIndex` whose `search` walks an HNSW graph (inner product of unit vectors); `rank` puts the graph's
    candidates first and every other chunk after them."""

    graph: object = None
    ef_search: int = EF_SEARCH

    @classmethod
    def from_dense(cls, index: DenseIndex, m: int = M, ef_construction: int = EF_CONSTRUCTION,
                   ef_search: int = EF_SEARCH) -> HNSWIndex:
        """Build the graph over an exact index's vectors (one thread: deterministic)."""
        import faiss

        for name, value in (("m", m), ("ef_construction", ef_construction), ("ef_search", ef_search)):
            check_k(value, name)
        faiss.omp_set_num_threads(1)
        vectors = np.ascontiguousarray(index.vectors, dtype=np.float32)
        graph = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = ef_construction
        graph.add(vectors)
        return cls(chunks=index.chunks, vectors=index.vectors, embedder=index.embedder,
                   graph=graph, ef_search=ef_search)

    def _vector(self, query: str | np.ndarray) -> np.ndarray:
        return self.embedder.encode_query(query) if isinstance(query, str) else np.asarray(query)

    def rank(self, query: str | np.ndarray, depth: int | None = None) -> list[int]:
        """Every chunk position, as `DenseIndex.rank` promises: the graph's nearest `ef_search` first (nearest
        first, ties by position), then every other position by exact distance, so hybrid fuses full lists.

        With `depth`, only the graph's nearest `depth` (what `search` reads; no scan of the rest).
        """
        vector = self._vector(query)
        found = self._nearest(vector, depth or self.ef_search)
        if depth is not None:
            return found.tolist()
        rest = np.setdiff1d(np.arange(len(self.chunks)), found)  # sorted, so ties go by position
        return np.concatenate([found, rest[order(cosine_distances(self.vectors[rest], vector))]]).tolist()

    def _nearest(self, vector: np.ndarray, depth: int) -> np.ndarray:
        """The graph's nearest `depth` positions for a query vector, nearest first, ties by position."""
        import faiss

        depth = check_k(depth, "depth")
        vector = np.asarray(vector, dtype=np.float32)[None, :]
        params = faiss.SearchParametersHNSW(efSearch=max(self.ef_search, depth))
        _, ids = self.graph.search(vector, min(depth, len(self.chunks)), params=params)
        found = ids[0][ids[0] >= 0]
        return found[np.lexsort((found, cosine_distances(self.vectors[found], vector[0])))]

    def search(self, query: str | np.ndarray, k: int = 4) -> list[Hit]:
        """The k nearest chunks the graph finds, with their exact distances, nearest first."""
        vector = self._vector(query)
        found = self.rank(vector, depth=max(check_k(k), self.ef_search))[:k]
        distances = cosine_distances(self.vectors[found], vector)
        pairs = zip(found, distances, strict=True)
        return [Hit(self.chunks[i], float(d), rank) for rank, (i, d) in enumerate(pairs, start=1)]


def recall(approximate: list[int] | np.ndarray, exact: list[int] | np.ndarray, k: int = 10) -> float:
    """Share of the exact top k that the approximate top k found.

    >>> recall([1, 2, 5], [1, 2, 3], k=3)
    0.6666666666666666
    """
    check_k(k)
    return len(set(list(approximate)[:k]) & set(list(exact)[:k])) / min(k, len(exact))


def choose(index: DenseIndex, crossover: int = CROSSOVER) -> DenseIndex:
    """The exact index below `crossover` vectors, an `HNSWIndex` over the same vectors from there on."""
    return index if len(index.chunks) < crossover else HNSWIndex.from_dense(index)
