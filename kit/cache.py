"""The reference state of a chapter's checks, computed once per environment and kept for the next grading run.

The checker kernel runs the chapter's reference notebook only to get the values its checks read (a
model, a ranking, a table). Those values, pickled (cloudpickle) in the grader's own private folder, are
keyed by everything they depend on: the environment digest (`ragcourse.book.exercises.environment`),
the settings that change what the reference computes (`settings`: CPU kernels, threads, the course's own),
the data's file list but its caches, the variant, the check file, the reference notebook and the kit's
checker. A second run with the same key loads them in seconds; a run beside it (another grader, CI's
older-CPU pass filling its own vector cache under data/) neither changes its key nor shares a state with
it unless their environments are the same. The folder is the grader's alone (0700, owned by it): a file
there that another user could have written is never unpickled.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

KIT = Path(__file__).resolve().parent
ENV = "KIT_CACHE"  # a folder for the cached states; default: the user's cache folder
#: Variables that change what a reference computes: CPU kernels (CI's older-CPU pass sets ATEN_CPU_CAPABILITY and
#: ONEDNN_MAX_CPU_ISA), thread counts, the course's own settings; not the switches that only steer the tests.
SETTINGS = re.compile(r"(ATEN|ONEDNN|DNNL|MKL|OMP|OPENBLAS|TORCH|RAGCOURSE)_\w+|PYTHONHASHSEED")
NOT_SETTINGS = re.compile(r"RAGCOURSE_(KIT_SELFTEST|NETNS|REQUIRE_\w+)")


def folder() -> Path:
    """The grader's private cache folder ($KIT_CACHE, else the platform's user cache), made 0700 if missing."""
    import platformdirs

    from ragcourse.paths import cache_folder

    path = Path(os.environ.get(ENV) or platformdirs.user_cache_dir("ragcourse-kit")) / "reference-state"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return cache_folder(path)  # tagged: under data/ too, the states it keeps never count as the course's data


def key(checks_path: Path, reference: Path) -> str:
    """The digest a chapter's cached state is filed under: any change to what it depends on gives another."""
    from ragcourse.book.exercises import environment, variant

    digest = hashlib.sha256(json.dumps([environment(), settings(os.environ)], sort_keys=True).encode())
    digest.update(f"variant={variant()}".encode())
    for path in (checks_path, reference, KIT / "checker.py", KIT / "hidden.py", KIT / "cache.py"):
        digest.update(b"\0" + Path(path).read_bytes())
    for entry in data_files():
        digest.update(f"\0{entry}".encode())
    return digest.hexdigest()[:32]


def settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of `environ` that can change a reference's values, and the CPU that runs it.

    >>> sorted(settings({"ATEN_CPU_CAPABILITY": "default", "HOME": "/root", "RAGCOURSE_KIT_SELFTEST": "0"}))
    ['ATEN_CPU_CAPABILITY', 'cpu']
    """
    import platform

    try:  # torch picks its kernels by the CPU's instruction sets when ATEN_CPU_CAPABILITY does not
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        info = []
    flags = next((line.split(":", 1)[-1] for line in info if line.startswith(("flags", "Features"))), "")
    cpu = f"{platform.machine()} {hashlib.sha256(' '.join(sorted(flags.split())).encode()).hexdigest()[:16]}"
    return {**{k: v for k, v in environ.items() if SETTINGS.fullmatch(k) and not NOT_SETTINGS.fullmatch(k)},
            "cpu": cpu}


def data_files() -> list[str]:
    """"path:size" for each file of the course's data but what a cache holds: the vector cache (data/cache,
    $RAGCOURSE_CACHE) and every folder tagged as a cache, wherever another run's setting put it (CI's older-CPU
    pass fills data/cache-older-cpu while the tests run beside it)."""
    from ragcourse.paths import CACHE_ROOT, CACHE_TAG, DATA_DIR

    root = Path(DATA_DIR)
    caches, found = {root / "cache", Path(CACHE_ROOT)} - {root}, []
    for folder, folders, files in os.walk(root):
        if Path(folder) in caches or CACHE_TAG in files:
            folders.clear()
            continue
        for name in files:
            path = Path(folder, name)
            if path.is_file():
                found.append(f"{path.relative_to(root)}:{path.stat().st_size}")
    return sorted(found)


def trusted(path: Path) -> bool:
    """Whether `path` is a regular file of this process's user in a folder no one else may write.

    >>> trusted(Path("/nonexistent/state.pkl"))
    False
    """
    try:
        info, parent = os.lstat(path), os.lstat(path.parent)
    except OSError:
        return False
    mine = os.geteuid()
    return (stat.S_ISREG(info.st_mode) and info.st_uid == mine and parent.st_uid == mine
            and not (info.st_mode | parent.st_mode) & 0o022)


def needed(checks_source: str, context: dict) -> list[str]:
    """The names of `context` a check file may read: every name and string it spells that the context holds.

    >>> needed("def f(ns):\\n    return ns['qs'], K", {"qs": 1, "K": 2, "other": 3})
    ['K', 'qs']
    """
    import ast

    spelled = set()
    for node in ast.walk(ast.parse(checks_source)):
        if isinstance(node, ast.Name):
            spelled.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            spelled.add(node.value)
        elif isinstance(node, ast.Attribute):
            spelled.add(node.attr)
    return sorted(spelled & context.keys())


def save(path: Path, blobs: dict[str, bytes]) -> None:
    """Pickled values (cloudpickle's bytes, by name) to `path` (0600) by a rename: a run killed midway leaves
    no half-written state."""
    import pickle

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # 0600, a new file
    try:  # each writer its own file (a pid may be another namespace's too), so two runs of a key never mix
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(blobs, handle)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def load(path: Path) -> dict | None:
    """The values saved at `path`, or None when there are none, they are not the grader's own, or unreadable."""
    import pickle

    if not trusted(path):
        return None
    try:
        with path.open("rb") as handle:
            blobs = pickle.load(handle)  # noqa: S301 - the grader's own file, checked by `trusted`
        values = {str(name): pickle.loads(blob) for name, blob in blobs.items()}  # noqa: S301 - the same
    except Exception:  # noqa: BLE001 - a state that no longer loads (a changed class): run the reference again
        return None
    return values if isinstance(values, dict) and all(_still_there(v) for v in values.values()) else None


def _still_there(value) -> bool:
    """False for a path the reference run made that is gone now (a temporary folder): that state is stale."""
    return not isinstance(value, os.PathLike) or os.path.exists(value)
