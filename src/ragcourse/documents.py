"""The one document reader: a file becomes the same `Document` for `ragcourse chunk`, `index` and `eval`.

`read_document` turns one file into a `corpus.Document` whose text is Markdown as the course corpus
writes it (`## ` starts a section, `### ` and deeper are sub-headings, fenced code), so the chunkers
of chapter 2 find the same sections and every offset refers to that text:

- Markdown (.md, .markdown): read as it is; a `# ` first line is the title and leaves the text
  (the course corpus keeps titles apart), else the first `# ` line is the title;
- reStructuredText (.rst): docutils' own parser and the course corpus's doctree walk (`ragcourse.rst`,
  imported only for an .rst file): the document title leaves the text, sections become `## `; Sphinx's
  directives and roles keep their words, and a directive neither knows is kept as plain text and counted
  (`read_file`'s `kept_as_text`);
- HTML (.html, .htm): parsed by BeautifulSoup; the first `<h1>` (else `<title>`) is the title,
  `<h2>` starts a section, `<h3>`-`<h6>` are sub-headings, `<pre>` is fenced, lists and table rows stay
  one per line; scripts, styles and navigation are dropped;
- PDF (.pdf): pypdf's text, page by page (its title from the metadata); plain text (.txt) as it is.

A document without a title is titled by its file name. A file with nothing to read (empty, or only markup
that has no text, such as an autodoc stub) is a `Failure` of its own kind, `no_text`, apart from a file that
could not be read. `walk` lists a folder (recursively) the way
every command reads it: document files, other files (not documents: counted, never read), and
entries that cannot be read, each with its reason: a link out of the folder (not followed), a link
loop, a broken link, a named pipe or other special file (never opened), an unreadable folder.
Hidden folders (`.git`) are not entered. Nothing is left out without a trace.

Leaves out: OCR (a scanned PDF has no text and fails), Office formats, and Markdown dialects
(a Markdown file's text is kept exactly as written).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from .corpus import Document, fence
from .words import collapse

#: Bump whenever the same bytes are read into different text, title or sections (an index records it).
READER_VERSION = "documents-2"  # 2: Sphinx's directives and roles keep their text
#: Default size limit per file, in bytes.
MAX_BYTES = 2_000_000
MARKDOWN_SUFFIXES = (".md", ".markdown")
TEXT_SUFFIXES = (*MARKDOWN_SUFFIXES, ".rst", ".txt")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
#: Every type read; any other file is not a document.
SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + PDF_SUFFIXES
_SIGNATURES = {b"\x89PNG\r\n\x1a\n": "PNG image", b"%PDF-": "PDF", b"PK\x03\x04": "ZIP archive",
               b"\xff\xd8\xff": "JPEG image", b"GIF8": "GIF image", b"\x7fELF": "executable"}
_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
            (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class ExtractionError(ValueError):
    """A file could not be turned into text; the message is the reason recorded for it."""


#: The reasons that say a file was read and had nothing to read in it ("no text"), not that it failed.
NO_TEXT_REASONS = ("empty file", "no text")


@dataclass(frozen=True)
class Failure:
    """A path that is not in the corpus, and why."""

    path: str
    reason: str

    @property
    def no_text(self) -> bool:
        """True when the file was read and holds no text (empty, or markup only), False when reading failed.

        >>> Failure("a.rst", "no text: nothing readable").no_text, Failure("b.pdf", "not a PDF").no_text
        (True, False)
        """
        return self.reason.startswith(NO_TEXT_REASONS)


class Read(NamedTuple):
    """One file read: its Document, and the directives kept as plain text (an .rst file's), name -> count."""

    document: Document
    kept_as_text: dict[str, int]


@dataclass(frozen=True)
class Walk:
    """A folder as the commands see it: document files, other files, and entries that cannot be read."""

    files: tuple[str, ...]  # paths relative to the folder ("/"-separated), each to read as a document
    skipped: tuple[str, ...]  # files that are not documents (by type), and hidden folders ("name/")
    problems: tuple[Failure, ...]  # links out, loops, broken links, special files, unreadable folders

    @property
    def attempted(self) -> tuple[str, ...]:
        """The files and the problem paths, sorted: what an index records (a problem fails with its reason)."""
        return tuple(sorted([*self.files, *(p.path for p in self.problems)], key=_sort_key))


def printable(text: str) -> str:
    """`text` safe on one terminal line: control characters (a newline in a file name) written as escapes.

    >>> printable("new\\nline.md")
    'new\\\\nline.md'
    """
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode() for ch in text)


def _utf8(name: str) -> bool:
    """Whether a path's name decoded from UTF-8 (a byte that did not is a lone surrogate, unprintable and unsavable).

    >>> _utf8("café.md"), _utf8(os.fsdecode(b"caf\\xe9.md"))
    (True, False)
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _sort_key(relative: str) -> tuple[str, ...]:
    return PurePosixPath(relative).parts


def binary_kind(raw: bytes) -> str | None:
    """'PNG image' for PNG bytes, 'NUL bytes' for other binary data, None for text-like bytes.

    >>> binary_kind(b"\\x89PNG\\r\\n\\x1a\\n..."), binary_kind(b"a\\x00b"), binary_kind(b"# Title")
    ('PNG image', 'NUL bytes', None)
    """
    for magic, kind in _SIGNATURES.items():
        if raw.startswith(magic):
            return kind
    return "NUL bytes" if b"\x00" in raw[:8192] else None


# ---------------------------------------------------------------- what a path is


def _scandir(folder: Path) -> list[os.DirEntry]:
    """The folder's entries (one place, so a test can simulate a folder it may not read)."""
    with os.scandir(folder) as entries:
        return list(entries)


def _link_problem(path: Path, root: Path | None) -> str | None:
    """Why a symbolic link is not followed (loop, broken, out of `root`, to a folder), or None to read it."""
    try:
        target = path.resolve(strict=True)
    except RuntimeError:  # Python 3.11 and 3.12 say "Symlink loop"
        return "symbolic link loop: not followed"
    except OSError as err:
        if err.errno == errno.ELOOP:  # Python 3.13 raises the system's "Too many levels of symbolic links"
            return "symbolic link loop: not followed"
        return f"broken symbolic link ({err.strerror or err}): not followed"
    if root is not None and not target.is_relative_to(root.resolve()):
        return f"symbolic link to {target}, outside the folder: not followed"
    if target.is_dir():
        return f"symbolic link to the folder {target}: not followed (a folder inside is read where it is)"
    return None


def problem(path: Path, root: Path | None = None) -> str | None:
    """Why `path` cannot be read as a file (see `walk`), or None; `root` bounds where links may point."""
    if path.is_symlink():
        why = _link_problem(path, root)
        if why is not None:
            return why
    try:
        mode = path.stat().st_mode
    except OSError as err:
        return f"unreadable: {err.strerror or err}"
    if stat.S_ISDIR(mode):
        try:
            _scandir(path)
        except OSError as err:
            return f"unreadable folder: {err.strerror or err}"
        return "a folder, not a file"
    return next((f"{name}, not a file: never opened" for test, name in _SPECIAL if test(mode)), None)


def _root_of(path: Path, doc_id: str) -> Path | None:
    """The folder `doc_id` is relative to, when `path` ends with it (else None: no folder to stay in)."""
    parts = PurePosixPath(doc_id).parts
    if not parts or Path(path).parts[-len(parts):] != parts:
        return None
    return Path(path).parents[len(parts) - 1]


def walk(folder: str | Path, exclude: tuple[Path, ...] = ()) -> Walk:
    """Every entry under `folder`, recursively, sorted: a document file, another file, or a problem.

    Folders in `exclude` (resolved paths) are not entered; the caller says why.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{str(root)!r} is not a directory")
    files, skipped, problems, stack = [], [], [], [root]
    excluded = {Path(p).resolve() for p in exclude}
    while stack:
        current = stack.pop()
        relative = current.relative_to(root).as_posix()
        try:
            entries = _scandir(current)
        except OSError as err:
            problems.append(Failure(relative, f"unreadable folder: {err.strerror or err}"))
            continue
        for entry in entries:
            path = Path(entry.path)
            name = path.relative_to(root).as_posix()
            why = problem(path, root) if _utf8(name) else "file name is not UTF-8: rename it to be read"
            if not _utf8(name):
                problems.append(Failure(os.fsencode(name).decode("utf-8", "backslashreplace"), why))
            elif why == "a folder, not a file" and not path.is_symlink():
                if entry.name.startswith("."):
                    skipped.append(name + "/")
                elif path.resolve() not in excluded:
                    stack.append(path)
            elif why is not None:
                problems.append(Failure(name, why))
            else:
                (files if path.suffix.lower() in SUFFIXES else skipped).append(name)
    return Walk(tuple(sorted(files, key=_sort_key)), tuple(sorted(skipped, key=_sort_key)),
                tuple(sorted(problems, key=lambda f: _sort_key(f.path))))


# ---------------------------------------------------------------- formats


def _decode(raw: bytes) -> str:
    """UTF-8 text (byte-order mark dropped) or ExtractionError naming the first bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ExtractionError(f"undecodable: not UTF-8, byte 0x{raw[err.start]:02x} at offset "
                              f"{err.start}") from err


def markdown(text: str) -> tuple[str, str | None]:
    """(text, title): a `# ` first line is the title and leaves the text; else the first `# ` line.

    >>> markdown("# Tents\\n\\nPitch them.\\n")
    ('Pitch them.\\n', 'Tents')
    """
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].startswith("# "):
        rest = "\n".join(lines[first + 1:]).lstrip("\r\n")
        return rest, lines[first][2:].strip() or None
    return text, next((ln[2:].strip() for ln in lines if ln.startswith("# ") and ln[2:].strip()), None)


def restructuredtext(text: str, name: str) -> tuple[str, str | None, dict[str, int]]:
    """(text, title, directives kept as plain text) of reStructuredText, through docutils and the course
    corpus's doctree walk.

    >>> restructuredtext("Rope\\n====\\n\\nCoil it.\\n\\n.. tip-box::\\n\\n   Dry it.\\n", "r.rst")
    ('Coil it.\\n\\nDry it.\\n', 'Rope', {'tip-box': 1})
    """
    from . import rst

    doctree = rst.parse(text.replace("\r\n", "\n"), name)
    kept = rst.kept_as_text(doctree)
    title, body = rst.render_document(doctree)
    return body, title or None, kept


def _pdf(raw: bytes) -> tuple[str, str | None]:
    """(text, title) of a PDF: each page's extracted text, pages separated by a blank line."""
    import io
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on a damaged file: the reason says it
    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted:
            raise ExtractionError("PDF is encrypted")
        pages = [page.extract_text() or "" for page in reader.pages]
        title = (reader.metadata.title if reader.metadata else None) or None
    except ExtractionError:
        raise
    except Exception as err:  # pypdf raises many types on a damaged file
        raise ExtractionError(f"PDF could not be read: {type(err).__name__}: {err}") from err
    return "\n\n".join(p.strip() for p in pages if p.strip()) + "\n", title


_DROP = {"script", "style", "noscript", "template", "nav", "svg", "head", "title", "iframe", "object", "button", "form"}
_HEADING = re.compile(r"h[1-6]")
_BLOCK = {"p", "div", "section", "article", "main", "aside", "header", "footer", "blockquote", "figure",
          "figcaption", "ul", "ol", "li", "dl", "dt", "dd", "pre", "table", "thead", "tbody", "tfoot", "tr",
          "td", "th", "caption", "hr", "address", "details", "summary", "body", "html", "center", "fieldset"}


def _inline(node) -> str:
    """A node's text on one line: whitespace collapsed, `<br>` a space."""
    return collapse(node.get_text(" ") if node.find("br") else node.get_text())


def _html_row(row) -> str:
    return " | ".join(c for c in (_inline(cell) for cell in row.find_all(["td", "th"], recursive=False)) if c)


def _html_list(node) -> str:
    """A list as one block, one `- item` line per item (a nested list's text stays with its item)."""
    items = [_inline(li) for li in node.find_all(["li", "dt", "dd"], recursive=False)]
    return "\n".join(f"- {item}" for item in items if item)


def _html_block(node) -> list[str]:
    """Markdown blocks for one block-level element (containers recurse)."""
    if _HEADING.fullmatch(node.name):
        text = _inline(node)
        return [f"{'#' * max(2, int(node.name[1]))} {text}"] if text else []
    if node.name == "pre":
        return [fence(node.get_text().strip("\n"))] if node.get_text().strip() else []
    if node.name in ("ul", "ol", "dl"):
        return [_html_list(node)]
    if node.name == "table":
        rows = [r for r in (_html_row(tr) for tr in node.find_all("tr")) if r]
        return ["\n".join(rows)] if rows else []
    if node.name == "hr":
        return []
    return _html_blocks(node)


def _html_blocks(node) -> list[str]:
    """Blocks of a container: runs of inline content become paragraphs, block children recurse."""
    from bs4 import NavigableString, Tag

    out, run = [], []
    for child in node.children:
        block = isinstance(child, Tag) and (child.name in _BLOCK or _HEADING.fullmatch(child.name) is not None)
        if block:
            out.append(collapse("".join(run)))
            run = []
            out.extend(_html_block(child))
        elif isinstance(child, Tag):
            run.append(" " if child.name == "br" else child.get_text())
        elif type(child) is NavigableString:  # not a comment, doctype or CDATA
            run.append(str(child))
    out.append(collapse("".join(run)))
    return [b for b in out if b]


def html(page: str) -> tuple[str, str | None]:
    """(text, title) of an HTML page: the first `<h1>` (else `<title>`) is the title and leaves the text.

    >>> html("<title>T</title><h1>Food</h1><p>Oats.</p><h2>Snacks</h2><ul><li>Nuts</li><li>Figs</li></ul>")
    ('Oats.\\n\\n## Snacks\\n\\n- Nuts\\n- Figs\\n', 'Food')
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    title = collapse(soup.title.get_text()) if soup.title else ""
    for tag in soup.find_all(_DROP):
        tag.decompose()
    h1 = soup.find("h1")
    if h1 is not None:
        title = _inline(h1) or title
        h1.decompose()
    return "\n\n".join(_html_blocks(soup)) + "\n", title or None


def _read_bytes(path: Path) -> bytes:
    """The file's bytes (one place, so a test can simulate a file it may not read)."""
    return path.read_bytes()


def _raw(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular, non-empty file within the size limit, or ExtractionError saying why not."""
    try:
        size = path.stat().st_size
        raw = b"" if size == 0 or size > max_bytes else _read_bytes(path)
    except OSError as err:
        raise ExtractionError(f"unreadable: {err.strerror or err}") from err
    if size == 0:
        raise ExtractionError("empty file (0 bytes)")
    if size > max_bytes:
        raise ExtractionError(f"too large: {size} bytes > limit of {max_bytes} bytes")
    return raw


def _text_and_title(path: Path, raw: bytes) -> tuple[str, str | None, dict[str, int]]:
    """Dispatch on the suffix; binary bytes in a text type are refused."""
    suffix, kind = path.suffix.lower(), binary_kind(raw)
    if suffix in PDF_SUFFIXES:
        if kind != "PDF":
            raise ExtractionError(f"not a PDF: the file does not start with %PDF- ({kind or 'text'})")
        return (*_pdf(raw), {})
    if kind is not None:
        raise ExtractionError(f"binary content ({kind}), not text")
    if suffix in MARKDOWN_SUFFIXES:
        return (*markdown(_decode(raw)), {})
    if suffix in HTML_SUFFIXES or suffix == ".rst":
        text = _decode(raw)
        try:
            return (*html(text), {}) if suffix in HTML_SUFFIXES else restructuredtext(text, path.name)
        except Exception as err:  # a parser's failure on one hostile file (nesting past the recursion limit)
            raise ExtractionError(f"could not be parsed as {suffix}: {type(err).__name__}: {err}") from err
    return _decode(raw), None, {}


def read_document(path: str | Path, doc_id: str | None = None, max_bytes: int = MAX_BYTES) -> Document:
    """One file as a Document (id `doc_id`, default its name), or ExtractionError with the reason it is not one.

    When `path` ends with `doc_id` (a path relative to a folder), a link out of that folder is refused.
    """
    return read_file(path, doc_id, max_bytes).document


def read_file(path: str | Path, doc_id: str | None = None, max_bytes: int = MAX_BYTES) -> Read:
    """`read_document`, with what it kept as plain text (the directives of an .rst file neither reader knows)."""
    path = Path(path)
    doc_id = path.name if doc_id is None else doc_id
    why = problem(path, _root_of(path, doc_id))
    if why is not None:
        raise ExtractionError(why)
    if path.suffix.lower() not in SUFFIXES:
        raise ExtractionError(f"not a document: unsupported type {path.suffix.lower() or '(no suffix)'!r}; "
                              f"supported: {', '.join(SUFFIXES)}")
    text, title, kept = _text_and_title(path, _raw(path, max_bytes))
    if not text.strip():
        raise ExtractionError("no text: nothing readable after extraction")
    return Read(Document(id=doc_id, title=collapse(title or "") or path.name, text=text), kept)
