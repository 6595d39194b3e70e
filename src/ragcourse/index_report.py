"""What one run of the indexer did, in words and as a table (chapter 8).

`IngestReport` holds the index after a run and one record for each file the run attempted; a sync adds its
`Changes` (added, changed, deleted, renamed, unchanged; chunk vectors embedded or reused) and what under the
folder was not an input. `summary` is what `ragcourse index` prints: every name goes through
`documents.printable`, so a file name cannot print a line of its own. Claimed chunk counts that differ
from the stored ones are `CountDiscrepancy`s.

Leaves out: doing the work (`index_sync`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from .documents import Failure, printable
from .index import DocRecord, Index


@dataclass(frozen=True)
class CountDiscrepancy:
    """A client claimed `claimed` chunks for a document; the indexer stored `stored`."""

    doc_id: str
    claimed: int
    stored: int


NOT_A_DOCUMENT = "not a document (by type)"


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
    skipped: tuple[Failure, ...] = ()

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
        lines += [f"  FAILED {printable(r.doc_id)}: {printable(r.reason)}" for r in failed]
        lines += [f"  COUNT {printable(d.doc_id)}: claimed {d.claimed}, stored {d.stored}"
                  for d in self.discrepancies]
        lines += [f"  SKIPPED {printable(k.path)}: {printable(k.reason)}"
                  for k in self.skipped if k.reason != NOT_A_DOCUMENT]
        others = sum(k.reason == NOT_A_DOCUMENT for k in self.skipped)
        lines += [f"  {others} file(s) skipped: not documents by type"] if others else []
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        """One row per attempted file: doc_id, status, reason, chunk_count, claimed_count."""
        cols = ["doc_id", "status", "reason", "chunk_count", "claimed_count"]
        return pd.DataFrame([[getattr(r, c) for c in cols] for r in self.attempted], columns=cols)
