"""The corpus at run time: the 13 built documents, verified on every load, and their sections (chapter 1).

Implements: `Document` (id, title, canonical text), `load_corpus` (read ``DATA_DIR/corpus/`` and
check it against the committed fingerprint in ``data/corpus.lock.json``), `sections` (the one rule
that splits a text at its ``## `` headings, skipping fenced code; the chunkers of chapter 2 use it
too), `profile`, `sha256_file`, and `write_markdown` / `write_sections`, which lay documents out as a
folder of files (chapter 8's folders).

Leaves out: building the corpus. Fetching the pinned docutils sdist, parsing it with docutils and
rendering Markdown live in `ragcourse.build.corpus`, so that nothing imported at run time loads
docutils. Nothing here touches the network.

Command line::

    python -m ragcourse.corpus check    # verify the built corpus against the lock
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .paths import DATA_DIR, DATA_HINT

CORPUS_DIR = DATA_DIR / "corpus"
LOCK_PATH = DATA_DIR / "corpus.lock.json"
BUILD_COMMAND = "python -m ragcourse.build.corpus"
REBUILD_HINT = f"run `make corpus` (or `{BUILD_COMMAND}`){DATA_HINT}"

#: The 13 files of the docutils sdist the corpus is made from, one document each.
SOURCE_FILES = (
    "docs/user/rst/quickstart.rst",
    "docs/ref/rst/directives.rst",
    "docs/ref/rst/roles.rst",
    "docs/ref/rst/mathematics.rst",
    "docs/user/config.rst",
    "docs/user/odt.rst",
    "docs/user/slide-shows.rst",
    "docs/user/emacs.rst",
    "docs/dev/rst/problems.rst",
    "docs/dev/repository.rst",
    "docs/dev/testing.rst",
    "docs/eps/ep-001.rst",
    "docs/eps/ep-010.rst",
)


@dataclass(frozen=True)
class Document:
    """One corpus document; `text` is the canonical text every character offset refers to."""

    id: str
    title: str
    text: str


class CorpusError(RuntimeError):
    """The corpus source or cache is missing, altered, or does not match the lock."""


def doc_id(source_file: str) -> str:
    """The document id of a source file.

    >>> doc_id("docs/user/rst/quickstart.rst")
    'user-rst-quickstart'
    """
    stem = source_file.removeprefix("docs/").removesuffix(".rst")
    return stem.replace("/", "-")


def sha256_file(path: Path | str) -> str:
    """Hex sha256 of a file's bytes (read in blocks, so a large file is never held in memory)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@dataclass(frozen=True)
class Section:
    """A `## ` section: heading line at `start`, body `[body, end)`; title "" before any heading."""

    title: str
    start: int
    body: int
    end: int

    @property
    def headed(self) -> bool:
        """False only for the preamble, the text before the first heading (it has no heading line)."""
        return self.body > self.start


def fence(content: str, info: str = "") -> str:
    """Fence `content` verbatim, with a fence longer than any backtick run inside it.

    >>> fence("x = 1", "python"), fence("```\\nx")
    ('```python\\nx = 1\\n```', '````\\n```\\nx\\n````')
    """
    longest = max((len(run) for run in re.findall(r"`{3,}", content)), default=0)
    mark = "`" * max(3, longest + 1)
    return f"{mark}{info}\n{content}\n{mark}"


#: A line that opens fenced code: up to 3 spaces, then 3+ backticks (no backtick after) or 3+ tildes.
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}(?=[^`]*$)|~{3,})")
_HEADING = re.compile(r"## (.+)")


def _closes(line: str, mark: str) -> bool:
    """Does `line` close the fence opened by `mark` (same character, at least as long, nothing else)?

    >>> _closes("````  ", "```"), _closes("``", "```"), _closes("~~~", "```")
    (True, False, False)
    """
    run = line.rstrip(" \t\r")
    indent = len(run) - len(run.lstrip(" "))
    run = run.lstrip(" ")
    return indent <= 3 and len(run) >= len(mark) and set(run) == {mark[0]}


def _headings(text: str) -> list[tuple[str, int, int]]:
    """(title, line start, body start) of each `## ` line outside fenced code.

    >>> _headings("## A\\n```\\n## code, not a heading\\n```\\n## B")
    [('A', 0, 5), ('B', 36, 40)]
    """
    out: list[tuple[str, int, int]] = []
    offset, fence = 0, ""
    for line in text.split("\n"):
        if fence:
            fence = "" if _closes(line, fence) else fence
        elif opening := _FENCE_OPEN.match(line):
            fence = opening.group(1)
        elif heading := _HEADING.fullmatch(line):
            end = offset + len(line)
            out.append((heading.group(1).strip(), offset, min(end + 1, len(text))))
        offset += len(line) + 1
    return out


def sections(text: str) -> list[Section]:
    """Split `text` at `## ` lines outside fenced code (``` or ~~~, as CommonMark reads it; an open fence runs to
    the end); text before the first heading is a section "". Only "\\n" ends a line ("\\r" is stripped from titles).

    >>> sections("intro\\n## A\\nbody")
    [Section(title='', start=0, body=0, end=6), Section(title='A', start=6, body=11, end=15)]
    >>> [s.title for s in sections("## A\\n~~~\\n## B\\n~~~\\n## C\\n")]
    ['A', 'C']
    """
    heads = _headings(text)
    bounds = [start for _, start, _ in heads] + [len(text)]  # each section ends where the next starts
    out = [Section("", 0, 0, bounds[0])] if bounds[0] > 0 else []
    out += [Section(title, start, body, end) for (title, start, body), end in zip(heads, bounds[1:], strict=True)]
    return out



def write_markdown(doc: Document, folder: Path, encoding: str = "utf-8") -> Path:
    """`doc` as the file FOLDER/<id>.md: a `# title` line, a blank line, its text (in `encoding`).

    >>> import tempfile
    >>> path = write_markdown(Document("a", "A", "## S\\n\\nText.\\n"), Path(tempfile.mkdtemp()) / "docs")
    >>> path.name, path.read_text(encoding="utf-8")
    ('a.md', '# A\\n\\n## S\\n\\nText.\\n')
    """
    path = folder / f"{doc.id}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f"# {doc.title}\n\n{doc.text}".encode(encoding))
    return path


def write_sections(doc: Document, folder: Path) -> list[Path]:
    """Each section of `doc` with text under its first line as FOLDER/<id>/NN.md (NN: its position), titled
    `# doc title: section title` ("Introduction" for the text before the first heading).

    >>> import tempfile
    >>> paths = write_sections(Document("a", "A", "## S\\n\\nText.\\n## Empty\\n"), Path(tempfile.mkdtemp()))
    >>> [p.name for p in paths], paths[0].read_text(encoding="utf-8").splitlines()[0]
    (['00.md'], '# A: S')
    """
    written = []
    for k, sec in enumerate(sections(doc.text)):
        body = doc.text[sec.start:sec.end]
        if body.strip().partition("\n")[2].strip():  # a heading with nothing under it is no document
            path = folder / doc.id / f"{k:02d}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {doc.title}: {sec.title or 'Introduction'}\n\n{body}", encoding="utf-8")
            written.append(path)
    return written

def document_sha256(doc: Document) -> str:
    """sha256 of one document's text (UTF-8): what the lock and the manifest record per document."""
    return hashlib.sha256(doc.text.encode("utf-8")).hexdigest()


def fingerprint(docs: list[Document]) -> str:
    """sha256 over the canonical JSON of all (id, title, text), sorted by id.

    >>> fingerprint([Document("a", "T", "text")]) == hashlib.sha256(b'[["a","T","text"]]').hexdigest()
    True
    """
    rows = [[d.id, d.title, d.text] for d in sorted(docs, key=lambda d: d.id)]
    canonical = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def read_lock(lock_path: Path | None = None) -> dict:
    """The committed lock (data/corpus.lock.json)."""
    path = Path(lock_path) if lock_path is not None else LOCK_PATH
    if not path.is_file():
        raise CorpusError(f"lock file {path} is missing; a maintainer writes it with "
                          f"`{BUILD_COMMAND} --update-lock`")
    return json.loads(path.read_text(encoding="utf-8"))


def differing(docs: list[Document], expected: dict[str, str]) -> list[str]:
    """Ids whose text's sha256 is not `expected`'s (id -> sha256), or that only one side holds.

    >>> differing([Document("a", "A", "x")], {"a": document_sha256(Document("a", "A", "x")), "b": "0"})
    ['b']
    """
    actual = {d.id: document_sha256(d) for d in docs}
    return sorted(i for i in set(expected) | set(actual) if expected.get(i) != actual.get(i))


def verify(docs: list[Document], lock: dict) -> None:
    """Raise CorpusError unless `docs` match the lock's fingerprint (naming the documents)."""
    actual = fingerprint(docs)
    if actual == lock["fingerprint"]:
        return
    differ = differing(docs, lock.get("documents", {}))
    raise CorpusError(
        f"corpus fingerprint mismatch: expected {lock['fingerprint']}, got {actual}; "
        f"documents that differ: {', '.join(differ) or '(titles only)'}. "
        f"Delete the cache and {REBUILD_HINT}; if the change is deliberate, a maintainer "
        f"runs `{BUILD_COMMAND} --update-lock`."
    )


def read_built(folder: Path, label: str, hint: str) -> list[Document]:
    """The documents a build wrote to `folder` (manifest.json + one .md each), sorted by id; not verified.

    A missing manifest or file raises CorpusError starting with `label` and ending with `hint`. The main
    corpus (`load_corpus`) and chapter 9's genres (`ragcourse.genres.load_genre`) are read by this one rule.
    """
    manifest_path = Path(folder) / "manifest.json"
    if not manifest_path.is_file():
        raise CorpusError(f"{label}: no built corpus at {folder} ({manifest_path.name} missing); {hint}")
    docs = []
    for entry in json.loads(manifest_path.read_text(encoding="utf-8"))["documents"]:
        file = Path(folder) / f"{entry['id']}.md"
        if not file.is_file():
            raise CorpusError(f"{label}: {file} is missing; {hint}")
        docs.append(Document(entry["id"], entry["title"], file.read_bytes().decode("utf-8")))
    return sorted(docs, key=lambda d: d.id)


def load_corpus(path: Path | None = None, lock_path: Path | None = None) -> list[Document]:
    """Read the cached corpus (sorted by id), verified against the lock on every load."""
    docs = read_built(Path(path) if path is not None else CORPUS_DIR, "corpus", REBUILD_HINT)
    verify(docs, read_lock(lock_path))
    return docs


def profile(docs: list[Document]):
    """One row per document: id, title, characters, `## ` sections, words (a pandas DataFrame).

    >>> profile([Document("d", "Doc", "Intro.\\n\\n## A\\nOne two.\\n")]).to_dict("records")
    [{'id': 'd', 'title': 'Doc', 'characters': 22, 'sections': 1, 'words': 5}]
    """
    import pandas as pd

    rows = [{"id": d.id, "title": d.title, "characters": len(d.text),
             "sections": sum(s.headed for s in sections(d.text)), "words": len(d.text.split())}
            for d in docs]
    return pd.DataFrame(rows, columns=["id", "title", "characters", "sections", "words"])


def run_command(action) -> int:
    """Exit status of a corpus command: 0 when `action()` succeeds, 1 with the error on stderr when not."""
    try:
        action()
    except CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m ragcourse.corpus check`: verify the built corpus (building is `ragcourse.build.corpus`)."""
    parser = argparse.ArgumentParser(prog="python -m ragcourse.corpus", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["check"])
    parser.parse_args(argv)

    def check() -> None:
        docs = load_corpus()
        print(f"corpus OK: {len(docs)} documents, fingerprint {fingerprint(docs)}")

    return run_command(check)


if __name__ == "__main__":
    sys.exit(main())
