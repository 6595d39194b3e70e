"""The grader at the speed of the machine (issue 43): the reference state cached, students graded in parallel.

On the synthetic chapter (tests/fixtures/kit/): a second grading run runs no reference notebook, and
the same class graded one at a time and two at a time, in another order, gets the same grades.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # kit/ is not installed: it is imported from the repository's root

from kit import cache, grade, sandbox  # noqa: E402
from ragcourse import paths  # noqa: E402
from tests.test_kit import FAST, FIXTURE, FIXTURE_CHECKS, reference, submission  # noqa: E402

pytestmark = pytest.mark.skipif(sandbox.available() is not None, reason=f"no sandbox: {sandbox.available()}")

#: What CI's second nbval pass sets (the Makefile's OLDER_CPU) while the tests of the first one run beside it.
OLDER_CPU = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "AVX2", "RAGCOURSE_KIT_SELFTEST": "0"}
#: That pass embedding a text into its own vector cache, through the package's cache code (a stand-in model).
EMBEDS = """import numpy as np
from ragcourse.dense import Embedder


class Model:
    def encode(self, texts, **_):
        return np.full((len(texts), 4), 0.5, dtype=np.float32)

    def get_embedding_dimension(self):
        return 4


Embedder(Model(), "stand-in", "stand-in").encode(["a chunk the other pass embedded"])
"""
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


def test_a_pass_beside_it_that_fills_its_own_vector_cache_under_data_costs_no_reference_run(chapter, tmp_path,
                                                                                          monkeypatch):
    """CI's older-CPU nbval pass runs beside the tests with RAGCOURSE_CACHE=data/cache-older-cpu: the vectors it
    writes there between two grading runs are a cache, not the data a reference reads (fresh-clone run, e3158d0)."""
    data = tmp_path / "data"
    (data / "question_sets").mkdir(parents=True)
    (data / "questions.jsonl").write_text('{"id": "q1"}\n', encoding="utf-8")
    monkeypatch.setattr(paths, "DATA_DIR", data)
    other = {**os.environ, **OLDER_CPU, "RAGCOURSE_DATA": str(data), "RAGCOURSE_CACHE": str(data / "cache-older-cpu"),
             "PYTHONPATH": str(sandbox.package_root())}
    submissions = _class(tmp_path / "class", {"ann": reference()})
    logs = []
    grade.grade_dir(submissions, FIXTURE_CHECKS, FAST, ["90"], tmp_path / "first", chapter, log=logs.append)
    subprocess.run([sys.executable, "-c", EMBEDS], env=other, check=True, timeout=300)
    assert list((data / "cache-older-cpu" / "embeddings").glob("*.npz")), "the other pass wrote no vector"
    grade.grade_dir(submissions, FIXTURE_CHECKS, FAST, ["90"], tmp_path / "second", chapter, log=logs.append)
    assert (chapter / "reference-runs.txt").read_text().splitlines() == ["ran"], logs
    assert _grades(tmp_path / "first") == _grades(tmp_path / "second")


def test_the_key_counts_the_data_but_no_cache_kept_in_it(tmp_path, monkeypatch):
    """A file of the data changes the key; vectors in data/cache (untagged, as older runs left it) or in any cache
    folder the package's writers made, wherever RAGCOURSE_CACHE put it (they tag it first), do not."""
    import numpy as np

    from ragcourse.rerank import _save_matrices

    data = tmp_path / "data"
    (data / "question_sets").mkdir(parents=True)
    monkeypatch.setattr(paths, "DATA_DIR", data)
    before = cache.key(FIXTURE_CHECKS / "ch90.py", FIXTURE)
    _save_matrices(data / "any-name" / "tokens" / "m.npz", {"k": np.ones((2, 4), dtype=np.float16)})
    (data / "cache" / "embeddings").mkdir(parents=True)
    (data / "cache" / "embeddings" / "m.npz").write_bytes(b"\0" * 64)
    assert cache.key(FIXTURE_CHECKS / "ch90.py", FIXTURE) == before
    (data / "question_sets" / "new.jsonl").write_text('{"id": "q1"}\n', encoding="utf-8")
    assert cache.key(FIXTURE_CHECKS / "ch90.py", FIXTURE) != before


def test_a_grader_in_another_environment_never_reads_this_ones_state(monkeypatch):
    """The older-CPU pass's kernels may move a reference value's last bits: its state is never this one's. A
    switch that only steers the tests (RAGCOURSE_KIT_SELFTEST) or an unrelated variable keeps the key."""
    here = cache.key(FIXTURE_CHECKS / "ch90.py", FIXTURE)
    monkeypatch.setenv("RAGCOURSE_KIT_SELFTEST", "0")
    monkeypatch.setenv("LANG", "C.UTF-8")
    assert cache.key(FIXTURE_CHECKS / "ch90.py", FIXTURE) == here
    for name, value in OLDER_CPU.items():
        monkeypatch.setenv(name, value)
    assert cache.key(FIXTURE_CHECKS / "ch90.py", FIXTURE) != here


class _Stalls:
    """Pickles as a blob only once `go` is set: a writer stopped midway through its file."""

    def __init__(self, midway: threading.Event, go: threading.Event):
        self.midway, self.go = midway, go

    def __reduce__(self):
        self.midway.set()
        self.go.wait(60)
        return bytes, (pickle.dumps("the slow writer's"),)


def test_two_runs_saving_one_key_at_once_never_mix_their_files(tmp_path, monkeypatch):
    """Two graders save the same state at once (their pids may be equal: another pid namespace, a container
    sharing the cache; here two threads of one process). Each writes its own file and renames it whole."""
    monkeypatch.setenv(cache.ENV, str(tmp_path / "cache"))
    path, midway, go, failed = cache.folder() / "state.pkl", threading.Event(), threading.Event(), []
    slow = {"big": pickle.dumps(b"x" * (1 << 20)), "last": _Stalls(midway, go)}

    def slow_writer():
        try:
            cache.save(path, slow)
        except Exception as err:  # noqa: BLE001 - the test reports it below
            failed.append(err)

    writer = threading.Thread(target=slow_writer)
    writer.start()
    assert midway.wait(60)
    cache.save(path, {"a": pickle.dumps("the fast writer's")})
    assert cache.load(path) == {"a": "the fast writer's"}
    go.set()
    writer.join(60)
    assert failed == []
    assert cache.load(path) == {"big": b"x" * (1 << 20), "last": "the slow writer's"}
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


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
