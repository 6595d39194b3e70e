"""One line of grades.csv: what kit/grade.py writes and kit/summary.py reads (a module of its own, so that
neither imports the other)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One line of grades.csv.

    >>> Row("ann", "01", "1.1", 2.0, 2, "full marks").points
    2.0
    """

    student: str
    chapter: str
    exercise: str
    points: float
    max_points: int
    feedback: str
    automatic_points: float | None = None  # set when an instructor's mark (OUT/manual.csv) replaced `points`
    manual_note: str = ""
