"""A local wheelhouse of what the ragcourse wheel needs, pinned by the lock (`make wheelhouse`), built once per machine.

tests/test_wheel_install.py installs the wheel into a fresh venv from this folder alone (`--no-index`), offline.
It is built at set-up time, when the package registries are reachable (`make` adds PyTorch's CPU index through
PIP_EXTRA_INDEX_URL where it answers): the package's wheel is built from
the sources, then `pip download` resolves its dependencies under `-c requirements.txt` (the lock) into
the folder. The folder's name carries the lock's hash, so a new lock makes a new wheelhouse and an old
one is reused as it is. Prints the folder.

    python scripts/wheelhouse.py [--root DIR]   # default: the user cache, e.g. ~/.cache/ragcourse/wheelhouse
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragcourse.paths import user_cache_dir  # noqa: E402

LOCK = ROOT / "requirements.txt"
DONE = ".complete"


def folder(root: Path) -> Path:
    """The wheelhouse for the current lock: root/<first 16 hex digits of the lock's and pyproject's sha256>."""
    digest = hashlib.sha256(LOCK.read_bytes() + (ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    return root / digest


def build(target: Path) -> None:
    """The package's wheel built from a copy of the sources, then its dependencies downloaded under the lock."""
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "source"
        shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy(ROOT / name, source / name)
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
        subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", work, str(source)], check=True)
        wheel = next(Path(work).glob("ragcourse-*.whl"))
        subprocess.run([*pip, "download", "--only-binary", ":all:", "-c", str(LOCK), "-d", str(target),
                        str(wheel)], check=True)
    for stale in target.glob("ragcourse-*.whl"):
        stale.unlink()  # the test builds its own from the sources it tests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=user_cache_dir() / "wheelhouse")
    target = folder(parser.parse_args(argv).root)
    if not (target / DONE).is_file():
        target.mkdir(parents=True, exist_ok=True)
        build(target)
        (target / DONE).write_text("complete\n", encoding="utf-8")
    print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
