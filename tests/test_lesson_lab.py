"""A lab does not copy its lesson's exercise answers (issue 38): it runs them from the lesson
(`ragcourse.book.exercises.rerun`), so each answer is written once, in the lesson the student reads.

Two consecutive lines of an answer cell (whitespace folded, comments, imports and prints aside, at least 20
characters each) standing together in a code cell of the lab count as a copy.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted(p for p in (ROOT / "notebooks").glob("*.ipynb") if (ROOT / "notebooks" / "labs" / p.name).exists())
#: Chapters whose labs still copy an answer, each with who removes it.
COPYING: dict[str, str] = {}


def _lines(source: str) -> list[str]:
    folded = (re.sub(r"\s+", " ", line.split("  #")[0]).strip() for line in source.splitlines())
    return [line for line in folded
            if len(line) >= 20 and not line.startswith(("#", "import ", "from ", "print("))]


def _code(path: Path, answers_only: bool) -> list[list[str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [_lines("".join(c["source"])) for c in cells
            if c["cell_type"] == "code" and (not answers_only or "exercise" in c.get("metadata", {}))]


def copies(lesson: Path, lab: Path) -> list[str]:
    """Pairs of consecutive answer-cell lines of `lesson` that stand together in one code cell of `lab`."""
    pairs = {pair for cell in _code(lab, answers_only=False) for pair in itertools.pairwise(cell)}
    return [" / ".join(pair) for cell in _code(lesson, answers_only=True)
            for pair in itertools.pairwise(cell) if pair in pairs]


def test_the_copy_finder_sees_a_copied_answer(tmp_path):
    answer = "counts = sorted(lengths, key=len)\nbest = counts[RANK - 1]  # the answer\n"
    for name, cells in (("lesson", [{"cell_type": "code", "metadata": {"exercise": {"id": "9.1"}}, "source": answer}]),
                        ("lab", [{"cell_type": "code", "metadata": {}, "source": "x = 1\n" + answer}])):
        (tmp_path / f"{name}.ipynb").write_text(json.dumps({"cells": cells}), encoding="utf-8")
    assert copies(tmp_path / "lesson.ipynb", tmp_path / "lab.ipynb") == [
        "counts = sorted(lengths, key=len) / best = counts[RANK - 1]"]


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_a_lab_runs_its_lessons_answers_instead_of_copying_them(lesson):
    if lesson.name in COPYING:
        pytest.skip(f"still copied: {COPYING[lesson.name]}")
    assert copies(lesson, lesson.parent / "labs" / lesson.name) == [], \
        "run the exercise from the lesson: rerun(LESSON, 'N.M', globals())"
