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

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..chunking import paragraph_spans, sentence_spans
from ..corpus import Document, collapse
from ..documents import MAX_BYTES, ExtractionError, Failure, read_document, walk
from ..groundtruth import GroundTruthError, OutOfDomain, Query, Question, check_needle, read_records

__all__ = ["Failure", "FolderCorpus", "read_folder", "read_document", "load_folder_questions"]


@dataclass(frozen=True)
class FolderCorpus:
    """A folder read as a corpus: its documents (sorted by path), the files that failed, the non-documents."""

    documents: tuple[Document, ...]
    failed: tuple[Failure, ...]
    skipped: tuple[str, ...] = ()


def read_folder(folder: str | Path, max_bytes: int = MAX_BYTES, exclude: tuple[Path, ...] = ()) -> FolderCorpus:
    """Every document under `folder` (recursively, sorted by path) as a Document or a Failure; `exclude`:
    folders not entered (an output folder)."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"DOCS_DIR {str(root)!r} is not a directory")
    found = walk(root, exclude)
    documents, failed = [], list(found.problems)
    for doc_id in found.files:
        try:
            documents.append(read_document(root / doc_id, doc_id, max_bytes))
        except ExtractionError as err:
            failed.append(Failure(doc_id, str(err)))
    failed.sort(key=lambda f: Path(f.path).parts)
    return FolderCorpus(tuple(documents), tuple(failed), found.skipped)


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


def _title_holding(needle: str, documents: Sequence[Document]) -> Document | None:
    """The document whose title contains the needle (whitespace collapsed), if any."""
    return next((d for d in documents if needle in collapse(d.title)), None)


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


def load_folder_questions(path: str | Path, documents: Sequence[Document]) -> list[Question]:
    """Questions (id, needle, question; optional ticket, doc) validated against a folder corpus.

    The ground truth's rules apply: the needle occurs exactly once in the corpus (whitespace
    collapsed), in `doc` when given (a path relative to the folder), never in a heading and never
    in a document's title. A blank `question` (an unfilled template) names its lines.
    """
    path = Path(path)
    if not documents:
        raise GroundTruthError(f"{path}: the folder has no readable documents to check needles against")
    collapsed = {d.id: collapse(d.text) for d in documents}
    records = read_records(path, ("id", "needle"), ("question", "ticket", "doc"))  # a blank question: below
    missing = next((n for n, r in records if "question" not in r), None)
    if missing is not None:
        raise GroundTruthError(f"{path}:{missing}: required fields ['id', 'needle', 'question'], optional "
                               "['ticket', 'doc']; missing ['question']")
    _blank_questions(path, records)
    questions = []
    for number, r in records:
        needle = collapse(r["needle"])
        titled = _title_holding(needle, documents)
        if titled is not None:
            raise GroundTruthError(f"{path}:{number}: {r['id']}: needle is (part of) the title of {titled.id!r} "
                                   f"({titled.title!r}): choose a sentence of the text, not a heading")
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
