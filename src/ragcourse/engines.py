"""The book's retrieval on a real search engine: a Qdrant backend for dense, BM25 and hybrid (appendix 2).

`QdrantEngine.connect()` runs Qdrant's client in local mode (in-process, in memory, or on disk with
`path=`); `RAGCOURSE_QDRANT_URL` or `url=` points the same code at a Qdrant server or cluster.
`index(retriever)` stores a `pipeline.Retriever`'s chunks; `rank` and `rankings` answer like the
retriever does, so `evaluation.evaluate` scores the engine with the same table.

How each method maps onto Qdrant, and the tie rules under which the rankings equal the package's:
- dense: exact cosine search (`SearchParams(exact=True)`) over the same unit vectors;
- BM25: the package's own BM25 contributions stored as Qdrant *sparse vectors* (one dimension per
  term), the query as its term counts: the dot product is the book's BM25 score by construction.
  Qdrant's built-in BM25 text index was not used: local mode accepts only its default tokenizer,
  which is not the book's ``[a-z0-9]+``, and its statistics change whenever a point is added;
- hybrid: Qdrant's RRF over the two lists. Qdrant counts ranks from 0, so its k=61 is the book's
  c=60 (`fusion.RRF_C`). Its BM25 list holds only chunks that share a term with the query: the package's ranks the
  rest too (by position, score 0), so every stored sparse vector carries one extra *floor*
  dimension whose tiny weight falls with position. It adds at most `FLOOR` to a score (below float32
  resolution for any real match) and puts the zero-score chunks in position order.
- Tie rule: Qdrant stores float32, the package computes in float64 and orders by scores rounded to 6
  places, ties by position. The engine's scores are re-sorted by that same rule, so rankings can
  differ only where two chunks' scores are closer than float32 resolution (about 1e-6 relative).

Indexing is idempotent and stamped like `ragcourse.index`: the collection records the model, its
fingerprint, the chunker's `PIPELINE_VERSION`, BM25's k1, b and tokenizer and a hash of the chunk
texts; an existing collection with another stamp raises `index.StaleIndexError` (`rebuild=True`
drops it). `rank(..., readable=...)` filters by document inside the engine (a payload filter, chapter 11);
BM25's statistics stay those of the whole collection. Leaves out: updating single documents (BM25's idf
depends on every text, so any change rebuilds), quantization. The tests run local mode; the server path is the
same client code pointed at a URL, and is not exercised by them.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import bm25 as bm25_module
from .bm25 import tokenize
from .chunking import PIPELINE_VERSION
from .dense import texts_sha256
from .fusion import RRF_C
from .index import StaleIndexError
from .pipeline import METHODS, rank_all
from .precision import rounded_scores

URL_VARIABLE = "RAGCOURSE_QDRANT_URL"
#: Largest weight of the floor dimension (see the module docstring); far below float32 resolution of a match.
FLOOR = 1e-12
DENSE, SPARSE = "dense", "bm25"
ENGINES = ("qdrant",)


@dataclass(frozen=True)
class Stamp:
    """What built a collection; two stamps that differ mean the collection must be rebuilt."""

    model: str
    fingerprint: str
    dim: int
    pipeline_version: str
    strategy: str
    bm25: str  # k1, b and tokenizer, as text
    texts_sha256: str
    count: int

    def differences(self, other: Mapping) -> tuple[str, ...]:
        """Why a stored stamp (a dict) does not match this one; empty when it does."""
        mine = self.__dict__
        return tuple(f"{key} is {other.get(key)!r}, expected {mine[key]!r}"
                     for key in mine if other.get(key) != mine[key])


def stamp_for(retriever) -> Stamp:
    """The stamp of a `pipeline.Retriever`'s chunks, embedder and BM25 settings."""
    embedder, bm25 = retriever.dense.embedder, retriever.bm25
    digest = texts_sha256(c.text for c in retriever.chunks)
    settings = json.dumps({"k1": bm25.k1, "b": bm25.b, "tokenizer": bm25_module.TOKEN_PATTERN}, sort_keys=True)
    return Stamp(embedder.name, embedder.fingerprint, embedder.dim, PIPELINE_VERSION,
                 retriever.strategy, settings, digest, len(retriever.chunks))


def sparse_rows(bm25) -> list[tuple[list[int], list[float]]]:
    """Each text's BM25 contributions as (term ids, values), plus the floor dimension (id = vocabulary size)."""
    columns = bm25.matrix.tocsc()
    floor_id, n = len(bm25.vocab), columns.shape[1]
    rows = []
    for col in range(n):
        lo, hi = columns.indptr[col], columns.indptr[col + 1]
        floor = FLOOR * (n - col) / n  # earlier positions weigh more: zero-score ties go by position
        rows.append((columns.indices[lo:hi].tolist() + [floor_id], columns.data[lo:hi].tolist() + [floor]))
    return rows


def sparse_query(bm25, query: str) -> tuple[list[int], list[float]]:
    """A query as term ids and counts (repeats counted, as BM25 does), plus the floor dimension at 1."""
    counts = Counter(bm25.vocab[t] for t in tokenize(query) if t in bm25.vocab)
    ids = sorted(counts)
    return ids + [len(bm25.vocab)], [float(counts[i]) for i in ids] + [1.0]


def tie_ordered(ids: Sequence[int], scores: Sequence[float], n: int, descending: bool = True) -> list[int]:
    """The engine's hits in the package's order (rounded score, then position), then any missing position below n.

    >>> tie_ordered([2, 0], [0.5, 0.5], n=4)
    [0, 2, 1, 3]
    """
    ids = np.asarray(ids, dtype=np.int64)
    values = rounded_scores(scores)
    ordered = ids[np.lexsort((ids, -values if descending else values))].tolist()
    seen = set(ordered)
    return ordered + [i for i in range(n) if i not in seen]


class QdrantEngine:
    """One Qdrant collection holding a retriever's chunks: dense vectors and BM25 sparse vectors."""

    def __init__(self, client, collection: str = "ragcourse") -> None:
        self.client, self.collection = client, collection
        self.retriever = None

    @classmethod
    def connect(cls, url: str | None = None, path: str | None = None,
                collection: str = "ragcourse") -> QdrantEngine:
        """Local mode in memory by default; `path` keeps it on disk; `url` (or $RAGCOURSE_QDRANT_URL) a server."""
        from qdrant_client import QdrantClient

        url = url or os.environ.get(URL_VARIABLE) or None
        if url and path:
            raise ValueError(f"url={url!r} and path={path!r}: give a server url or a local path, not both")
        client = QdrantClient(url=url, check_compatibility=False) if url else QdrantClient(path=path or ":memory:")
        return cls(client, collection)

    def stored_stamp(self) -> dict | None:
        """The stamp recorded on the collection, or None when there is no collection."""
        if not self.client.collection_exists(self.collection):
            return None
        metadata = self.client.get_collection(self.collection).config.metadata or {}
        return dict(metadata.get("ragcourse", {}))

    def index(self, retriever, rebuild: bool = False, batch: int = 256) -> bool:
        """Store the retriever's chunks unless an identical stamp is there; True when it (re)built.

        A collection stamped otherwise raises `StaleIndexError` naming the differences, unless `rebuild`.
        """
        stamp, stored = stamp_for(retriever), self.stored_stamp()
        self.retriever = retriever
        if stored is not None and not rebuild:
            why = stamp.differences(stored)
            points = self.client.count(self.collection, exact=True).count
            if points != stamp.count:
                why += (f"holds {points} points, expected {stamp.count}",)
            if why:
                raise StaleIndexError({f"qdrant collection {self.collection!r}": why})
            return False
        self._create(stamp)
        self._upload(retriever, batch)
        return True

    def _create(self, stamp: Stamp) -> None:
        from qdrant_client import models

        if self.client.collection_exists(self.collection):
            self.client.delete_collection(self.collection)
        self.client.create_collection(
            self.collection,
            vectors_config={DENSE: models.VectorParams(size=stamp.dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE: models.SparseVectorParams()},
            metadata={"ragcourse": stamp.__dict__},
        )

    def _upload(self, retriever, batch: int) -> None:
        from qdrant_client import models

        rows, vectors = sparse_rows(retriever.bm25), retriever.dense.vectors
        for start in range(0, len(rows), batch):
            points = [
                models.PointStruct(
                    id=i, payload={"position": i, "doc_id": retriever.chunks[i].doc_id},
                    vector={DENSE: vectors[i].tolist(),
                            SPARSE: models.SparseVector(indices=rows[i][0], values=rows[i][1])})
                for i in range(start, min(start + batch, len(rows)))
            ]
            self.client.upsert(self.collection, points=points, wait=True)

    def _require(self):
        if self.retriever is None:
            raise RuntimeError("no collection indexed: call engine.index(retriever) first")
        return self.retriever

    def _dense(self, vector: np.ndarray, limit: int, only=None):
        from qdrant_client import models

        return models.Prefetch(query=np.asarray(vector, dtype=np.float32).tolist(), using=DENSE,
                               limit=limit, params=models.SearchParams(exact=True), filter=only)

    def _sparse(self, query: str, limit: int, only=None):
        from qdrant_client import models

        ids, values = sparse_query(self._require().bm25, query)
        return models.Prefetch(query=models.SparseVector(indices=ids, values=values), using=SPARSE,
                               limit=limit, filter=only)

    def _points(self, prefetch, limit: int):
        """Run one prefetch as the main query (same query, vector name, params and filter)."""
        result = self.client.query_points(self.collection, query=prefetch.query, using=prefetch.using,
                                          limit=limit, search_params=prefetch.params,
                                          query_filter=prefetch.filter)
        return result.points

    @staticmethod
    def readable_filter(readable: Iterable[str] | None):
        """A payload filter keeping only chunks of the `readable` documents (chapter 11); None keeps all."""
        from qdrant_client import models

        if readable is None:
            return None
        return models.Filter(must=[models.FieldCondition(key="doc_id", match=models.MatchAny(any=sorted(readable)))])

    def rank(self, query: str, method: str = "dense", vector: np.ndarray | None = None,
             limit: int | None = None, readable: Iterable[str] | None = None) -> list[int]:
        """Chunk positions best first, from the engine, in the package's tie order (module docstring).

        `readable` (document ids) applies a payload filter inside the engine: no other chunk is returned.
        """
        from qdrant_client import models

        if method not in METHODS:
            raise ValueError(f"method {method!r} is not one of {list(METHODS)}")
        retriever = self._require()
        n = len(retriever.chunks)
        limit = n if limit is None else limit
        if method != "bm25" and vector is None:
            vector = retriever.query_vector(query)
        only = self.readable_filter(readable)
        # A full ranking lists every chunk (padded in position order); a top-k or a filtered one only what was found.
        pad = n if limit >= n and only is None else 0
        if method == "dense":
            points = self._points(self._dense(vector, limit, only), limit)
            return tie_ordered([p.id for p in points], [1.0 - p.score for p in points], pad, descending=False)
        if method == "bm25":
            points = self._points(self._sparse(query, limit, only), limit)
            return tie_ordered([p.id for p in points], [p.score for p in points], pad)
        points = self.client.query_points(
            self.collection, prefetch=[self._dense(vector, n, only), self._sparse(query, n, only)],
            # Qdrant counts ranks from 0: its k is the book's c plus one
            query=models.RrfQuery(rrf=models.Rrf(k=RRF_C + 1)), limit=limit, query_filter=only).points
        return [int(p.id) for p in points]

    def rankings(self, queries: Iterable, method: str = "dense", depth: int | None = None,
                 vectors: Mapping[str, np.ndarray] | None = None) -> dict:
        """query id -> chunks best first, like `pipeline.Retriever.rankings`, for `evaluation.evaluate`."""
        return rank_all(self.rank, self._require().chunks, queries, method, depth, vectors)


def connect(engine: str = "qdrant", url: str | None = None, path: str | None = None) -> QdrantEngine:
    """An engine by name (only "qdrant" so far); see `QdrantEngine.connect`."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r} is not one of {list(ENGINES)}")
    return QdrantEngine.connect(url=url, path=path)
