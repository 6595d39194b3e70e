"""The grader: run each submitted notebook cell by cell, then its chapter's hidden checks in the same kernel.

`python -m kit.grade SUBMISSIONS` (the Makefile's `make grade SUBMISSIONS=DIR`) grades
`DIR/<student>/NN-*.ipynb` and writes `DIR/grades.csv` (student, chapter, exercise, points, max_points,
feedback) and `DIR/<student>/feedback.md`. A cell that raises is recorded and the run goes on; a cell that
runs past its limit is interrupted and the run goes on; when the notebook's own limit is spent, its
remaining cells are skipped and the checks still run. A check has a limit of its own (a student's function
may loop on the hidden inputs). Only when the kernel dies or ignores an interrupt does a notebook lose
every check that had not run yet, each scored 0 with a reason. One submission never stops the others.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat
from jupyter_client.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from kit.hidden import Hidden, load
from ragcourse.book.exercises import VARIANT_ENV, variant

KIT = Path(__file__).resolve().parent
CHAPTER_FILE = re.compile(r"^(\d\d)[-_. ]")
COLUMNS = ("student", "chapter", "exercise", "points", "max_points", "feedback")


@dataclass(frozen=True)
class Limits:
    """Seconds: per cell, per notebook (all its cells), per hidden check, and to recover from an interrupt."""

    cell: float = 600
    notebook: float = 1800
    check: float = 300
    grace: float = 15


@dataclass(frozen=True)
class Row:
    """One line of grades.csv."""

    student: str
    chapter: str
    exercise: str
    points: float
    max_points: int
    feedback: str


@dataclass
class Run:
    """What happened to one notebook in one kernel: notes for the feedback, the kernel's environment."""

    notes: list[str] = field(default_factory=list)
    environment: dict = field(default_factory=dict)
    alive: bool = True
    not_attempted: set = field(default_factory=set)


def exercise_key(exercise: str) -> tuple[int, ...]:
    """Sort key for exercise ids: "3.10" after "3.9"."""
    return tuple(int(part) for part in exercise.split(".") if part.isdigit())


def load_checks(path: Path) -> dict[str, Hidden]:
    """The hidden checks registered by one chapter's check file."""
    return load(path.read_text(encoding="utf-8"), str(path))


class Kernel:
    """One kernel (the grader's own interpreter), executing cells with limits, surviving what it can."""

    def __init__(self, nb, cwd: Path, limits: Limits):
        self.limits = limits
        self.client = NotebookClient(nb, kernel_name="python3", allow_errors=True, interrupt_on_timeout=False,
                                     record_timing=False, resources={"metadata": {"path": str(cwd)}})
        self.km = self.client.create_kernel_manager()
        spec = self.km.kernel_spec
        spec.argv = [sys.executable, *spec.argv[1:]]  # the grader's own interpreter, never a stale spec

    def __enter__(self):
        self._setup = self.client.setup_kernel()
        self._setup.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            self._setup.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 - a wedged kernel is killed below either way
            pass
        if self.km.has_kernel:
            run_sync(self.km.shutdown_kernel)(now=True)

    def execute(self, cell, index: int, timeout: float, run: Run) -> str | None:
        """Run one cell; None when it finished, else "error", "timeout" or "dead" (and run.alive updated)."""
        self.client.timeout = max(1, int(timeout))
        try:
            self.client.execute_cell(cell, index)
        except CellTimeoutError:
            self._recover(run)
            return "timeout"
        except DeadKernelError:
            run.alive = False
            return "dead"
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            return "error"
        return None

    def _recover(self, run: Run) -> None:
        run_sync(self.km.interrupt_kernel)()
        # nbclient leaves the timed-out cell's output reader on the old channels, where it would swallow
        # the next cells' outputs: talk to the kernel over fresh channels instead.
        self.client.kc.stop_channels()
        self.client.kc = self.km.client()
        self.client.kc.start_channels()
        probe = nbformat.v4.new_code_cell("pass")
        self.client.timeout = max(1, int(self.limits.grace))
        try:
            self.client.execute_cell(probe, 0)
        except (CellTimeoutError, DeadKernelError):
            run.alive = False
            run.notes.append("the kernel did not answer an interrupt, so it was stopped")


def _run_cells(kernel: Kernel, nb, limits: Limits, run: Run) -> None:
    deadline = time.monotonic() + limits.notebook
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        label = _label(cell, index)
        left = deadline - time.monotonic()
        if left <= 0:
            run.notes.append(f"the notebook's {limits.notebook:.0f} s ran out: {label} and the cells after it "
                             "did not run")
            return
        outcome = kernel.execute(cell, index, min(limits.cell, left), run)
        if outcome == "error":
            error = next(o for o in cell.outputs if o.get("output_type") == "error")
            run.notes.append(f"{label} raised {error.get('ename')}: {str(error.get('evalue'))[:160]}")
            if error.get("ename") == "NotImplementedError" and "exercise" in cell.get("metadata", {}):
                run.not_attempted.add(cell.metadata["exercise"].get("id"))
        elif outcome == "timeout":
            run.notes.append(f"{label} ran past its limit ({min(limits.cell, left):.0f} s) and was interrupted")
        elif outcome == "dead":
            run.notes.append(f"the kernel died in {label}: nothing after it could run")
        if not run.alive:
            return


def _label(cell, index: int) -> str:
    exercise = cell.get("metadata", {}).get("exercise", {}).get("id")
    return f"the answer cell of exercise {exercise}" if exercise else f"code cell {index + 1}"


def _setup_source(checks_path: Path, token: str) -> str:
    hidden = (KIT / "hidden.py").read_text(encoding="utf-8")
    return f"""def _kit_setup():
    import json, os, sys, types
    module = sys.modules["_kit_hidden"] = types.ModuleType("_kit_hidden")  # dataclasses look their module up
    exec(compile({hidden!r}, "kit/hidden.py", "exec"), module.__dict__)
    checks = module.load({checks_path.read_text(encoding="utf-8")!r}, {checks_path.name!r})
    before = os.environ.get({VARIANT_ENV!r}, "0")
    os.environ[{VARIANT_ENV!r}] = {str(variant())!r}
    ns = dict(globals())

    def run(exercise):
        got, feedback = module.score(checks[exercise], ns)
        print({token!r}, json.dumps({{"exercise": exercise, "points": got, "feedback": feedback}}))

    from ragcourse.book.exercises import environment
    print({token!r}, json.dumps({{"environment": environment(), "variant_before": before}}))
    return run


_kit_run_{token} = _kit_setup()
del _kit_setup
"""


def _messages(cell, token: str) -> list[dict]:
    text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    return [json.loads(line[len(token) + 1:]) for line in text.splitlines() if line.startswith(token + " ")]


def _run_checks(kernel: Kernel, checks: dict[str, Hidden], checks_path: Path, limits: Limits,
                run: Run) -> dict[str, tuple[float, str]]:
    scores: dict[str, tuple[float, str]] = {}
    if not run.alive:
        return scores
    token = "kit" + secrets.token_hex(8)
    setup = nbformat.v4.new_code_cell(_setup_source(checks_path, token))
    if kernel.execute(setup, 0, limits.check, run) is not None or not _messages(setup, token):
        run.notes.append("the hidden checks could not be loaded into the notebook's kernel")
        return scores
    info = _messages(setup, token)[0]
    run.environment = info["environment"]
    if info["variant_before"] != str(variant()):
        run.notes.append(f"the notebook set {VARIANT_ENV}={info['variant_before']}; graded as variant {variant()}")
    for exercise in sorted(checks, key=exercise_key):
        cell = nbformat.v4.new_code_cell(f"_kit_run_{token}({exercise!r})")
        outcome = kernel.execute(cell, 0, limits.check, run)
        found = _messages(cell, token)
        if found and not found[0]["points"] and exercise in run.not_attempted:
            scores[exercise] = (0.0, "not attempted: the answer cell still raises NotImplementedError")
        elif found:
            scores[exercise] = (found[0]["points"], found[0]["feedback"])
        elif outcome == "timeout":
            scores[exercise] = (0.0, f"the check ran past its {limits.check:.0f} s limit (does your code loop?)")
        if not run.alive:
            break
    return scores


def grade_stages(notebooks: list, checks_path: Path, limits: Limits = Limits()) -> tuple[list[dict], Run]:
    """Run each notebook's cells in turn in one kernel, the chapter's checks after each: scores per stage.

    Scores are {exercise: (points, feedback)} for every check of the chapter. One stage is one submission;
    several let a test run a chapter's body once and grade two different tails on it.
    """
    checks = load_checks(checks_path)
    run = Run()
    stages: list[dict] = []
    try:
        with tempfile.TemporaryDirectory(prefix="ragcourse-grade-") as cwd, \
                Kernel(notebooks[0], Path(cwd), limits) as kernel:
            for nb in notebooks:
                if run.alive:
                    _run_cells(kernel, nb, limits, run)
                stages.append(_run_checks(kernel, checks, checks_path, limits, run))
    except Exception as err:  # noqa: BLE001 - a kernel that will not start
        run.notes.append(f"the notebook could not be run: {type(err).__name__}: {str(err)[:200]}")
        run.alive = False
    stages += [{}] * (len(notebooks) - len(stages))
    why = "not graded: " + (run.notes[-1] if run.notes else "the check did not report")
    return [{ex: got.get(ex, (0.0, why)) for ex in checks} for got in stages], run


def grade_notebook(path: Path, checks_path: Path, limits: Limits = Limits()) -> tuple[dict, Run]:
    """Scores {exercise: (points, feedback)} for every check of the chapter, and what happened in the run."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as err:  # noqa: BLE001 - not a notebook at all
        run = Run(notes=[f"{path.name} is not a readable notebook: {type(err).__name__}"], alive=False)
        why = "not graded: " + run.notes[0]
        return {ex: (0.0, why) for ex in load_checks(checks_path)}, run
    scores, run = grade_stages([nb], checks_path, limits)
    handed = nb.metadata.get("ragcourse", {}).get("variant")
    if handed is not None and handed != variant():
        run.notes.insert(0, f"handed out as variant {handed}, graded as variant {variant()}: "
                            f"the instructor should grade with {VARIANT_ENV}={handed}")
    return scores[0], run


def chapter_of(path: Path) -> str | None:
    """"03" for 03-dense-retrieval.ipynb (or 03_anything.ipynb); None for a name without a chapter number."""
    match = CHAPTER_FILE.match(path.name)
    return match.group(1) if match else None


def grade_student(folder: Path, chapters: list[str], checks_dir: Path, limits: Limits) -> tuple[list[Row], str]:
    """Rows for one student's chapters, and the markdown of their feedback file."""
    student, rows = folder.name, []
    lines = [f"# Feedback for {student}", ""]
    submitted = sorted(folder.glob("*.ipynb"))
    stray = [p.name for p in submitted if chapter_of(p) not in chapters]
    if stray:
        lines += [f"Not graded (the name does not start with an assigned chapter number): {', '.join(stray)}", ""]
    for chapter in chapters:
        checks_path = checks_dir / f"ch{chapter}.py"
        mine = [p for p in submitted if chapter_of(p) == chapter]
        if mine:
            scores, run = grade_notebook(mine[0], checks_path, limits)
            if len(mine) > 1:
                run.notes.insert(0, f"several notebooks for chapter {chapter}; graded {mine[0].name}")
        else:
            checks = load_checks(checks_path)
            scores, run = {ex: (0.0, "no notebook submitted") for ex in checks}, Run()
        maxima = {ex: h.points for ex, h in load_checks(checks_path).items()}
        chapter_rows = [Row(student, chapter, ex, points, maxima[ex], feedback)
                        for ex, (points, feedback) in sorted(scores.items(), key=lambda kv: exercise_key(kv[0]))]
        rows += chapter_rows
        lines += _feedback_section(chapter, mine[0].name if mine else None, chapter_rows, run)
    return rows, "\n".join(lines) + "\n"


def _feedback_section(chapter: str, name: str | None, rows: list[Row], run: Run) -> list[str]:
    got, most = sum(r.points for r in rows), sum(r.max_points for r in rows)
    lines = [f"## Chapter {int(chapter)}" + (f" ({name})" if name else ""), "",
             f"**{got:g} of {most} points.**", "", "| exercise | points | feedback |", "|---|---|---|"]
    lines += [f"| {r.exercise} | {r.points:g} / {r.max_points} | {r.feedback.replace('|', '/')} |" for r in rows]
    if run.notes:
        lines += ["", "While running your notebook:", ""] + [f"- {note}" for note in run.notes]
    return lines + [""]


def grade_dir(submissions: Path, checks_dir: Path = KIT / "checks", limits: Limits = Limits(),
              chapters: list[str] | None = None, log=print) -> list[Row]:
    """Grade every DIR/<student>/*.ipynb; write DIR/grades.csv and DIR/<student>/feedback.md."""
    students = sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith("."))
    if chapters is None:
        found = {chapter_of(p) for s in students for p in s.glob("*.ipynb")} - {None}
        chapters = sorted(c for c in found if (checks_dir / f"ch{c}.py").exists())
    missing = [c for c in chapters if not (checks_dir / f"ch{c}.py").exists()]
    if missing:
        raise ValueError(f"no hidden checks for chapter(s) {missing}; have: "
                         f"{sorted(p.stem[2:] for p in checks_dir.glob('ch[0-9][0-9].py'))}")
    rows: list[Row] = []
    for student in students:
        log(f">> grading {student.name}: chapter(s) {', '.join(chapters)} (variant {variant()})")
        mine, feedback = grade_student(student, chapters, checks_dir, limits)
        (student / "feedback.md").write_text(feedback, encoding="utf-8")
        rows += mine
    with (submissions / "grades.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows((r.student, r.chapter, r.exercise, f"{r.points:g}", r.max_points, r.feedback) for r in rows)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path, help="a folder of <student>/NN-*.ipynb")
    parser.add_argument("--chapters", help="comma-separated chapter numbers, e.g. 03,05 (default: those submitted)")
    parser.add_argument("--checks", type=Path, default=KIT / "checks")
    defaults = Limits()
    for name in ("cell", "notebook", "check"):
        parser.add_argument(f"--{name}-timeout", type=float, default=getattr(defaults, name))
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"SUBMISSIONS={args.submissions} is not a folder of <student>/NN-*.ipynb")
    limits = replace(defaults, cell=args.cell_timeout, notebook=args.notebook_timeout, check=args.check_timeout)
    chapters = [f"{int(c):02d}" for c in args.chapters.split(",")] if args.chapters else None
    rows = grade_dir(args.submissions, args.checks, limits, chapters)
    print(f"wrote {args.submissions / 'grades.csv'}: {len(rows)} rows, "
          f"{len({r.student for r in rows})} students; feedback in each student's feedback.md")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    raise SystemExit(main())
