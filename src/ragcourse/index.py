"""An on-disk index for your own folder of files: stamped, and honest about failures (chapter 8).

Three production rules from the book, in code:
- the index is stamped with what built it: every document records the embedding model's name, the
  vector dimension, the chunker's `PIPELINE_VERSION` and this module's `EXTRACTOR_VERSION`, so on
  upgrade day `check_compatible` names exactly which documents are stale and why, and a query from
  another model raises `StaleIndexError` instead of returning confident nonsense;
- one broken file does not break the folder: a document that cannot be extracted ends `failed`
  with its reason (undecodable bytes with their offset, empty, oversize, unsupported type,
  binary), stays visible in the report and can be retried, while the rest stay searchable;
- the indexer writes each chunk count itself, from what it stored; a count a client claims is
  only compared against it, and `load` refuses a manifest whose counts disagree with the vectors.

Files are read by `ragcourse.documents`, the reader `ragcourse chunk` and `ragcourse eval` use too
(Markdown, reStructuredText, HTML, PDF, plain text); files of other types are not documents and are
not attempted. Leaves out: approximate nearest-neighbour search (an exact scan), concurrent writers,
and deletion of documents that vanished from the folder. Keep the saved index itself outside the folder.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .chunking import PIPELINE_VERSION, Chunk, chunk, strategy_for
from .corpus import Document, sha256_file
from .dense import Hit, check_k, cosine_distances, top_hits
from .documents import MAX_BYTES, READER_VERSION, ExtractionError, read_document, walk

#: The reader's version (`documents.READER_VERSION`): bumped whenever `extract` turns the same bytes into other text.
EXTRACTOR_VERSION = READER_VERSION
STATUSES = ("indexed", "failed")
MANIFEST, VECTORS, FORMAT = "manifest.json", "vectors.npy", 1

Embed = Callable[[list[str]], np.ndarray]


class IndexFormatError(ValueError):
    """A saved index cannot be read as this version wrote it; the message says what to rebuild."""

    def __init__(self, folder: Path, why: str):
        super().__init__(f"index {str(folder)!r} refused: {why}. Rebuild it: "
                         f"`ragcourse index DOCS_DIR --out {folder}` (the whole index; nothing in it is used)")


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


@dataclass(frozen=True)
class CountDiscrepancy:
    """A client claimed `claimed` chunks for a document; the indexer stored `stored`."""

    doc_id: str
    claimed: int
    stored: int


def extract(path: Path, doc_id: str, max_bytes: int = MAX_BYTES) -> Document:
    """Read one file with the one reader (`documents.read_document`), or raise ExtractionError with the reason."""
    return read_document(path, doc_id, max_bytes)


def _unit_rows(vectors: np.ndarray, n: int, dim: int) -> np.ndarray:
    """Check the embedder's output shape and L2-normalise each row (zero rows raise)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.shape != (n, dim):
        raise ValueError(f"embed returned shape {vectors.shape}; expected ({n}, {dim}) for "
                         f"{n} texts at dim={dim}")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ExtractionError(f"the embedder returned a zero vector for chunk "
                              f"{int(np.argmax(norms[:, 0] == 0))}")
    return vectors / norms


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
                         extractor_version: str | None = EXTRACTOR_VERSION) -> None:
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

    def save(self, path: str | Path) -> Path:
        """Write `manifest.json` (records + chunks) and `vectors.npy` into the folder `path`."""
        self.verify()
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        manifest = {"format": FORMAT, "records": [dataclasses.asdict(r) for r in self.records],
                    "chunks": [dataclasses.asdict(c) for c in self.chunks]}
        with open(folder / (VECTORS + ".tmp"), "wb") as fh:
            np.save(fh, self.vectors, allow_pickle=False)
        os.replace(folder / (VECTORS + ".tmp"), folder / VECTORS)
        tmp = folder / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, folder / MANIFEST)
        return folder

    @classmethod
    def load(cls, path: str | Path) -> Index:
        """Read an index written by `save`; IndexFormatError (what to rebuild) if it cannot be trusted."""
        folder = Path(path)
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
            if not isinstance(manifest, dict):
                raise ValueError(f"expected a JSON object, got {type(manifest).__name__}")
        except FileNotFoundError:
            raise IndexFormatError(folder, f"{MANIFEST} is missing") from None
        except (ValueError, UnicodeDecodeError) as err:
            raise IndexFormatError(folder, f"{MANIFEST} is not valid ({err})") from err
        if manifest.get("format") != FORMAT:
            raise IndexFormatError(folder, f"format {manifest.get('format')!r} was written by another "
                                           f"version; this code reads format {FORMAT}")
        try:
            index = cls(records=tuple(DocRecord(**r) for r in manifest["records"]),
                        chunks=tuple(Chunk(**c) for c in manifest["chunks"]),
                        vectors=np.load(folder / VECTORS, allow_pickle=False))
            index.verify()
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise IndexFormatError(folder, f"{MANIFEST} and {VECTORS} disagree or are damaged "
                                           f"({type(err).__name__}: {err})") from err
        return index


@dataclass(frozen=True, eq=False)
class IngestReport:
    """The index after a run, and one record for every file this run attempted."""

    index: Index
    attempted: tuple[DocRecord, ...]
    claimed_counts: Mapping[str, int] = dataclasses.field(default_factory=dict)

    @property
    def failed(self) -> tuple[DocRecord, ...]:
        return tuple(r for r in self.attempted if r.status == "failed")

    @property
    def indexed(self) -> tuple[DocRecord, ...]:
        return tuple(r for r in self.attempted if r.status == "indexed")

    @property
    def discrepancies(self) -> tuple[CountDiscrepancy, ...]:
        """Claimed counts that differ from stored ones (a claimed file not seen counts as 0)."""
        stored = {r.doc_id: r.chunk_count for r in self.attempted}
        return tuple(CountDiscrepancy(d, n, stored.get(d, 0))
                     for d, n in sorted(self.claimed_counts.items()) if stored.get(d, 0) != n)

    def summary(self) -> str:
        """Printable: counts, then one line per failure and per count discrepancy."""
        lines = [f"{len(self.attempted)} file(s): {len(self.indexed)} indexed, "
                 f"{len(self.failed)} failed, "
                 f"{sum(r.chunk_count for r in self.indexed)} chunks stored"]
        lines += [f"  FAILED {r.doc_id}: {r.reason}" for r in self.failed]
        lines += [f"  COUNT {d.doc_id}: claimed {d.claimed}, stored {d.stored}"
                  for d in self.discrepancies]
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        """One row per attempted file: doc_id, status, reason, chunk_count, claimed_count."""
        cols = ["doc_id", "status", "reason", "chunk_count", "claimed_count"]
        return pd.DataFrame([[getattr(r, c) for c in cols] for r in self.attempted], columns=cols)


@dataclass(frozen=True)
class _Attempt:
    """One file's outcome before it is stored: its record (count not yet written) and data."""

    record: DocRecord
    chunks: tuple[Chunk, ...]
    vectors: np.ndarray | None


def _chunks_of(path: Path, doc_id: str, strategy: str, max_bytes: int) -> list[Chunk]:
    """Extract and chunk one file; every failure becomes an ExtractionError with its reason."""
    try:
        document = extract(path, doc_id, max_bytes)
    except OSError as err:
        raise ExtractionError(f"cannot read: {err.strerror or err}") from err
    chunks = chunk(document, strategy)
    if not chunks:
        raise ExtractionError("no chunks: the chunker found no content")
    return chunks


def _embed_chunks(embed: Embed, chunks: Sequence[Chunk], dim: int) -> np.ndarray:
    """Embed chunk `text`s; an embedder exception fails the document, a wrong shape raises."""
    try:
        raw = embed([c.text for c in chunks])
    except Exception as err:  # a failing embedding service must not take the folder down
        raise ExtractionError(f"embedding failed: {type(err).__name__}: {err}") from err
    return _unit_rows(raw, len(chunks), dim)


def _sha256(path: Path) -> str:
    """The file's sha256, or "" when it cannot be read (the attempt then records why)."""
    try:
        return sha256_file(path) if path.is_file() else ""  # never open a named pipe or a folder
    except OSError:
        return ""


def _attempt(folder: Path, doc_id: str, embed: Embed, stamp: dict, max_bytes: int,
             claimed: int | None, attempts: int) -> _Attempt:
    """Try one file; a failure is recorded with its reason instead of being raised."""
    path = folder / doc_id
    base = dict(doc_id=doc_id, chunk_count=0, claimed_count=claimed, sha256=_sha256(path),
                attempts=attempts, **stamp)
    try:
        chunks = _chunks_of(path, doc_id, stamp["strategy"], max_bytes)
        vectors = _embed_chunks(embed, chunks, stamp["dim"])
    except ExtractionError as err:
        return _Attempt(DocRecord(status="failed", reason=str(err), **base), (), None)
    return _Attempt(DocRecord(status="indexed", reason="", **base), tuple(chunks), vectors)


def _merge(index: Index, attempts: Sequence[_Attempt], dim: int) -> Index:
    """Replace the attempted documents in `index`, then write every chunk count from the store."""
    redone = {a.record.doc_id for a in attempts}
    keep = np.array([c.doc_id not in redone for c in index.chunks], dtype=bool)
    old_chunks = [c for c, k in zip(index.chunks, keep, strict=True) if k]
    if old_chunks and index.vectors.shape[1] != dim:
        others = {c.doc_id: (f"dimension {index.vectors.shape[1]} != {dim}: vectors of two "
                             "sizes cannot share one index",) for c in old_chunks}
        raise StaleIndexError(others)
    chunks = old_chunks + [c for a in attempts for c in a.chunks]
    blocks = [index.vectors[keep].reshape(len(old_chunks), dim)]
    blocks += [a.vectors for a in attempts if a.vectors is not None]
    vectors = np.concatenate(blocks).astype(np.float32)
    by_position = sorted(range(len(chunks)), key=lambda i: (chunks[i].doc_id, chunks[i].index))
    chunks = [chunks[i] for i in by_position]
    stored = Counter(c.doc_id for c in chunks)
    records = [r for r in index.records if r.doc_id not in redone]
    records += [dataclasses.replace(a.record, chunk_count=stored.get(a.record.doc_id, 0))
                for a in attempts]
    merged = Index(tuple(sorted(records, key=lambda r: r.doc_id)), tuple(chunks),
                   vectors[by_position].reshape(len(chunks), dim))
    merged.verify()
    return merged


def _check_settings(model_name: str, dim: int, strategy: str, max_bytes: int) -> None:
    strategy_for(strategy)
    if not model_name:
        raise ValueError(f"model_name must name the embedding model; got {model_name!r}")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be an integer >= 1; got {dim!r}")
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be >= 1; got {max_bytes!r}")


def reindex(index: Index, folder: str | Path, doc_ids: Sequence[str], *, embed: Embed,
            model_name: str, dim: int, strategy: str = "E", max_bytes: int = MAX_BYTES,
            claimed_counts: Mapping[str, int] | None = None) -> IngestReport:
    """(Re)build the given documents of `folder` into `index`; the others are left as they are."""
    _check_settings(model_name, dim, strategy, max_bytes)
    stamp = dict(model_name=model_name, dim=dim, pipeline_version=PIPELINE_VERSION,
                 extractor_version=EXTRACTOR_VERSION, strategy=strategy)
    claimed = dict(claimed_counts or {})
    previous = {r.doc_id: r.attempts for r in index.records}
    attempts = [_attempt(Path(folder), d, embed, stamp, max_bytes, claimed.get(d),
                         previous.get(d, 0) + 1) for d in sorted(set(doc_ids))]
    merged = _merge(index, attempts, dim)
    written = tuple(merged.record(a.record.doc_id) for a in attempts)
    return IngestReport(index=merged, attempted=written, claimed_counts=claimed)


def ingest_folder(folder: str | Path, *, embed: Embed, model_name: str, dim: int,
                  strategy: str = "E", max_bytes: int = MAX_BYTES,
                  claimed_counts: Mapping[str, int] | None = None,
                  index: Index | None = None) -> IngestReport:
    """Index every document under `folder` (`documents.walk`) into `index` (default: a new one); each is in the report.
    `embed(texts)` returns (len(texts), dim); `claimed_counts` (doc id -> chunks a client declared) are compared."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"folder {str(root)!r} is not a directory")
    doc_ids = walk(root).attempted  # documents, and links out, loops, pipes, unreadable folders (they fail)
    return reindex(index or Index.empty(dim), root, doc_ids, embed=embed, model_name=model_name,
                   dim=dim, strategy=strategy, max_bytes=max_bytes,
                   claimed_counts=claimed_counts)


def retry_failed(index: Index, folder: str | Path, *, embed: Embed, model_name: str, dim: int,
                 strategy: str = "E", max_bytes: int = MAX_BYTES) -> IngestReport:
    """Try every `failed` document again; the report lists exactly those attempts."""
    return reindex(index, folder, [r.doc_id for r in index.failed], embed=embed,
                   model_name=model_name, dim=dim, strategy=strategy, max_bytes=max_bytes)
