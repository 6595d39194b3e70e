"""The instructor's kit: student edition, grader, variants and the guide's tables (kit/, `make student|grade`).

Fast cases run on a synthetic chapter (tests/fixtures/kit/90-synthetic.ipynb, hidden checks in
tests/fixtures/kit/checks/ch90.py). The real chapters are graded where nbval runs them, in its kernel,
after their last cell (`notebooks/conftest.py`, `kit/selftest.py`); here, their form and leaks are checked.
"""

from __future__ import annotations

import ast
import copy
import csv
import os
import pwd
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # kit/ is not installed: it is imported from the repository's root

from kit import guide  # noqa: E402
from kit.grade import Kernel, Limits, Run, grade_notebook, load_checks  # noqa: E402
from kit.student import answer_cells, build, exercise_of, leaks, student_edition, tags  # noqa: E402
from ragcourse.book.exercises import choose, environment, same_environment  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "kit" / "90-synthetic.ipynb"
FIXTURE_CHECKS = ROOT / "tests" / "fixtures" / "kit" / "checks"
FAST = Limits(cell=10, notebook=60, check=15, grace=15)  # room for a loaded machine (CI runs two passes at once)
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
SQUARES_12 = 12 * 13 * 25 // 6  # 1^2 + ... + 12^2, the book's n for exercise 90.1


def reference() -> nbformat.NotebookNode:
    return nbformat.read(FIXTURE, as_version=4)


def answer(nb, exercise: str):
    return next(c for c in answer_cells(nb) if c.metadata["exercise"]["id"] == exercise)


def submission(edits: dict[str, str] | None = None, insert: dict[str, str] | None = None, base=None):
    """The reference fixture with some answer cells replaced, and cells inserted before some answers."""
    nb = copy.deepcopy(base if base is not None else reference())
    for exercise, source in (edits or {}).items():
        answer(nb, exercise).source = source
    for exercise, source in (insert or {}).items():
        nb.cells.insert(nb.cells.index(answer(nb, exercise)), nbformat.v4.new_code_cell(source))
    return nb


# ---- the student edition --------------------------------------------------------------------------


def test_student_edition_stubs_answers_and_drops_solutions():
    nb = reference()
    edition = student_edition(nb)
    stubs = {c.metadata["exercise"]["id"]: c.source for c in answer_cells(edition)}
    assert stubs == {c.metadata["exercise"]["id"]: c.metadata["exercise"]["stub"] for c in answer_cells(nb)}
    assert all(f'NotImplementedError("Exercise {ex}")' in stub for ex, stub in stubs.items())
    assert not [c for c in edition.cells if "solution" in tags(c)]
    assert all(set(c.metadata["exercise"]) == {"id", "kind", "minutes"} for c in answer_cells(edition))
    first = edition.cells.index(answer_cells(edition)[0])
    assert all(not c.outputs for c in edition.cells[first:] if c.cell_type == "code")
    glued = {o.metadata["scrapbook"]["name"] for c in edition.cells for o in c.get("outputs", [])
             if "scrapbook" in o.get("metadata", {})}
    assert glued == set()  # Jupyter does not show glue; a solution may quote it
    assert any("8 values" in o.get("text", "") for c in edition.cells for o in c.get("outputs", []))


def test_student_edition_leaks_nothing_of_the_fixture(tmp_path):
    [path] = build([FIXTURE], tmp_path)
    text = path.read_text(encoding="utf-8")
    for secret in (f"{SQUARES_12}", "q31/ticket", "min(max(x, low), high)", "pulls the mean up", "Full: the"):
        assert secret not in text, secret
    assert leaks(reference(), nbformat.read(path, as_version=4)) == []


def test_leak_finder_finds_what_a_careless_edition_would_show():
    nb = reference()
    careless = student_edition(nb)
    careless.cells.append(copy.deepcopy(next(c for c in nb.cells if "solution" in tags(c))))
    glue_cell = next(c for c in nb.cells if "only_the_solution_quotes" in c.source)
    careless.cells.append(copy.deepcopy(glue_cell))  # with its stored output
    careless.cells.append(nbformat.v4.new_markdown_cell("Hint: it is near 0.4567."))
    found = "\n".join(leaks(nb, careless, answers={"answer_share": ["0.4567", "0.457"]}))
    assert "sum(i * i for i in range(1, n_squares + 1))" in found
    assert "only_the_solution_quotes" in found
    assert "the reference answer `answer_share` (= '0.4567')" in found


def test_student_edition_refuses_a_chapter_without_stubs():
    nb = reference()
    del answer(nb, "90.2").metadata["exercise"]["stub"]
    with pytest.raises(ValueError, match="90.2"):
        student_edition(nb)


# ---- the grader on the synthetic chapter ------------------------------------------------------------

LOOP_IGNORING_INTERRUPTS = """import time
while True:
    try:
        time.sleep(0.1)
    except KeyboardInterrupt:
        pass
"""

SUBMISSIONS = {  # student -> (notebook, or None for no chapter-90 notebook; expected points per exercise)
    "a-ignores-interrupts": (lambda: submission(insert={"90.2": LOOP_IGNORING_INTERRUPTS}), (0, 0, 0)),
    "b-loops": (lambda: submission(insert={"90.2": "while True:\n    pass"}), (2, 3, 1)),
    "c-sleeps": (lambda: submission(insert={"90.1": "import time\ntime.sleep(600)"}), (2, 3, 1)),
    "d-kernel-dies": (lambda: submission(insert={"90.3": "import os\nos._exit(3)"}), (0, 0, 0)),
    "e-raises": (lambda: submission(edits={"90.1": "1 / 0"}, insert={"90.2": "raise ValueError('a bad cell')"}),
                 (0, 3, 1)),
    "f-partial": (lambda: submission(edits={
        "90.2": "def clip(xs, low, high):\n    return [max(x, low) for x in xs]",  # no upper end
        "90.3": 'answer_prediction = "sideways"\nanswer_why = "no idea at all, sorry"'}),
        (2, 1.5, 0)),  # two of the four hidden inputs of 90.2 have no value above `high`
    "g-function-loops": (lambda: submission(edits={"90.2": "def clip(xs, low, high):\n    while True:\n        pass"}),
                         (2, 0, 1)),
    "h-student-edition": (lambda: student_edition(reference()), (0, 0, 0)),
    "i-not-a-notebook": ("{ this is not json", (0, 0, 0)),
    "j-nothing": (None, (0, 0, 0)),
    "k-byte-order-mark": (lambda: b"\xef\xbb\xbf" + nbformat.writes(reference()).encode(), (2, 3, 1)),
    "l-upper-case-suffix": (reference, (2, 3, 1)),  # saved as 90-synthetic.IPYNB
    "z-reference": (reference, (2, 3, 1)),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade every submission above in one `python -m kit.grade` run (a subprocess, as `make grade` does)."""
    folder = tmp_path_factory.mktemp("class") / "submissions"
    folder.mkdir()
    for student, (make, _) in SUBMISSIONS.items():
        (folder / student).mkdir()
        target = folder / student / "90-synthetic.ipynb"
        made = make() if callable(make) else make
        if isinstance(made, str):
            target.write_text(made, encoding="utf-8")
        elif isinstance(made, bytes):
            target.write_bytes(made)
        elif made is not None:
            nbformat.write(made, target)
    upper = folder / "l-upper-case-suffix"
    (upper / "90-synthetic.ipynb").rename(upper / "90-synthetic.IPYNB")
    for name in ["notes.ipynb", *(f"x{i:02d}.ipynb" for i in range(25))]:  # 26 notebooks of no chapter
        (folder / "j-nothing" / name).write_text("{}", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]), "RAGCOURSE_VARIANT": "0"}
    cmd = [sys.executable, "-m", "kit.grade", str(folder), "--checks", str(FIXTURE_CHECKS), "--chapters", "90",
           "--cell-timeout", str(FAST.cell), "--notebook-timeout", str(FAST.notebook),
           "--check-timeout", str(FAST.check)]
    out = folder.parent / "graded"
    cmd += ["--reference", str(FIXTURE.parent), "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    with (out / "grades.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return out, rows


def test_grades_csv_has_the_columns_and_a_row_per_student_and_exercise(graded):
    folder, rows = graded
    header = (folder / "grades.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "student,chapter,exercise,points,max_points,feedback,automatic_points,manual_note"
    expected = [(s, e) for s in SUBMISSIONS for e in ("90.1", "90.2", "90.3")]
    assert [(r["student"], r["exercise"]) for r in rows] == expected
    assert {r["max_points"] for r in rows if r["exercise"] == "90.2"} == {"3"}


@pytest.mark.parametrize("student", list(SUBMISSIONS))
def test_each_submission_gets_exactly_its_points(graded, student):
    _, rows = graded
    got = tuple(float(r["points"]) for r in rows if r["student"] == student)
    feedback = [r["feedback"] for r in rows if r["student"] == student]
    assert got == tuple(float(p) for p in SUBMISSIONS[student][1]), feedback


def test_the_class_summary_adds_up_the_rows_of_grades_csv(graded):
    folder, rows = graded
    page = (folder / "summary.md").read_text(encoding="utf-8")
    students, exercises = page.split("## Students, best first")[1].split("## Exercises")
    table = [line.strip("|").split(" | ") for line in students.splitlines() if line.startswith("| ")][1:]
    totals = {s: sum(float(r["points"]) for r in rows if r["student"] == s) for s in SUBMISSIONS}
    assert {cells[0].strip(): float(cells[-1]) for cells in table} == totals
    assert [float(cells[-1]) for cells in table] == sorted(totals.values(), reverse=True)
    for exercise in ("90.1", "90.2", "90.3"):
        mine = [r for r in rows if r["exercise"] == exercise]
        points = [float(r["points"]) for r in mine]
        full = sum(float(r["points"]) == float(r["max_points"]) for r in mine)
        assert f"| {exercise} | {mine[0]['max_points']} | {sum(points) / len(points):.2f} | {full} | " \
               f"{points.count(0.0)} | " in exercises


def test_feedback_says_what_went_wrong_without_the_expected_value(graded):
    folder, rows = graded
    feedback = {s: (folder / s / "feedback.md").read_text(encoding="utf-8") for s in SUBMISSIONS}
    assert "did not answer an interrupt" in feedback["a-ignores-interrupts"]
    assert "ran past its limit" in feedback["b-loops"] and "ran past its limit" in feedback["c-sleeps"]
    assert "kernel died" in feedback["d-kernel-dies"]
    assert "ZeroDivisionError" in feedback["e-raises"] and "ValueError: a bad cell" in feedback["e-raises"]
    assert "partly right" in feedback["f-partial"] and '"above" or "below"' in feedback["f-partial"]
    assert f"ran past its {FAST.check:.0f} s limit" in feedback["g-function-loops"]
    assert "not attempted" in feedback["h-student-edition"]
    untouched = [r["feedback"] for r in rows if r["student"] == "h-student-edition"]
    assert all(f.startswith("not attempted: the answer ") for f in untouched), untouched
    assert "not a readable notebook" in feedback["i-not-a-notebook"]
    assert "no notebook submitted" in feedback["j-nothing"] and "notes.ipynb" in feedback["j-nothing"]
    assert "x18.ipynb and 6 more" in feedback["j-nothing"] and "x19" not in feedback["j-nothing"]
    assert "**6 of 6 points.**" in feedback["z-reference"]
    assert not any(str(SQUARES_12) in text for text in feedback.values())
    assert not any(str(SQUARES_12) in r["feedback"] for r in rows)


def test_a_submission_of_many_cells_each_under_its_limit_stops_at_its_total_budget(tmp_path):
    """Issue 44: a total time budget per submission, across all its cells and checks, not only per cell."""
    from dataclasses import replace

    limits = replace(FAST, cell=12, notebook=120, submission=40)
    slow = submission(insert={"90.1": "import time\ntime.sleep(9)", "90.2": "import time\ntime.sleep(9)",
                              "90.3": "import time\ntime.sleep(9)\ntime.sleep(0)"})
    slow.cells[:0] = [nbformat.v4.new_code_cell("import time\ntime.sleep(9)") for _ in range(2)]
    for name in ("slow", "honest"):
        (tmp_path / name).mkdir()
    scores, run = grade_notebook(_write(tmp_path / "slow" / "90-synthetic.ipynb", slow), FIXTURE_CHECKS / "ch90.py",
                                 limits, FIXTURE)
    assert all(points == 0.0 and feedback.startswith("not graded") for points, feedback in scores.values()), scores
    assert any("40 s" in note for note in run.notes), run.notes
    honest, _ = grade_notebook(_write(tmp_path / "honest" / "90-synthetic.ipynb", reference()),
                               FIXTURE_CHECKS / "ch90.py", limits, FIXTURE)
    assert [points for points, _ in honest.values()] == [2.0, 3.0, 1.0], honest


def test_the_checker_kernel_is_stopped_past_its_memory_limit_and_starts_afresh():
    """Issue 44: the trusted checker kernel itself runs under a memory limit (a forged answer once held 4 GB)."""
    from dataclasses import replace

    from kit.grade import Chapter

    chapter = Chapter("90", FIXTURE_CHECKS / "ch90.py", FIXTURE, replace(FAST, checker_memory=768 << 20), False)
    try:
        chapter.start()
        run = Run()
        grow = nbformat.v4.new_code_cell("held = [bytearray(64 << 20) for _ in range(40)]")  # 2.5 GB, touched
        assert chapter.kernel.execute(grow, 0, 120, run) == "dead" and chapter.guard.over and not run.alive
        chapter._restart(run)
        chapter.start()
        assert chapter.kernel.execute(nbformat.v4.new_code_cell("x = 1"), 0, 60, run) is None and run.alive
    finally:
        chapter.close()


def test_a_zero_for_an_answer_cell_still_its_stub_says_not_attempted():
    # A function stub raises only when called; a check that counts its crashes as wrong answers saw
    # "13 of 13 documents counted wrong" for chapter 1's untouched exercise 1.3.
    from kit.grade import _not_attempted, exercise_stubs

    stub = "def f(x):\n    raise NotImplementedError('Exercise 9.1')\n"
    answer = "def f(x):\n    return 2 * x\n"
    reference = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        answer, metadata={"exercise": {"id": ex, "stub": stub}, "tags": ["answer"]}) for ex in ("9.1", "9.2", "9.3")])
    # the student edition drops the stub from the metadata and puts it in the cell
    cells = [nbformat.v4.new_code_cell(source, metadata={"exercise": {"id": ex}})
             for ex, source in (("9.1", stub + "\n"), ("9.2", "def f(x):\n    return x\n"), ("9.3", stub))]
    scores = {"9.1": (0.0, "13 of 13 counted wrong"), "9.2": (0.0, "2 of 13 counted wrong"), "9.3": (1.0, "ok")}
    got = _not_attempted(dict(scores), set(), nbformat.v4.new_notebook(cells=cells), exercise_stubs(reference))
    assert got["9.1"] == (0.0, "not attempted: the answer cell is still the stub as handed out")
    assert got["9.2"] == scores["9.2"] and got["9.3"] == scores["9.3"]


HOSTILE_NAMES = ['=HYPERLINK("http:x","y")', "+cmd", "@x", "-1+1", "\tTAB", "a|b", "a\nb", "\x1b[2Jclear",
                 "<script>alert(1)<", "[x](http:evil)", "`tick`", "L" * 255, "grades.csv", "GRADES.CSV", "summary.md",
                 "bad\udcff", "uni é 漢字"]


def _output_rows(out: Path, submissions: Path, names: list[str], chapter: str, points: float):
    from kit.grade import Output, Row

    output = Output(out, submissions)
    for name in names:
        rows = [Row(grade_shown(name), chapter, f"{int(chapter)}.1", points, 2, "=1+1 <b>|x|</b>")]
        output.student(name, rows, {chapter: f"## Chapter {int(chapter)}\n", "": "stray\n"})
        output.merge()
    return output.merge()


def grade_shown(name: str) -> str:
    from kit.escape import shown

    return shown(name)


def test_output_takes_any_folder_name_and_writes_safe_csv_and_markdown(tmp_path):
    """A folder name or feedback a student controls never breaks the run, a spreadsheet or the feedback page."""
    from kit.escape import csv_cell

    rows = _output_rows(tmp_path / "out", tmp_path / "subs", HOSTILE_NAMES, "90", 2)
    assert len(rows) == len(HOSTILE_NAMES)
    with (tmp_path / "out" / "grades.csv").open(encoding="utf-8", newline="") as handle:
        cells = [c for row in csv.reader(handle) for c in row]
    assert {csv_cell(grade_shown(n)) for n in HOSTILE_NAMES} <= set(cells)
    assert not [c for c in cells if c.lstrip(" ")[:1] in ("=", "+", "-", "@", "\t", "\r", "\n")]
    assert (tmp_path / "out" / "grades.csv").is_file() and (tmp_path / "out" / "grades.csv (student)").is_dir()
    assert (tmp_path / "out" / "summary.md").is_file() and "of 2" in (tmp_path / "out" / "summary.md").read_text()
    for name in HOSTILE_NAMES:
        folder = tmp_path / "out" / (f"{name} (student)" if name.lower() in ("grades.csv", "summary.md") else name)
        text = (folder / "feedback.md").read_text(encoding="utf-8")
        assert text.startswith("# Feedback for ") and "## Chapter 90" in text, name
        assert text.count("\n") == 5 and "<" not in text and "\x1b" not in text, text


def test_a_chapter_removes_its_folders_and_sandbox_jobs_are_private():
    """The exchange folder goes with its chapter; a job folder (a student's notebook) is the sandbox user's alone."""
    from kit import sandbox
    from kit.grade import Chapter

    chapter = Chapter("90", FIXTURE_CHECKS / "ch90.py", FIXTURE, FAST, False)
    folders = [chapter.folder, chapter.exchange]
    assert all(f.is_dir() for f in folders)
    chapter.close()
    assert not any(f.exists() for f in folders)
    job = sandbox._job_dir("ragcourse-test-")
    try:
        path = sandbox._write_job(job, {"x": 1})
        assert (job.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o700, 0o600)
        owner = pwd.getpwnam(sandbox.NOBODY).pw_uid if sandbox.drop_to_nobody() else os.getuid()
        assert job.stat().st_uid == path.stat().st_uid == owner
    finally:
        import shutil

        shutil.rmtree(job)


def test_answers_that_cannot_be_decoded_leave_nothing_of_the_previous_student(tmp_path, monkeypatch):
    """Data that blows up when decoded (12 GB from a few bytes, or any error) is that answer's problem; the
    checker then holds this student's functions, never the previous student's."""
    import json

    import pandas as pd

    from kit import checker, codec

    huge = {"$t": "ndarray", "dtype": "<U100000000", "shape": [30], "v": ["a"] * 30}
    with pytest.raises(ValueError, match="over 512 MB"):
        codec.decode(huge)
    for dtype in ["|S100000000", "|V100000000"]:  # 100 MB a row, from a few bytes: the column keeps its own dtype
        series = codec.decode({"$t": "series", "v": ["a"] * 1000, "index": list(range(1000)), "dtype": dtype})
        frame = codec.decode({"$t": "frame", "columns": ["a"], "index": [0], "v": [["a"]], "dtypes": [dtype]})
        assert getattr(series.dtype, "itemsize", 0) <= 64 and getattr(frame["a"].dtype, "itemsize", 0) <= 64
    assert str(codec.decode(codec.encode(pd.Series([1, 2], dtype="Int64"))).dtype) == "Int64"
    with pytest.raises(ValueError, match="do not match"):  # 80 GB of NaN from 1.2 MB
        codec.decode({"$t": "frame", "columns": list(range(100_000)), "index": list(range(100_000)), "v": []})
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}, index=[3, 4])
    assert codec.decode(codec.encode(frame)).equals(frame)
    names = ["answer_squares", "clip", "n_squares"]
    kit_checker = checker.Checker(str(FIXTURE_CHECKS / "ch90.py"), {}, names, str(tmp_path))
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps({"values": {"clip": {"$t": "function"}}, "functions": {"clip": ["def clip(): 1"]}}))
    second.write_text(json.dumps({"values": {"clip": {"$t": "function"}, "n_squares": huge, "answer_squares": 1},
                                  "functions": {}}))
    kit_checker.student(str(first))
    real = codec.decode
    monkeypatch.setattr(codec, "decode", lambda data: (_ for _ in ()).throw(MemoryError) if data == 1 else real(data))
    kit_checker.student(str(second))
    assert kit_checker.functions == {} and "clip" in kit_checker.values
    assert sorted(kit_checker.problems) == ["`answer_squares` could not be read back as data",
                                    "`n_squares` could not be read back as data"]


def test_output_regrading_replaces_a_chapter_and_keeps_the_others(tmp_path):
    """Re-running into the same OUT: never a doubled row, never a silently lost chapter."""
    out, subs = tmp_path / "out", tmp_path / "subs"
    (out / ".rows").mkdir(parents=True)
    (out / ".rows" / "ann.json").write_text("[]")  # an earlier grader's file: not read
    _output_rows(out, subs, ["ann", "bob"], "90", 1)
    _output_rows(out, subs, ["ann"], "90", 2)  # ann's chapter 90 graded again
    rows = _output_rows(out, subs, ["bob"], "91", 2)  # then another chapter
    assert [(r.student, r.chapter, r.points) for r in rows] == [("ann", "90", 2), ("bob", "90", 1), ("bob", "91", 2)]
    assert "ch. 91 (of 2)" in (out / "summary.md").read_text(encoding="utf-8")  # ann has no chapter 91 row
    assert "## Chapter 90" in (out / "bob" / "feedback.md").read_text(encoding="utf-8")
    from kit.grade import Output

    with pytest.raises(ValueError, match="inside SUBMISSIONS"):
        Output(subs / "ann" / "graded", subs)
    (out / "subs").mkdir()  # SUBMISSIONS inside OUT: a student named like it gets another feedback folder
    _output_rows(out, out / "subs", ["subs"], "90", 1)
    assert list((out / "subs").iterdir()) == [] and (out / "subs (student)" / "feedback.md").is_file()
    (tmp_path / "link").symlink_to(out, target_is_directory=True)
    with pytest.raises(ValueError, match="a link"):
        Output(tmp_path / "link", subs)
    (tmp_path / "home").mkdir()  # an instructor's folder: a student named like one of its files must not replace it
    (tmp_path / "home" / "Makefile").write_text("keep me")
    with pytest.raises(ValueError, match="did not write"):
        Output(tmp_path / "home", subs)
    (out / "notes.txt").write_text("keep me")  # a file put into an earlier output
    _output_rows(out, subs, ["notes.txt"], "90", 1)
    assert (out / "notes.txt").read_text() == "keep me" and (out / "notes.txt (student)" / "feedback.md").is_file()


def _grades(out: Path) -> dict[tuple[str, str], dict]:
    with (out / "grades.csv").open(encoding="utf-8", newline="") as handle:
        return {(r["student"], r["exercise"]): r for r in csv.DictReader(handle)}


def test_manual_marks_survive_a_regrade_and_each_is_flagged(tmp_path, capsys):
    """Issue 45: an instructor's marks live in OUT/manual.csv, applied on every run, beside the automatic score."""
    from kit.grade import Output

    out, subs = tmp_path / "out", tmp_path / "subs"
    _output_rows(out, subs, ["ann", "bob", "=cmd"], "90", 1)  # a class graded
    (out / "manual.csv").write_text("student,chapter,exercise,points,note\nann,90,90.1,2,reasoning credited\n"
                                    "'=cmd,90,90.1,0,copied\nbob,90,90.1,7,too many\nzed,90,90.1,1,nobody\n",
                                    encoding="utf-8")
    _output_rows(out, subs, ["bob"], "90", 0.5)  # one student re-graded into the same folder
    rows = _grades(out)
    assert (rows["ann", "90.1"]["points"], rows["ann", "90.1"]["automatic_points"]) == ("2", "1")
    assert rows["ann", "90.1"]["manual_note"] == "manual mark: reasoning credited"
    assert (rows["'=cmd", "90.1"]["points"], rows["'=cmd", "90.1"]["automatic_points"]) == ("0", "1")
    assert (rows["bob", "90.1"]["points"], rows["bob", "90.1"]["manual_note"]) == ("0.5", "")  # 7 > 2: refused
    output = Output(out, subs)
    output.merge()
    output.report(print)
    said = capsys.readouterr().out
    assert "line 4: points 7 outside 0..2" in said and "line 5: no graded row for student 'zed'" in said
    assert "| ann | 2 | 2 |" in (out / "summary.md").read_text(encoding="utf-8")
    assert (out / "manual.csv").read_text(encoding="utf-8").count("\n") == 5  # never written by the grader


def test_a_hand_edit_of_grades_csv_is_refused_loudly_and_kept(tmp_path):
    from kit.grade import Output

    out, subs = tmp_path / "out", tmp_path / "subs"
    _output_rows(out, subs, ["ann"], "90", 1)
    edited = (out / "grades.csv").read_text(encoding="utf-8").replace("ann,90,90.1,1,", "ann,90,90.1,2,")
    (out / "grades.csv").write_text(edited, encoding="utf-8")
    with pytest.raises(ValueError, match="edited by hand.*manual.csv"):
        _output_rows(out, subs, ["ann"], "90", 1)
    assert (out / "grades.csv").read_text(encoding="utf-8") == edited
    Output(tmp_path / "fresh", subs)  # an output the grader wrote and nobody edited opens as before


def test_the_grading_kernel_runs_the_tests_interpreter_and_versions(tmp_path):
    """Passes at home, fails when graded cannot happen: one environment, checked at both ends.

    The kernel the grader starts runs this interpreter, with the same pinned versions and package source;
    the student edition's first cell demands exactly those versions, so a student whose first cell passes
    at home is graded in the environment they ran in.
    """
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys\nprint(sys.executable)")])
    run = Run()
    with Kernel(nb, tmp_path, FAST) as kernel:
        assert kernel.execute(nb.cells[0], 0, FAST.cell, run) is None
    assert nb.cells[0].outputs[0]["text"].strip() == sys.executable
    scores, run = grade_notebook(FIXTURE, FIXTURE_CHECKS / "ch90.py", FAST, FIXTURE)
    assert run.environment == environment()
    preamble = student_edition(reference()).cells[0].source
    call = next(n for n in ast.walk(ast.parse(preamble))
                if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "same_environment")
    assert ast.literal_eval(call.args[0]) == environment()
    elsewhere = {**environment(), "numpy": "1.0.0"}
    with pytest.raises(RuntimeError, match="numpy 2.* here, 1.0.0 when graded"):
        same_environment(elsewhere)


def test_a_variant_changes_a_constant_and_the_hidden_check_follows(tmp_path, monkeypatch):
    book = choose("90.1", [12, 17, 23, 31])
    for term in range(1, 20):
        monkeypatch.setenv("RAGCOURSE_VARIANT", str(term))
        if choose("90.1", [12, 17, 23, 31]) != book:
            break
    assert choose("90.1", [12, 17, 23, 31]) != book, "no variant in 1..19 draws another n"
    [path] = build([FIXTURE], tmp_path)
    edition = nbformat.read(path, as_version=4)
    assert f'"RAGCOURSE_VARIANT", "{term}"' in edition.cells[0].source
    last_year = submission(edits={"90.1": f'n_squares = choose("90.1", [12, 17, 23, 31])\nanswer_squares = {SQUARES_12}'
                                  })
    reset = submission(insert={"90.1": 'import os\nos.environ["RAGCOURSE_VARIANT"] = "0"'})
    checks = FIXTURE_CHECKS / "ch90.py"
    scores, _ = grade_notebook(_write(tmp_path / "90-ref.ipynb", reference()), checks, FAST, FIXTURE)
    assert scores["90.1"][0] == 2  # the reference computes from the drawn n: right in any variant
    scores, _ = grade_notebook(_write(tmp_path / "90-last.ipynb", last_year), checks, FAST, FIXTURE)
    assert scores["90.1"][0] == 0  # last year's number is wrong this term
    scores, run = grade_notebook(_write(tmp_path / "90-reset.ipynb", reset), checks, FAST, FIXTURE)
    assert scores["90.1"][0] == 0 and f"graded as variant {term}" in "\n".join(run.notes)
    monkeypatch.setenv("RAGCOURSE_VARIANT", "0")
    scores, _ = grade_notebook(tmp_path / "90-last.ipynb", checks, FAST, FIXTURE)
    assert scores["90.1"][0] == 2
    _, run = grade_notebook(path, checks, FAST, FIXTURE)  # this term's edition, graded as variant 0
    assert f"handed out as variant {term}, graded as variant 0" in run.notes[0]


def _write(path: Path, nb) -> Path:
    nbformat.write(nb, path)
    return path


# ---- the guide --------------------------------------------------------------------------------------


def test_guide_parses_the_chapter_box_and_lists_each_exercise():
    lines = "\n".join(guide.chapter_table(FIXTURE, load_checks(FIXTURE_CHECKS / "ch90.py")))
    assert "- to clip values into a range;" in lines
    assert "**Prerequisites.** [chapter 2](notebooks/02-chunking.ipynb) and a little arithmetic." in lines
    assert "**Time.** about 10 min to read, 1 min to run." in lines
    assert "| 90.2 | function | 3 | 10 | `clip` on 4 unseen lists" in lines
    assert "| 90.3 | prediction | 1 | 5 | A prediction" in lines
    assert "Rubric, exercise" not in lines and "Read against a rubric: 90.3 (the rubrics are in the" in lines
    assert "3 exercises, 6 points, about 20 min of exercises." in lines
    instructor = "\n".join(guide.chapter_table(FIXTURE, load_checks(FIXTURE_CHECKS / "ch90.py"), instructor=True))
    assert "**Rubric, exercise 90.3 (prediction).** Full: the prediction is made before measuring" in instructor


def test_the_guide_tables_are_written_by_the_build_and_only_when_they_change(tmp_path):
    out = tmp_path / "instructor-tables.inc"
    assert guide.write_tables([FIXTURE], out, FIXTURE_CHECKS) and "| 90.2 | function | 3 |" in out.read_text("utf-8")
    assert not guide.write_tables([FIXTURE], out, FIXTURE_CHECKS)  # unchanged: not rewritten, not re-read by Sphinx
    config = (ROOT / "book" / "_config.yml").read_text(encoding="utf-8")
    assert "instructor_tables: _ext" in config and "book/instructor-tables.inc" in (ROOT / ".gitignore").read_text()


# ---- the real chapters ------------------------------------------------------------------------------


def _checks(path: Path) -> dict:
    return load_checks(ROOT / "kit" / "checks" / f"ch{path.name[:2]}.py")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_real_chapter_exercises_have_the_agreed_form(path):
    nb = nbformat.read(path, as_version=4)
    exercises = [exercise_of(c) for c in answer_cells(nb)]
    kinds = {e["kind"] for e in exercises}
    assert len(exercises) >= 3 and {"function", "prediction"} <= kinds, kinds
    checks = _checks(path)
    assert {e["id"] for e in exercises} == set(checks), "every answer cell has a hidden check, and vice versa"
    for e in exercises:
        assert e["id"].split(".")[0] == str(int(path.name[:2])), e["id"]
        assert f'NotImplementedError("Exercise {e["id"]}")' in e["stub"]
        assert "points" not in e, f"exercise {e['id']}: points are declared once, in its @check"
        assert checks[e["id"]].tests, f"exercise {e['id']}: the hidden check needs a docstring"
        assert isinstance(e.get("minutes"), int) and e["minutes"] > 0, e["id"]
        if e["kind"] in ("prediction", "written"):
            assert len(e.get("rubric", "")) >= 40, f"exercise {e['id']}: a {e['kind']} exercise needs a rubric"
    guide.overview(nb)  # the "In this chapter" box parses
    public = [c.source for c in nb.cells if "check" in tags(c)]
    assert all(any(f'"{e["id"]}"' in s for s in public) for e in exercises), "each exercise has a public check"


def test_some_real_exercise_draws_its_constant_with_choose():
    stubs = [exercise_of(c)["stub"] + c.source for p in CHAPTERS for c in answer_cells(nbformat.read(p, as_version=4))]
    checks = "\n".join((ROOT / "kit" / "checks" / f"ch{p.name[:2]}.py").read_text(encoding="utf-8") for p in CHAPTERS)
    assert any("choose(" in s for s in stubs) and "choose(" in checks


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_real_student_edition_leaks_nothing(path, tmp_path):
    [written] = build([path], tmp_path)  # build() refuses an edition that leaks
    assert leaks(nbformat.read(path, as_version=4), nbformat.read(written, as_version=4)) == []


# ---- the self-test nbval runs after each chapter (kit/selftest.py) ---------------------------------


@pytest.fixture
def nbval_kernel(tmp_path):
    from nbval.kernel import RunningKernel

    kernel = RunningKernel("python3", cwd=str(tmp_path))
    yield kernel
    kernel.stop()


def _run_reference(kernel, nb) -> None:
    from kit.selftest import NbvalKernel

    attached, run = NbvalKernel(kernel), Run()
    for cell in [c for c in nb.cells if c.cell_type == "code"]:
        assert attached.execute(copy.deepcopy(cell), 0, 60, run) is None, cell.source[:80]


def test_selftest_passes_the_reference_and_catches_a_broken_one(nbval_kernel, tmp_path):
    from kit.selftest import selftest

    _run_reference(nbval_kernel, reference())
    assert selftest(nbval_kernel, FIXTURE, FIXTURE_CHECKS / "ch90.py") == []
    _run_reference(nbval_kernel, submission({"90.1": "answer_squares = 1"}))  # a reference that is wrong
    broken = tmp_path / FIXTURE.name
    nbformat.write(submission({"90.1": "answer_squares = 1"}), broken)
    problems = selftest(nbval_kernel, broken, FIXTURE_CHECKS / "ch90.py")
    assert problems and "do not score full marks" in problems[0] and "'90.1': (0" in problems[0]


def _questions_after_answer_names(text: str, names: list[str]) -> list[str]:
    """The questions (sentences ending in '?') after the last sentence that names an answer variable.

    >>> _questions_after_answer_names("Set `x` to it. Why is it so? Then think.", ["x"])
    ['Why is it so?']
    >>> _questions_after_answer_names("What is it? Set `x` to it.", ["x"])
    []
    """
    sentences = re.split(r"(?<=[.?!])\s+", " ".join(text.split()))
    named = [i for i, s in enumerate(sentences) if any(f"`{n}" in s for n in names)]
    return [s for s in sentences[(named[-1] + 1 if named else 0):] if s.rstrip("*_) ").endswith("?")]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_question_an_exercise_asks_has_a_place_to_answer(path):
    """Issue 45: a follow-up question no variable answers is marked as discussed in class, with a rubric."""
    nb = nbformat.read(path, as_version=4)
    unmarked = []
    for cell in answer_cells(nb):
        meta = cell.metadata["exercise"]
        names = re.findall(r"^(?:def )?([A-Za-z_]\w*)\s*(?:=|\()", meta.get("stub", ""), re.M)
        blocks = [c.source for c in nb.cells if c.cell_type == "markdown"
                  and re.search(rf":label: ex-{meta['id'].replace('.', '-')}\s", c.source)]
        for block in blocks:
            body = block.split(":label:", 1)[1]
            if _questions_after_answer_names(body, names) and "discussed in class" not in body.lower():
                unmarked.append(f"{meta['id']}: {_questions_after_answer_names(body, names)}")
    assert not unmarked, f"{path.name}: questions with no place to answer: {unmarked}"
