"""An exercise is declared once, and adding one touches three files (CONTRIBUTING.md, "Adding an exercise").

The declaration is the hidden check's `@check("N.M", points=...)` in kit/checks/chNN.py: its id, points and
check. The notebook's answer cell says what the student sees (kind, minutes, stub, rubric); what both name
is verified here, not written twice: a variant's options (`choose("N.M", [...])` in the notebook and the
check), and the answer names the check reads (bound by the stub). The guide's tables are generated from both
by the book build; nothing else lists an exercise. The last test adds exercise 90.4 to a copy of the
synthetic chapter by editing exactly three files, and follows it through the student edition, the guide,
the fairness cases and the grader.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # kit/ is not installed: it is imported from the repository's root

from kit import guide  # noqa: E402
from kit.definitions import defines  # noqa: E402
from kit.grade import Limits, grade_notebook  # noqa: E402
from kit.hidden import load, score  # noqa: E402
from kit.student import answer_cells, exercise_of, student_edition  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "kit" / "90-synthetic.ipynb"
FIXTURE_CHECKS = ROOT / "tests" / "fixtures" / "kit" / "checks" / "ch90.py"
FAST = Limits(cell=10, notebook=60, check=15, grace=15)
CHECK_FILES = sorted((ROOT / "kit" / "checks").glob("ch[0-9][0-9].py"))


def variants(source: str) -> dict[str, list]:
    """{exercise: options} for every `choose("N.M", <literal options>)` in a Python source."""
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "choose" and len(node.args) == 2 \
                and isinstance(node.args[0], ast.Constant):
            try:
                found[node.args[0].value] = ast.literal_eval(node.args[1])
            except ValueError:  # options computed, not written: nothing to compare
                continue
    return found


def notebook_sources(chapter: str) -> list[str]:
    """The code of a chapter's lesson and lab, IPython's magics left out."""
    paths = [*(ROOT / "notebooks").glob(f"{chapter}-*.ipynb"),
             *(ROOT / "notebooks" / "labs").glob(f"{chapter}-*.ipynb")]
    cells = [c for p in paths for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code"]
    sources = [c.source for c in cells] + [exercise_of(c)["stub"] for c in cells if "exercise" in c.metadata]
    return ["\n".join(line for line in s.splitlines() if line.lstrip()[:1] not in ("%", "!")) for s in sources]


def given_names(fn) -> set[str]:
    """The names a check reads as the student's answers: `given(ns, "name")`."""
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return {n.args[1].value for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "given"
            and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant)}


@pytest.mark.parametrize("path", CHECK_FILES, ids=lambda p: p.stem)
def test_a_variants_options_are_the_same_in_the_notebook_and_its_check(path):
    in_check = variants(path.read_text(encoding="utf-8"))
    in_notebook = {}
    for source in notebook_sources(path.stem[2:]):
        try:
            in_notebook |= variants(source)
        except SyntaxError:
            continue
    differ = {ex: (options, in_notebook.get(ex)) for ex, options in in_check.items() if in_notebook.get(ex) != options}
    assert differ == {}, "a check draws its constant from other options than the notebook: (check, notebook)"


@pytest.mark.parametrize("path", CHECK_FILES, ids=lambda p: p.stem)
def test_the_answer_names_a_check_reads_are_the_ones_its_stub_binds(path):
    checks = load(path.read_text(encoding="utf-8"), str(path))
    stubs = {}
    for p in [*(ROOT / "notebooks").glob(f"{path.stem[2:]}-*.ipynb"),
              *(ROOT / "notebooks" / "labs").glob(f"{path.stem[2:]}-*.ipynb")]:
        for cell in answer_cells(nbformat.read(p, as_version=4)):
            meta = exercise_of(cell)
            stubs[str(meta["id"])] = set().union(*[defines(n) for n in ast.parse(meta["stub"]).body])
    unbound = {ex: sorted(given_names(hidden.fn) - stubs.get(ex, set())) for ex, hidden in checks.items()}
    assert {ex: names for ex, names in unbound.items() if names} == {}, "the check reads an answer its stub never binds"


# ---- adding exercise 90.4 to a toy chapter ------------------------------------------------------------

STATEMENT = """:::{exercise}
:label: ex-90-4
Store the `n_top` largest of `values`, largest first, in `answer_top` (a list).
:::"""
STUB = ('n_top = choose("90.4", [2, 3])  # your n\nanswer_top = ...  # a list\n'
        'raise NotImplementedError("Exercise 90.4")\n')
ANSWER = 'n_top = choose("90.4", [2, 3])  # your n\nanswer_top = sorted(values, reverse=True)[:n_top]'
PUBLIC = 'form("90.4", globals(), "answer_top", kind=list)'
SOLUTION = ":::{solution} ex-90-4\n:class: dropdown\nSort, largest first, and keep the first `n_top`.\n:::"
CHECK = '''

@check("90.4", points=2)
def top_values(ns):
    """`answer_top` is the n largest values, largest first, for this variant's n."""
    from kit.checks.compare import given

    n = choose("90.4", [2, 3])
    assert list(given(ns, "answer_top")) == sorted(ns["values"], reverse=True)[:n], "not the n largest, largest first"
'''
CASE = '''

def case_90_4():
    """Two right answers written differently, a typical mistake (smallest first) and a constant."""
    values = [3, 1, 9, 4]
    return ([{"values": values, "answer_top": [9, 4]}, {"values": values, "answer_top": (9, 4)}],
            {"values": values, "answer_top": [4, 9]}, [{"values": values, "answer_top": [9]}])
'''


def add_exercise(notebook: Path, checks: Path, cases: Path) -> None:
    """The three edits CONTRIBUTING.md lists: the notebook's four cells, the check, the fairness case."""
    nb = nbformat.read(notebook, as_version=4)
    answer = nbformat.v4.new_code_cell(ANSWER, metadata={
        "tags": ["answer", "hide-input"], "exercise": {"id": "90.4", "kind": "value", "minutes": 5, "stub": STUB}})
    nb.cells += [nbformat.v4.new_markdown_cell(STATEMENT), answer,
                 nbformat.v4.new_code_cell(PUBLIC, metadata={"tags": ["check"]}),
                 nbformat.v4.new_markdown_cell(SOLUTION, metadata={"tags": ["solution"]})]
    nbformat.write(nb, notebook)
    checks.write_text(checks.read_text(encoding="utf-8") + CHECK, encoding="utf-8")
    cases.write_text(cases.read_text(encoding="utf-8") + CASE, encoding="utf-8")


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _cases(path: Path) -> dict:
    spec = importlib.util.spec_from_file_location("toy_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name[5:].replace("_", "."): fn for name, fn in vars(module).items() if name.startswith("case_")}


def test_adding_an_exercise_to_a_toy_chapter_touches_three_files_and_reaches_everything(tmp_path):
    tree = tmp_path / "course"
    (tree / "checks").mkdir(parents=True)
    notebook, checks, cases = tree / FIXTURE.name, tree / "checks" / FIXTURE_CHECKS.name, tree / "cases.py"
    shutil.copy(FIXTURE, notebook)
    shutil.copy(FIXTURE_CHECKS, checks)
    cases.write_text('"""Fairness cases of the toy chapter."""\n', encoding="utf-8")
    before = _digests(tree)
    registered = load(checks.read_text(encoding="utf-8"), str(checks))
    assert "90.4" not in registered and "90.4" not in _cases(cases)

    add_exercise(notebook, checks, cases)

    after = _digests(tree)
    assert {k for k in after if after[k] != before.get(k)} == {"cases.py", "checks/ch90.py", FIXTURE.name}
    registered = load(checks.read_text(encoding="utf-8"), str(checks))
    assert registered["90.4"].points == 2 and "90.4" in _cases(cases)  # the check registry and a fairness case
    nb = nbformat.read(notebook, as_version=4)
    table = "\n".join(guide.chapter_table(notebook, registered))  # the guide, as the book build writes it
    assert "| 90.4 | value | 2 | 5 | `answer_top` is the n largest values" in table
    assert "4 exercises, 8 points, about 25 min of exercises." in table
    [edition_cell] = [c for c in answer_cells(student_edition(nb)) if c.metadata["exercise"]["id"] == "90.4"]
    assert edition_cell.source == STUB  # the student edition stubs it
    right, wrong, constants = _cases(cases)["90.4"]()
    assert [score(registered["90.4"], ns)[0] for ns in right] == [2.0, 2.0]
    assert score(registered["90.4"], wrong)[0] == 0 and all(score(registered["90.4"], ns)[0] < 2 for ns in constants)
    assert variants(ANSWER) == variants(CHECK) == {"90.4": [2, 3]}  # the variant test above would see a mismatch
    scores, _ = grade_notebook(notebook, checks, FAST, notebook)  # the grader runs it: the reference gets full marks
    assert scores["90.4"][0] == 2 and scores["90.1"][0] == 2
