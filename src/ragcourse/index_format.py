"""An index on disk: one folder, versions committed atomically, leftovers of a killed writer cleaned (chapter 8).

`save` writes the vectors to a new version folder `vNNNNNN/`, the manifest that names them (records and
chunks, as JSON) to a temporary file, both fsynced, and one rename of `manifest.json` makes the version
current (`COMMIT_STEPS`); a reader (`load`) always sees the old version or the new one and takes no lock.
`clean_leftovers` removes what a killed writer left, `foreign_entries` names files an index never writes
(a folder holding them is refused, since cleaning deletes by name). A manifest of another `FORMAT` is
refused with what to rebuild.

Leaves out: who may write (`index_lock`), what to write (`index_sync`), and locking across machines.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .chunking import Chunk
from .index import DocRecord, Index
from .index_lock import LOCK, alive

MANIFEST, VECTORS, FORMAT = "manifest.json", "vectors.npy", 1


class IndexFormatError(ValueError):
    """A saved index cannot be read as this version wrote it; the message says what to rebuild."""

    def __init__(self, folder: Path, why: str):
        super().__init__(f"index {str(folder)!r} refused: {why}. Rebuild it: "
                         f"`ragcourse index DOCS_DIR --out {folder}` (the whole index; nothing in it is used)")


def save(index: Index, path: str | Path, on_step: Callable[[str], None] | None = None) -> Path:
    """Commit `index` to the folder `path` atomically (see `COMMIT_STEPS`); `on_step(step)` is called after
    each step (a test's fault injection). Readers see the old version until the final rename, then the new."""
    index.verify()
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    step = on_step or (lambda _: None)
    number = max([0, *_versions(folder)]) + 1
    tmp = folder / f"{_version_name(number)}.tmp-{os.getpid()}"
    tmp.mkdir()
    step("folder")
    with open(tmp / VECTORS, "wb") as fh:
        np.save(fh, index.vectors, allow_pickle=False)
        fh.flush()
        os.fsync(fh.fileno())
    step("vectors")
    os.rename(tmp, folder / _version_name(number))
    _fsync_folder(folder)
    step("version")
    manifest = {"format": FORMAT, "vectors": f"{_version_name(number)}/{VECTORS}",
                "records": [dataclasses.asdict(r) for r in index.records],
                "chunks": [dataclasses.asdict(c) for c in index.chunks]}
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

def load(path: str | Path) -> Index:
    """Read the current version of an index written by `save`, without waiting for a writer;
    IndexFormatError (what to rebuild) if it cannot be trusted."""
    folder = Path(path)
    manifest, vectors = _read_version(folder)
    try:
        index = Index(records=tuple(DocRecord(**r) for r in manifest["records"]),
                    chunks=tuple(Chunk(**c) for c in manifest["chunks"]),
                    vectors=vectors)
        index.verify()
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise IndexFormatError(folder, f"{MANIFEST} and {VECTORS} disagree or are damaged "
                                       f"({type(err).__name__}: {err})") from err
    return index


#: The steps of `save`, in order; the new version is current from "swap" on.
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
    """The vectors file a manifest names: ``vNNNNNN/vectors.npy``."""
    name = manifest.get("vectors")
    if not (isinstance(name, str) and re.fullmatch(rf"v\d{{6}}/{re.escape(VECTORS)}", name)):
        raise IndexFormatError(folder, f"{MANIFEST} names vectors {name!r}, not a version of this index")
    return name


def committed_version(path: str | Path) -> int:
    """The version number `manifest.json` makes current (0: none yet)."""
    folder = Path(path)
    if not (folder / MANIFEST).exists():
        return 0
    return int(_VERSION.match(_vectors_name(folder, _read_manifest(folder))).group(1))


def _is_leftover(name: str, keep: set[int], current: int, orphans: bool) -> bool:
    """Whether `clean_leftovers` removes the entry `name` (see there)."""
    if leftover := _LEFTOVER.fullmatch(name):
        return int(leftover.group(2)) == os.getpid() or not alive(int(leftover.group(2)))
    if version := _VERSION.fullmatch(name):
        number = int(version.group(1))
        return number not in keep and (orphans or number < current)
    return False


def foreign_entries(path: str | Path) -> list[str]:
    """Names in `path` that an index never writes (a user's files: the index refuses such a folder, since
    cleaning a killed writer's leftovers deletes by name). A missing folder has none."""
    folder = Path(path)
    if not folder.is_dir():
        return []
    own = (MANIFEST, LOCK)
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
