"""Question sets made by procedures that differ in what the writer saw (chapter 12): where questions come from.

- `needle-first`: the 210 questions of `load_questions()`, written by reading the text around each needle
  (their files are not rewritten: `load_set` gives them this procedure);
- `topic-first`: written from the document titles and section headings alone, the answering sentence found
  afterwards; a question the corpus does not answer is kept with `"answerable": false` and no needle;
- `generated`: written by the course's local generator from one chunk and one of its sentences
  (`benchmarks/generate_questions.py`); the file must match the sha256 of the stored run.

Each line of ``data/question_sets/<procedure>.jsonl``: `id`, `procedure`, `doc`, `question`, `source` (the
heading or chunk that led to the question), `answerable`, and `needle` when answerable or `note` (why not)
when not; needles are checked as the ground truth's are (`groundtruth.check_needle`). Leaves out: tickets
(only needle-first has them).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from .bm25 import tokenize
from .corpus import DATA_DIR, Document, load_corpus
from .groundtruth import GroundTruthError, Query, Question, check_needle, load_questions, read_records
from .words import collapse

PROCEDURES = ("needle-first", "topic-first", "generated")
QUESTION_SETS_DIR = DATA_DIR / "question_sets"
#: sha256 of ``generated.jsonl`` as `benchmarks/generate_questions.py` wrote it (benchmarks/results/
#: generated_questions.json keeps the raw replies); a hand edit changes it and the loader refuses the file.
GENERATED_SHA256 = "48271af77ebbb1af2dd1d2779f3402a981aa9a1e0be4cefc0f179feccfc71f2c"
SET_FIELDS = ("id", "procedure", "doc", "question", "source")
#: One reading of the generated questions by hand, question and needle only, on chapter 12's scale: "2" the
#: needle answers the question, "1" in part or only on its topic, "0" not.
GRADES_FILE = QUESTION_SETS_DIR / "generated_grades.jsonl"
GRADES = ("0", "1", "2")


@dataclass(frozen=True)
class SetQuestion:
    """One question of a set: its procedure, the sentence that answers it (None if the corpus does not)."""

    id: str
    procedure: str
    doc: str
    needle: str | None
    question: str
    source: str
    note: str | None = None

    @property
    def answerable(self) -> bool:
        """True when a needle in the corpus answers the question."""
        return self.needle is not None


def word_overlap(query: str, needle: str) -> float:
    """The share of the query's distinct words (BM25's tokens) that also occur in the needle, as in chapter 1.

    >>> word_overlap("How do I add a caption?", "Add a caption with the figure directive.")
    0.5
    """
    words = set(tokenize(query))
    return len(words & set(tokenize(needle))) / len(words) if words else 0.0


#: The generated set's validity rule: the reply's text up to its first "?", its last line, without quotes,
#: asterisks and a "Question:" label, with at least MIN_WORDS words, and no copy of the needle either way.
MIN_WORDS = 4
_LABEL = re.compile(r"^(?:\d+[.)]\s*)?(?:question\s*\d*\s*:\s*)?", re.IGNORECASE)


def extract_question(reply: str, needle: str) -> tuple[str | None, str]:
    """(question, "ok") when a generator's reply passes the validity rule, else (None, why it is rejected).

    >>> extract_question('Question: "What does the width option set?" It sets...', "The width option sets it.")
    ('What does the width option set?', 'ok')
    >>> extract_question("The width option sets it?", "The width option sets it.")
    (None, 'copies the needle')
    """
    if "?" not in reply:
        return None, "no question mark"
    line = reply.split("?", 1)[0].strip().splitlines()[-1] if reply.split("?", 1)[0].strip() else ""
    question = _LABEL.sub("", line.strip().strip("\"'*` ")).strip("\"'*` ") + "?"
    if len(question.split()) < MIN_WORDS:
        return None, f"fewer than {MIN_WORDS} words"
    bare, target = collapse(question[:-1]).lower(), collapse(needle).lower().rstrip(".")
    if bare in target or target in bare:
        return None, "copies the needle"
    return question, "ok"


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _record_question(record: dict, path: Path, number: int, procedure: str) -> SetQuestion:
    """A SetQuestion from one checked record, or GroundTruthError naming file, line and problem."""
    where = f"{path}:{number}: "
    if record["procedure"] != procedure:
        raise GroundTruthError(f"{where}procedure {record['procedure']!r}, expected {procedure!r} in this file")
    needle = record.get("needle", "").strip() or None
    note = record.get("note", "").strip() or None
    if record["answerable"] != (needle is not None) or record["answerable"] == (note is not None):
        state = "answerable" if record["answerable"] else "not answerable"
        rule = "a needle and no note" if record["answerable"] else "a note (why) and no needle"
        raise GroundTruthError(f"{where}{record['id']}: marked {state}, so it needs {rule}")
    return SetQuestion(record["id"], procedure, record["doc"], record["needle"] if needle else None,
                       record["question"], record["source"], note)


def _check(question: SetQuestion, corpus: list[Document], where: str, texts: dict[str, str]) -> None:
    """The ground truth's needle rules for an answerable question; a known document for any."""
    if question.needle is None:
        if question.doc not in texts:
            raise GroundTruthError(f"{where}{question.id}: unknown document {question.doc!r}")
        return
    check_needle(Question(question.id, question.doc, question.needle, question.question, question.question),
                 corpus, where=where, collapsed=texts)


def read_set(path: Path | str, procedure: str, corpus: list[Document]) -> list[SetQuestion]:
    """The validated questions of one set file, in file order; GroundTruthError names file, line and problem."""
    path = Path(path)
    records = read_records(path, SET_FIELDS, optional=("needle", "note"), flags=("answerable",))
    texts = {d.id: collapse(d.text) for d in corpus}
    out = []
    for number, record in records:
        if "answerable" not in record:
            raise GroundTruthError(f"{path}:{number}: missing the flag 'answerable' (true or false)")
        question = _record_question(record, path, number, procedure)
        _check(question, corpus, f"{path}:{number}: ", texts)
        out.append(question)
    return out


def load_set(procedure: str, path: Path | str | None = None, corpus: list[Document] | None = None,
             expected_sha256: str | None = None) -> list[SetQuestion]:
    """One procedure's question set, validated against `corpus` (default `load_corpus()`); the generated
    set's file must have `expected_sha256` (default GENERATED_SHA256), the stored run's."""
    if procedure not in PROCEDURES:
        raise ValueError(f"procedure={procedure!r}: expected one of {list(PROCEDURES)}")
    corpus = load_corpus() if corpus is None else corpus
    if procedure == "needle-first":
        questions = load_questions(path, corpus)
        return [SetQuestion(q.id, procedure, q.doc, q.needle, q.question, "") for q in questions]
    path = Path(path) if path is not None else QUESTION_SETS_DIR / f"{procedure}.jsonl"
    if procedure == "generated":
        expected = GENERATED_SHA256 if expected_sha256 is None else expected_sha256
        if path.is_file() and file_sha256(path) != expected:
            raise GroundTruthError(f"{path}: sha256 {file_sha256(path)} is not the stored run's {expected}: "
                                   "the file was edited; rerun benchmarks/generate_questions.py")
    return read_set(path, procedure, corpus)


@dataclass(frozen=True)
class SetSummary:
    """Size, answerable count, documents covered and mean question–needle word overlap of one set."""

    procedure: str
    questions: int
    answerable: int
    documents: int
    overlap: float


def summarize(questions: list[SetQuestion]) -> SetSummary:
    """One set's summary; overlap is the mean over answerable questions, rounded to 3 places.

    >>> summarize([SetQuestion("t1", "topic-first", "a", "Add a caption.", "How to add a caption?", "h"),
    ...            SetQuestion("t2", "topic-first", "b", None, "Why?", "h")])
    SetSummary(procedure='topic-first', questions=2, answerable=1, documents=2, overlap=0.6)
    """
    answered = [q for q in questions if q.needle is not None]
    mean = sum(word_overlap(q.question, q.needle) for q in answered) / len(answered) if answered else 0.0
    return SetSummary(questions[0].procedure if questions else "", len(questions), len(answered),
                      len({q.doc for q in questions}), round(mean, 3))


def load_grades(questions: list[SetQuestion], path: Path | str = GRADES_FILE) -> dict[str, int]:
    """Question id -> grade (0, 1 or 2) of `path`, one line per question of `questions`, none missing or extra;
    GroundTruthError naming file and line otherwise."""
    path = Path(path)
    records = read_records(path, ("id", "grade"))
    known = {q.id for q in questions}
    for number, record in records:
        if record["id"] not in known:
            raise GroundTruthError(f"{path}:{number}: {record['id']!r} is not a question of the set")
        if record["grade"] not in GRADES:
            raise GroundTruthError(f"{path}:{number}: grade {record['grade']!r} is not one of {list(GRADES)}")
    missing = sorted(known - {r["id"] for _, r in records})
    if missing:
        raise GroundTruthError(f"{path}: no grade for {missing}")
    return {r["id"]: int(r["grade"]) for _, r in records}


def as_queries(questions: list[SetQuestion]) -> list[Query]:
    """The answerable questions as queries `evaluation.evaluate` scores (one phrasing, "question", each).

    >>> as_queries([SetQuestion("t1", "topic-first", "a", "Add a caption.", "How?", "h"),
    ...             SetQuestion("t2", "topic-first", "b", None, "Why?", "h")])[0].id
    't1/question'
    """
    return [Query(f"{q.id}/question", q.id, "question", q.question, q.needle, q.doc)
            for q in questions if q.needle is not None]
