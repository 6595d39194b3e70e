"""The ground truth: questions answered by verbatim needles, and queries that should retrieve nothing (chapter 1).

`data/questions.jsonl` holds the original chapter's 32 questions and `data/questions_added.jsonl` 178
more (`load_questions(subset=...)`), one question per line: an id, the document it comes from, a needle (a
short sentence copied verbatim from that document), and the question asked twice: as documentation
English (`question`) and as a support ticket would put it (`ticket`). `data/out_of_domain.jsonl`
holds queries the corpus cannot answer, `near` the domain or `absurd`. Chapter 9's genre corpora have
their own questions in the same format, ``data/genre_questions/<genre>.jsonl`` (`load_genre_questions`),
where an optional ``"identifier": true`` marks a question about an exact name (a function, an option).

Everything is validated on load, against the corpus: a needle must occur exactly once in the whole
corpus (whitespace collapsed), inside the document it names, and never be a section heading.

The needle guard (`find_leaks`) keeps the evaluation out of anything trained: no needle, question,
ticket (development or held-out) or out-of-domain query may occur in training text. What it leaves
out: paraphrases; it finds verbatim copies only (whitespace and case ignored).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .corpus import DATA_DIR, Document, load_corpus
from .records import RecordsError, parse_records
from .words import collapse

#: The original chapter's 32 questions: kept apart, so tables that replicate it use as many questions.
QUESTIONS_FILE = DATA_DIR / "questions.jsonl"
#: 178 more, written document by document without running retrieval, so that comparisons can decide.
ADDED_FILE = DATA_DIR / "questions_added.jsonl"
#: What `load_questions` can return when no file is named.
SUBSETS = ("all", "original")
OUT_OF_DOMAIN_FILE = DATA_DIR / "out_of_domain.jsonl"
#: Held-out questions for confirmatory tests of methods fixed in advance (never for tuning).
CONFIRM_FILE = DATA_DIR / "questions_confirm.jsonl"
#: Held-out queries for judging chapter 6's gates once: answerable ones (with needles) and out-of-domain ones.
GATE_HELDOUT_FILE = DATA_DIR / "gate_heldout.jsonl"
QUESTION_FIELDS = ("id", "doc", "needle", "question", "ticket")
#: One file per genre of `ragcourse.genres.GENRES`, validated against that genre's corpus.
GENRE_QUESTIONS_DIR = DATA_DIR / "genre_questions"
PHRASINGS = ("doc", "ticket")
KINDS = ("near", "absurd")
#: Kinds of `GATE_HELDOUT_FILE`: "in" (answerable, with doc and needle) or an out-of-domain kind.
GATE_KINDS = ("in", *KINDS)


class GroundTruthError(ValueError):
    """A ground-truth file is malformed or disagrees with the corpus; the message names file and line."""


@dataclass(frozen=True)
class Question:
    """One ground-truth question: the needle that answers it, and its two phrasings."""

    id: str
    doc: str
    needle: str
    question: str
    ticket: str


@dataclass(frozen=True)
class GenreQuestion(Question):
    """A question on a genre corpus (chapter 9); `identifier` marks one that names an exact identifier."""

    identifier: bool = False


@dataclass(frozen=True)
class Query:
    """One query string to run: a question in one phrasing, with the needle that answers it."""

    id: str
    question_id: str
    phrasing: str
    text: str
    needle: str
    doc: str


@dataclass(frozen=True)
class OutOfDomain:
    """A query the corpus does not answer; `kind` is `near` (on-topic) or `absurd`."""

    id: str
    query: str
    kind: str


def read_records(path: Path, required: Sequence[str], optional: Sequence[str] = (),
                 flags: Sequence[str] = ()) -> list[tuple[int, dict]]:
    """(line number, record) per JSONL line (`records.parse_records`), strictly: the first bad line, or a file
    with no records, is a GroundTruthError naming the file and the line."""
    try:
        records, rejected = parse_records(path, required, optional, flags)
    except RecordsError as err:
        raise GroundTruthError(str(err)) from err
    if rejected:
        raise GroundTruthError(str(rejected[0]))
    if not records:
        raise GroundTruthError(f"{path}: no records")
    return records


def _headings(doc: Document) -> list[str]:
    return [collapse(line.lstrip("#")) for line in doc.text.splitlines() if line.startswith("#")]


def check_needle(question: Question, corpus: list[Document], where: str = "",
                 collapsed: dict[str, str] | None = None) -> None:
    """Raise GroundTruthError unless the needle occurs exactly once in the corpus, in its own doc, not as a heading;
    `collapsed`: each document's text with whitespace collapsed, when the caller has it already."""
    needle = collapse(question.needle)
    by_id = {d.id: d for d in corpus}
    if question.doc not in by_id:
        shown = sorted(by_id)[:20]
        raise GroundTruthError(f"{where}{question.id}: unknown document {question.doc!r}; "
                               f"valid ids: {shown}" + (f" ... ({len(by_id)} in all)" if len(by_id) > 20 else ""))
    texts = collapsed if collapsed is not None else {d.id: collapse(d.text) for d in corpus}
    found = {d.id: texts[d.id].count(needle) for d in corpus}
    total = sum(found.values())
    if total == 0:
        raise GroundTruthError(f"{where}{question.id}: needle not found in the corpus: {needle!r}")
    if total > 1:
        places = {k: v for k, v in found.items() if v}
        raise GroundTruthError(f"{where}{question.id}: needle occurs {total} times ({places}), must be once")
    if not found[question.doc]:
        actual = next(k for k, v in found.items() if v)
        raise GroundTruthError(f"{where}{question.id}: needle is in {actual!r}, not in {question.doc!r}")
    if any(needle in heading for heading in _headings(by_id[question.doc])):
        raise GroundTruthError(f"{where}{question.id}: needle is (part of) a section heading: {needle!r}")


def load_questions(path: Path | str | None = None, corpus: list[Document] | None = None,
                   subset: str = "all") -> list[Question]:
    """The validated questions of `path`, in file order; `corpus` defaults to `load_corpus()`. Without a `path`,
    the ground truth: `subset="all"`, the original 32 then the added ones, or `subset="original"`, the 32 alone
    (a subset with a `path` is a ValueError)."""
    if subset not in SUBSETS:
        raise ValueError(f"subset={subset!r}: expected one of {list(SUBSETS)}")
    if path is not None and subset != "all":
        raise ValueError(f"subset={subset!r} with path={str(path)!r}: a subset names part of the ground truth; "
                         "a file is read whole (leave subset='all')")
    if corpus is None:
        corpus = load_corpus()
    if path is None:
        paths = [QUESTIONS_FILE] if subset == "original" else [QUESTIONS_FILE, ADDED_FILE]
        questions = [q for p in paths for q in load_questions(p, corpus)]
        shared = sorted(i for i, n in Counter(q.id for q in questions).items() if n > 1)
        if shared:
            raise GroundTruthError(f"{[str(p) for p in paths]}: ids {shared} occur in more than one file")
        return questions
    return _load_file(Path(path), corpus)


def _load_file(path: Path, corpus: list[Document], genre: bool = False) -> list[Question]:
    """The questions of one file, each needle checked against `corpus` (GenreQuestion when `genre`)."""
    questions = []
    for number, record in read_records(path, QUESTION_FIELDS, flags=("identifier",) if genre else ()):
        fields = {f: record[f] for f in QUESTION_FIELDS}
        if genre:
            question = GenreQuestion(**fields, identifier=record.get("identifier", False))
        else:
            question = Question(**fields)
        check_needle(question, corpus, where=f"{path}:{number}: ")
        questions.append(question)
    return questions


def load_genre_questions(genre: str, path: Path | str | None = None,
                         corpus: list[Document] | None = None) -> list[GenreQuestion]:
    """The validated questions of one genre (chapter 9), in file order; `corpus` defaults to `load_genre(genre)`."""
    from .genres import check_genre, load_genre

    check_genre(genre)
    path = Path(path) if path is not None else GENRE_QUESTIONS_DIR / f"{genre}.jsonl"
    return _load_file(path, load_genre(genre) if corpus is None else corpus, genre=True)


def load_out_of_domain(path: Path | str = OUT_OF_DOMAIN_FILE) -> list[OutOfDomain]:
    """The validated out-of-domain queries, in file order."""
    path = Path(path)
    records = read_records(path, ("id", "query", "kind"))
    for number, record in records:
        if record["kind"] not in KINDS:
            raise GroundTruthError(f"{path}:{number}: kind {record['kind']!r} is not one of {list(KINDS)}")
    return [OutOfDomain(r["id"], r["query"], r["kind"]) for _, r in records]


@dataclass(frozen=True)
class GateQuery:
    """A held-out gate query: `kind` "in" is answerable (`doc`, `needle` set), else out-of-domain (both None)."""

    id: str
    query: str
    kind: str
    doc: str | None = None
    needle: str | None = None


def load_gate_heldout(path: Path | str = GATE_HELDOUT_FILE, corpus: list[Document] | None = None) -> list[GateQuery]:
    """The validated held-out gate queries (chapter 6), in file order: an "in" line needs `doc` and `needle`
    (checked like the questions' needles), other kinds must have neither."""
    path = Path(path)
    records = read_records(path, ("id", "query", "kind"), optional=("doc", "needle"))
    if corpus is None and any(r["kind"] == "in" for _, r in records):
        corpus = load_corpus()
    out = []
    for number, r in records:
        if r["kind"] not in GATE_KINDS:
            raise GroundTruthError(f"{path}:{number}: kind {r['kind']!r} is not one of {list(GATE_KINDS)}")
        wanted = ("doc", "needle") if r["kind"] == "in" else ()
        wrong = [f for f in ("doc", "needle") if bool(r.get(f, "").strip()) != (f in wanted)]
        if wrong:
            rule = "required" if wanted else "not allowed"
            raise GroundTruthError(f"{path}:{number}: fields {wrong} are {rule} for kind {r['kind']!r}")
        if wanted:
            check_needle(Question(r["id"], r["doc"], r["needle"], r["query"], r["query"]), corpus,
                         where=f"{path}:{number}: ")
        out.append(GateQuery(r["id"], r["query"], r["kind"], r.get("doc"), r.get("needle")))
    return out


def queries(questions: list[Question]) -> list[Query]:
    """Each question twice, documentation phrasing then ticket: ids are `<question id>/doc` and `/ticket`."""
    return [
        Query(f"{q.id}/{phrasing}", q.id, phrasing, q.question if phrasing == "doc" else q.ticket,
              q.needle, q.doc)
        for q in questions for phrasing in PHRASINGS
    ]


def needle_position(question: Question, corpus: list[Document]) -> float:
    """Where the needle sits in its document, 0 (start) to 1 (end), by collapsed-text offset."""
    doc = collapse(next(d.text for d in corpus if d.id == question.doc))
    return doc.index(collapse(question.needle)) / max(1, len(doc))


def evaluation_strings(question_files: Sequence[Path | str] = (QUESTIONS_FILE, ADDED_FILE, CONFIRM_FILE),
                       out_of_domain_file: Path | str = OUT_OF_DOMAIN_FILE) -> list[str]:
    """Every needle, question and ticket of `question_files`, then every out-of-domain query, read as the files
    are (fields checked, needles not looked up in a corpus: only the text matters to the needle guard)."""
    strings = [record[f] for path in question_files for _, record in read_records(Path(path), QUESTION_FIELDS)
               for f in ("needle", "question", "ticket")]
    return strings + [o.query for o in load_out_of_domain(out_of_domain_file)]


def find_leaks(texts: Sequence[str], forbidden: Sequence[str] | None = None) -> list[str]:
    """The needle guard: the `forbidden` strings (default `evaluation_strings()`) in any of `texts`, sorted, whitespace
    collapsed and case ignored. Training text must give [], or the evaluation measures recall of training data.

    >>> find_leaks(["Lists must\\n  start a NEW paragraph.", "unrelated"], ["a new paragraph", "grid tables"])
    ['a new paragraph']
    """
    forbidden = evaluation_strings() if forbidden is None else forbidden
    haystack = "\x00".join(collapse(t).lower() for t in texts)  # NUL: no match spans two texts
    return sorted({s for s in forbidden if collapse(s) and collapse(s).lower() in haystack})
