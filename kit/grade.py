"""The grader: each submission in a sandbox, its answers back as data, the checks in a kernel it never touches.

`python -m kit.grade SUBMISSIONS [--out DIR]` (the Makefile's `make grade SUBMISSIONS=DIR`) grades
`SUBMISSIONS/<student>/NN-*.ipynb` and writes, into an output folder outside SUBMISSIONS (default
`SUBMISSIONS-graded`), `grades.csv` (student, chapter, exercise, points, max_points, feedback) and
`<student>/feedback.md`, with `summary.md`, the class at a glance (kit/summary.py). Per chapter, a
trusted kernel runs the reference notebook and holds the hidden checks (kit/checker.py). Per student, a
copy of the notebook runs in a fresh bubblewrap sandbox (kit/sandbox.py, kit/runner.py) that exports the
answers as JSON; the checks score them in the trusted kernel, running the student's functions in another
fresh sandbox on inputs only. What comes back is bounded and checked (points are numbers in [0, max]). A
failure is that student's row with its reason; each student's rows are written as soon as they are
graded.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import math
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import nbformat

from kit import analysis, cache, definitions, manual, sandbox, summary, walls
from kit.escape import csv_cell, md, shown
from kit.hidden import Hidden, load
from kit.row import Row
from kit.runner import Kernel, Limits, Run
from ragcourse.book.exercises import VARIANT_ENV, variant
from ragcourse.words import collapse

KIT = Path(__file__).resolve().parent
ROOT = KIT.parent
CHAPTER_FILE = re.compile(r"^(\d\d)[-_. ]")
COLUMNS = ("student", "chapter", "exercise", "points", "max_points", "feedback", "automatic_points", "manual_note")
MAX_NOTEBOOK = 64 << 20  # bytes: a notebook with its outputs; a bigger file is not read
MAX_FEEDBACK = 500
DEFAULT_LIMITS = Limits()
UNSAFE_NOTE = "graded WITHOUT a sandbox (--unsafe): the grader did not isolate this notebook"
CHECKER_IMPORT = (f"import sys as _kit_sys\n_kit_sys.path[:0] = [{str(ROOT)!r}]\n"
                  "from kit.checker import Checker as _KitChecker\n")
ROWS_FILE = re.compile(r"^[0-9a-f]{32}-\d\d\.json$")  # OUT/.rows/<hash of the student's folder name>-<chapter>.json
RESERVED = ("grades.csv", "summary.md", ".rows")  # names in OUT that no student's feedback folder may take

__all__ = ["COLUMNS", "Kernel", "Limits", "Row", "Run", "grade_dir", "grade_notebook", "load_checks", "main"]


def exercise_key(exercise: str) -> tuple[int, ...]:
    """Sort key for exercise ids: "3.10" after "3.9"."""
    return tuple(int(part) for part in exercise.split(".") if part.isdigit())


def load_checks(path: Path) -> dict[str, Hidden]:
    """The hidden checks registered by one chapter's check file."""
    return load(path.read_text(encoding="utf-8"), str(path))


def chapter_of(path: Path) -> str | None:
    """"03" for 03-dense-retrieval.ipynb (or 03_anything.ipynb); None for a name without a chapter number."""
    match = CHAPTER_FILE.match(path.name)
    return match.group(1) if match else None


def answer_names(nb) -> list[str]:
    """The names the reference's answer cells bind: these come from the student, the rest from the reference."""
    from kit.student import answer_cells

    return sorted({n for c in answer_cells(nb) for node in definitions._statements([c.source])
                   for n in definitions.defines(node)})


def read_regular(path: Path, limit: int = MAX_NOTEBOOK) -> bytes:
    """The bytes of a regular file, never through a link, a FIFO or a device; ValueError naming why not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise ValueError(f"{path.name} could not be opened ({err.strerror}; a link is not read)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path.name} is not a regular file")
        if info.st_nlink > 1:  # a hard link may be the reference notebook or a classmate's, as a link may
            raise ValueError(f"{path.name} is a hard link ({info.st_nlink} names for one file): a link is not read")
        if info.st_size > limit:
            raise ValueError(f"{path.name} is {info.st_size >> 20} MB, over the {limit >> 20} MB limit")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{path.name} grew past the {limit >> 20} MB limit while read")
    return data


class Chapter:
    """One chapter's trusted checker kernel: the reference notebook run once, then the checks per student."""

    def __init__(self, chapter: str, checks_path: Path, reference: Path, limits: Limits, unsafe: bool):
        self.chapter, self.checks_path, self.reference = chapter, checks_path.resolve(), reference.resolve()
        self.limits, self.unsafe = limits, unsafe
        self.checks = load_checks(self.checks_path)
        self.maxima = {ex: h.points for ex, h in self.checks.items()}
        self.nb = nbformat.read(self.reference, as_version=4)
        self.names = answer_names(self.nb)
        self.stubs = exercise_stubs(self.nb)
        self.kernel, self.guard = None, None
        self.folder = Path(tempfile.mkdtemp(prefix="ragcourse-checker-", dir=walls.run_folder()))
        self.exchange = Path(tempfile.mkdtemp(prefix="ragcourse-exchange-", dir=walls.run_folder()))

    def start(self) -> str:
        """Start the checker kernel with the reference state: from the cache, else by running the reference
        notebook (then cached). Says which."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(sandbox.package_root()), str(ROOT)])}
        self.kernel = Kernel(self.nb, self.reference.parent, replace(self.limits, cell=3600), env)
        self.kernel.__enter__()
        self.guard = walls.Guard(self.kernel.km.provisioner.pid, self.limits.checker_memory)
        run, state = Run(), str(cache.folder() / f"{cache.key(self.checks_path, self.reference)}.pkl")
        checks, rest = repr(str(self.checks_path)), f"{self.names!r}, {str(self.exchange)!r}"
        loaded = nbformat.v4.new_code_cell(f"{CHECKER_IMPORT}_kit_checker = _KitChecker.from_state({checks}, "
                                           f"{state!r}, {rest})")
        cells = list(self.nb.cells)  # nbclient puts a cell run at index 0 in the notebook's first place
        if self.kernel.execute(loaded, 0, 600, run) is None:
            return "reference state from the cache"
        for index, cell in enumerate(cells):
            if cell.cell_type == "code" and self.kernel.execute(cell, index, 3600, run) in ("timeout", "dead"):
                raise RuntimeError(f"the reference {self.reference.name} failed in code cell {index + 1}: "
                                   f"{run.notes or [o.get('evalue') for o in cell.outputs]}")
        setup = nbformat.v4.new_code_cell(f"{CHECKER_IMPORT}_kit_checker = _KitChecker({checks}, dict(globals()), "
                                          f"{rest})\nprint(_kit_checker.save_state({state!r}))")
        if self.kernel.execute(setup, 0, 600, run) is not None:
            raise RuntimeError(f"the checks of chapter {self.chapter} could not be loaded: {setup.outputs}")
        lost = "".join(o.get("text", "") for o in setup.outputs).strip()
        return "ran the reference" + ("" if lost == "[]" else f" (not cached: {lost[:200]} cannot be kept)")

    def close(self) -> None:
        """Stop the checker kernel."""
        if self.kernel is not None:
            self.kernel.__exit__(None, None, None)
            self.kernel = None
        if self.guard is not None:
            self.guard.stop()
            self.guard = None
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.rmtree(self.exchange, ignore_errors=True)

    def score(self, job: Path, run: Run, deadline: float) -> dict[str, tuple[float, str]]:
        """{exercise: (points, feedback)} for one student's exported answers (untrusted, checked here), read
        from the job file `kit.analysis` wrote; all the checks within `deadline` (time.monotonic())."""
        if self.kernel is None:
            self.start()
        token = "kit" + secrets.token_hex(8)
        cell = nbformat.v4.new_code_cell(f"_kit_checker.student({str(job)!r})")
        if self.kernel.execute(cell, 0, 120, run) is not None:  # no check runs on another student's answers
            run.notes.append("the answers could not be read back as data")
            self._restart(run)
            return {}
        scores = {}
        for exercise in sorted(self.checks, key=exercise_key):
            left = deadline - time.monotonic()
            if left <= 1:
                scores[exercise] = (0.0, f"not graded: this notebook used its whole {self.limits.submission:.0f} s")
                continue
            seconds = min(self.limits.check, left)
            cell = nbformat.v4.new_code_cell(f"_kit_checker.run({exercise!r}, {token!r}, {seconds!r})")
            outcome = self.kernel.execute(cell, 0, seconds + 30, run)
            found = _tagged(cell, token)
            if found:
                scores[exercise] = self._checked(exercise, found)
            elif outcome == "timeout":
                scores[exercise] = (0.0, f"the check ran past its {seconds:.0f} s limit")
            if not run.alive:  # the checker kernel died: start afresh for the next student
                if self.guard is not None and self.guard.over:  # read before _restart drops the guard
                    run.notes.append(f"the checks passed their memory limit ({self.limits.checker_memory >> 20} MB) "
                                     "on this notebook's answers and were stopped")
                self._restart(run)
                break
        if self.kernel is not None:
            self.kernel.execute(nbformat.v4.new_code_cell("_kit_checker.close()"), 0, 60, run)
        job.unlink(missing_ok=True)
        return scores

    def _restart(self, run: Run) -> None:
        """A fresh checker kernel for the next student (started on demand)."""
        run.alive = True
        self.close()
        self.folder = Path(tempfile.mkdtemp(prefix="ragcourse-checker-", dir=walls.run_folder()))
        self.exchange = Path(tempfile.mkdtemp(prefix="ragcourse-exchange-", dir=walls.run_folder()))

    def _checked(self, exercise: str, found: dict) -> tuple[float, str]:
        points, feedback = found.get("points"), found.get("feedback")
        most = self.maxima[exercise]
        if not isinstance(points, int | float) or isinstance(points, bool) or not math.isfinite(points):
            return 0.0, "not graded: the check reported no number"
        return min(float(most), max(0.0, float(points))), _bounded(feedback)


def _tagged(cell, token: str) -> dict | None:
    text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    for line in text.splitlines():
        if line.startswith(token + " "):
            try:
                found = json.loads(line[len(token) + 1:])
            except ValueError:
                return None
            return found if isinstance(found, dict) else None
    return None


def _bounded(text, limit: int = MAX_FEEDBACK) -> str:
    """Feedback as one line of printable text, at most `limit` characters."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def grade_submission(data: bytes, chapter: Chapter, limits: Limits, unsafe: bool) -> tuple[dict, Run]:
    """Scores {exercise: (points, feedback)} of one notebook's bytes, and notes on what happened: its run in
    a sandbox, the grader's reading of it in a child process (kit/analysis.py), then the checks; all of it
    within the submission's time budget."""
    run, deadline = Run(notes=[UNSAFE_NOTE] if unsafe else []), time.monotonic() + limits.submission
    data = data.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark, from an editor that is not Jupyter
    limits_data = {"cell": limits.cell, "notebook": limits.notebook, "check": limits.check, "grace": limits.grace,
                   "submission": limits.submission}
    folder = Path(tempfile.mkdtemp(prefix="ragcourse-analysis-", dir=walls.run_folder()))
    try:
        out, stopped = sandbox.run_notebook_raw(data, chapter.names, limits_data, unsafe)
        (folder / "submission.ipynb").write_bytes(data)
        (folder / "result.json").write_bytes(out)
        job = {"notebook": str(folder / "submission.ipynb"), "result": str(folder / "result.json"),
               "names": chapter.names, "stubs": chapter.stubs, "out": str(folder / "student.json"),
               "unsafe": unsafe, "check_seconds": limits.check}
        found = analysis.analyse(job)
        run.notes += [stopped] if stopped else []
        if not found.get("readable"):
            run.notes.append(_bounded(found.get("why"), 300))
            return {ex: (0.0, f"not graded: {_bounded(found.get('why'), 300)}") for ex in chapter.checks}, run
        _read_summary(found, run)
        if not found.get("has_values"):
            why = "not graded: " + (run.notes[-1] if len(run.notes) > unsafe else "the answers did not come back")
            return {ex: (0.0, why) for ex in chapter.checks}, run
        scores = chapter.score(folder / "student.json", run, deadline)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    scores = _marked(scores, set(found.get("not_attempted", [])), set(found.get("untouched", [])))
    why = "not graded: " + (run.notes[-1] if run.notes else "the check did not report")
    return {ex: scores.get(ex, (0.0, why)) for ex in chapter.checks}, run


def _read_summary(found: dict, run: Run) -> None:
    """The notes, environment and variants of the child's summary, into `run`."""
    handed = found.get("handed_variant")
    if isinstance(handed, int) and handed != variant():
        run.notes.insert(0, f"handed out as variant {handed}, graded as variant {variant()}: "
                            f"the instructor should grade with {VARIANT_ENV}={handed}")
    run.notes += [_bounded(n, 300) for n in found.get("notes", [])[:50]]
    if isinstance(found.get("environment"), dict):
        run.environment = {str(k)[:40]: _bounded(v, 80) for k, v in list(found["environment"].items())[:40]}
    exported = found.get("exported_variant")
    if isinstance(exported, str) and exported != str(variant()):
        run.notes.append(f"the notebook set {VARIANT_ENV}={_bounded(exported, 20)}; graded as variant {variant()}")


def exercise_stubs(nb) -> dict[str, str]:
    """{exercise id: its stub, whitespace collapsed} from a reference notebook's answer cells."""
    from kit.student import answer_cells, exercise_of

    return {str(exercise_of(c)["id"]): collapse(str(exercise_of(c)["stub"])) for c in answer_cells(nb)}


def _not_attempted(scores: dict, raised: set[str], nb, stubs: dict[str, str]) -> dict:
    """A zero whose answer cell raised NotImplementedError, or is still its stub (a function stub raises only
    when called, so its checks saw wrong answers), says "not attempted"; a score above zero is kept."""
    return _marked(scores, raised, set(analysis.untouched(nb, stubs)))


def _marked(scores: dict, raised: set[str], untouched: set[str]) -> dict:
    """`_not_attempted` with the untouched answer cells already known."""
    for ex, (points, _) in list(scores.items()):
        if not points and (ex in raised or ex in untouched):
            why = "still raises NotImplementedError" if ex in raised else "is still the stub as handed out"
            scores[ex] = (0.0, f"not attempted: the answer cell {why}")
    return scores


def grade_notebook(path: Path, checks_path: Path, limits: Limits = DEFAULT_LIMITS, reference: Path | None = None,
                   unsafe: bool = False) -> tuple[dict, Run]:
    """Grade one notebook file on its own (a checker kernel of its own): scores and notes."""
    chapter = Chapter(chapter_of(path) or "", checks_path, reference or _reference(checks_path), limits, unsafe)
    try:
        return grade_submission(read_regular(path), chapter, limits, unsafe)
    finally:
        chapter.close()


def _reference(checks_path: Path, folder: Path | None = None) -> Path:
    number = checks_path.stem[2:]
    for place in [folder] if folder else [ROOT / "notebooks", checks_path.parent.parent]:
        found = sorted(place.glob(f"{number}-*.ipynb"))
        if found:
            return found[0]
    raise ValueError(f"no reference notebook {number}-*.ipynb for {checks_path}")


def student_folders(submissions: Path) -> tuple[list[Path], list[str]]:
    """Real folders of SUBMISSIONS (never links), sorted; and the names of entries that are not graded."""
    folders, skipped = [], []
    with os.scandir(submissions) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            (folders if entry.is_dir(follow_symlinks=False) else skipped).append(Path(entry.path))
    return sorted(folders), sorted(p.name for p in skipped)


def _submitted(folder: Path) -> list[Path]:
    """The .ipynb entries of a student's folder, by name ([] when it cannot be listed)."""
    try:
        with os.scandir(folder) as entries:
            return sorted(Path(e.path) for e in entries if e.name.lower().endswith(".ipynb"))  # .IPYNB too
    except OSError:
        return []


def grade_student(folder: Path, chapters: dict[str, Chapter], limits: Limits,
                  unsafe: bool) -> tuple[list[Row], dict[str, str]]:
    """Rows for one student's chapters, and their feedback: {chapter: markdown section, "": what was not graded}."""
    student, rows, sections = shown(folder.name), [], {}
    submitted = _submitted(folder)
    stray = [p.name for p in submitted if chapter_of(p) not in chapters]
    if stray:  # at most 20 names: a folder of 100,000 files must not make a 25 MB feedback page
        listed = md(", ".join(stray[:20])) + (f" and {len(stray) - 20} more" if len(stray) > 20 else "")
        sections[""] = f"Not graded (the name does not start with an assigned chapter number): {listed}\n"
    for number, chapter in chapters.items():
        # the reference's own file name first ("90-x.ipynb" before a stale "90-x copy.ipynb"), then by name
        mine = sorted((p for p in submitted if chapter_of(p) == number), key=lambda p: p.name != chapter.reference.name)
        run = Run(notes=[UNSAFE_NOTE] if unsafe else [])
        if not mine:
            scores = {ex: (0.0, "no notebook submitted") for ex in chapter.checks}
        else:
            try:
                scores, run = grade_submission(read_regular(mine[0]), chapter, limits, unsafe)
            except ValueError as err:
                run.notes.append(str(err))
                scores = {ex: (0.0, f"not graded: {_bounded(err)}") for ex in chapter.checks}
            if len(mine) > 1:
                run.notes.insert(0, f"several notebooks for chapter {number}; graded {mine[0].name}")
        chapter_rows = [Row(student, number, ex, points, chapter.maxima[ex], feedback)
                        for ex, (points, feedback) in sorted(scores.items(), key=lambda kv: exercise_key(kv[0]))]
        rows += chapter_rows
        sections[number] = "\n".join(_feedback_section(number, mine[0].name if mine else None, chapter_rows, run))
    return rows, sections


def _failed_student(folder: Path, chapters: dict[str, Chapter], err: BaseException) -> tuple[list[Row], dict]:
    why = _bounded(f"not graded: the grader failed on this submission ({type(err).__name__}: {err})", 300)
    rows = [Row(shown(folder.name), n, ex, 0.0, c.maxima[ex], why) for n, c in chapters.items()
            for ex in sorted(c.checks, key=exercise_key)]
    return rows, {n: f"## Chapter {int(n)}\n\n{md(why)}\n" for n in chapters}


def _feedback_section(chapter: str, name: str | None, rows: list[Row], run: Run) -> list[str]:
    got, most = sum(r.points for r in rows), sum(r.max_points for r in rows)
    lines = [f"## Chapter {int(chapter)}" + (f" ({md(name)})" if name else ""), "",
             f"**{got:g} of {most} points.**", "", "| exercise | points | feedback |", "|---|---|---|"]
    lines += [f"| {r.exercise} | {r.points:g} / {r.max_points} | {md(r.feedback)} |" for r in rows]
    if run.notes:
        lines += ["", "While running your notebook:", ""] + [f"- {md(note)}" for note in run.notes]
    return lines + [""]


STUDENT_SUFFIX = " (student)"


def feedback_name(name: str, reserved: set[str]) -> str:
    """The feedback folder's name for a student's folder `name`: one to one, never a name the output uses.

    >>> [feedback_name(n, {"grades.csv"}) for n in ("ann", "grades.csv", "grades.csv (student)", "Grades.CSV")]
    ['ann', 'grades.csv (student)', 'grades.csv (student) (student)', 'Grades.CSV (student)']
    """
    escaped = name.lower() in reserved or name.endswith(STUDENT_SUFFIX)
    return name + STUDENT_SUFFIX if escaped else name


class Output:
    """The output folder: a real folder outside SUBMISSIONS, written file by file, atomically, never through a link.

    Each student's rows and feedback are kept per chapter in OUT/.rows/ (file names from a hash of the
    folder's name, so any name fits); grading a student's chapter again replaces that chapter's rows only.
    """

    def __init__(self, out: Path, submissions: Path):
        out, submissions = out.absolute(), submissions.resolve()
        if out.resolve() == submissions or submissions in out.resolve().parents:
            raise ValueError(f"the output folder {out} is inside SUBMISSIONS={submissions}: choose one outside it")
        if out.is_symlink() or (out.exists() and not out.is_dir()):
            raise ValueError(f"the output folder {out} is a link or not a folder")
        if out.is_dir() and any(out.iterdir()) and not (out / ".rows").is_dir():  # never write among other files
            raise ValueError(f"the output folder {out} holds files the grader did not write: choose a new one")
        if manual.hand_edited(out):  # refused before anything is graded: the instructor's edit is never lost
            raise ValueError(f"{out / 'grades.csv'} was edited by hand since the grader wrote it. Put each change "
                             f"into {out / manual.FILE} (student,chapter,exercise,points,note), which every run "
                             "applies, then delete grades.csv (or rename it to keep it) and grade again")
        out.mkdir(parents=True, exist_ok=True)
        self.root = out
        # a student folder named like grades.csv, or like SUBMISSIONS itself when it lies inside OUT, gets another
        inside = submissions.relative_to(out.resolve()).parts[:1] if out.resolve() in submissions.parents else ()
        self.reserved = {n.lower() for n in (*RESERVED, *inside)}
        self.rows = self._folder(out / ".rows")
        self.earlier = {p.name for p in self.rows.glob("*.json") if ROWS_FILE.match(p.name)}
        self.problems: list[str] = []
        self.manual_problems: list[str] = []

    def _folder(self, path: Path) -> Path:
        """A real folder at `path`: a link there is removed (never followed); a file there is kept (FileExistsError)."""
        if path.is_symlink():
            path.unlink()
        path.mkdir(exist_ok=True)
        if not path.is_dir() or path.is_symlink():
            raise FileExistsError(f"{path} is not a folder")
        return path

    def write(self, path: Path, text: str) -> None:
        """Write `text` to `path` by a rename (a link already there is replaced, never followed)."""
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
            handle.write(text)
        os.replace(tmp, path)

    def feedback_folder(self, name: str) -> Path:
        """OUT/<name>, or OUT/<name> (student) for a name the output uses, a file already holds, or one that
        already ends so: an escape no two names share ("grades.csv" -> "grades.csv (student)",
        "grades.csv (student)" -> "grades.csv (student) (student)")."""
        taken = {name.lower()} if (self.root / name).is_file() else set()
        return self.root / feedback_name(name, self.reserved | taken)

    def student(self, name: str, rows: list[Row], sections: dict[str, str]) -> None:
        """One student's rows and feedback file, as soon as they are graded."""
        key = hashlib.sha256(os.fsencode(name)).hexdigest()[:32]
        for chapter, text in sections.items():
            if chapter:
                mine = [r.__dict__ for r in rows if r.chapter == chapter]
                self.write(self.rows / f"{key}-{chapter}.json", json.dumps({"rows": mine, "feedback": text}))
                self.earlier.discard(f"{key}-{chapter}.json")
        kept = [json.loads(p.read_text(encoding="utf-8"))["feedback"] for p in sorted(self.rows.glob(f"{key}-*.json"))]
        text = "\n".join([f"# Feedback for {md(name)}\n", *([sections[""]] if "" in sections else []), *kept])
        try:  # the rows are safe already: a feedback file that cannot be written costs only itself
            self.write(self._folder(self.feedback_folder(name)) / "feedback.md", text)
        except OSError as err:
            self.problems.append(f"no feedback file for {shown(name)}: {err.strerror or err}")

    def report(self, log) -> None:
        """Say what the log must: feedback files not written, rows kept from an earlier run."""
        for problem in self.problems + self.manual_problems:
            log(f">> {problem}")
        if self.earlier:
            log(f">> {len(self.earlier)} chapter(s) of students graded by an earlier run into {self.root} are kept "
                "in grades.csv (delete OUT/.rows to start afresh)")

    def _manual(self, rows: list[Row]) -> list[Row]:
        """The rows with OUT/manual.csv's marks applied: points replaced, the automatic score kept beside them."""
        marks, self.manual_problems = manual.read(self.root, rows)
        out = []
        for r in rows:
            mark = marks.get((r.student, r.chapter, r.exercise))
            out.append(r if mark is None else replace(r, points=mark.points, automatic_points=r.points,
                                                      manual_note=f"manual mark: {mark.note or 'no note'}"))
        return out

    def merge(self) -> list[Row]:
        """grades.csv and summary.md from every student's rows written so far, by student, chapter and exercise."""
        rows = []
        for path in self.rows.glob("*.json"):
            if ROWS_FILE.match(path.name):  # not a file of another version of the grader
                rows += [Row(**r) for r in json.loads(path.read_text(encoding="utf-8"))["rows"]]
        rows.sort(key=lambda r: (r.student, r.chapter, exercise_key(r.exercise)))
        rows = self._manual(rows)
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(COLUMNS)
        writer.writerows((csv_cell(r.student), r.chapter, r.exercise, f"{r.points:g}", r.max_points,
                          csv_cell(r.feedback), f"{r.points if r.automatic_points is None else r.automatic_points:g}",
                          csv_cell(r.manual_note)) for r in rows)
        self.write(self.root / "grades.csv", buffer.getvalue())
        manual.record(self.root)
        self.write(self.root / "summary.md", summary.markdown(rows))
        return rows


@dataclass(frozen=True)
class Cost:
    """What grading one student took: wall-clock seconds, and CPU seconds of the grader, its sandboxes and kernels."""

    wall: float
    cpu: float


def costs_line(costs: list[Cost], jobs: int) -> str:
    """The line printed after a class: per-student wall and CPU.

    >>> costs_line([Cost(10.0, 8.0), Cost(14.0, 9.0)], 2)
    '>> per student (2 students, -j 2): wall 12.0 s mean (max 14.0 s), CPU 8.5 s mean (max 9.0 s)'
    """
    walls, cpus = [c.wall for c in costs], [c.cpu for c in costs]
    return (f">> per student ({len(costs)} students, -j {jobs}): wall {sum(walls) / len(walls):.1f} s mean "
            f"(max {max(walls):.1f} s), CPU {sum(cpus) / len(cpus):.1f} s mean (max {max(cpus):.1f} s)")


def _cpu_now(chapters: dict[str, Chapter]) -> float:
    """CPU seconds so far of this process, its ended children (sandboxes) and the chapters' checker kernels."""
    times = os.times()  # a sandbox's processes are killed, never reaped into ours: their CPU is read before
    total = times.user + times.system + times.children_user + times.children_system + sandbox.CPU_SPENT[0]
    for chapter in chapters.values():
        pid = chapter.kernel.km.provisioner.pid if chapter.kernel and chapter.kernel.km.has_kernel else None
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split() if pid else []
        except OSError:
            fields = []
        total += sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK") if fields else 0.0
    return total


def _grade_one(student: Path, chapters: dict[str, Chapter], limits: Limits, unsafe: bool):
    """(student, rows, feedback, cost) for one student's folder; a failure is their rows, never the class's."""
    wall, cpu = time.monotonic(), _cpu_now(chapters)
    try:
        rows, feedback = grade_student(student, chapters, limits, unsafe)
    except Exception as err:  # noqa: BLE001 - one bad submission costs one student
        rows, feedback = _failed_student(student, chapters, err)
    return student, rows, feedback, Cost(time.monotonic() - wall, max(0.0, _cpu_now(chapters) - cpu))


_WORKER: dict = {}  # in a worker process of `-j`: its own chapters (checker kernels), limits and mode


def _worker_start(specs: list[tuple[str, Path, Path]], limits: Limits, unsafe: bool) -> None:
    from multiprocessing import util

    chapters = {n: Chapter(n, checks, reference, limits, unsafe) for n, checks, reference in specs}
    _WORKER.update(chapters=chapters, limits=limits, unsafe=unsafe)
    util.Finalize(None, lambda: [c.close() for c in chapters.values()], exitpriority=10)


def _worker_grade(student: Path):
    return _grade_one(student, _WORKER["chapters"], _WORKER["limits"], _WORKER["unsafe"])


def _graded(students: list[Path], chapters: dict[str, Chapter], limits: Limits, unsafe: bool, jobs: int, log):
    """(student, rows, feedback, cost) per student, as each is done: in this process, or `jobs` at a time
    in worker processes, each with its own checker kernels (a student's grades never depend on the others)."""
    if jobs <= 1:
        for student in students:
            log(f">> grading {shown(student.name)}: chapter(s) {', '.join(chapters)} (variant {variant()})")
            yield _grade_one(student, chapters, limits, unsafe)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    specs = [(n, c.checks_path, c.reference) for n, c in chapters.items()]
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start,
                             initargs=(specs, limits, unsafe)) as pool:
        pending = {pool.submit(_worker_grade, student): student for student in students}
        for future in as_completed(pending):
            student = pending[future]
            log(f">> graded {shown(student.name)}")
            try:
                yield future.result()
            except Exception as err:  # noqa: BLE001 - a worker that died: its student's rows say so
                yield (student, *_failed_student(student, chapters, err), Cost(0.0, 0.0))


def _chapters_submitted(students: list[Path], checks_dir: Path) -> list[str]:
    found = {chapter_of(p) for s in students for p in _submitted(s)} - {None}
    return sorted(c for c in found if (checks_dir / f"ch{c}.py").exists())


def grade_dir(submissions: Path, checks_dir: Path = KIT / "checks", limits: Limits = DEFAULT_LIMITS,
              chapters: list[str] | None = None, out: Path | None = None, reference: Path | None = None,
              unsafe: bool = False, log=print, jobs: int = 1) -> list[Row]:
    """Grade every SUBMISSIONS/<student>/*.ipynb, `jobs` students at a time; write OUT/grades.csv and
    OUT/<student>/feedback.md."""
    output = Output(out or submissions.parent / f"{submissions.name}-graded", submissions)
    for stale in walls.clean_stale():
        log(f">> removed {stale}, left by a grader that was stopped")
    if not unsafe:
        log(f">> sandboxes: {walls.describe(sandbox.Quota().sandbox_memory, sandbox.Quota().sandbox_processes)}, "
            "seccomp, /proc read-only")
    students, skipped = student_folders(submissions)
    hidden = sorted(n for n in os.listdir(submissions) if n.startswith("."))
    for why, names in (("not a real folder", skipped), ("hidden, no row in grades.csv", hidden)):
        if names:
            log(f">> not graded ({why}): {shown(', '.join(names))}")
    chapters = _chapters_submitted(students, checks_dir) if chapters is None else chapters
    missing = [c for c in chapters if not (checks_dir / f"ch{c}.py").exists()]
    if missing:
        raise ValueError(f"no hidden checks for chapter(s) {missing}; have: "
                         f"{sorted(p.stem[2:] for p in checks_dir.glob('ch[0-9][0-9].py'))}")
    open_chapters = {c: Chapter(c, checks_dir / f"ch{c}.py", _reference(checks_dir / f"ch{c}.py", reference),
                                limits, unsafe) for c in chapters}
    not_a_folder = ValueError("not a real folder (a link is not followed)")
    for name in skipped:  # a link or a file where a student's folder should be: that student's row says so
        rows, feedback = _failed_student(Path(name), open_chapters, not_a_folder)
        output.student(name, rows, feedback)
    try:
        for chapter in open_chapters.values():
            log(f">> chapter {chapter.chapter}: {chapter.start()} ({chapter.reference.name})")
            if jobs > 1:
                chapter.close()  # the workers load the state it computed (or run the reference themselves)
        costs = []
        for student, rows, feedback, cost in _graded(students, open_chapters, limits, unsafe, jobs, log):
            output.student(student.name, rows, feedback)
            output.merge()
            costs.append(cost)
    finally:
        for chapter in open_chapters.values():
            chapter.close()
    if costs:
        log(costs_line(costs, jobs))
    output.report(log)
    return output.merge()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path, help="a folder of <student>/NN-*.ipynb")
    parser.add_argument("--out", type=Path, help="where grades.csv and feedback go (default: SUBMISSIONS-graded)")
    parser.add_argument("--chapters", help="comma-separated chapter numbers, e.g. 03,05 (default: those submitted)")
    parser.add_argument("--checks", type=Path, default=KIT / "checks")
    parser.add_argument("--reference", type=Path, help="the folder of reference notebooks (default: notebooks/)")
    parser.add_argument("--unsafe", action="store_true",
                        help="grade WITHOUT a sandbox when bwrap cannot make one (said in every feedback)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="students graded at a time, each in its own sandbox (default: one per core)")
    defaults = Limits()
    for name in ("cell", "notebook", "check", "submission"):
        parser.add_argument(f"--{name}-timeout", type=float, default=getattr(defaults, name),
                            help=f"seconds (default {getattr(defaults, name):.0f})" + (
                                ": everything one notebook may cost, its run and all its checks"
                                if name == "submission" else ""))
    args = parser.parse_args(argv)
    if not args.submissions.is_dir() or args.submissions.is_symlink():
        parser.error(f"SUBMISSIONS={args.submissions} is not a folder of <student>/NN-*.ipynb")
    why = sandbox.available()
    if why is not None and not args.unsafe:
        print(f"kit.grade: cannot isolate submissions, so nothing was graded: {why}\n"
              "Install bubblewrap (scripts/install_bwrap.sh) and allow unprivileged user namespaces, "
              "or pass --unsafe to grade without isolation (said in every student's feedback).", file=sys.stderr)
        return 2
    limits = replace(defaults, cell=args.cell_timeout, notebook=args.notebook_timeout, check=args.check_timeout,
                     submission=args.submission_timeout)
    chapters = [f"{int(c):02d}" for c in args.chapters.split(",")] if args.chapters else None
    try:
        rows = grade_dir(args.submissions, args.checks, limits, chapters, args.out, args.reference,
                         unsafe=args.unsafe and why is not None, jobs=max(1, args.jobs))
    except (ValueError, RuntimeError) as err:
        print(f"kit.grade: {err}", file=sys.stderr)
        return 2
    out = args.out or args.submissions.parent / f"{args.submissions.name}-graded"
    print(f"wrote {out / 'grades.csv'}: {len(rows)} rows, {len({r.student for r in rows})} students; "
          f"feedback in {out}/<student>/feedback.md")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    raise SystemExit(main())
