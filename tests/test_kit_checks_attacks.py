"""Attacks on the checks' side (issue 44): marks without solving. Cheap: no notebook, no sandbox.

A by-hand exercise refuses the package's function however it is disguised (imported, aliased, copied
with names and constants changed, called through a module); an exercise whose text forbids a function
refuses a function that uses it; a zero-length or broadcastable array never matches; a measured value
the student must not set is counted by the check. The reference solutions themselves are never refused.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kit import definitions  # noqa: E402
from kit.checks.compare import close  # noqa: E402
from kit.hidden import load, score  # noqa: E402
from kit.student import answer_cells, exercise_of  # noqa: E402

CHAPTERS = sorted(ROOT.glob("notebooks/[0-9][0-9]-*.ipynb"))


def checks_of(chapter: str) -> dict:
    path = ROOT / "kit" / "checks" / f"ch{chapter}.py"
    return load(path.read_text(encoding="utf-8"), str(path))


def renamed_copy(fn, name: str) -> str:
    """The package function's source under another name, every local renamed and every constant changed."""
    tree = ast.parse(inspect.getsource(fn))
    node = tree.body[0]
    node.name, node.decorator_list = name, []
    taken = {a.arg for a in node.args.args}
    renames = {n: f"my_{n}" for n in taken | {x.id for x in ast.walk(node) if isinstance(x, ast.Name)
                                              and isinstance(x.ctx, ast.Store)}}
    for x in ast.walk(node):
        if isinstance(x, ast.Name) and x.id in renames:
            x.id = renames[x.id]
        elif isinstance(x, ast.arg) and x.arg in renames:
            x.arg = renames[x.arg]
        elif isinstance(x, ast.Constant) and isinstance(x.value, int | float) and not isinstance(x.value, bool):
            x.value = x.value + 1
    return ast.unparse(tree)


@pytest.mark.parametrize(("exercise", "module", "function", "name"), [
    ("5.3", "ragcourse.rerank", "maxsim", "maxsim_by_hand"),
    ("5.5", "ragcourse.evaluation", "holm", "holm_by_hand"),
    ("3.4", "ragcourse.evaluation", "sign_test", "sign_p"),
    ("6.5", "ragcourse.evaluation", "auc", "auc_by_pairs"),
])
def test_a_renamed_copy_of_the_packages_function_is_refused(exercise, module, function, name):
    import importlib

    hidden = checks_of(f"{int(exercise.split('.')[0]):02d}")[exercise]
    assert hidden.by_hand, f"{exercise} forbids {function} in its text but is not graded as by hand"
    source = renamed_copy(getattr(importlib.import_module(module), function), name)
    assert "my_" in source
    why = definitions.not_own_work([f"import numpy as np\nimport math\n{source}"], name, hidden.forbids)
    assert why and "copied" in why, source


@pytest.mark.parametrize(("exercise", "module", "function", "name"), [
    ("5.3", "ragcourse.rerank", "maxsim", "maxsim_by_hand"),
    ("5.5", "ragcourse.evaluation", "holm", "holm_by_hand"),
    ("3.4", "ragcourse.evaluation", "sign_test", "sign_p"),
    ("6.5", "ragcourse.evaluation", "auc", "auc_by_pairs"),
])
def test_a_renamed_copy_scores_nothing_through_the_checker(exercise, module, function, name, tmp_path):
    """Issue 44: the copy refused above reaches the check as the checker hands it over, and scores 0."""
    import importlib

    from kit import codec
    from kit.checker import Checker

    chapter = f"{int(exercise.split('.')[0]):02d}"
    checker = Checker(str(ROOT / "kit" / "checks" / f"ch{chapter}.py"), {"family_p": [0.01, 0.2, 0.03]}, [name],
                      exchange=str(tmp_path))
    source = renamed_copy(getattr(importlib.import_module(module), function), name)
    checker.values = {name: codec.Marker("function")}
    checker.functions = {name: definitions.program([f"import numpy as np\nimport math\n{source}"], name)}
    hidden = checker.checks[exercise]
    try:
        points, feedback = score(hidden, checker.namespace(hidden.by_hand, hidden.forbids))
    finally:
        checker.close()
    assert points == 0 and "copied" in feedback, feedback


@pytest.mark.parametrize("disguise", [
    "from ragcourse.genre_chunking import parse_breaks as pb\ndef usable_breaks(a, n):\n    return pb(a, n).breaks",
    "import ragcourse.genre_chunking as g\ndef usable_breaks(a, n):\n    return tuple(g.parse_breaks(a, n).breaks)",
    "import importlib\ndef usable_breaks(a, n):\n"
    "    return importlib.import_module('ragcourse.genre_chunking').parse_breaks(a, n).breaks",
])
def test_a_function_the_text_forbids_is_refused_however_it_is_called(disguise):
    hidden = checks_of("09")["9.2"]
    assert "parse_breaks" in hidden.forbids
    assert "parse_breaks" in (definitions.not_own_work([disguise], "usable_breaks", hidden.forbids) or "")


def test_the_reference_solutions_are_never_refused():
    for path in CHAPTERS:
        nb, checks = nbformat.read(path, as_version=4), checks_of(path.name[:2])
        sources = [c.source for c in nb.cells if c.cell_type == "code"]
        for cell in answer_cells(nb):
            hidden = checks[str(exercise_of(cell)["id"])]
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.FunctionDef):
                    program = definitions.program(sources, node.name)
                    assert definitions.not_own_work(program, node.name, hidden.forbids) is None, (path.name, node.name)


def test_an_empty_or_broadcastable_array_never_matches():
    assert not close(np.empty((0, 2)), [[0.4, 0.5]], 1e-6)
    assert not close([0.5], [0.5, 0.5], 1e-6)  # broadcastable
    assert not close(np.full((3, 2), 0.5), [[0.5, 0.5]], 1e-6)
    assert not close([np.nan, 0.5], [0.5, 0.5], 1e-6)
    assert close(np.array([[0.5, 0.5]]), [[0.5, 0.5]], 1e-6)


def test_zero_length_answers_score_nothing():
    """5.2 and 5.5: np.allclose on a (0, 2) array once gave 2/2 and 3/3 with nothing computed."""
    import pandas as pd

    checks = checks_of("05")
    ns = {"holm_by_hand": lambda p: np.empty(0), "answer_holm": np.empty((0,)),
          "variants_original": pd.DataFrame({"p": [0.01, 0.2]})}
    assert score(checks["5.5"], ns)[0] == 0
    glob = checks["5.2"].fn.__globals__
    saved = glob["rerank_rankings"], glob["evaluate"]
    glob["rerank_rankings"] = lambda *args: None
    glob["evaluate"] = lambda *args: pd.DataFrame({"hit@1": [0.4], "rr": [0.5]})
    try:
        empty = {d: np.empty((0, 2)) for d in (10, 25, 50)}
        assert score(checks["5.2"], {"qs": [], "reranker": None, "hybrid_chunks": None, "answer_depth": empty})[0] == 0
    finally:
        glob["rerank_rankings"], glob["evaluate"] = saved


def test_measured_equal_to_predicted_is_not_a_measurement(tmp_path):
    """8.5: writing 'measured' equal to 'predicted' once got 2/2; the check now counts the new chunk texts."""
    original = "# EP 10: Notes\n\n" + "\n\n".join(f"## Part {i}\n\n" + "Some sentence here. " * 60 for i in range(5))
    target = tmp_path / "eps-ep-010" / "05.md"
    target.parent.mkdir()
    target.write_text(original.replace("# EP 10", "# EP 10 (revised)", 1), encoding="utf-8")
    why = "a title edit changes every chunk header"
    for n in (0, 1, 2):
        ns = {"target": target, "original": original, "answer_8_5": {"predicted": n, "measured": n, "why": why}}
        assert score(checks_of("08")["8.5"], ns)[0] == 0, n
