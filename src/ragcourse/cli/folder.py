"""Your own documents: read a folder as a corpus, and your own questions against it (`ragcourse eval`).

`read_folder` reads a folder the way `ragcourse index` and `ragcourse chunk` read it, with the one
reader `ragcourse.documents` (Markdown, reStructuredText through docutils, HTML, PDF, plain text):
every document file ends either as a `Document` or as a `Failure` with its reason (unreadable,
empty, binary, undecodable, too large, no text, a link out of the folder, a link loop, a named pipe,
an unreadable folder); files of other types are not documents and are counted in `skipped`.
Nothing is dropped silently. A document's id is its path relative to the folder.

`load_folder_questions` applies the ground truth's rules (`groundtruth.check_needle`: exactly once,
whitespace collapsed, never in a heading) to a folder, and refuses a needle that is the document's
title, with `ticket` and `doc` optional; `candidate_needles` proposes sentences to write questions
against and `needles_template` turns them into a questions file (`ragcourse needles`).

Leaves out: OCR, Office formats, and following symbolic links out of the folder.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..chunking import paragraph_spans, sentence_spans
from ..corpus import Document
from ..documents import MAX_BYTES, NO_TEXT_REASONS, ExtractionError, Failure, read_file, walk
from ..groundtruth import GroundTruthError, OutOfDomain, Query, Question, check_needle
from ..records import RecordsError, Rejected, parse_records, where
from ..words import collapse

__all__ = ["FolderCorpus", "read_folder", "readable_part", "check_folder_questions",
           "load_folder_questions"]


@dataclass(frozen=True)
class FolderCorpus:
    """A folder read as a corpus: its documents (sorted by path), the files that failed or hold no text
    (`Failure.no_text` tells them apart), the non-documents, and each (path, directive, count) kept as text."""

    documents: tuple[Document, ...]
    failed: tuple[Failure, ...]
    skipped: tuple[str, ...] = ()
    kept_as_text: tuple[tuple[str, str, int], ...] = ()
    excluded: tuple[str, ...] = ()  # paths an --exclude glob matched: never read
    root: str = ""  # the folder read, for `source_position`


def excluded_by(path: str, globs: Sequence[str]) -> bool:
    """Whether a "/"-separated relative path matches a glob (`fnmatch`: `*` may cross folders; a leading `**/`
    also matches at the top), or lies in a folder that does.

    >>> [excluded_by(p, ["api/*", "**/_build/**", "*.txt"]) for p in ("api/a.rst", "x/_build/b.rst", "c.txt",
    ...                                                                "api/sub/d.rst", "e.rst")]
    [True, True, True, True, False]
    """
    parts = PurePosixPath(path).parts
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return any(fnmatch.fnmatchcase(prefix, pattern) for glob in globs for pattern in (glob, glob.removeprefix("**/"))
               for prefix in prefixes)


def read_folder(folder: str | Path, max_bytes: int = MAX_BYTES, exclude: tuple[Path, ...] = (),
                globs: Sequence[str] = ()) -> FolderCorpus:
    """Every document under `folder` (recursively, sorted by path) as a Document or a Failure; `exclude`:
    folders not entered (an output folder); `globs`: paths never read (`--exclude`), listed as excluded."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"DOCS_DIR {str(root)!r} is not a directory")
    found = walk(root, exclude)
    out = [p for p in (*found.files, *found.skipped, *(f.path for f in found.problems)) if excluded_by(p, globs)]
    documents, failed, kept = [], [f for f in found.problems if f.path not in out], []
    for doc_id in (f for f in found.files if f not in out):
        try:
            read = read_file(root / doc_id, doc_id, max_bytes)
        except ExtractionError as err:
            failed.append(Failure(doc_id, str(err)))
            continue
        documents.append(read.document)
        kept += [(doc_id, name, count) for name, count in read.kept_as_text.items()]
    failed.sort(key=lambda f: Path(f.path).parts)
    return FolderCorpus(tuple(documents), tuple(failed), tuple(p for p in found.skipped if p not in out),
                        tuple(kept), tuple(sorted(out)), str(root))


def readable_part(corpus: FolderCorpus, allowed: frozenset[str]) -> FolderCorpus:
    """The folder as one reader sees it (chapter 11's pre-filter, applied to the whole tool): only the documents,
    failed files and other files whose paths are in `allowed`; nothing else is ever read, counted or named.

    >>> part = readable_part(FolderCorpus((), (Failure("hr/a.pdf", "not a PDF"),), ("hr/b.png",)), frozenset())
    >>> part.failed, part.skipped
    ((), ())
    """
    return FolderCorpus(tuple(d for d in corpus.documents if d.id in allowed),
                        tuple(f for f in corpus.failed if f.path in allowed),
                        tuple(s for s in corpus.skipped if s in allowed),
                        tuple(k for k in corpus.kept_as_text if k[0] in allowed),
                        tuple(p for p in corpus.excluded if p in allowed), corpus.root)


def source_position(source: str, passage: str, words: int = 8) -> tuple[int, int] | None:
    """(line, column), from 1, of a passage of extracted text in its source file: where its first `words` words
    occur in that order with only markup or spaces between them; None when they do not (a table, a PDF).

    >>> source_position("Title\\n=====\\n\\nSee :ref:`the guide <g>` first.\\n", "See the guide first.")
    (4, 1)
    """
    found = re.findall(r"\w+", passage)[:words]
    if not found:
        return None
    match = re.search(r"\b" + r"\W+(?:\w+\W+){0,2}?".join(map(re.escape, found)), source)
    if match is None:
        return None
    line = source.count("\n", 0, match.start()) + 1
    return line, match.start() - (source.rfind("\n", 0, match.start()) + 1) + 1


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


def _blank_questions(path: Path, records: list[tuple[int, dict]]) -> None:
    """GroundTruthError naming every line whose `question` is blank (a template from `ragcourse needles`)."""
    blank = [(n, r["id"]) for n, r in records if not r.get("question", "").strip()]
    if not blank:
        return
    shown = ", ".join(f"line {n} ({i})" for n, i in blank[:10]) + (" ..." if len(blank) > 10 else "")
    raise GroundTruthError(
        f"{path}: 'question' is blank on {len(blank)} of {len(records)} line(s): {shown}. Write the question "
        "each needle answers (as your documentation would phrase it) and, if you can, 'ticket' (as a user "
        "would ask it); delete the lines you cannot write a question for")


#: A rejected line's reason is cut to this many characters (a 1 MB needle is not repeated on the terminal).
REASON_CHARS = 600
#: More questions than this are refused whole, before any work: each is embedded once and ranked in every run.
MAX_QUESTIONS = 10_000


@dataclass(frozen=True)
class CheckedQuestions:
    """A questions file checked against a folder: the questions measured, and each line left out with why."""

    questions: tuple[Question, ...]
    rejected: tuple[Rejected, ...]


@dataclass(frozen=True)
class _Folder:
    """What every question is checked against, computed once: collapsed texts and titles, failed files, and
    the reader (`--user`) when the folder is what one reader may read (then nothing else is ever named)."""

    documents: tuple[Document, ...]
    texts: dict[str, str]
    titles: dict[str, str]
    failed: dict[str, str]
    reader: str | None = None
    root: str = ""  # the folder read: its source files say where a needle that reading removed sits

    @classmethod
    def of(cls, documents: Sequence[Document], failed: Sequence[Failure], reader: str | None = None,
           root: str | Path = "") -> _Folder:
        return cls(tuple(documents), {d.id: collapse(d.text) for d in documents},
                   {d.id: collapse(d.title) for d in documents}, {f.path: f.reason for f in failed}, reader,
                   str(root))


def doc_id(path: str) -> str:
    """A `doc` as written by hand, as the folder's ids are: "/"-separated, relative, without "./".

    >>> doc_id("./billing\\\\refunds.md"), doc_id("billing//refunds.md")
    ('billing/refunds.md', 'billing/refunds.md')
    """
    return PurePosixPath(path.strip().replace("\\", "/")).as_posix()


def _unknown_doc(doc: str, folder: _Folder) -> str:
    """Why `doc` names no document of the folder: it failed to read, or it is not there (a close name offered)."""
    import difflib

    if folder.reader is not None and doc not in folder.texts:  # never says whether an unreadable file exists
        return f"not readable by {folder.reader}"
    if doc in folder.failed:
        return f"document {doc!r} could not be read ({folder.failed[doc]}): its question cannot be measured"
    near = difflib.get_close_matches(doc, list(folder.texts), n=1, cutoff=0.8)
    return (f"unknown document {doc!r} (a path relative to DOCS_DIR; {len(folder.texts)} documents were read)"
            + (f"; did you mean {near[0]!r}?" if near else ""))


def _folder_question(r: dict, folder: _Folder) -> Question:
    """One record as a Question, or GroundTruthError whose message starts with its id and says what is wrong."""
    if "question" not in r:
        raise GroundTruthError(f"{r['id']}: missing 'question' (required: id, needle, question; optional: "
                               "ticket, doc)")
    if not r["question"].strip():
        raise GroundTruthError(f"{r['id']}: 'question' is blank: write the question the needle answers")
    needle = collapse(r["needle"])
    titled = next((i for i, t in folder.titles.items() if needle in t), None)
    if titled is not None:
        raise GroundTruthError(f"{r['id']}: needle is (part of) the title of {titled!r} "
                               f"({folder.titles[titled]!r}): choose a sentence of the text, not a heading")
    given = doc_id(r["doc"]) if r.get("doc", "").strip() else None
    if given is not None and given not in folder.texts:
        raise GroundTruthError(f"{r['id']}: {_unknown_doc(given, folder)}")
    doc = given or next((i for i, t in folder.texts.items() if needle in t), folder.documents[0].id)
    question = Question(r["id"], doc, r["needle"], r["question"], r.get("ticket", "").strip())
    try:
        check_needle(question, list(folder.documents), collapsed=folder.texts)
    except GroundTruthError as err:
        if folder.reader is not None and "needle not found" in str(err):  # the needle is not echoed either
            raise GroundTruthError(f"{r['id']}: not readable by {folder.reader}: the needle is in no document "
                                   f"{folder.reader} may read") from None
        if "needle not found" not in str(err):
            raise
        raise GroundTruthError(f"{r['id']}: {not_found(needle, folder)}") from None
    return question


#: How much of a needle, and of the passage nearest to it, a message shows.
SHOWN_CHARS = 120
_MARKUP = re.compile(r":[\w:.+-]+:`|``|`[^`]+`_|\*\*?\w|^\.\. |\|\w+\|", re.M)


def not_found(needle: str, folder: _Folder) -> str:
    """Why a needle matched nothing, and what to do: the extracted text is what is searched; its markup,
    if it carries some, as reading leaves it; the nearest passage (most words shared); files that failed."""
    unread = sum(1 for reason in folder.failed.values() if not reason.startswith(NO_TEXT_REASONS))
    message = f"needle not found in the corpus: {shorten(needle, SHOWN_CHARS)!r}" + (
        f" ({unread} file(s) could not be read: it may be in one of them)" if unread else "")
    if _MARKUP.search(needle):
        plain = _as_read(needle)
        found = plain and any(plain in text for text in folder.texts.values())
        message += (f"; it carries reStructuredText markup, which reading strips: as read it is {plain!r}"
                    + (", which the folder holds: use that" if found else ""))
    elif (stripped := stripped_markup(needle, folder)) is not None:
        message += f"; {stripped}"
    near = nearest_passage(needle, folder.texts)
    if near is not None:
        message += f"; nearest passage of the extracted text ({near[0]}): {shorten(near[1], SHOWN_CHARS)!r}"
    return message + ". Needles are matched against the text as read (`ragcourse chunk FILE` prints it)"


def _as_read(needle: str) -> str:
    """A needle with reStructuredText markup as the reader leaves it: `_as_read(":setting:`x` is y") -> "x is y"`."""
    from ..rst import parse, render_document

    try:
        return collapse(render_document(parse(needle, "needle.rst"))[1])
    except Exception:  # a needle docutils cannot parse: no advice rather than none at all
        return ""


def _sources(folder: _Folder):
    """(path, source text) of each file of the folder that was read (documents, then files with no text)."""
    paths = [*folder.texts, *(p for p, reason in folder.failed.items() if reason.startswith(NO_TEXT_REASONS))]
    for path in paths:
        try:
            yield path, (Path(folder.root) / path).read_bytes().decode("utf-8", "replace")
        except OSError:
            continue


def stripped_markup(needle: str, folder: _Folder) -> str | None:
    """Where a needle that is not in the text as read sits in a source file, and what reading removed there
    (a comment, a directive's option, a directive whose text is dropped, a section title), or None.
    Never for a reader of part of the folder (`--user`): no other file is opened."""
    if folder.reader is not None or not folder.root:
        return None
    for path, source in _sources(folder):
        found = source_position(source, needle, words=64)
        if found is not None:
            line, column = found
            return (f"it is in the source file {path!r} at line {line}, column {column}, in "
                    f"{markup_at(source.split(chr(10)), line - 1)}, which reading removes: a needle must be "
                    "text a reader sees")
    return None


def markup_at(lines: list[str], i: int) -> str:
    """What holds line i of a reStructuredText source, as reading sees it.

    >>> src = [".. note::", "   :class: x", "", "Title", "=====", "..", "   hidden", ".. toctree::", "   a"]
    >>> [markup_at(src, i) for i in (1, 3, 6, 8)]
    ['an option of the note directive', 'a section title', 'a comment', 'the body of the toctree directive']
    """
    if i + 1 < len(lines) and re.fullmatch(r"([=\-`:'\"~^_*+#<>.])\1{2,}\s*", lines[i + 1]) and lines[i].strip():
        return "a section title"
    indent = len(lines[i]) - len(lines[i].lstrip())
    for j in range(i, -1, -1):
        line = lines[j]
        if not line.strip() or (j < i and len(line) - len(line.lstrip()) >= indent):
            continue
        directive = re.match(r"\s*\.\.\s+([\w:.+-]+)::", line)
        if directive:
            option = j < i and re.match(r"\s*:[\w -]+:", lines[i]) and all(
                re.match(r"\s*:[\w -]+:", lines[k]) for k in range(j + 1, i + 1))
            where = "an option of" if option else "the line of" if j == i else "the body of"
            return f"{where} the {directive.group(1)} directive"
        if re.match(r"\s*\.\.(\s|$)", line):
            return "a comment"
        if j < i:
            indent = len(line) - len(line.lstrip())
            if indent == 0:
                break
    return "markup (an HTML comment, a script, an attribute...)"


def nearest_passage(needle: str, texts: dict[str, str]) -> tuple[str, str] | None:
    """(document, sentence) of the collapsed `texts` sharing most words with `needle` (ties: first), or None.

    >>> nearest_passage("pitch a tent on ground", {"a.md": "Boil water. Pitch the tent on flat ground."})
    ('a.md', 'Pitch the tent on flat ground.')
    """
    wanted = set(re.findall(r"\w+", needle.lower()))
    best, score = None, 0
    for doc, text in texts.items():
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            shared = len(wanted & set(re.findall(r"\w+", sentence.lower())))
            if shared > score:
                best, score = (doc, sentence), shared
    return best


def check_folder_questions(path: str | Path, documents: Sequence[Document], failed: Sequence[Failure] = (),
                           reader: str | None = None, root: str | Path = "") -> CheckedQuestions:
    """Every line of a questions file as a Question or a `Rejected` (file:line, why): one bad line costs only
    itself. GroundTruthError only when the file as a whole cannot be used (unreadable, an unfilled template).
    With `reader`, `documents` are all that reader may read: a line about anything else is only "not readable".
    `root`: the folder the documents were read from (a needle reading removed is then found in its source)."""
    path = Path(path)
    if not documents:
        raise GroundTruthError(f"{path}: the folder has no readable documents to check needles against")
    try:
        records, rejected = parse_records(path, ("id", "needle"), ("question", "ticket", "doc"))
    except RecordsError as err:
        raise GroundTruthError(str(err)) from err
    if len(records) > MAX_QUESTIONS:
        raise GroundTruthError(f"{path}: {len(records)} questions; eval measures at most {MAX_QUESTIONS} (each "
                               "is embedded and ranked in every run): sample or split the file")
    if records and not any(r.get("question", "").strip() for _, r in records):
        _blank_questions(path, records)  # an unfilled template: say so once, not line by line
    folder, questions = _Folder.of(documents, failed, reader, root), []
    for number, record in records:
        try:
            questions.append(_folder_question(record, folder))
        except GroundTruthError as err:
            rejected.append(Rejected(where(path, number), shorten(str(err), REASON_CHARS)))
    rejected.sort(key=lambda r: int(r.where.rsplit(":", 1)[1]))
    return CheckedQuestions(tuple(questions), tuple(rejected))


def load_folder_questions(path: str | Path, documents: Sequence[Document]) -> list[Question]:
    """The questions of `check_folder_questions`, strictly: the first bad line is a GroundTruthError.

    The ground truth's rules apply: the needle occurs exactly once in the corpus (whitespace
    collapsed), in `doc` when given (a path relative to the folder), never in a heading and never
    in a document's title. A blank `question` (an unfilled template) names its lines.
    """
    checked = check_folder_questions(path, documents)
    if checked.rejected:
        raise GroundTruthError(str(checked.rejected[0]))
    if not checked.questions:
        raise GroundTruthError(f"{path}: no records")
    return list(checked.questions)


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut.

    >>> shorten("abcdef", 4), shorten("abc", 4)
    ('abc…', 'abc')
    """
    return text if len(text) <= limit else text[:limit - 1] + "…"


def folder_queries(questions: Sequence[Question]) -> list[Query]:
    """Each question's documentation phrasing, then its ticket phrasing when it has one."""
    out = []
    for q in questions:
        out.append(Query(f"{q.id}/doc", q.id, "doc", q.question, q.needle, q.doc))
        if q.ticket:
            out.append(Query(f"{q.id}/ticket", q.id, "ticket", q.ticket, q.needle, q.doc))
    return out


def load_folder_out_of_domain(path: str | Path) -> tuple[list[OutOfDomain], tuple[Rejected, ...]]:
    """Out-of-domain queries (id, query, optional free-text kind) and each bad line left out, with why;
    GroundTruthError when the file cannot be read or has no good line."""
    try:
        records, rejected = parse_records(Path(path), ("id", "query"), ("kind",))
    except RecordsError as err:
        raise GroundTruthError(str(err)) from err
    if not records:
        raise GroundTruthError(f"{path}: no out-of-domain query can be used" + (f"; first: {rejected[0]}"
                                                                               if rejected else ""))
    return [OutOfDomain(r["id"], r["query"], r.get("kind", "")) for _, r in records], tuple(rejected)


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


def needles_template(documents: Sequence[Document], n: int = 50) -> list[dict]:
    """Question records for `candidate_needles`: id, doc and needle filled in, `question` and `ticket` blank."""
    return [{"id": f"n{i:03d}", "doc": doc, "needle": needle, "question": "", "ticket": ""}
            for i, (doc, needle) in enumerate(candidate_needles(documents, n), start=1)]


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
