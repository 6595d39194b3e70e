"""The grader at the speed of the machine (issue 43): the reference state cached, students graded in parallel.

On the synthetic chapter (tests/fixtures/kit/): a second grading run runs no reference notebook, and
the same class graded one at a time and two at a time, in another order, gets the same grades.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # kit/ is not installed: it is imported from the repository's root

from kit import cache, grade, sandbox  # noqa: E402
from tests.test_kit import FAST, FIXTURE, FIXTURE_CHECKS, reference, submission  # noqa: E402

pytestmark = pytest.mark.skipif(sandbox.available() is not None, reason=f"no sandbox: {sandbox.available()}")

COUNTS_RUNS = "from pathlib import Path as _P\n_P('reference-runs.txt').open('a').write('ran\\n')\n"


@pytest.fixture
def chapter(tmp_path, monkeypatch):
    """A copy of the synthetic chapter whose reference notebook counts its runs, and a private cache."""
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    folder = tmp_path / "reference"
    folder.mkdir()
    nb = reference()
    nb.cells.insert(0, nbformat.v4.new_code_cell(COUNTS_RUNS))
    nbformat.write(nb, folder / FIXTURE.name)
    return folder


def _class(folder: Path, students: dict[str, nbformat.NotebookNode]) -> Path:
    for name, nb in students.items():
        (folder / name).mkdir(parents=True)
        nbformat.write(nb, folder / name / FIXTURE.name)
    return folder


def _grades(out: Path) -> str:
    return (out / "grades.csv").read_text(encoding="utf-8")


def test_a_second_run_runs_no_reference_notebook(chapter, tmp_path):
    submissions = _class(tmp_path / "class", {"ann": reference()})
    logs = []
    for out in ("first", "second"):
        grade.grade_dir(submissions, FIXTURE_CHECKS, FAST, ["90"], tmp_path / out, chapter, log=logs.append)
    assert (chapter / "reference-runs.txt").read_text().splitlines() == ["ran"]
    assert any("ran the reference" in line for line in logs) and any("from the cache" in line for line in logs)
    assert _grades(tmp_path / "first") == _grades(tmp_path / "second")
    assert any(line.startswith(">> per student (1 students, -j 1): wall") for line in logs)
    [state] = cache.folder().glob("*.pkl")  # a state someone else could have written is never unpickled
    assert cache.load(state) is not None
    state.chmod(0o666)
    assert cache.load(state) is None


def test_the_same_grades_in_any_order_and_any_number_of_jobs(chapter, tmp_path):
    students = {"a-right": reference(), "b-wrong": submission(edits={"90.1": "n_squares = 1",
                                                                   "90.2": "def clip(xs, low, high):\n    return xs"})}
    one = _class(tmp_path / "one", students)
    two = _class(tmp_path / "two", dict(reversed(students.items())))
    logs = []
    grade.grade_dir(one, FIXTURE_CHECKS, FAST, ["90"], tmp_path / "one-out", chapter, log=logs.append, jobs=1)
    grade.grade_dir(two, FIXTURE_CHECKS, FAST, ["90"], tmp_path / "two-out", chapter, log=logs.append, jobs=2)
    assert _grades(tmp_path / "one-out") == _grades(tmp_path / "two-out")
    assert "full marks" in _grades(tmp_path / "one-out") and ",0," in _grades(tmp_path / "one-out")
    assert any(line.startswith(">> per student (2 students, -j 2)") for line in logs)
