"""One writer at a time for an index folder (chapter 8).

`writer_lock` holds `writer.lock` with `flock` (the kernel frees it when its holder dies) and writes the
holder's process id into it: a second writer waits (or, told not to, raises `WriterBusyError` naming the
first), and a lock left by a killed process is taken over and reported. Readers take no lock and never wait.

Leaves out: what the writer writes (`index_format`, `index_sync`) and locking across machines (`flock` on a
network file system may not hold).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

LOCK = "writer.lock"


def alive(pid: int) -> bool:
    """Whether a process with this id exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


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
        dead = left if left not in (None, waited, os.getpid()) and not alive(left) else None
        try:
            yield WriterLock(folder / LOCK, os.getpid(), waited, dead)
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the flock
