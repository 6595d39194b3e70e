"""The kit's self-test, run by nbval in the kernel that has just executed a chapter (notebooks/conftest.py).

After a chapter's last cell, in that same kernel:

1. the chapter's hidden checks are loaded and every exercise must score full marks (the reference);
2. the reference answers' values are captured, and none may be searchable in the student edition;
3. every name the answer cells define is deleted, the student edition's cells from its first stub on
   run (stubs, public checks, the cells between), and every exercise must score 0.

The cells before the first answer cell are the same in both editions (`selftest` checks it), so this
is the student edition's run without executing the chapter a second time. `make grade` is unchanged:
it starts a kernel of its own per submission (`kit.grade.Kernel`).
"""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path
from queue import Empty

import nbformat

from kit.grade import Limits, Run, _run_cells, _run_checks, load_checks
from kit.student import answer_cells, leaks, student_edition, tags

ROOT = Path(__file__).resolve().parents[1]
CHECKS = ROOT / "kit" / "checks"
LIMITS = Limits(cell=900, notebook=2400, check=300)
OUTPUT_WAIT = 60  # seconds to wait for a finished cell's last output message


def checks_for(notebook: Path) -> Path | None:
    """The hidden checks of a chapter notebook (`NN-*.ipynb` -> kit/checks/chNN.py), if it has any."""
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


def names_defined(cells) -> set[str]:
    """Names the cells assign or define at top level (what the answer cells leave in the namespace)."""
    names = set()
    for cell in cells:
        try:
            body = ast.parse(cell.source).body
        except SyntaxError:  # IPython syntax (a magic): its names are not searched
            continue
        for node in body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                names.add(node.name)
    return names


def student_tail(nb, forget: list[str]):
    """The cells the self-test runs as the student: forget the answers, then the edition from its first stub."""
    edition = student_edition(nb)
    first = edition.cells.index(answer_cells(edition)[0])
    body = [c.source for c in nb.cells[:nb.cells.index(answer_cells(nb)[0])] if "solution" not in tags(c)]
    if [c.source for c in edition.cells[1:first]] != body:
        raise AssertionError("the student edition's cells before the first stub differ from the chapter's")
    drop = nbformat.v4.new_code_cell(f"for _name in {forget!r}:\n    globals().pop(_name, None)")
    return nbformat.v4.new_notebook(cells=[drop, *copy.deepcopy([edition.cells[0], *edition.cells[first:]])])


def selftest(kernel, notebook: Path, checks_path: Path | None = None) -> list[str]:
    """Grade the executed chapter in `kernel` as reference and as student edition; the problems found."""
    nb = nbformat.read(notebook, as_version=4)
    checks_path = checks_path or checks_for(notebook)
    checks = load_checks(checks_path)
    maxima = {ex: h.points for ex, h in checks.items()}
    forget = sorted(names_defined(answer_cells(nb)))
    run, attached = Run(), NbvalKernel(kernel)
    problems = []
    full = _run_checks(attached, checks, checks_path, LIMITS, run)
    if {ex: p for ex, (p, _) in full.items()} != maxima:
        problems.append(f"the reference solutions do not score full marks: {full} {run.notes}")
    capture = nbformat.v4.new_code_cell(CAPTURE.format(names=forget))
    attached.execute(capture, 0, LIMITS.check, run)
    printed = "".join(o.get("text", "") for o in capture.outputs)
    answers = json.loads(printed.split("ANSWERS ", 1)[1]) if "ANSWERS " in printed else {}
    problems += [f"the student edition shows {leak}" for leak in leaks(nb, student_edition(nb), answers)]
    _run_cells(attached, student_tail(nb, forget), LIMITS, run)
    zero = _run_checks(attached, checks, checks_path, LIMITS, run)
    if {ex: p for ex, (p, _) in zero.items()} != dict.fromkeys(maxima, 0):
        problems.append(f"the untouched student edition does not score 0: {zero}")
    return problems


# Prints the reference answers' values as the text a page would show them in (small integers and short
# strings are left out: they occur everywhere and cannot be searched for).
CAPTURE = """import json as _json
import numbers as _numbers


def _forms(v):
    if isinstance(v, str):
        return [v] if len(v) >= 5 else []
    if isinstance(v, bool) or v is None:
        return []
    if isinstance(v, _numbers.Integral):
        return [str(v), f"{{v:,}}"] if abs(v) >= 1000 else []
    if isinstance(v, _numbers.Real):
        return [repr(float(v)), f"{{v:.3f}}", f"{{v:.4f}}"]
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, (list, tuple)):
        return [f for x in v for f in _forms(x)]
    return []


print("ANSWERS", _json.dumps({{n: _forms(globals()[n]) for n in {names!r} if n in globals()}}))
"""
