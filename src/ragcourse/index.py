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

Run again, the index keeps up with the folder (`sync_folder`, what `ragcourse index` does):
- sync by content hash: an unchanged file costs a `stat` and a hash; a changed or new file is read and
  chunked, and only chunk texts the index does not hold yet are embedded (so the model loads only then,
  and a renamed file whose chunk texts are unchanged costs no embedding); a vanished file's chunks go;
- one atomic commit (`Index.save`): the vectors go to a new version folder `vNNNNNN/`, the manifest that
  names them to a temporary file, both fsynced, and one rename of `manifest.json` makes the version
  current; a reader always sees the old version or the new one, and leftovers of a killed writer are
  removed at the next start;
- one writer at a time (`writer_lock`): `writer.lock` holds the writer's process id; a second writer
  waits (or, told not to, exits naming the first); a lock left by a dead process is taken over; readers
  take no lock and never wait;
- inputs are listed openly (`list_folder`): links out of the folder, link loops, FIFOs and other
  special files, and folders that cannot be listed appear in the report with their reason.

Files are read by `ragcourse.documents`, the reader `ragcourse chunk` and `ragcourse eval` use too
(Markdown, reStructuredText, HTML, PDF, plain text); files of other types are not documents and are
counted, not attempted. Leaves out: approximate nearest-neighbour search (an exact scan), and locking
across machines (`flock` on a network file system may not hold). Keep the saved index outside the folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .chunking import PIPELINE_VERSION, Chunk, chunk, strategy_for
from .corpus import Document, sha256_file
from .dense import Hit, check_k, cosine_distances, top_hits
from .documents import MAX_BYTES, READER_VERSION, ExtractionError, Failure, printable, read_document, walk

#: The reader's version (`documents.READER_VERSION`): bumped whenever `extract` turns the same bytes into other text.
EXTRACTOR_VERSION = READER_VERSION
STATUSES = ("indexed", "failed")
MANIFEST, VECTORS, LOCK, FORMAT = "manifest.json", "vectors.npy", "writer.lock", 1

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

    def save(self, path: str | Path, on_step: Callable[[str], None] | None = None) -> Path:
        """Commit this index to the folder `path` atomically (see `COMMIT_STEPS`); `on_step(step)` is called after
        each step (a test's fault injection). Readers see the old version until the final rename, then the new."""
        self.verify()
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        step = on_step or (lambda _: None)
        number = max([0, *_versions(folder)]) + 1
        tmp = folder / f"{_version_name(number)}.tmp-{os.getpid()}"
        tmp.mkdir()
        step("folder")
        with open(tmp / VECTORS, "wb") as fh:
            np.save(fh, self.vectors, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        step("vectors")
        os.rename(tmp, folder / _version_name(number))
        _fsync_folder(folder)
        step("version")
        manifest = {"format": FORMAT, "vectors": f"{_version_name(number)}/{VECTORS}",
                    "records": [dataclasses.asdict(r) for r in self.records],
                    "chunks": [dataclasses.asdict(c) for c in self.chunks]}
        pending = folder / f"{MANIFEST}.tmp-{os.getpid()}"
        with open(pending, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(manifest, ensure_ascii=False, indent=1))
            fh.flush()
            os.fsync(fh.fileno())
        step("manifest")
        os.replace(pending, folder / MANIFEST)  # the commit: one rename
        _fsync_folder(folder)
        step("swap")
        clean_leftovers(folder, orphans=False)
        step("clean")
        return folder

    @classmethod
    def load(cls, path: str | Path) -> Index:
        """Read the current version of an index written by `save`, without waiting for a writer;
        IndexFormatError (what to rebuild) if it cannot be trusted."""
        folder = Path(path)
        manifest, vectors = _read_version(folder)
        try:
            index = cls(records=tuple(DocRecord(**r) for r in manifest["records"]),
                        chunks=tuple(Chunk(**c) for c in manifest["chunks"]),
                        vectors=vectors)
            index.verify()
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise IndexFormatError(folder, f"{MANIFEST} and {VECTORS} disagree or are damaged "
                                           f"({type(err).__name__}: {err})") from err
        return index


#: The steps of `Index.save`, in order; the new version is current from "swap" on.
COMMIT_STEPS = ("folder", "vectors", "version", "manifest", "swap", "clean")
_VERSION = re.compile(r"v(\d{6})")
_LEFTOVER = re.compile(rf"(v\d{{6}}|{re.escape(MANIFEST)})\.tmp-(\d+)")


def _version_name(number: int) -> str:
    """The folder of a version: `_version_name(3) -> 'v000003'`.

    >>> _version_name(3)
    'v000003'
    """
    return f"v{number:06d}"


def _versions(folder: Path) -> list[int]:
    """Numbers of the complete version folders in `folder` (``v000003`` -> 3)."""
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _VERSION.fullmatch(p.name)) and p.is_dir())


def _fsync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable (POSIX: fsync the directory)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_manifest(folder: Path) -> dict:
    """The parsed `manifest.json`, or IndexFormatError saying why it cannot be used."""
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
    return manifest


def _read_version(folder: Path) -> tuple[dict, np.ndarray]:
    """The current manifest and the vectors it names (read again if a writer retired them meanwhile)."""
    for _ in range(3):
        manifest = _read_manifest(folder)
        try:
            return manifest, np.load(folder / _vectors_name(folder, manifest), allow_pickle=False)
        except FileNotFoundError as err:
            missing = err
        except (OSError, ValueError) as err:
            raise IndexFormatError(folder, f"{MANIFEST} and {VECTORS} disagree or are damaged "
                                           f"({type(err).__name__}: {err})") from err
    raise IndexFormatError(folder, f"the vectors {MANIFEST} names are missing ({missing})")


def _vectors_name(folder: Path, manifest: dict) -> str:
    """The vectors file a manifest names: ``vNNNNNN/vectors.npy`` (``vectors.npy`` before versions existed)."""
    name = manifest.get("vectors", VECTORS)
    if name != VECTORS and not (isinstance(name, str) and re.fullmatch(rf"v\d{{6}}/{re.escape(VECTORS)}", name)):
        raise IndexFormatError(folder, f"{MANIFEST} names vectors {name!r}, not a version of this index")
    return name


def committed_version(path: str | Path) -> int:
    """The version number `manifest.json` makes current (0: none yet, or written before versions existed)."""
    folder = Path(path)
    if not (folder / MANIFEST).exists():
        return 0
    match = _VERSION.match(_vectors_name(folder, _read_manifest(folder)))
    return int(match.group(1)) if match else 0


def _alive(pid: int) -> bool:
    """Whether a process with this id exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def _is_leftover(name: str, keep: set[int], current: int, orphans: bool) -> bool:
    """Whether `clean_leftovers` removes the entry `name` (see there)."""
    if leftover := _LEFTOVER.fullmatch(name):
        return int(leftover.group(2)) == os.getpid() or not _alive(int(leftover.group(2)))
    if version := _VERSION.fullmatch(name):
        number = int(version.group(1))
        return number not in keep and (orphans or number < current)
    return name == VECTORS and current > 0  # unversioned vectors of an index saved before versions existed


def foreign_entries(path: str | Path) -> list[str]:
    """Names in `path` that an index never writes (a user's files: the index refuses such a folder, since
    cleaning a killed writer's leftovers deletes by name). A missing folder has none."""
    folder = Path(path)
    if not folder.is_dir():
        return []
    own = (MANIFEST, LOCK, VECTORS)  # vectors.npy at the top: an index saved before versions
    return sorted(e.name for e in folder.iterdir() if e.name not in own and not _VERSION.fullmatch(e.name)
                  and not _LEFTOVER.fullmatch(e.name))


def clean_leftovers(path: str | Path, orphans: bool = True) -> tuple[str, ...]:
    """Remove what killed writers left in an index folder: temporary files of dead processes, versions older than
    the one before the current (kept for readers still opening it) and, with `orphans`, versions newer than the
    current (renamed but never committed; only safe under the writer lock). Returns the names removed."""
    folder = Path(path)
    if not folder.is_dir():
        return ()
    current = committed_version(folder) if (folder / MANIFEST).exists() else 0
    older = [n for n in _versions(folder) if n < current]
    keep = {current, *older[-1:]}
    removed = [e.name for e in sorted(folder.iterdir()) if _is_leftover(e.name, keep, current, orphans)]
    for name in removed:
        shutil.rmtree(folder / name) if (folder / name).is_dir() else (folder / name).unlink()
    return tuple(removed)


class WriterBusyError(RuntimeError):
    """Another live writer holds the index; the message names its process id."""


@dataclass(frozen=True)
class WriterLock:
    """This process holds the index's writer lock; whom it waited for and whose dead lock it took over, if any."""

    path: Path
    pid: int
    waited_for: int | None
    took_over: int | None


def _holder(fd: int) -> int | None:
    """The process id written in a lock file (None when empty or unreadable)."""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


@contextlib.contextmanager
def writer_lock(path: str | Path, *, wait: bool = True,
                notify: Callable[[str], None] | None = None) -> Iterator[WriterLock]:
    """Hold `path`/writer.lock (flock, so the kernel frees it when its holder dies) with this process's id in it;
    a live holder is waited for (`notify` says whom), or with `wait=False` named in a WriterBusyError."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        waited = None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waited = _holder(fd)
            if not wait:
                raise WriterBusyError(f"another writer (pid {waited}) is updating {str(folder)!r}; "
                                      "try again when it has finished") from None
            (notify or (lambda _: None))(f"waiting for the writer with pid {waited} to finish {str(folder)!r}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        left = _holder(fd)  # a writer empties the file on release: a pid still here is a killed writer's
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        os.fsync(fd)
        dead = left if left not in (None, waited, os.getpid()) and not _alive(left) else None
        try:
            yield WriterLock(folder / LOCK, os.getpid(), waited, dead)
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the flock


#: Something under the folder that is not an input, and why: the record `documents.walk` gives its problems.
Skipped = Failure


@dataclass(frozen=True)
class Listing:
    """A folder's input files (relative paths, sorted) and what was left out, with its reason."""

    files: tuple[str, ...]
    skipped: tuple[Skipped, ...]


NOT_A_DOCUMENT = "not a document (by type)"


def list_folder(folder: str | Path) -> Listing:
    """The folder as `documents.walk` sees it: its document files are the inputs; links out, loops, FIFOs,
    unreadable folders and files that are not documents are `skipped`, each with its reason."""
    found = walk(Path(folder))
    skipped = list(found.problems)
    skipped += [Skipped(path, NOT_A_DOCUMENT) for path in found.skipped]
    return Listing(found.files, tuple(sorted(skipped, key=lambda k: k.path)))


@dataclass(frozen=True)
class Changes:
    """What a sync found: files added, changed (bytes, stamp, or a passing failure), deleted and renamed (same
    bytes, new path), how many were unchanged, and how many chunk vectors it embedded or reused."""

    added: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...]  # (old path, new path)
    unchanged: int
    embedded: int
    reused: int

    def line(self) -> str:
        """One printable line.

        >>> Changes(("new.md",), (), ("old.md",), (("a.md", "b.md"),), 7, 3, 12).line()
        'sync: 1 added, 0 changed, 1 deleted, 1 renamed, 7 unchanged; 3 chunk(s) embedded, 12 reused'
        """
        return (f"sync: {len(self.added)} added, {len(self.changed)} changed, {len(self.deleted)} deleted, "
                f"{len(self.renamed)} renamed, {self.unchanged} unchanged; {self.embedded} chunk(s) embedded, "
                f"{self.reused} reused")


@dataclass(frozen=True, eq=False)
class IngestReport:
    """The index after a run, and one record for every file this run attempted; a sync adds its `changes`,
    and `skipped` lists what under the folder was not an input, with its reason."""

    index: Index
    attempted: tuple[DocRecord, ...]
    claimed_counts: Mapping[str, int] = dataclasses.field(default_factory=dict)
    changes: Changes | None = None
    skipped: tuple[Skipped, ...] = ()

    @property
    def failed(self) -> tuple[DocRecord, ...]:
        return tuple(r for r in self.attempted if r.status == "failed")

    @property
    def indexed(self) -> tuple[DocRecord, ...]:
        return tuple(r for r in self.attempted if r.status == "indexed")

    @property
    def discrepancies(self) -> tuple[CountDiscrepancy, ...]:
        """Claimed counts that differ from stored ones (a claimed file not seen counts as 0)."""
        stored = {r.doc_id: r.chunk_count for r in (self.attempted if self.changes is None else self.index.records)}
        return tuple(CountDiscrepancy(d, n, stored.get(d, 0))
                     for d, n in sorted(self.claimed_counts.items()) if stored.get(d, 0) != n)

    def summary(self) -> str:
        """Printable: counts, then one line per failure, per count discrepancy and per skipped path; a sync counts
        every file in the index (not only those attempted) and adds what it changed."""
        files = self.attempted if self.changes is None else self.index.records
        indexed, failed = [r for r in files if r.status == "indexed"], [r for r in files if r.status == "failed"]
        lines = [f"{len(files)} file(s): {len(indexed)} indexed, {len(failed)} failed, "
                 f"{sum(r.chunk_count for r in indexed)} chunks stored"]
        lines += [self.changes.line()] if self.changes is not None else []
        lines += [f"  FAILED {printable(r.doc_id)}: {r.reason}" for r in failed]
        lines += [f"  COUNT {d.doc_id}: claimed {d.claimed}, stored {d.stored}"
                  for d in self.discrepancies]
        lines += [f"  SKIPPED {printable(k.path)}: {k.reason}" for k in self.skipped if k.reason != NOT_A_DOCUMENT]
        others = sum(k.reason == NOT_A_DOCUMENT for k in self.skipped)
        lines += [f"  {others} file(s) skipped: not documents by type"] if others else []
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
    embedded: int = 0  # chunk texts embedded for it (the others were reused)


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


def _vectors_for(embed: Embed, chunks: Sequence[Chunk], dim: int,
                 known: Mapping[str, np.ndarray]) -> tuple[np.ndarray, int]:
    """Unit vectors for `chunks`: a text in `known` reuses its vector, the rest are embedded in one call."""
    missing = [c for c in chunks if c.text not in known]
    fresh = dict(zip([c.text for c in missing], _embed_chunks(embed, missing, dim), strict=False)) if missing else {}
    return np.stack([known[c.text] if c.text in known else fresh[c.text] for c in chunks]), len(missing)


def _attempt(folder: Path, doc_id: str, embed: Embed, stamp: dict, max_bytes: int,
             claimed: int | None, attempts: int, known: Mapping[str, np.ndarray] | None = None) -> _Attempt:
    """Try one file; a failure is recorded with its reason instead of being raised."""
    path = folder / doc_id
    base = dict(doc_id=doc_id, chunk_count=0, claimed_count=claimed, sha256=_sha256(path),
                attempts=attempts, **stamp)
    try:
        chunks = _chunks_of(path, doc_id, stamp["strategy"], max_bytes)
        vectors, embedded = _vectors_for(embed, chunks, stamp["dim"], known or {})
    except ExtractionError as err:
        return _Attempt(DocRecord(status="failed", reason=str(err), **base), (), None)
    return _Attempt(DocRecord(status="indexed", reason="", **base), tuple(chunks), vectors, embedded)


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
            claimed_counts: Mapping[str, int] | None = None,
            known: Mapping[str, np.ndarray] | None = None) -> IngestReport:
    """(Re)build the given documents of `folder` into `index`; the others are left as they are.
    A chunk text in `known` (text -> unit vector) takes that vector instead of being embedded."""
    return _reindex(index, Path(folder), doc_ids, embed, model_name, dim, strategy, max_bytes,
                    claimed_counts, known)[0]


def _reindex(index: Index, folder: Path, doc_ids: Sequence[str], embed: Embed, model_name: str, dim: int,
             strategy: str, max_bytes: int, claimed_counts: Mapping[str, int] | None,
             known: Mapping[str, np.ndarray] | None) -> tuple[IngestReport, int]:
    """`reindex`, and how many chunk texts it embedded."""
    _check_settings(model_name, dim, strategy, max_bytes)
    stamp = _stamp(model_name, dim, strategy)
    claimed = dict(claimed_counts or {})
    previous = {r.doc_id: r.attempts for r in index.records}
    batched = {} if known is None else _embed_new_texts(folder, sorted(set(doc_ids)), embed, strategy, max_bytes,
                                                         dim, known)
    attempts = [_attempt(folder, d, embed, stamp, max_bytes, claimed.get(d), previous.get(d, 0) + 1,
                         None if known is None else {**known, **batched}) for d in sorted(set(doc_ids))]
    merged = _merge(index, attempts, dim)
    written = tuple(merged.record(a.record.doc_id) for a in attempts)
    return IngestReport(merged, written, claimed), len(batched) + sum(a.embedded for a in attempts)


def _embed_new_texts(folder: Path, doc_ids: Sequence[str], embed: Embed, strategy: str, max_bytes: int, dim: int,
                     known: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every new chunk text of the readable files, embedded in one call (text -> unit vector); {} if that call
    fails, so that each document is then embedded on its own and a failure stays with its document."""
    texts = []
    for doc_id in doc_ids:
        with contextlib.suppress(ExtractionError):
            texts += [c.text for c in _chunks_of(folder / doc_id, doc_id, strategy, max_bytes)]
    new = sorted(set(texts) - set(known))
    try:
        return dict(zip(new, _unit_rows(embed(new), len(new), dim), strict=True)) if new else {}
    except Exception:  # noqa: BLE001 - retried per document below, where the reason is recorded
        return {}


def _stamp(model_name: str, dim: int, strategy: str) -> dict:
    """What every record of this run is stamped with (see `DocRecord`)."""
    return dict(model_name=model_name, dim=dim, pipeline_version=PIPELINE_VERSION,
                extractor_version=EXTRACTOR_VERSION, strategy=strategy)


#: Failures that depend on the run, not only on the bytes: retried even when the file is unchanged.
PASSING_FAILURES = ("cannot read", "embedding failed", "oversize")


def _unchanged(record: DocRecord | None, sha256: str, stamp: dict) -> bool:
    """Whether a file can keep its record: same bytes, same stamp, and not a failure that may pass."""
    return (record is not None and sha256 != "" and record.sha256 == sha256
            and all(getattr(record, k) == v for k, v in stamp.items())
            and not record.reason.startswith(PASSING_FAILURES))


def _without(index: Index, doc_ids: set[str]) -> Index:
    """`index` with the records, chunks and vectors of `doc_ids` removed."""
    keep = [i for i, c in enumerate(index.chunks) if c.doc_id not in doc_ids]
    return Index(tuple(r for r in index.records if r.doc_id not in doc_ids),
                 tuple(index.chunks[i] for i in keep), index.vectors[keep])


def _known_vectors(index: Index, model_name: str, dim: int) -> dict[str, np.ndarray]:
    """Chunk text -> stored vector, for chunks of documents embedded by this model at this dimension."""
    same = {r.doc_id for r in index.indexed if (r.model_name, r.dim) == (model_name, dim)}
    return {c.text: v for c, v in zip(index.chunks, index.vectors, strict=True) if c.doc_id in same}


def _sync(index: Index, root: Path, files: Sequence[str], embed: Embed, model_name: str, dim: int,
          strategy: str, max_bytes: int, claimed_counts: Mapping[str, int] | None) -> IngestReport:
    """Bring `index` up to the folder: unchanged files cost a hash, vanished ones go, the rest are redone with the
    vectors of chunk texts the index already holds."""
    hashes = {d: _sha256(root / d) for d in files}
    old = {r.doc_id: r for r in index.records}
    todo = [d for d in files if not _unchanged(old.get(d), hashes[d], _stamp(model_name, dim, strategy))]
    deleted = sorted(set(old) - set(files))
    gone = {old[d].sha256: d for d in deleted if old[d].sha256}
    renamed = tuple((gone[hashes[d]], d) for d in todo if d not in old and hashes[d] in gone)
    moved = {new for _, new in renamed} | {was for was, _ in renamed}
    report, embedded = _reindex(_without(index, set(deleted)), root, todo, embed, model_name, dim, strategy,
                                max_bytes, claimed_counts, _known_vectors(index, model_name, dim))
    changes = Changes(added=tuple(d for d in todo if d not in old and d not in moved),
                      changed=tuple(d for d in todo if d in old),
                      deleted=tuple(d for d in deleted if d not in moved), renamed=renamed,
                      unchanged=len(files) - len(todo), embedded=embedded,
                      reused=sum(r.chunk_count for r in report.attempted) - embedded)
    return dataclasses.replace(report, changes=changes)


def ingest_folder(folder: str | Path, *, embed: Embed, model_name: str, dim: int,
                  strategy: str = "E", max_bytes: int = MAX_BYTES,
                  claimed_counts: Mapping[str, int] | None = None,
                  index: Index | None = None) -> IngestReport:
    """Index every file under `folder` (recursively; see `list_folder`) into a new index, or sync `index` to it
    (unchanged files kept, vanished ones dropped, stored vectors reused). `embed(texts)` returns (len(texts), dim);
    `claimed_counts` (doc id -> chunks a client declared) are compared."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"folder {str(root)!r} is not a directory")
    listing = list_folder(root)
    args = (embed, model_name, dim, strategy, max_bytes, claimed_counts)
    if index is None:
        report = _reindex(Index.empty(dim), root, listing.files, *args, None)[0]
    else:
        report = _sync(index, root, listing.files, *args)
    return dataclasses.replace(report, skipped=listing.skipped)


def _stored_dim(index: Index | None, model_name: str) -> int | None:
    """The one dimension the index's documents embedded by `model_name` have (None: none, or several)."""
    dims = {r.dim for r in (index.indexed if index is not None else ()) if r.model_name == model_name}
    return dims.pop() if len(dims) == 1 else None


def sync_folder(folder: str | Path, out: str | Path, *, embed: Embed, model_name: str,
                dim: int | Callable[[], int], strategy: str = "E", max_bytes: int = MAX_BYTES, wait: bool = True,
                notify: Callable[[str], None] | None = None,
                on_step: Callable[[str], None] | None = None) -> IngestReport:
    """`ragcourse index`: under the writer lock, clean a killed run's leftovers, sync the index at `out` to `folder`
    and commit it atomically when anything changed. A callable `dim` is asked only when the index holds no vectors
    of `model_name` (so a run with nothing to embed never loads the model); `notify` hears about the lock."""
    root, target = Path(folder).resolve(), Path(out).resolve()
    if target.is_relative_to(root):
        raise ValueError(f"the index {str(out)!r} is inside the folder {str(folder)!r}: keep it outside, "
                         "or it would index itself")
    foreign = foreign_entries(target)
    if foreign:
        raise ValueError(f"{str(out)!r} holds files that are not an index ({', '.join(foreign[:5])}"
                         f"{' ...' if len(foreign) > 5 else ''}): nothing was changed; choose a new or empty folder")
    tell = notify or (lambda _: None)
    with writer_lock(target, wait=wait, notify=tell) as lock:
        if lock.took_over is not None:
            tell(f"took over the lock left by pid {lock.took_over}, which is no longer running")
        clean_leftovers(target)
        current = Index.load(target) if (target / MANIFEST).exists() else None
        if callable(dim):
            dim = _stored_dim(current, model_name) or dim()
        report = ingest_folder(root, embed=embed, model_name=model_name, dim=dim, strategy=strategy,
                               max_bytes=max_bytes, index=current if current is not None else Index.empty(dim))
        if current is None or not _same(current, report.index):
            report.index.save(target, on_step)
    return report


def _same(a: Index, b: Index) -> bool:
    return a.records == b.records and a.chunks == b.chunks and np.array_equal(a.vectors, b.vectors)


def retry_failed(index: Index, folder: str | Path, *, embed: Embed, model_name: str, dim: int,
                 strategy: str = "E", max_bytes: int = MAX_BYTES) -> IngestReport:
    """Try every `failed` document again; the report lists exactly those attempts."""
    return reindex(index, folder, [r.doc_id for r in index.failed], embed=embed,
                   model_name=model_name, dim=dim, strategy=strategy, max_bytes=max_bytes)
