"""The kit's self-test, run by nbval in the kernel that has just executed a chapter (notebooks/conftest.py).

That kernel ran the reference chapter, so it can stand for the grader's trusted checker kernel
(kit/checker.py). After the chapter's last cell:

1. the reference answers are exported from it as JSON, exactly as a student's sandbox exports them
   (kit/runner.py), and scored by the checks against that JSON, functions run in a fresh sandbox from the
   reference's own cells: every exercise must score full marks;
2. none of the answers' values may be searchable in the student edition;
3. every name the answer cells define is deleted, the student edition's cells from its first stub on
   run (stubs, public checks, the cells between), their answers are exported and scored: every exercise
   must score 0.

The cells before the first answer cell are the same in both editions, but for the glue calls and asserts
the edition leaves out (`student_tail` checks it), so this is the student edition's run without executing
the chapter a second time. No check is sent into a
kernel that ran a student's code: here every cell is the book's own.
"""

from __future__ import annotations

import copy
import json
import numbers
import secrets
from pathlib import Path
from queue import Empty

import nbformat

from kit import codec, definitions, sandbox
from kit.grade import _tagged, answer_names, exercise_key, load_checks
from kit.runner import Limits, Run, export_source, run_cells, sealed
from kit.student import answer_cells, follows, leaks, student_edition, tags

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "kit" / "checks"
LIMITS = Limits(cell=900, notebook=2400, check=300)
OUTPUT_WAIT = 60  # seconds to wait for a finished cell's last output message


def checks_for(notebook: Path) -> Path | None:
    """The hidden checks of a chapter notebook (`NN-*.ipynb` -> kit/checks/chNN.py), if it has any.

    A lab (`notebooks/labs/NN-*.ipynb`) has no exercises, so no checks, whatever its number.
    """
    if notebook.parent.name == "labs":
        return None
    path = CHECKS / f"ch{notebook.name[:2]}.py"
    return path if notebook.name[:2].isdigit() and path.is_file() else None


class NbvalKernel:
    """`kit.grade`'s kernel interface (`execute`) over the kernel nbval started for a notebook."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel

    def execute(self, cell, index: int, timeout: float, run: Run) -> str | None:
        """Run one cell, its outputs stored on it; None when it finished, else "error", "timeout" or "dead"."""
        if not self.kernel.is_alive():
            run.alive = False
            return "dead"
        msg_id = self.kernel.execute_cell_input(cell.source, allow_stdin=False)
        outcome = None
        try:
            self.kernel.await_reply(msg_id, timeout=timeout)
        except Empty:
            self.kernel.interrupt()
            outcome = "timeout"
        cell.outputs = []
        while True:
            try:
                msg = self.kernel.get_message("iopub", timeout=OUTPUT_WAIT)
            except Empty:
                run.alive = False
                return "dead"
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind == "stream":
                cell.outputs.append(nbformat.v4.new_output("stream", name=content["name"], text=content["text"]))
            elif kind == "error":
                cell.outputs.append(nbformat.v4.new_output("error", ename=content["ename"],
                                                           evalue=content["evalue"], traceback=content["traceback"]))
        if outcome is None and any(o.output_type == "error" for o in cell.outputs):
            outcome = "error"
        return outcome


def student_tail(nb, forget: list[str]):
    """The cells the self-test runs as the student: forget the answers, then the edition from its first stub."""
    edition = student_edition(nb)
    first = edition.cells.index(answer_cells(edition)[0])
    body = [c for c in nb.cells[:nb.cells.index(answer_cells(nb)[0])] if "solution" not in tags(c)]
    if not follows(edition.cells[1:first], body):
        raise AssertionError("the student edition's cells before the first stub differ from the chapter's")
    drop = nbformat.v4.new_code_cell(f"for _name in {forget!r}:\n    globals().pop(_name, None)")
    return nbformat.v4.new_notebook(cells=[drop, *copy.deepcopy([edition.cells[0], *edition.cells[first:]])])


def _export(attached, names: list[str], run: Run) -> dict:
    token = "kit" + secrets.token_hex(8)
    salt = secrets.token_hex(16)
    cell = nbformat.v4.new_code_cell(export_source(sealed(names, salt), salt, token, "RAGCOURSE_VARIANT"))
    attached.execute(cell, 0, LIMITS.check, run)
    found = _tagged(cell, token) or {}
    return found.get("values", {}) if isinstance(found.get("values"), dict) else {}


def _score(attached, checks_path: Path, names: list[str], values: dict, functions: dict, run: Run) -> dict:
    """The checks on exported answers, in the (trusted) kernel: {exercise: points}."""
    folder = sandbox._job_dir("ragcourse-selftest-")
    job = folder / "student.json"
    job.write_text(json.dumps({"values": values, "functions": functions, "check_seconds": LIMITS.check,
                               "unsafe": sandbox.available() is not None}), encoding="utf-8")
    token = "kit" + secrets.token_hex(8)
    setup = nbformat.v4.new_code_cell(
        f"import sys as _kit_sys\nif {str(ROOT)!r} not in _kit_sys.path:\n    _kit_sys.path.insert(0, {str(ROOT)!r})\n"
        "from kit.checker import Checker as _KitChecker\n"
        f"_kit_checker = _KitChecker({str(checks_path)!r}, dict(globals()), {names!r})\n"
        f"_kit_checker.student({str(job)!r})")
    attached.execute(setup, 0, LIMITS.check, run)
    scores = {}
    for exercise in sorted(load_checks(checks_path), key=exercise_key):
        cell = nbformat.v4.new_code_cell(f"_kit_checker.run({exercise!r}, {token!r})")
        attached.execute(cell, 0, LIMITS.check + 30, run)
        found = _tagged(cell, token) or {}
        scores[exercise] = (found.get("points"), found.get("feedback"))
    attached.execute(nbformat.v4.new_code_cell("_kit_checker.close()\ndel _kit_checker, _KitChecker"), 0, 60, run)
    job.unlink()
    folder.rmdir()
    return scores


def _functions(nb, values: dict) -> dict:
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    return {name: definitions.program(sources, name) for name, v in values.items()
            if isinstance(v, dict) and v.get("$t") == "function"}


def forms(value) -> list[str]:
    """An answer's value as the texts a page would show it in (small integers and short strings left out).

    >>> forms({"a": 0.45678, "b": [12345, "ab"]})
    ['0.45678', '0.457', '0.4568', '12345', '12,345']
    """
    if isinstance(value, str):
        return [value] if len(value) >= 5 else []
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, numbers.Integral):
        return [str(value), f"{value:,}"] if abs(value) >= 1000 else []
    if isinstance(value, numbers.Real):
        return [repr(float(value)), f"{value:.3f}", f"{value:.4f}"]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [f for x in value for f in forms(x)]
    return []


def selftest(kernel, notebook: Path, checks_path: Path | None = None) -> list[str]:
    """Grade the executed chapter in `kernel` as reference and as student edition; the problems found."""
    nb = nbformat.read(notebook, as_version=4)
    checks_path = (checks_path or checks_for(notebook)).resolve()
    maxima = {ex: h.points for ex, h in load_checks(checks_path).items()}
    names = answer_names(nb)
    run, attached = Run(), NbvalKernel(kernel)
    problems = []
    values = _export(attached, names, run)
    full = _score(attached, checks_path, names, values, _functions(nb, values), run)
    if {ex: p for ex, (p, _) in full.items()} != maxima:
        problems.append(f"the reference solutions do not score full marks: {full} {run.notes}")
    answers = {}
    for name, data in values.items():
        try:
            answers[name] = forms(codec.decode(data))
        except ValueError:
            continue
    problems += [f"the student edition shows {leak}" for leak in leaks(nb, student_edition(nb), answers)]
    run_cells(attached, student_tail(nb, names), LIMITS, run)
    values = _export(attached, names, run)
    zero = _score(attached, checks_path, names, values, _functions(student_edition(nb), values), run)
    if {ex: p for ex, (p, _) in zero.items()} != dict.fromkeys(maxima, 0):
        problems.append(f"the untouched student edition does not score 0: {zero}")
    return problems
