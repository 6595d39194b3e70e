"""The registry the hidden checks in kit/checks/chNN.py use: one function per exercise.

A check receives the student's notebook namespace (its globals after the notebook ran) and either
returns None (full marks), returns a fraction in [0, 1] (partial marks), or raises AssertionError
whose message is the feedback the student sees. It must not print the expected value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Check = Callable[[dict[str, Any]], float | None]


@dataclass(frozen=True)
class Hidden:
    """One exercise's hidden check: its id ("3.2"), points, what it tests (shown to instructors)."""

    exercise: str
    points: int
    tests: str
    fn: Check


CHECKS: dict[str, Hidden] = {}


def check(exercise: str, points: int) -> Callable[[Check], Check]:
    """Register `fn` as the hidden check of `exercise`; its docstring says what it tests."""

    def register(fn: Check) -> Check:
        if exercise in CHECKS:
            raise ValueError(f"exercise {exercise} already has a hidden check")
        CHECKS[exercise] = Hidden(exercise, points, (fn.__doc__ or "").strip(), fn)
        return fn

    return register
