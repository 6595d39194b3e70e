"""What bounds a whole sandbox, not one process: memory and processes, the seccomp filter, the job folders.

Memory and processes: a cgroup per sandbox where this machine lets the grader make one (cgroup v1's
memory and pids controllers, as root), else a watch that sums the resident memory of the sandbox's
process tree and stops it past the limit, on top of the per-process limits (RLIMIT_AS, RLIMIT_NPROC).
`describe()` says which. Job folders live in one folder per grader process, named by its pid, start
time and pid namespace, so that the next run removes what a killed one left (`clean_stale`) and never
what a live one of another namespace holds. The seccomp filter is built
once by the system's python3 from scripts/seccomp_filter.py (libseccomp's Python bindings).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILTER_SCRIPT = ROOT / "scripts" / "seccomp_filter.py"
PREFIX = "ragcourse-kit-"
CGROUPS = Path("/sys/fs/cgroup")
SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3")


class WallError(RuntimeError):
    """A wall this machine cannot build (no seccomp bindings, no way to cap processes)."""


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _pid_namespace() -> str:
    """This process's pid namespace (its inode): a pid names a process only inside its own namespace."""
    try:
        return os.readlink("/proc/self/ns/pid").split("[")[-1].rstrip("]")
    except OSError:
        return "unknown"


def owner() -> str:
    """This process as its folders and cgroups are named: <pid>-<start time>-ns<pid namespace>."""
    return f"{os.getpid()}-{_start_time(os.getpid())}-ns{_pid_namespace()}"


def run_folder() -> Path:
    """This process's folder for job folders, in the system's temporary folder (0711: a sandbox's user
    enters its own job folder inside, and lists nothing)."""
    path = Path(tempfile.gettempdir()) / f"{PREFIX}{owner()}"
    if not path.is_dir():
        path.mkdir(mode=0o711)
        path.chmod(0o711)
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _stale(name: str) -> bool:
    """Whether a folder or cgroup named PREFIX<pid>-<start time>[-ns<pid namespace>][...] belongs to a process
    that has ended. One of another pid namespace (a grader in a container sharing /tmp) is never judged here:
    its pid names another process, or none, in this one.

    >>> _stale(f"{PREFIX}{owner()}"), _stale(f"{PREFIX}1-0-ns{_pid_namespace()}"), _stale(f"{PREFIX}1-0")
    (False, True, True)
    >>> _stale(f"{PREFIX}1-0-ns1")
    False
    """
    parts = name[len(PREFIX):].split("-")
    if len(parts) < 2 or not parts[0].isdigit():
        return False
    if len(parts) > 2 and parts[2].startswith("ns") and parts[2] != f"ns{_pid_namespace()}":
        return False
    return _start_time(int(parts[0])) != parts[1]


def clean_stale() -> list[str]:
    """Remove the job folders and cgroups of grader processes that have ended (a `kill -9`); what was removed."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        if path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.geteuid() and _stale(path.name):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path))
    for base in _cgroup_bases().values():
        for group in base.glob(f"{PREFIX}*"):
            if _stale(group.name):
                _remove_group(group)
                removed.append(str(group))
    return removed


# ---- memory and processes per sandbox --------------------------------------------------------------


def _cgroup_bases() -> dict[str, Path]:
    """{"memory": folder, "pids": folder} of this process's cgroup v1 hierarchies, where it may make groups."""
    bases = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(","):
            folder = CGROUPS / name / path.lstrip("/")
            if name in ("memory", "pids") and folder.is_dir() and os.access(folder, os.W_OK):
                bases[name] = folder
    return bases


@cache
def cgroups_usable() -> bool:
    """Whether this process can make a memory and a pids cgroup for each sandbox (tried once)."""
    bases = _cgroup_bases()
    if set(bases) != {"memory", "pids"}:
        return False
    try:
        group = Group(1 << 30, 64)
    except OSError:
        return False
    group.remove()
    return True


class Group:
    """A memory and a pids cgroup for one sandbox: `enter` (in its first process), then `remove`."""

    serial = 0

    def __init__(self, memory: int, processes: int):
        Group.serial += 1
        name = f"{PREFIX}{owner()}-{Group.serial}"
        bases = _cgroup_bases()
        self.folders = [bases["memory"] / name, bases["pids"] / name]
        try:
            for folder in self.folders:
                folder.mkdir()
            (self.folders[0] / "memory.limit_in_bytes").write_text(str(memory))
            swap = self.folders[0] / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(memory))
            (self.folders[1] / "pids.max").write_text(str(processes))
        except OSError:
            self.remove()
            raise

    def enter(self) -> None:
        """Put the calling process (and so everything it starts) in both groups."""
        for folder in self.folders:
            with open(folder / "cgroup.procs", "w") as handle:  # noqa: PTH123 - in a child before exec
                handle.write("0")

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of this group for passing its memory limit."""
        try:
            text = (self.folders[0] / "memory.oom_control").read_text()
        except OSError:
            return False
        return any(line.split()[:1] == ["oom_kill"] and line.split()[1] != "0" for line in text.splitlines())

    def remove(self) -> None:
        """Stop whatever is left in the groups, then remove them."""
        for folder in self.folders:
            _remove_group(folder)


def _remove_group(folder: Path) -> None:
    for _ in range(50):
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except OSError:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            folder.rmdir()
            return
        except OSError:
            import time

            time.sleep(0.05)


def _tree(root: int) -> list[list[str]]:
    """The /proc/<pid>/stat fields (after the name) of process `root` and all its descendants."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        stats[int(entry)] = fields
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found += [stats[pid]] if pid in stats else []
        todo += children.get(pid, [])
    return found


def tree_memory(root: int) -> int:
    """Resident bytes of process `root` and all its descendants (read from /proc)."""
    return sum(int(fields[21]) for fields in _tree(root)) * os.sysconf("SC_PAGE_SIZE")


def tree_cpu(root: int) -> float:
    """CPU seconds so far of process `root` and all its descendants, and of the children they reaped."""
    return sum(sum(int(x) for x in fields[11:15]) for fields in _tree(root)) / os.sysconf("SC_CLK_TCK")


@dataclass
class Watch:
    """The fallback without a cgroup: a sandbox whose process tree holds more than `limit` bytes is stopped."""

    root: int
    limit: int
    over: bool = False

    def check(self) -> bool:
        """True (and the tree killed) when the tree is over its limit."""
        if not self.over and tree_memory(self.root) > self.limit:
            self.over = True
            try:
                os.killpg(self.root, signal.SIGKILL)
            except OSError:
                pass
        return self.over


class Guard:
    """A process (the checker kernel) killed when its own resident memory passes `limit` bytes, read from /proc
    every `every` seconds by a thread of the grader; `stop` ends the watch. Its children are not counted: each
    sandbox it starts has limits of its own."""

    def __init__(self, pid: int, limit: int, every: float = 0.05):
        import threading

        self.pid, self.limit, self.every, self.over = pid, limit, every, False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"memory guard {pid}", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not self._done.wait(self.every):
            try:
                resident = int(Path(f"/proc/{self.pid}/statm").read_text().split()[1]) * page
            except (OSError, IndexError, ValueError):
                return  # the process has ended
            if resident > self.limit:
                self.over = True
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
                return

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=1)


def describe(memory: int, processes: int) -> str:
    """One line for the log: how memory and processes are bounded per sandbox on this machine."""
    if cgroups_usable():
        return f"memory {memory >> 30} GB and {processes} processes per sandbox (a cgroup each)"
    return (f"memory {memory >> 30} GB per sandbox (no cgroup here: its process tree's resident memory is "
            "watched), processes by RLIMIT_NPROC")


# ---- seccomp ------------------------------------------------------------------------------------------


@cache
def seccomp_filter() -> Path:
    """The compiled filter (BPF), built once per version of scripts/seccomp_filter.py; WallError when the
    system's python3 has no libseccomp bindings (Debian: apt-get install python3-seccomp)."""
    from kit import cache as state

    digest = hashlib.sha256(FILTER_SCRIPT.read_bytes()).hexdigest()[:16]
    path = state.folder().parent / f"seccomp-{digest}.bpf"
    if state.trusted(path):
        return path
    python = next((p for p in SYSTEM_PYTHONS if os.access(p, os.X_OK)), None)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    done = subprocess.run([python or "python3", "-I", str(FILTER_SCRIPT), str(tmp)], capture_output=True, text=True,
                          timeout=60) if python else None
    if done is None or done.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        why = done.stderr.strip().splitlines()[-1:] if done else ["no system python3"]
        raise WallError(f"the seccomp filter could not be built ({why[0][:200] if why else 'no output'}): "
                        "install Debian's python3-seccomp (scripts/install_bwrap.sh does)")
    tmp.chmod(0o600)
    os.replace(tmp, path)
    return path
