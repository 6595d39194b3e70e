"""The instructor's own marks: OUT/manual.csv, which the grader reads on every run and never writes.

Each line (student, chapter, exercise, points, note) replaces one automatic score in grades.csv; the
row says so and keeps the automatic score beside it. grades.csv itself is the grader's: its checksum is
recorded when written, and a hand edit is refused before anything is graded, never silently replaced.

>>> from types import SimpleNamespace
>>> rows = [SimpleNamespace(student="ann", chapter="06", exercise="6.4", points=0.0, max_points=2)]
>>> marks, problems = parse("student,chapter,exercise,points,note\\nann,6,6.4,1.5,reasoning credited\\n", rows)
>>> marks, problems
({('ann', '06', '6.4'): Mark(points=1.5, note='reasoning credited')}, [])
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from pathlib import Path
from typing import NamedTuple

from ragcourse.words import collapse

FILE = "manual.csv"
HEADER = ("student", "chapter", "exercise", "points", "note")
CHECKSUM = "grades.csv.sha256"  # kept in OUT/.rows, beside the rows it was made from
MAX_SIZE = 8 << 20


class Mark(NamedTuple):
    """One manual mark: the points that replace the automatic ones, and the instructor's note."""

    points: float
    note: str


def read(out: Path, rows: list) -> tuple[dict[tuple[str, str, str], Mark], list[str]]:
    """The marks of OUT/manual.csv that match a graded row, and a line per problem ({} when there is no file)."""
    path = out / FILE
    if not path.is_file() or path.is_symlink():
        return {}, ([f"{FILE} is not a regular file: not read"] if path.exists() or path.is_symlink() else [])
    if path.stat().st_size > MAX_SIZE:
        return {}, [f"{FILE} is over {MAX_SIZE >> 20} MB: not read"]
    return parse(path.read_text(encoding="utf-8-sig", errors="replace"), rows)


def parse(text: str, rows: list) -> tuple[dict[tuple[str, str, str], Mark], list[str]]:
    """Marks keyed by (student, chapter, exercise), each checked against the graded rows; and the problems."""
    maxima = {(r.student, r.chapter, r.exercise): r.max_points for r in rows}
    reader = csv.reader(io.StringIO(text))
    header = [h.strip().lower() for h in next(reader, [])]
    if tuple(header[:5]) != HEADER:
        return {}, [f"{FILE}: the first line must be {','.join(HEADER)}; nothing in it was applied"]
    marks, problems = {}, []
    for line, cells in enumerate(reader, start=2):
        if not any(c.strip() for c in cells):
            continue
        key, mark, why = _mark(cells, maxima)
        if why:
            problems.append(f"{FILE} line {line}: {why}; not applied")
        elif key in marks:
            problems.append(f"{FILE} line {line}: a second mark for {' '.join(key)}; the later one applied")
        if not why:
            marks[key] = mark
    return marks, problems


def _mark(cells: list[str], maxima: dict) -> tuple[tuple[str, str, str], Mark | None, str]:
    """One line's key and mark, or why it cannot be applied."""
    cells = [*cells, "", "", "", "", ""][:5]
    student, chapter, exercise, points, note = (c.strip() for c in cells)
    chapter = f"{int(chapter):02d}" if chapter.isdigit() else chapter
    key = (student, chapter, exercise)
    if key not in maxima and student.startswith("'"):  # copied from grades.csv, where a formula-like name has a '
        key = (student[1:], chapter, exercise)
    if key not in maxima:
        return key, None, f"no graded row for student {student!r}, chapter {chapter}, exercise {exercise}"
    try:
        value = float(points)
    except ValueError:
        return key, None, f"points {points!r} is not a number"
    if not math.isfinite(value) or not 0 <= value <= maxima[key]:
        return key, None, f"points {points} outside 0..{maxima[key]}"
    return key, Mark(value, collapse(note)[:300]), ""


def record(out: Path) -> None:
    """Record the checksum of the grades.csv the grader has just written."""
    (out / ".rows" / CHECKSUM).write_text(hashlib.sha256((out / "grades.csv").read_bytes()).hexdigest() + "\n")


def hand_edited(out: Path) -> bool:
    """True when OUT/grades.csv is not the file the grader last wrote (its recorded checksum differs)."""
    grades, recorded = out / "grades.csv", out / ".rows" / CHECKSUM
    if not grades.is_file() or not recorded.is_file():
        return False
    return hashlib.sha256(grades.read_bytes()).hexdigest() != recorded.read_text().strip()
