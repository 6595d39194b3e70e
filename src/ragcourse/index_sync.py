"""Keep an index up with a folder of files: ingest, sync, retry; one broken file never breaks the folder (chapter 8).

- one broken file does not break the folder: a document that cannot be read ends `failed` with its reason
  (undecodable bytes with their offset, empty, oversize, unsupported type, binary), stays visible in the
  report and can be retried, while the rest stay searchable;
- sync by content hash (`sync_folder`, what `ragcourse index` does): an unchanged file costs a `stat` and a
  hash; a changed or new file is read and chunked, and only chunk texts the index does not hold yet are
  embedded (so the model loads only then, and a renamed file whose chunk texts are unchanged costs no
  embedding); a vanished file's chunks go; the result is committed atomically (`index_format.save`) under
  the writer lock (`index_lock`);
- inputs are listed openly (`list_folder`): links out of the folder, link loops, FIFOs and other special
  files, and folders that cannot be listed appear in the report with their reason.

Files are read by `documents.read_document`, the reader `ragcourse chunk` and `ragcourse eval` use too
(Markdown, reStructuredText, HTML, PDF, plain text); files of other types are counted, not attempted.
Leaves out: the file format (`index_format`) and the report's wording (`index_report`). Keep the saved
index outside the folder.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .chunking import PIPELINE_VERSION, Chunk, chunk, strategy_for
from .corpus import sha256_file
from .documents import MAX_BYTES, READER_VERSION, ExtractionError, Failure, read_document, walk
from .index import DocRecord, Index, StaleIndexError
from .index_format import MANIFEST, clean_leftovers, foreign_entries, load, save
from .index_lock import writer_lock
from .index_report import NOT_A_DOCUMENT, Changes, IngestReport
from .store import ZeroVectorError, unit_rows

#: `embed(texts)` returns one vector per text, shape (len(texts), dim).
Embed = Callable[[list[str]], np.ndarray]

@dataclass(frozen=True)
class Listing:
    """A folder's input files (relative paths, sorted) and what was left out, with its reason."""

    files: tuple[str, ...]
    skipped: tuple[Failure, ...]




def list_folder(folder: str | Path) -> Listing:
    """The folder as `documents.walk` sees it: its document files are the inputs; links out, loops, FIFOs,
    unreadable folders and files that are not documents are `skipped`, each with its reason."""
    found = walk(Path(folder))
    skipped = list(found.problems)
    skipped += [Failure(path, NOT_A_DOCUMENT) for path in found.skipped]
    return Listing(found.files, tuple(sorted(skipped, key=lambda k: k.path)))


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
        document = read_document(path, doc_id, max_bytes)
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
    try:
        return unit_rows(raw, len(chunks), dim)
    except ZeroVectorError as err:
        raise ExtractionError(str(err)) from err


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
        return dict(zip(new, unit_rows(embed(new), len(new), dim), strict=True)) if new else {}
    except Exception:  # noqa: BLE001 - retried per document below, where the reason is recorded
        return {}


def _stamp(model_name: str, dim: int, strategy: str) -> dict:
    """What every record of this run is stamped with (see `DocRecord`)."""
    return dict(model_name=model_name, dim=dim, pipeline_version=PIPELINE_VERSION,
                extractor_version=READER_VERSION, strategy=strategy)


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
        current = load(target) if (target / MANIFEST).exists() else None
        if callable(dim):
            dim = _stored_dim(current, model_name) or dim()
        report = ingest_folder(root, embed=embed, model_name=model_name, dim=dim, strategy=strategy,
                               max_bytes=max_bytes, index=current if current is not None else Index.empty(dim))
        if current is None or not _same(current, report.index):
            save(report.index, target, on_step)
    return report


def _same(a: Index, b: Index) -> bool:
    return a.records == b.records and a.chunks == b.chunks and np.array_equal(a.vectors, b.vectors)


def retry_failed(index: Index, folder: str | Path, *, embed: Embed, model_name: str, dim: int,
                 strategy: str = "E", max_bytes: int = MAX_BYTES) -> IngestReport:
    """Try every `failed` document again; the report lists exactly those attempts."""
    return reindex(index, folder, [r.doc_id for r in index.failed], embed=embed,
                   model_name=model_name, dim=dim, strategy=strategy, max_bytes=max_bytes)
