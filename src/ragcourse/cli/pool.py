"""Judged-pool export (`ragcourse pool`, chapter 12): the union of several systems' top k per question, for a judge.

`system_rankings` ranks every query with each strategy x method (x rerank) of the book's pipeline;
`pool_records` keeps, per question (in the questions file's order), every passage any system ranked within
its top k for any phrasing, once, sorted by document and offset, so the order says nothing of which system
found a passage or at which rank; `pool_text` writes them as JSON Lines with `grade` null, which a judge sets
(0 = not relevant, 1 = partly, 2 = answers it) and `ragcourse eval --judgements` then reads; `write_new`
never replaces an existing file unless asked, and never leaves one half-written.

Questions need only `id` and `question` here (a needle is optional: topic-first questions have none).
Leaves out: assigning passages to judges, a second judge's sample, and agreement (chapter 12 does those).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import pipeline
from ..chunking import Chunk
from ..corpus import Document
from ..groundtruth import Query, Question
from ..records import Rejected, parse_records
from ..words import collapse
from .folder import folder_queries, shorten

#: How many of each system's top passages are pooled by default (`ragcourse pool -k`).
POOL_K = 10
#: How much of a passage the pool shows a judge (a chunk of the default strategy is shorter: all of it).
POOL_CHARS = 4000


def pool_questions(path: str | Path) -> tuple[list[Question], list[Rejected]]:
    """The questions to pool (id and question required; needle, ticket and doc optional), and each bad line with
    where and why (`records.parse_records`; a blank question is a bad line)."""
    records, rejected = parse_records(Path(path), ("id", "question"), ("needle", "ticket", "doc"))
    questions = [Question(r["id"], r.get("doc", ""), r.get("needle", ""), r["question"], r.get("ticket", "").strip())
                 for _, r in records]
    return questions, rejected


def system_rankings(documents: Sequence[Document], qs: Sequence[Query], strategies: Sequence[str],
                    methods: Sequence[str], embedder=None, reranker: Callable | None = None) -> list[dict]:
    """Each strategy x method's rankings (query id -> chunks, best first), and each one reranked when a reranker
    is given; BM25 alone (embedder None) loads no model."""
    from ..rerank import rerank_rankings

    vectors = None if embedder is None else dict(zip([q.id for q in qs], embedder.encode_queries(
        [q.text for q in qs]), strict=True))
    out = []
    for strategy in strategies:
        retriever = pipeline.build(strategy, corpus=list(documents), embedder=embedder, dense=embedder is not None)
        for method in methods:
            rankings = retriever.rankings(qs, method, vectors=vectors)
            out.append(rankings)
            if reranker is not None:
                out.append(rerank_rankings(reranker, qs, rankings))
    return out


def pool_records(questions: Sequence[Question], systems: Sequence[dict[str, Sequence[Chunk]]],
                 k: int) -> list[dict]:
    """Per question, every passage in some system's top `k` for one of its phrasings, once, ordered by document and
    offset (never by system or rank), with `grade` None for the judge.

    >>> from types import SimpleNamespace as C
    >>> a, b = C(id="x#0-5", doc_id="x", start=0, end=5, section="", content="Tents"), \\
    ...     C(id="y#0-4", doc_id="y", start=0, end=4, section="S", content="Rope")
    >>> q = Question("q1", "", "", "Which?", "")
    >>> [r["docno"] for r in pool_records([q], [{"q1/doc": [b, a]}, {"q1/doc": [a, b]}], 1)]
    ['x#0-5', 'y#0-4']
    """
    out = []
    for question in questions:
        queries = [q.id for q in folder_queries([question])]
        found = {c.id: c for system in systems for query in queries for c in system[query][:k]}
        for chunk in sorted(found.values(), key=lambda c: (c.doc_id, c.start, c.end)):
            record = {"qid": question.id, "question": question.question}
            record |= {"ticket": question.ticket} if question.ticket else {}
            record |= {"docno": chunk.id, "section": chunk.section,
                       "excerpt": shorten(collapse(chunk.content), POOL_CHARS), "grade": None}
            out.append(record)
    return out


def safe_json(record: dict) -> str:
    """One JSON line that shows nothing raw a terminal or an editor could act on: every character that is not
    printable (a line separator, a bidirectional override, an escape) written as a JSON escape, which reads back
    as the same text.

    >>> safe_json({"docno": "a\\u202eb.md\\u2028#0-4"})
    '{"docno": "a\\\\u202eb.md\\\\u2028#0-4"}'
    """
    text = json.dumps(record, ensure_ascii=False)
    return "".join(ch if ch.isprintable() else json.dumps(ch)[1:-1] if ord(ch) <= 0xFFFF
                   else json.dumps(ch, ensure_ascii=True)[1:-1] for ch in text)


def pool_text(records: Sequence[dict], header: str) -> str:
    """The pool file: a `#` header line (which every reader of judgements skips), then one record a line."""
    return "# " + collapse(header) + "\n" + "".join(safe_json(r) + "\n" for r in records)


def write_new(path: Path, text: str, force: bool = False) -> None:
    """Write `text` to `path` whole (a temporary file beside it, then linked or renamed into place); ValueError,
    nothing written, when `path` exists and `force` is not given, or is a folder."""
    if path.is_dir():
        raise ValueError(f"--out {str(path)!r} is a folder: give the path of the pool file to write")
    if (path.exists() or path.is_symlink()) and not force:
        raise ValueError(f"--out {str(path)!r} exists: nothing was overwritten (a judge's grades may be in it); "
                         "choose another name, or --force to replace it")
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".pool-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        if force:
            os.replace(temporary, path)
        else:
            os.link(temporary, path)  # fails if the file appeared meanwhile: never replaced
    except FileExistsError:
        raise ValueError(f"--out {str(path)!r} appeared while the pool was written: nothing was overwritten") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
