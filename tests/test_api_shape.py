"""The package's names: each lives in one module, under one name, and no module imports itself round a cycle.

Read with `ast`, never by importing. An alias is a module-level `NEW = OLD` (a name, or a module's attribute)
or an import of a public name under another name; a re-export is an import a module never uses itself. Both
keep an old spelling alive beside the real one; chapters, tests and the kit import from where a name lives.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"ragcourse": ROOT / "src" / "ragcourse", "kit": ROOT / "kit"}
#: Aliases and re-exports that are decisions, not old spellings, each with its reason.
ALLOWED = {
    ("ragcourse/gate.py", "RECOMMENDED_GATE"): "the chapter's recommendation: it names a choice between gates",
    ("ragcourse/cli/__init__.py", "main"): "the console script's entry point (pyproject: ragcourse.cli:main)",
}
#: Import cycles another branch removes (kit/grade.py <-> kit/summary.py: the walls branch, issue 43/44); empty
#: this set once it is merged.
CYCLES_REMOVED_ELSEWHERE: set[frozenset[str]] = set()


def files():
    for package, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            yield package, folder, path


def module_name(package: str, folder: Path, path: Path) -> str:
    parts = [package, *path.relative_to(folder).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_of(tree: ast.Module) -> set[str]:
    """Names of the modules `tree` imports a module of (dotted module paths used as `x.y`)."""
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}


def is_module(folder: Path, dotted: str) -> bool:
    """Whether `dotted` names a module: relative to `folder`, or absolute in one of SOURCES."""
    first, _, rest = dotted.partition(".")
    base, dotted = (SOURCES[first], rest) if first in SOURCES else (folder, dotted)
    path = base / dotted.replace(".", "/")
    return path.with_suffix(".py").exists() or path.is_dir()


def aliases(path: Path, folder: Path) -> list[str]:
    """Module-level aliases, renamed imports of public names, and imports the module never uses."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used, modules = modules_of(tree), set()
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            modules |= {(a.asname or a.name).split(".")[0] for a in node.names}
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Name) or (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
                                               and value.value.id in modules):
                found.append(node.targets[0].id)
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for a in node.names:
                bound = a.asname or a.name
                renamed = a.asname not in (None, a.name) and not bound.startswith("_")
                if (renamed and not is_module(folder, ".".join(filter(None, [node.module, a.name])))) \
                        or bound not in used:
                    found.append(bound)
    return found


def test_no_alias_and_no_re_export_in_the_package_or_the_kit():
    offenders = []
    for package, folder, path in files():
        where = f"{package}/{path.relative_to(folder).as_posix()}"
        offenders += [(where, name) for name in aliases(path, folder)
                      if (where, name) not in ALLOWED]
    assert offenders == [], "import these from where they live, under their own names"


def test_the_alias_finder_sees_each_kind(tmp_path):
    (tmp_path / "words.py").write_text("def query_words(t):\n    return t\n")
    path = tmp_path / "mod.py"
    path.write_text("import numpy as np\nfrom .words import query_words as content_words\n"
                    "from .paths import DATA_DIR, CACHE_ROOT\nfrom . import words as w\n"
                    "normalize = content_words\nEPS = np.pi\nDIR = DATA_DIR / 'x'\nW = w.query_words\n")
    assert aliases(path, tmp_path) == ["content_words", "CACHE_ROOT", "normalize", "EPS"]


def imports(package: str, folder: Path, path: Path) -> set[str]:
    """The modules of this tree that `path` imports, anywhere in it (a function's import counts too)."""
    here = module_name(package, folder, path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            target = ".".join([*base, *(node.module or "").split(".")]).strip(".")
            submodules = {f"{target}.{a.name}" for a in node.names}
            found |= submodules
            if any(not is_module(SOURCES[package], m.partition(".")[2]) for m in submodules):
                found.add(target)  # a name from the module itself, not only its submodules
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def graph() -> dict[str, set[str]]:
    known = {module_name(p, f, path): (p, f, path) for p, f, path in files()}
    return {name: {m for m in imports(*where) if m in known and m != name} for name, where in known.items()}


def cycles(edges: dict[str, set[str]]) -> set[frozenset[str]]:
    """The modules of every strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while not component or component.__contains__(v) is False:
                w = stack.pop()
                on.discard(w)
                component.add(w)
            if len(component) > 1:
                found.add(frozenset(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_in_the_package_or_the_kit():
    assert cycles(graph()) - CYCLES_REMOVED_ELSEWHERE == set()


#: The modules that measure (the evaluation modules); the book, the command line and the set-up may use them.
MEASURING = {"ragcourse.evaluation", "ragcourse.tuning"}
USERS_OF_MEASUREMENT = ("ragcourse.book", "ragcourse.cli", "ragcourse.build")


def test_what_is_measured_never_imports_what_measures():
    """A chapter module (chunking, retrieval, the gate, permissions...) is measured; it never imports a measurer."""
    edges = graph()
    wrong = {name: sorted(edges[name] & MEASURING) for name in edges
             if name.startswith("ragcourse") and name not in MEASURING
             and not name.startswith(USERS_OF_MEASUREMENT) and edges[name] & MEASURING}
    assert wrong == {}, "move the measurement into ragcourse.evaluation (or tuning)"


def test_the_cycle_finder_sees_a_cycle_of_three_and_nothing_else():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycles(edges) == {frozenset({"a", "b", "c"})}


#: A p-value formatted by hand in a notebook: a floor test (`p < 0.0001 ... else`) or "p = {x:.4f}".
HAND_FORMATTED_P = re.compile(r"<\s*(?:0\.0001|1e-4)\s+else|\bp = \{[^{}]+:\.4f\}|\"p\": f\"\{[^{}]+:\.4f\}\"")


def test_notebooks_print_p_values_with_the_packages_one_formatter():
    """`evaluation.p_text` is the one way a p-value is printed: no notebook writes its own (issue 38 found 8)."""
    import nbformat

    found = [(path.relative_to(ROOT).as_posix(), i) for path in sorted((ROOT / "notebooks").glob("**/*.ipynb"))
             for i, cell in enumerate(nbformat.read(path, as_version=4).cells)
             if cell.cell_type == "code" and HAND_FORMATTED_P.search(cell.source)]
    assert found == [], "print p-values with ragcourse.evaluation.p_text"


#: Chapter 8's index, one idea a module: each kind of work below is done in its module only (issue 38).
INDEX_IDEAS = {
    "index_lock.py": {"fcntl.flock"},  # locking: one writer at a time
    "index_format.py": {"os.replace", "os.fsync(fh"},  # storage format: the atomic versioned commit
    "index_sync.py": {"walk("},  # folder sync: reading a folder's files
    "index_report.py": {"def summary(", "import pandas"},  # reporting: what a run did, in words and a table
}


def test_the_index_is_small_modules_of_one_idea_each():
    """`index.py` (records, stamps, the in-memory index) stays small, and no index module does another's work."""
    folder = SOURCES["ragcourse"]
    assert len((folder / "index.py").read_text(encoding="utf-8").splitlines()) <= 250
    texts = {path.name: path.read_text(encoding="utf-8") for path in folder.glob("index*.py")}
    assert set(INDEX_IDEAS) < set(texts)
    where = {mark: sorted(name for name, text in texts.items() if mark in text)
             for marks in INDEX_IDEAS.values() for mark in marks}
    assert where == {mark: [name] for name, marks in INDEX_IDEAS.items() for mark in marks}
