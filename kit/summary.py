"""The class at a glance (OUT/summary.md): each student's total per chapter, and how the class did on each exercise.

Written beside grades.csv after every student, from the same rows, so that an instructor sees who
needs help and which exercise the class missed without opening a spreadsheet or reading code.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from statistics import mean, median

from kit.escape import md
from kit.row import Row


def _students(rows: list[Row], chapters: list[str]) -> list[str]:
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    maxima: dict[str, int] = defaultdict(int)
    for r in rows:
        totals[r.student][r.chapter] += r.points
    for (chapter, _), top in {(r.chapter, r.exercise): r.max_points for r in rows}.items():
        maxima[chapter] += top  # from every row: students kept from an earlier run may have other chapters
    most = sum(maxima.values())
    columns = " | ".join(f"ch. {int(c)} (of {maxima[c]})" for c in chapters)
    lines = [f"| student | {columns} | total (of {most}) |", "|---|" + "---:|" * (len(chapters) + 1)]
    for student in sorted(totals, key=lambda s: (-sum(totals[s].values()), s)):
        got = totals[student]
        lines.append(f"| {md(student, 40)} | " + " | ".join(f"{got[c]:g}" for c in chapters)
                     + f" | {sum(got.values()):g} |")
    return lines


def _exercises(rows: list[Row]) -> list[str]:
    by_exercise: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        by_exercise[(r.chapter, r.exercise)].append(r)
    lines = ["| exercise | points | mean | full marks | none | most common feedback below full marks |",
             "|---|---:|---:|---:|---:|---|"]
    for (_, exercise), group in sorted(by_exercise.items(), key=lambda kv: [int(p) for p in kv[0][1].split(".")]):
        top = group[0].max_points
        misses = Counter(r.feedback for r in group if r.points < r.max_points).most_common(1)
        common = f"{md(misses[0][0], 80)} ({misses[0][1]})" if misses else ""
        full, none = sum(r.points >= r.max_points for r in group), sum(r.points == 0 for r in group)
        lines.append(f"| {exercise} | {top} | {mean(r.points for r in group):.2f} | {full} | {none} | {common} |")
    return lines


def markdown(rows: list[Row]) -> str:
    """The summary page for these rows (every student graded on the same chapters).

    >>> from types import SimpleNamespace as R
    >>> page = markdown([R(student="ann", chapter="01", exercise="1.1", points=2, max_points=2, feedback="full marks"),
    ...                  R(student="bo", chapter="01", exercise="1.1", points=0, max_points=2, feedback="not run")])
    >>> "| 1.1 | 2 | 1.00 | 1 | 1 | not run (1) |" in page and "| ann | 2 | 2 |" in page
    True
    """
    if not rows:
        return "# Class summary\n\nNo student was graded.\n"
    chapters = sorted({r.chapter for r in rows})
    totals = [sum(r.points for r in rows if r.student == s) for s in {r.student for r in rows}]
    head = ["# Class summary", "",
            f"{len(totals)} students, chapter(s) {', '.join(str(int(c)) for c in chapters)}: "
            f"median {median(totals):g} points, mean {mean(totals):.1f}. Each student's feedback, with the reason "
            "for every lost point, is in `<student>/feedback.md`; every row is in `grades.csv`.", "",
            "## Students, best first", ""]
    return "\n".join(head + _students(rows, chapters) + ["", "## Exercises", ""] + _exercises(rows)) + "\n"
