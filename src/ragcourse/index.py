"""An index of your own folder of files: records stamped with what built them, chunks and vectors (chapter 8).

Two production rules from the book, in code:
- the index is stamped with what built it: every document records the embedding model's name, the
  vector dimension, the chunker's `PIPELINE_VERSION` and the reader's `documents.READER_VERSION`, so on
  upgrade day `check_compatible` names exactly which documents are stale and why, and a query from
  another model raises `StaleIndexError` instead of returning confident nonsense;
- the indexer writes each chunk count itself, from what it stored; a count a client claims is only
  compared against it, and `verify` refuses records whose counts disagree with the chunks and vectors.

An index is one way of keeping a `store.Store`: `Index.store` hands its chunks and vectors to the retriever
the book's pipeline uses (`pipeline.Retriever.over`). The rest of chapter 8 lives beside it, one idea a
module: `index_format` (saving and loading, one atomic commit per version), `index_lock` (one writer at a
time), `index_sync` (keeping up with a folder) and `index_report` (what a run did). Leaves out: approximate
nearest-neighbour search (an exact scan).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .chunking import PIPELINE_VERSION, Chunk
from .counts import check_k
from .dense import Hit, cosine_distances, top_hits
from .documents import READER_VERSION
from .store import Stamp, Store

STATUSES = ("indexed", "failed")


class StaleIndexError(ValueError):
    """Documents were indexed with another model, dimension or pipeline; `.stale` says which/why."""

    def __init__(self, stale: Mapping[str, tuple[str, ...]]):
        self.stale = dict(sorted(stale.items()))
        lines = [f"  {doc}: {'; '.join(why)}" for doc, why in self.stale.items()]
        super().__init__(f"{len(self.stale)} document(s) must be rebuilt:\n" + "\n".join(lines))

    @property
    def doc_ids(self) -> tuple[str, ...]:
        return tuple(self.stale)


@dataclass(frozen=True)
class DocRecord:
    """What the indexer knows about one input file, written when it finished with it."""

    doc_id: str  # path relative to the folder, with "/" separators
    status: str  # "indexed" or "failed"
    reason: str  # why it failed; "" when indexed
    chunk_count: int  # chunks actually stored for it (0 when failed)
    claimed_count: int | None  # what a client said it would be, if anything
    model_name: str
    dim: int
    pipeline_version: str
    extractor_version: str
    strategy: str
    sha256: str  # of the file's bytes ("" if unreadable)
    attempts: int


@dataclass(frozen=True, eq=False)
class Index:
    """Records for every input file, the chunks of indexed ones, and one unit vector per chunk."""

    records: tuple[DocRecord, ...]
    chunks: tuple[Chunk, ...]
    vectors: np.ndarray

    @classmethod
    def empty(cls, dim: int = 0) -> Index:
        return cls(records=(), chunks=(), vectors=np.zeros((0, dim), dtype=np.float32))

    def record(self, doc_id: str) -> DocRecord:
        for rec in self.records:
            if rec.doc_id == doc_id:
                return rec
        raise KeyError(f"no record for {doc_id!r}; known: {[r.doc_id for r in self.records]}")

    @property
    def failed(self) -> tuple[DocRecord, ...]:
        return tuple(r for r in self.records if r.status == "failed")

    @property
    def indexed(self) -> tuple[DocRecord, ...]:
        return tuple(r for r in self.records if r.status == "indexed")

    def stale_reasons(self, model_name: str, dim: int, pipeline_version: str | None,
                      extractor_version: str | None) -> dict[str, tuple[str, ...]]:
        """For each indexed document stamped differently, why (None skips that comparison)."""
        stale = {}
        for rec in self.indexed:
            why = []
            if rec.model_name != model_name:
                why.append(f"model {rec.model_name!r} != {model_name!r}")
            if rec.dim != dim:
                why.append(f"dimension {rec.dim} != {dim}")
            if pipeline_version is not None and rec.pipeline_version != pipeline_version:
                why.append(f"pipeline {rec.pipeline_version!r} != {pipeline_version!r}")
            if extractor_version is not None and rec.extractor_version != extractor_version:
                why.append(f"extractor {rec.extractor_version!r} != {extractor_version!r}")
            if why:
                stale[rec.doc_id] = tuple(why)
        return stale

    def check_compatible(self, model_name: str, dim: int,
                         pipeline_version: str | None = PIPELINE_VERSION,
                         extractor_version: str | None = READER_VERSION) -> None:
        """Raise StaleIndexError naming every indexed document that must be rebuilt, and why."""
        stale = self.stale_reasons(model_name, dim, pipeline_version, extractor_version)
        if stale:
            raise StaleIndexError(stale)

    def search(self, query_vector: np.ndarray, k: int = 4, *, model_name: str) -> list[Hit]:
        """The k nearest chunks by cosine distance (ties: storage order), as ranked Hits; StaleIndexError if an
        indexed document is from another model or dimension than the query's `model_name` (not an older pipeline)."""
        check_k(k)
        query = np.asarray(query_vector, dtype=np.float32).ravel()
        self.check_compatible(model_name, query.shape[0], None, None)
        norm = float(np.linalg.norm(query))
        if norm == 0:
            raise ValueError("query_vector is all zeros; it has no direction to compare")
        if not self.chunks:
            return []
        return top_hits(self.chunks, cosine_distances(self.vectors, query / norm), k)

    def verify(self) -> None:
        """ValueError unless every record's count equals the chunks and vectors stored for it."""
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.chunks):
            raise ValueError(f"{self.vectors.shape[0] if self.vectors.ndim else 0} vectors stored for "
                             f"{len(self.chunks)} chunks: every chunk needs exactly one")
        stored = Counter(ch.doc_id for ch in self.chunks)
        for rec in self.records:
            if rec.status not in STATUSES:
                raise ValueError(f"{rec.doc_id}: status {rec.status!r} not in {STATUSES}")
            held = stored.pop(rec.doc_id, 0)
            if held != rec.chunk_count or (rec.status == "failed" and held):
                raise ValueError(f"{rec.doc_id} ({rec.status}): record says {rec.chunk_count} "
                                 f"chunks, the store holds {held}")
        if stored:
            raise ValueError(f"chunks stored for documents without a record: {sorted(stored)}")

    def store(self) -> Store:
        """The indexed chunks and their vectors as a `store.Store`, stamped as their records are; StaleIndexError
        when the records disagree (documents embedded by two models, or chunked two ways)."""
        stamps = sorted({stamp_of(r) for r in self.indexed}, key=repr)
        if not stamps:
            raise ValueError("the index holds no indexed document: there is nothing to search")
        if len(stamps) > 1:  # one store has one stamp: name every document with its own
            raise StaleIndexError({r.doc_id: (f"model {r.model_name!r}, dimension {r.dim}, strategy {r.strategy}, "
                                              f"pipeline {r.pipeline_version!r}: the index mixes {len(stamps)}",)
                                   for r in self.indexed})
        return Store.of(self.chunks, self.vectors, stamps[0])


def stamp_of(record: DocRecord) -> Stamp:
    """The stamp of the store an indexed document's chunks belong to."""
    return Stamp(record.model_name, record.dim, record.strategy, record.pipeline_version)
