"""A real Sphinx documentation folder for tests/test_sphinx_sdist.py: celery 5.7.0's `docs/`, from its pinned sdist.

Set-up time only (`make sphinx-docs`, which `make test` runs): pip fetches the sdist once, by the rule that fetches
the course corpus's sdist (`ragcourse.build.corpus.fetch_pinned`), its sha256 is checked, and only `docs/` is
unpacked (regular files, tarfile's "data" filter) into the user cache, e.g. ~/.cache/ragcourse/sphinx-docs/.
Nothing of it is committed (third-party text), and the tests never download it. Prints the docs folder.

    python scripts/sphinx_docs.py [--root DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragcourse.build.corpus import check_sha256, fetch_pinned  # noqa: E402
from ragcourse.paths import user_cache_dir  # noqa: E402

#: The practitioner's folder of issue 42: celery 5.7.0's docs/ (234 .rst, 9 .txt, 4 .html).
PIN = {"name": "celery", "version": "5.7.0", "filename": "celery-5.7.0.tar.gz",
       "sha256": "6a5dfcf6662287204f009a02002b9e66c83d4105e47ebabdc7079108772fc6f0"}
HINT = "run `make sphinx-docs` (python scripts/sphinx_docs.py)"
DONE = ".complete"


def folder(root: Path | None = None) -> Path:
    """Where the unpacked `docs/` lives (it is complete when `folder / DONE` exists)."""
    return (root or user_cache_dir() / "sphinx-docs") / f"{PIN['name']}-{PIN['version']}" / "docs"


def unpack(sdist: Path, target: Path) -> Path:
    """The sdist's `docs/` (regular files only) into `target`, written beside it first and then moved in place."""
    prefix = f"{PIN['name']}-{PIN['version']}/docs/"
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(check_sha256(sdist, PIN["sha256"], PIN["filename"], HINT), "r:gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.startswith(prefix)]
        for member in members:
            member.name = member.name[len(prefix):]
        tar.extractall(partial, members=members, filter="data")
    (partial / DONE).write_text(PIN["sha256"] + "\n", encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None)
    target = folder(parser.parse_args(argv).root)
    if not (target / DONE).is_file():
        sdist = fetch_pinned(PIN, target.parent.parent / "sdists", PIN["filename"], HINT, no_binary=":all:")
        unpack(sdist, target)
    print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
