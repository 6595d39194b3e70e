"""A user's JSON Lines file read item by item: every good record kept, every bad one rejected with where and why.

`parse_records` reads one JSON object a line (a byte-order mark, CRLF line ends, blank lines and
`#` comment lines are fine; a JSON array of objects is read too, each element named by its line).
A line that is not UTF-8, not JSON, not an object, lacks a required field, carries an unknown one
or repeats an earlier id is a `Rejected` item naming the file and line; it costs only itself. Only
what makes the whole file unusable (missing, a folder, a named pipe, a link loop, unreadable, too
large) raises `RecordsError`, before anything is read from it. The same holds for the TREC files it reads:
another system's run (`parse_trec_run`) and graded judgements (`parse_judgements`, qrels or JSON Lines).

Leaves out: JSON5, YAML, CSV, and repairing a line (a rejected line is never guessed at).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

#: A questions or queries file larger than this is refused whole (about 100 MB: far more than anyone writes).
MAX_FILE_BYTES = 100_000_000


class RecordsError(ValueError):
    """The whole file cannot be read; the message names it and says why."""


@dataclass(frozen=True)
class Rejected:
    """One item left out: where (`file:line`) and why."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


def where(path: str | Path, line: int) -> str:
    """`file:line`, savable as UTF-8 whatever the file's name (bytes that are not UTF-8 written as escapes).

    >>> where(os.fsdecode(b"q\\xe9.jsonl"), 4)
    'q\\\\xe9.jsonl:4'
    """
    return f"{os.fsencode(str(path)).decode('utf-8', 'backslashreplace')}:{line}"


def file_bytes(path: Path) -> bytes:
    """The bytes of a regular file, or RecordsError naming what the path is instead (folder, pipe, loop...)."""
    from .documents import problem

    if not path.exists() and not path.is_symlink():
        raise RecordsError(f"{path}: file not found")
    why = problem(path)
    if why == "a folder, not a file":
        raise RecordsError(f"{path}: is a folder, not a file: give the path of a .jsonl file")
    if why is not None:
        raise RecordsError(f"{path}: {why}")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise RecordsError(f"{path}: too large: {size} bytes > limit of {MAX_FILE_BYTES} bytes")
        return path.read_bytes()
    except OSError as err:
        raise RecordsError(f"{path}: unreadable: {err.strerror or err}") from err


def lines(raw: bytes) -> list[tuple[int, str | None]]:
    """(line number, text) per line worth reading: blank and `#` lines dropped; None for a line not UTF-8.

    >>> lines(b"\\xef\\xbb\\xbf{}\\r\\n\\n# note\\n caf\\xe9\\n")
    [(1, '{}'), (4, None)]
    """
    out: list[tuple[int, str | None]] = []
    for number, line in enumerate(raw.removeprefix(b"\xef\xbb\xbf").split(b"\n"), start=1):
        try:
            text = line.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            out.append((number, None))
            continue
        if text.strip() and not text.lstrip().startswith("#"):
            out.append((number, text))
    return out


def array_items(text: str) -> list[tuple[int, object]] | None:
    """(line, element) of a JSON array of objects, or None when `text` is not one (read it as JSON Lines).

    >>> array_items('[{"id": "a"},\\n {"id": "b"}]')
    [(1, {'id': 'a'}), (2, {'id': 'b'})]
    """
    if not text.lstrip().startswith("["):
        return None
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(whole, list) or not all(isinstance(item, dict) for item in whole):
        return None
    decoder, out, at = json.JSONDecoder(), [], text.index("[") + 1
    for _ in whole:
        while text[at] in " \t\r\n,":
            at += 1
        item, end = decoder.raw_decode(text, at)
        out.append((text.count("\n", 0, at) + 1, item))
        at = end
    return out


def check_record(record: object, required: Sequence[str], optional: Sequence[str] = (),
                 flags: Sequence[str] = ()) -> str | None:
    """Why `record` is not a valid record (a JSON object of string fields, `flags` booleans), or None.

    >>> check_record({"id": "a"}, ("id", "query"))
    "required fields ['id', 'query'], optional []; missing ['query'], unexpected []"
    """
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    allowed = (*optional, *flags)
    missing = [f for f in required if f not in record]
    extra = sorted(set(record) - set(required) - set(allowed))
    if missing or extra:
        return f"required fields {list(required)}, optional {list(allowed)}; missing {missing}, unexpected {extra}"
    bad = [f for f in record if not isinstance(record[f], bool if f in flags else str)
           or (f in required and not record[f].strip())]
    if bad:
        return f"fields {bad} must be strings (required ones non-empty), flags {list(flags)} true or false"
    return None


def _parse_line(text: str | None) -> tuple[object, str | None]:
    """(value, None) for a line of JSON, else (None, why not)."""
    if text is None:
        return None, "not UTF-8 text (save the file as UTF-8)"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as err:
        return None, f"not valid JSON ({err.msg})"


def parse_records(path: str | Path, required: Sequence[str], optional: Sequence[str] = (),
                  flags: Sequence[str] = ()) -> tuple[list[tuple[int, dict]], list[Rejected]]:
    """(line, record) per good item and a `Rejected` per bad one, in file order; a repeated id is rejected
    where it repeats. RecordsError only when the file as a whole cannot be read."""
    path = Path(path)
    raw = file_bytes(path)
    items = array_items(raw.decode("utf-8-sig", errors="replace"))
    parsed = [(n, item, None) for n, item in items] if items is not None \
        else [(n, *_parse_line(text)) for n, text in lines(raw)]
    records, rejected, first = [], [], {}
    for number, item, why in parsed:
        why = why or check_record(item, required, optional, flags)
        if why is None and "id" in required and item["id"] in first:
            why = f"duplicate id {item['id']!r} (first on line {first[item['id']]})"
        if why is not None:
            rejected.append(Rejected(where(path, number), why))
            continue
        if "id" in required:
            first[item["id"]] = number
        records.append((number, item))
    return records, rejected


class TrecLine(NamedTuple):
    """One retrieved item of a TREC run: the query id, the item's id (both URL-unquoted), its rank and score."""

    query: str
    docno: str
    rank: int
    score: float
    line: int


def _parsed(path: Path, read: list, parse, again: str) -> tuple[list, list[Rejected]]:
    """Each (number, text) line parsed to an item with `query` and `docno`, or to why not; a pair seen before
    is refused (`again` says how), and each refusal names its file and line."""
    items, rejected, seen = [], [], {}
    for number, text in read:
        item = parse(number, text)
        if not isinstance(item, str) and (item.query, item.docno) in seen:
            item = f"{item.docno[:80]!r} {again} for query {item.query[:80]!r} (first on line " \
                   f"{seen[item.query, item.docno]})"
        if isinstance(item, str):
            rejected.append(Rejected(where(path, number), item))
            continue
        seen[item.query, item.docno] = number
        items.append(item)
    return items, rejected


def _fields(text: str | None, count: int, form: str) -> list[str] | str:
    """A line's whitespace-separated fields, or why it is not `form` (`count` fields, UTF-8).

    >>> _fields("q1 0 a.md 2", 4, "qid 0 docno grade")
    ['q1', '0', 'a.md', '2']
    >>> _fields("q1 a.md", 4, "qid 0 docno grade")
    'expected 4 fields (qid 0 docno grade), got 2'
    """
    if text is None:
        return "not UTF-8 text (save the file as UTF-8)"
    parts = text.split()
    return parts if len(parts) == count else f"expected {count} fields ({form}), got {len(parts)}"


def _trec_line(number: int, text: str | None) -> TrecLine | str:
    """A TrecLine, or why the line is not `qid Q0 docno rank score tag`."""
    from urllib.parse import unquote

    parts = _fields(text, 6, "qid Q0 docno rank score tag")
    if isinstance(parts, str):
        return parts
    try:
        rank, score = int(parts[3]), float(parts[4])
    except ValueError:
        return f"rank {parts[3][:40]!r} and score {parts[4][:40]!r}: expected an integer and a number"
    if score != score or score in (float("inf"), float("-inf")):
        return f"score {parts[4][:40]!r}: expected a finite number"
    return TrecLine(unquote(parts[0]), unquote(parts[2]), rank, score, number)


def parse_trec_run(path: str | Path) -> tuple[dict[str, list[TrecLine]], list[Rejected]]:
    """A TREC run file (`qid Q0 docno rank score tag`, as trec_eval, ir_measures and ranx read it): each query's
    items best first (score descending, then rank ascending, as trec_eval orders them), a query's repeated docno
    kept once (its first line), and each bad line rejected with where and why. RecordsError when the file as a
    whole cannot be read."""
    path = Path(path)
    by_query: dict[str, list[TrecLine]] = {}
    items, rejected = _parsed(path, lines(file_bytes(path)), _trec_line, "repeats")
    for item in items:
        by_query.setdefault(item.query, []).append(item)
    return {q: sorted(items, key=lambda i: (-i.score, i.rank)) for q, items in by_query.items()}, rejected


class Judgement(NamedTuple):
    """One graded judgement: a query (or question) id, a passage's id, its grade, and the line it came from."""

    query: str
    docno: str
    grade: int
    line: int


#: The highest grade a judgements file may give (the course's scale is 0-2; TREC's graded tracks use up to 4).
MAX_GRADE = 10
#: The fields of a judgements file in JSON Lines (`ragcourse pool` writes them, grade null until judged).
JUDGEMENT_FIELDS = ("qid", "docno"), ("question", "ticket", "section", "excerpt", "judge", "note")


def _grade(value: object) -> int | str:
    """An integer grade from 0 to MAX_GRADE, or why `value` is not one.

    >>> _grade("2"), _grade(1), _grade(None)
    (2, 1, 'grade is blank: not judged yet')
    >>> _grade("-1")[:45]
    "grade '-1': expected an integer from 0 to 10 "
    """
    if value is None or value == "":
        return "grade is blank: not judged yet"
    number = value if isinstance(value, int) and not isinstance(value, bool) else \
        int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None
    if number is None or not 0 <= number <= MAX_GRADE:
        return (f"grade {str(value)[:40]!r}: expected an integer from 0 to {MAX_GRADE} (0 = not relevant, "
                "1 = partly, 2 = answers it)")
    return number


def _qrels_line(number: int, text: str | None) -> Judgement | str:
    """A Judgement from a TREC qrels line (`qid 0 docno grade`, both ids URL-unquoted), or why not."""
    from urllib.parse import unquote

    parts = _fields(text, 4, "qid 0 docno grade")
    if isinstance(parts, str):
        return parts
    grade = _grade(parts[3])
    return grade if isinstance(grade, str) else Judgement(unquote(parts[0]), unquote(parts[2]), grade, number)


def _json_judgement(number: int, text: str | None) -> Judgement | str:
    """A Judgement from a JSON line (`{"qid", "docno", "grade"}`, as `ragcourse pool` writes), or why not."""
    record, why = _parse_line(text)
    if why is not None:
        return why
    if not isinstance(record, dict) or "grade" not in record:
        return "expected a JSON object with qid, docno and grade"
    rest = {name: value for name, value in record.items() if name != "grade"}
    why = check_record(rest, *JUDGEMENT_FIELDS)
    grade = _grade(record["grade"])
    return why or (grade if isinstance(grade, str) else Judgement(rest["qid"], rest["docno"], grade, number))


def parse_judgements(path: str | Path) -> tuple[list[Judgement], list[Rejected]]:
    """Graded judgements, in TREC qrels form (`qid 0 docno grade`) or JSON Lines (a first line starting with `{`):
    each good line a Judgement, each bad one (or a repeated qid and docno, or a grade still blank) rejected with
    where and why. RecordsError when the file as a whole cannot be read."""
    path = Path(path)
    read = lines(file_bytes(path))
    parse = _json_judgement if read and (read[0][1] or "").lstrip().startswith("{") else _qrels_line
    return _parsed(path, read, parse, "is judged again")
