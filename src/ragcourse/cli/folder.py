"""Your own documents: read a folder as a corpus, and your own questions against it (`ragcourse eval`).

`read_folder` reads a folder recursively: Markdown, reStructuredText and plain text as UTF-8
(a byte-order mark and CRLF line ends accepted), HTML through BeautifulSoup (`## ` lines for its
sub-headings, so sections survive), PDF through pypdf. Every file ends either as a `Document` or
as a `Failure` with its reason (unreadable, empty, binary, undecodable, unsupported, too large,
no text): nothing is dropped silently. A document's id is its path relative to the folder; its
title is its first heading (`# ` line, RST title, `<h1>`/`<title>`, PDF title), else its file name.
A Markdown title on the first line is taken out of the text, as the course corpus keeps titles apart.

`load_folder_questions` applies the ground truth's rules (`groundtruth.check_needle`: exactly once,
whitespace collapsed, never in a heading) to a folder, with `ticket` and `doc` optional;
`candidate_needles` proposes sentences to write questions against (`ragcourse needles`).

Leaves out: OCR (a scanned PDF has no text and fails), Office formats, RST section structure (an
RST file is one section), and following symbolic links out of the folder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..chunking import paragraph_spans, sentence_spans
from ..corpus import Document, collapse
from ..groundtruth import GroundTruthError, OutOfDomain, Query, Question, check_needle, read_records
from ..index import MAX_BYTES, ExtractionError, _binary_kind

#: File types read as UTF-8 text, as HTML, and as PDF.
TEXT_SUFFIXES = (".md", ".markdown", ".rst", ".txt")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + PDF_SUFFIXES
_RST_ADORNMENT = re.compile(r"([=\-~^\"'`#*+<>:.])\1{2,}\s*")


@dataclass(frozen=True)
class Failure:
    """A file that is not in the corpus, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class FolderCorpus:
    """A folder read as a corpus: its documents (sorted by path) and the files that failed."""

    documents: tuple[Document, ...]
    failed: tuple[Failure, ...]


def _read_bytes(path: Path) -> bytes:
    """The file's bytes (one place, so a test can simulate a file it may not read)."""
    return path.read_bytes()


def _decode(raw: bytes) -> str:
    """UTF-8 text (byte-order mark dropped) or ExtractionError naming the first bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ExtractionError(f"undecodable: not UTF-8, byte 0x{raw[err.start]:02x} at offset "
                              f"{err.start}") from err


def _markdown(text: str) -> tuple[str, str | None]:
    """(text, title): a `# ` first line is the title and leaves the text; else the first `# ` line.

    >>> _markdown("# Tents\\n\\nPitch them.\\n")
    ('Pitch them.\\n', 'Tents')
    """
    lines = text.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].startswith("# "):
        rest = "\n".join(lines[first + 1:]).lstrip("\r\n")
        return rest, lines[first][2:].strip() or None
    return text, next((ln[2:].strip() for ln in lines if ln.startswith("# ") and ln[2:].strip()), None)


def _rst_title(text: str) -> str | None:
    """The first line underlined by a run of one punctuation character at least as long."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    for above, below in zip(lines, lines[1:], strict=False):
        if above.strip() and not _RST_ADORNMENT.fullmatch(above) and _RST_ADORNMENT.fullmatch(below) \
                and len(below.strip()) >= len(above.strip()):
            return above.strip()
    return None


def _html(raw: bytes) -> tuple[str, str | None]:
    """(text, title) of an HTML page: scripts dropped, h2-h6 as `## ` lines, the first h1 (or <title>) the title."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(_decode(raw), "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    h1 = soup.find("h1")
    title = (h1.get_text(" ", strip=True) if h1 else "") or \
        (soup.title.get_text(" ", strip=True) if soup.title else "")
    if h1 is not None:
        h1.decompose()
    if soup.title is not None:
        soup.title.decompose()
    for heading in soup(["h2", "h3", "h4", "h5", "h6"]):
        heading.replace_with(f"\n\n## {heading.get_text(' ', strip=True)}\n\n")
    for block in soup(["p", "div", "li", "pre", "tr", "br", "section", "article", "table", "ul", "ol"]):
        block.insert_before("\n\n" if block.name != "br" else "\n")
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", soup.get_text())]
    return "\n\n".join(p for p in paragraphs if p) + "\n", title or None


def _pdf(path: Path, raw: bytes) -> tuple[str, str | None]:
    """(text, title) of a PDF: each page's extracted text, pages separated by a blank line."""
    import io

    from pypdf import PdfReader

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


def read_document(path: Path, doc_id: str, max_bytes: int = MAX_BYTES) -> Document:
    """One file as a Document, or ExtractionError with the reason it cannot be one."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise ExtractionError(f"unsupported type {suffix or '(no suffix)'!r}; supported: {', '.join(SUFFIXES)}")
    try:
        size = path.stat().st_size
        raw = b"" if size == 0 or size > max_bytes else _read_bytes(path)
    except OSError as err:
        raise ExtractionError(f"unreadable: {err.strerror or err}") from err
    if size == 0:
        raise ExtractionError("empty file (0 bytes)")
    if size > max_bytes:
        raise ExtractionError(f"too large: {size} bytes > limit of {max_bytes} bytes")
    kind = _binary_kind(raw)
    if suffix in PDF_SUFFIXES:
        if kind != "PDF":
            raise ExtractionError(f"not a PDF: the file does not start with %PDF- ({kind or 'text'})")
        text, title = _pdf(path, raw)
    elif kind is not None:
        raise ExtractionError(f"binary content ({kind}), not text")
    elif suffix in HTML_SUFFIXES:
        text, title = _html(raw)
    else:
        text, title = _markdown(_decode(raw)) if suffix in (".md", ".markdown") else (_decode(raw), None)
        title = _rst_title(text) if suffix == ".rst" else title
    if not text.strip():
        raise ExtractionError("no text: nothing readable after extraction")
    return Document(id=doc_id, title=title or path.name, text=text)


def read_folder(folder: str | Path, max_bytes: int = MAX_BYTES) -> FolderCorpus:
    """Every file under `folder` (recursively, sorted by path) as a Document or a Failure."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"DOCS_DIR {str(root)!r} is not a directory")
    documents, failed = [], []
    for path in sorted(root.rglob("*")):
        if path.is_dir():
            continue
        doc_id = path.relative_to(root).as_posix()
        try:
            documents.append(read_document(path, doc_id, max_bytes))
        except ExtractionError as err:
            failed.append(Failure(doc_id, str(err)))
    return FolderCorpus(tuple(documents), tuple(failed))


def export_corpus(documents: Sequence[Document], dest: str | Path) -> list[Path]:
    """Write each document as `<id>.md`, its title as the first line (`# title`): `read_folder` reads it back."""
    folder = Path(dest)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for d in documents:
        path = folder / f"{d.id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {d.title}\n\n{d.text}", encoding="utf-8")
        paths.append(path)
    return paths


# ---------------------------------------------------------------- questions


def load_folder_questions(path: str | Path, documents: Sequence[Document]) -> list[Question]:
    """Questions (id, needle, question; optional ticket, doc) validated against a folder corpus.

    The ground truth's rules apply: the needle occurs exactly once in the corpus (whitespace
    collapsed), in `doc` when given (a path relative to the folder), and never in a heading.
    """
    path = Path(path)
    if not documents:
        raise GroundTruthError(f"{path}: the folder has no readable documents to check needles against")
    collapsed = {d.id: collapse(d.text) for d in documents}
    questions = []
    for number, r in read_records(path, ("id", "needle", "question"), ("ticket", "doc")):
        needle = collapse(r["needle"])
        doc = r.get("doc") or next((i for i, t in collapsed.items() if needle in t), documents[0].id)
        question = Question(r["id"], doc, r["needle"], r["question"], r.get("ticket", "").strip())
        check_needle(question, list(documents), where=f"{path}:{number}: ")
        questions.append(question)
    return questions


def folder_queries(questions: Sequence[Question]) -> list[Query]:
    """Each question's documentation phrasing, then its ticket phrasing when it has one."""
    out = []
    for q in questions:
        out.append(Query(f"{q.id}/doc", q.id, "doc", q.question, q.needle, q.doc))
        if q.ticket:
            out.append(Query(f"{q.id}/ticket", q.id, "ticket", q.ticket, q.needle, q.doc))
    return out


def load_folder_out_of_domain(path: str | Path) -> list[OutOfDomain]:
    """Out-of-domain queries: id and query, and an optional free-text kind."""
    return [OutOfDomain(r["id"], r["query"], r.get("kind", ""))
            for _, r in read_records(Path(path), ("id", "query"), ("kind",))]


# ---------------------------------------------------------------- candidate needles


def _sentences(document: Document) -> list[str]:
    """Sentences of the document's paragraphs that make good needles (40-200 characters, prose-like)."""
    out = []
    for start, end in paragraph_spans(document.text):
        if document.text[start:end].lstrip().startswith(("#", "```", "~~~", "|", "    ")):
            continue
        for s, e in sentence_spans(document.text, start, end):
            if e < end and not document.text[e - 1].isspace():  # a cut inside a token: "Version 2." + "0)"
                continue
            sentence = collapse(document.text[s:e])
            if 40 <= len(sentence) <= 200 and sentence[0].isupper() and sentence[-1] in ".!?" \
                    and not any(ch in sentence for ch in "`|{}<>[]"):
                out.append(sentence)
    return out


def candidate_needles(documents: Sequence[Document], n: int = 50) -> list[tuple[str, str]]:
    """Up to `n` (doc id, sentence) pairs, spread evenly over the corpus, each a valid needle."""
    pool = [(d.id, s) for d in documents for s in _sentences(d)]
    step = max(1, len(pool) // max(1, n))
    ordered = pool[::step] + [p for i, p in enumerate(pool) if i % step]
    found: list[tuple[str, str]] = []
    for doc, sentence in ordered:
        try:
            check_needle(Question("candidate", doc, sentence, "", ""), list(documents))
        except GroundTruthError:
            continue
        found.append((doc, sentence))
        if len(found) == n:
            break
    return found
