"""The four genre corpora at run time: legal, API reference, support threads, wiki (chapter 9).

Implements: `GENRES`, `load_genre` (read ``DATA_DIR/genres/<genre>/`` and check every file against
the committed fingerprint in ``data/genres.lock.json``) and `genre_lock`. Each genre is a list of
`ragcourse.corpus.Document` in the main corpus's conventions (``## `` section headings, so
`ragcourse.corpus.sections` splits them), small enough (100k-400k characters) to re-execute quickly.

Leaves out: building them. Fetching the pinned package files, reading licences, docstrings, e-mails
and wikitext live in `ragcourse.build.genres`, so nothing imported at run time loads
mwparserfromhell. Nothing here touches the network.

Command line::

    python -m ragcourse.genres check    # verify the four built genre corpora against the lock
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .corpus import DATA_DIR, CorpusError, Document, differing, fingerprint, read_built, run_command

#: The four document types of chapter 9, in the order the chapter shows them.
GENRES = ("legal", "api", "threads", "wiki")
GENRES_DIR = DATA_DIR / "genres"
GENRES_LOCK = DATA_DIR / "genres.lock.json"
GENRES_BUILD_COMMAND = "python -m ragcourse.build.genres"
GENRES_HINT = f"run `make corpus` (or `{GENRES_BUILD_COMMAND}`)"


def check_genre(name: str) -> str:
    """`name` if it is one of `GENRES`, else a ValueError naming the valid choices.

    >>> check_genre("wiki")
    'wiki'
    """
    if name not in GENRES:
        raise ValueError(f"genre={name!r}: expected one of {list(GENRES)}")
    return name


def genre_lock(name: str, lock_path: Path | None = None) -> dict:
    """The committed lock of one genre: source, fingerprint, profile and one sha256 per document."""
    path = Path(lock_path) if lock_path is not None else GENRES_LOCK
    if not path.is_file():
        raise CorpusError(f"genre lock {path} is missing; a maintainer writes it with "
                          f"`{GENRES_BUILD_COMMAND} --update-lock`")
    locks = json.loads(path.read_text(encoding="utf-8"))
    if check_genre(name) not in locks:
        raise CorpusError(f"genre {name!r} is not in {path}; a maintainer runs "
                          f"`{GENRES_BUILD_COMMAND} --update-lock`")
    return locks[name]


def _verify_genre(name: str, folder: Path, docs: list[Document], lock: dict) -> None:
    """Raise CorpusError unless `docs` match the genre's lock, naming each file that differs."""
    if fingerprint(docs) == lock["fingerprint"]:
        return
    files = ", ".join(str(folder / f"{i}.md") for i in differing(docs, lock["documents"])) or "(titles only)"
    raise CorpusError(f"genre {name!r} does not match {GENRES_LOCK.name}: altered or unexpected "
                      f"files: {files}. Delete {folder} and {GENRES_HINT}.")


def load_genre(name: str, root: Path | None = None, lock_path: Path | None = None) -> list[Document]:
    """The documents of genre `name` (sorted by id), verified against the lock on every load."""
    lock = genre_lock(name, lock_path)
    folder = (Path(root) if root is not None else GENRES_DIR) / name
    docs = read_built(folder, f"genre {name!r}", GENRES_HINT)
    missing = sorted(set(lock["documents"]) - {d.id for d in docs})
    if missing:
        raise CorpusError(f"genre {name!r}: documents {missing} are missing from {folder}; {GENRES_HINT}")
    _verify_genre(name, folder, docs, lock)
    return docs


def main(argv: list[str] | None = None) -> int:
    """`python -m ragcourse.genres check`: load and verify every genre corpus."""
    if list(argv if argv is not None else sys.argv[1:]) != ["check"]:
        print("usage: python -m ragcourse.genres check", file=sys.stderr)
        return 2

    def check() -> None:
        for name in GENRES:
            docs = load_genre(name)
            print(f"{name}: {len(docs)} documents, {sum(len(d.text) for d in docs)} characters, OK")

    return run_command(check)


if __name__ == "__main__":
    sys.exit(main())
