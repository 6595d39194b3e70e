"""Chapter 8's broken folder: five good Markdown files and one of each kind of file that commonly cannot be read.

The lesson and the lab ingest the same folder, so it is written here once. What it leaves out: every other way
a file can be unreadable (links, special files: `ragcourse.documents.walk` and its tests cover those).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from ragcourse.corpus import Document, write_markdown
from ragcourse.documents import MAX_BYTES

#: The documents written as they should be; eps-ep-001 is written beside them in cp1252.
GOOD = ("dev-repository", "dev-testing", "eps-ep-010", "ref-rst-roles", "user-rst-quickstart")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n"


class BrokenFolder(NamedTuple):
    """The folder written, and how many copies of the corpus its export holds (just over `MAX_BYTES`)."""

    path: Path
    copies: int


def write_broken_folder(docs: Iterable[Document], folder: Path) -> BrokenFolder:
    """Write the `GOOD` documents of `docs` to `folder`, eps-ep-001 in cp1252, an empty note, a PNG and a PDF
    named as documents, and an export of all of `docs` over `MAX_BYTES`.

    >>> import tempfile
    >>> docs = [Document(i, i.upper(), "## S\\n\\nA dash \\u2014 here.\\n") for i in (*GOOD, "eps-ep-001")]
    >>> made = write_broken_folder(docs, Path(tempfile.mkdtemp()) / "broken")
    >>> sorted(p.relative_to(made.path).as_posix() for p in made.path.rglob("*") if p.is_file())[:3]
    ['dev-repository.md', 'dev-testing.md', 'eps-ep-001.md']
    >>> (made.path / "eps-ep-001.md").read_bytes().count(b"\\x97"), (made.path / "notes/todo.md").read_bytes()
    (1, b'')
    >>> (made.path / "export/all-docs.txt").stat().st_size > MAX_BYTES
    True
    """
    docs = list(docs)
    by_id = {d.id: d for d in docs}
    for doc_id in GOOD:
        write_markdown(by_id[doc_id], folder)
    write_markdown(by_id["eps-ep-001"], folder, encoding="cp1252")  # the em dash becomes byte 0x97
    manual = "".join(f"# {d.title}\n\n{d.text}\n\n" for d in docs).encode("utf-8")
    copies = MAX_BYTES // len(manual) + 1
    for name, data in [("notes/todo.md", b""), ("scans/figure-3.md", PNG), ("manual.pdf", PDF),
                       ("export/all-docs.txt", manual * copies)]:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return BrokenFolder(folder, copies)
