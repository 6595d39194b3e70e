"""The student edition: each chapter with its answers stubbed, its solutions removed, nothing that leaks.

`python -m kit.student [--out dist/student] [notebooks ...]` (the Makefile's `make student`). Per chapter:
- every cell tagged `solution` is dropped (the solution prose and the cells that compute what it quotes);
- every cell tagged `answer` becomes its `exercise.stub` (which raises NotImplementedError), and its
  metadata keeps id, kind, points and minutes only (the rubric is the instructor's);
- every code output after the first answer cell is cleared: those cells may use an answer, so their
  stored outputs could show the reference answer or something computed from it;
- glue outputs, and the outputs of cells the book hides (`remove-cell`, `remove-output`), are dropped:
  Jupyter does not show glue, and a hidden bookkeeping cell may compute what a solution quotes;
- no verification is handed out (issue 37): every `glue(...)` call, `assert` and glue import is taken out
  of the code; a cell the page removes (`remove-cell`) is dropped when what is left defines nothing a later
  cell reads, else kept visible; no cell keeps a hiding tag;
- a `{literalinclude}` of package source becomes that source as a Python code block, so JupyterLab shows
  code where the page does, not a raw directive;
- a first cell checks the student's environment against the one the grader uses, and, for a variant other
  than 0, fixes RAGCOURSE_VARIANT so the student's run draws the same constants as the grader.
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import json
import re
import symtable
import sys
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager
from sphinx.pycode import ModuleAnalyzer

from ragcourse.book.exercises import VARIANT_ENV, environment, variant

GLUE_REF = re.compile(r"\{glue(?::[a-z]+)?\}`([^`:]+)")
KEPT_EXERCISE_KEYS = ("id", "kind", "minutes")
HIDE_TAGS = {"hide-input", "hide-output", "hide-cell", "remove-input", "remove-output", "remove-cell"}
ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"  # a `{literalinclude}` path that starts with / is relative to it (Sphinx's source folder)


def tags(cell) -> set[str]:
    """The cell's tags as a set."""
    return set(cell.get("metadata", {}).get("tags", []))


def exercise_of(cell) -> dict:
    """The `exercise` metadata of an answer cell; ValueError when it is missing or has no stub."""
    meta = cell.get("metadata", {}).get("exercise")
    if not isinstance(meta, dict) or "id" not in meta:
        raise ValueError(f"answer cell without exercise metadata: {cell.source[:60]!r}")
    stub = meta.get("stub", "")
    if "NotImplementedError" not in stub:
        raise ValueError(f"exercise {meta['id']}: stub {stub!r} must raise NotImplementedError")
    return meta


def answer_cells(nb) -> list:
    """The notebook's answer cells, in order."""
    return [c for c in nb.cells if c.cell_type == "code" and "answer" in tags(c)]


def _glue_name(output) -> str | None:
    return output.get("metadata", {}).get("scrapbook", {}).get("name")


def _stub(cell):
    meta = exercise_of(cell)
    cell.source = meta["stub"]
    cell.metadata["exercise"] = {k: meta[k] for k in KEPT_EXERCISE_KEYS if k in meta}
    cell.metadata["tags"] = [t for t in cell.metadata.get("tags", []) if t not in HIDE_TAGS]
    return cell


def preamble(variant_number: int) -> nbformat.NotebookNode:
    """The student edition's first cell: the environment check, and the term's variant when not 0."""
    lines = []
    if variant_number:
        lines += ["import os", "",
                  f'os.environ.setdefault("{VARIANT_ENV}", "{variant_number}")  # this term\'s exercises: keep',
                  ""]
    pins = [f"    {name!r}: {version!r}," for name, version in environment().items()]
    lines += ["from ragcourse.book.exercises import same_environment", "",
              "same_environment({  # the grader runs these versions: if this cell fails, run `make install`",
              *pins, "})"]
    return nbformat.v4.new_code_cell("\n".join(lines), metadata={"tags": ["student-preamble"]})


def student_edition(nb, variant_number: int = 0):
    """A copy of `nb` fit for students (see the module docstring)."""
    nb = copy.deepcopy(nb)
    kept, seen_answer = [], False
    for cell in nb.cells:
        if "solution" in tags(cell):
            continue
        if cell.cell_type == "code":
            if "answer" in tags(cell):
                cell, seen_answer = _stub(cell), True
            if seen_answer:
                cell.outputs, cell.execution_count = [], None
        kept.append(cell)
    for cell in kept:
        if cell.cell_type == "code":
            hidden = tags(cell) & {"remove-cell", "remove-output"}
            cell.outputs = [] if hidden else [o for o in cell.outputs if _glue_name(o) is None]
    if not seen_answer:
        raise ValueError("no cell tagged `answer`: nothing to hand out")
    nb.cells = [preamble(variant_number), *without_verification(kept)]
    nb.metadata["ragcourse"] = {"edition": "student", "variant": variant_number}
    return nb


def _python(source: str) -> ast.Module | None:
    """The cell's code as a Python tree (IPython magics turned into calls, same lines); None if it is not Python."""
    magic = re.search(r"^\s*[%!]", source, re.MULTILINE)
    try:
        return ast.parse(TransformerManager().transform_cell(source) if magic else source)
    except SyntaxError:
        return None


GLUE = frozenset({"glue"})


def _verifies(node: ast.AST, glue: frozenset[str] = GLUE) -> bool:
    """A statement that only checks or glues: `assert`, a call of `glue` (or of a function that only
    glues), `from myst_nb import glue`, or a block (a loop, an `if`, such a function) made of them."""
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.ImportFrom):
        return node.module == "myst_nb" or all((a.asname or a.name) in glue for a in node.names)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return getattr(func, "id", getattr(func, "attr", None)) in glue
    if isinstance(node, ast.FunctionDef):
        return node.name in glue
    if isinstance(node, ast.For | ast.If | ast.With):
        return all(_verifies(n, glue) for n in node.body + getattr(node, "orelse", []))
    return False


def glue_functions(sources: list[str]) -> frozenset[str]:
    """`glue`, and the functions these cells define whose body (docstring aside) only glues or asserts."""
    trees = [t for t in map(_python, sources) if t is not None]
    defs = [n for t in trees for n in ast.walk(t) if isinstance(n, ast.FunctionDef)]
    body = {d.name: [n for n in d.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            for d in defs}
    found = set(GLUE)
    while True:
        more = {name for name, stmts in body.items() if stmts and all(_verifies(n, frozenset(found)) for n in stmts)}
        if more <= found:
            return frozenset(found)
        found |= more


def _verifying_lines(body: list[ast.stmt], glue: frozenset[str]) -> set[int]:
    """The line numbers (1-based) of every verifying statement in `body`, at any depth."""
    lines: set[int] = set()
    for node in body:
        if _verifies(node, glue):
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            lines |= set(range(first, node.end_lineno + 1))
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                lines |= _verifying_lines(getattr(node, field, None) or [], glue)
    return lines


def strip_verification(source: str, glue: frozenset[str] = GLUE) -> str:
    """The cell's code without its glue calls and asserts (unchanged when it is not Python).

    >>> code = 'x = 2  # two\\nglue("x", x)\\nfor k in "ab":\\n    glue(k, 1)\\nassert x == 2\\nprint(x)'
    >>> print(strip_verification(code))
    x = 2  # two
    print(x)
    """
    tree = _python(source)
    if tree is None:
        return source
    drop = _verifying_lines(tree.body, glue)
    if not drop:
        return source
    lines = [line for n, line in enumerate(source.splitlines(), 1) if n not in drop]
    kept = "\n".join(lines).strip("\n")
    if _python(kept) is None:  # a block left empty (an `if` whose body only glued, with an `else`): unparse
        kept = ast.unparse(_Emptied(glue).visit(tree))
    return kept


class _Emptied(ast.NodeTransformer):
    """Drops verifying statements from a tree, `pass` where a block would be left empty."""

    def __init__(self, glue: frozenset[str]) -> None:
        self.glue = glue

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                kept = [n for n in block if not _verifies(n, self.glue)]
                setattr(node, field, kept or ([ast.Pass()] if field == "body" else []))
        return node


def _scopes(table: symtable.SymbolTable):
    yield table
    for child in table.get_children():
        yield from _scopes(child)


def _stored_and_read(source: str) -> tuple[set[str], set[str]]:
    """(global names the cell may bind or change, global names it reads), from Python's own symbol tables;
    both are {"*"} (anything) when the cell is not Python.

    >>> stored, read = _stored_and_read("def f(p):\\n    return p + k\\nrows['a'] = [q for q in f(1)]")
    >>> sorted(stored), sorted(read)
    (['f', 'rows'], ['f', 'k', 'rows'])
    """
    tree = _python(source)
    if tree is None:
        return {"*"}, {"*"}
    module = symtable.symtable(ast.unparse(tree), "<cell>", "exec")
    stored = {s.get_name() for s in module.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    read = {s.get_name() for s in module.get_symbols() if s.is_referenced()}
    for scope in list(_scopes(module))[1:]:
        found = [s for s in scope.get_symbols() if s.is_global()]
        stored |= {s.get_name() for s in found if s.is_declared_global() and s.is_assigned()}
        read |= {s.get_name() for s in found if s.is_referenced()}
    # `d[k] = v`, `obj.x = v`, `items.append(v)`: an object changed through a name that is only read
    for node in ast.walk(tree):
        targets = [node.func] if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else (
            getattr(node, "targets", None) or [getattr(node, "target", None)])
        for target in targets:
            while isinstance(target, ast.Subscript | ast.Attribute):
                target = target.value
            if isinstance(target, ast.Name) and isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Call):
                stored.add(target.id)
    return stored, read


def without_verification(cells: list) -> list:
    """The cells with glue calls and asserts taken out, and no hidden cell (see the module docstring).

    Walking back from the end, a `remove-cell` cell is kept (visible) only if a later kept cell reads a
    name it may bind or change, so the edition still runs.
    """
    kept, read = [], set()
    glue = glue_functions([c.source for c in cells if c.cell_type == "code"])
    for cell in reversed(cells):
        cell = copy.copy(cell)  # its outputs are shared, its source and metadata replaced
        cell.metadata = copy.deepcopy(cell.get("metadata", {}))
        if cell.cell_type == "code":
            cell.source = strip_verification(cell.source, glue)
            stored, reads = _stored_and_read(cell.source)
            if "remove-cell" in tags(cell) and not (stored & read or "*" in read | stored) or not cell.source.strip():
                continue
            cell.metadata["tags"] = [t for t in cell.metadata.get("tags", []) if t not in HIDE_TAGS]
            read |= reads
        elif cell.cell_type == "markdown":
            cell.source = with_included_source(cell.source)
        kept.append(cell)
    return kept[::-1]


def follows(edition_cells: list, reference_cells: list) -> bool:
    """Whether the edition's cells are the reference's, in order, glue and asserts taken out, leaving out
    only cells the page removes (`remove-cell`) or that held nothing but verification."""
    glue = glue_functions([c.source for c in reference_cells if c.cell_type == "code"])
    pending = iter(reference_cells)
    for cell in edition_cells:
        for ref in pending:
            made = (strip_verification(ref.source, glue) if ref.cell_type == "code"
                    else with_included_source(ref.source))
            if ref.cell_type == cell.cell_type and made == cell.source:
                break
            if "remove-cell" not in tags(ref) and made.strip():
                return False
        else:
            return False
    return True


LITERALINCLUDE_BLOCK = re.compile(r"^(?P<fence>`{3,}|:{3,})\{literalinclude\}\s+(?P<path>\S+)\s*\n"
                                  r"(?P<opts>(?:[ \t]*:[a-z-]+:.*\n)*)(?P=fence)[ \t]*$", re.MULTILINE)


@functools.lru_cache(maxsize=256)
def included_source(path: str, options: str, folder: Path = ROOT / "notebooks") -> str:
    """What a `{literalinclude}` shows: the file, or the `:pyobject:` (found as Sphinx finds it).

    >>> print(included_source("/../src/ragcourse/precision.py", ":pyobject: rounded_scores\\n").splitlines()[0])
    def rounded_scores(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """
    file = (BOOK / path.lstrip("/")) if path.startswith("/") else folder / path
    text = file.resolve().read_text(encoding="utf-8")
    wanted = re.search(r":pyobject:\s*(\S+)", options)
    if not wanted:
        return text.rstrip("\n")
    tags_found = ModuleAnalyzer.for_file(str(file.resolve()), "").find_tags()
    if wanted.group(1) not in tags_found:
        raise ValueError(f"{path}: no object {wanted.group(1)!r} to include")
    _, start, end = tags_found[wanted.group(1)]
    return "\n".join(text.splitlines()[start - 1:end - 1]).rstrip("\n")


def with_included_source(markdown: str) -> str:
    """A markdown cell with each `{literalinclude}` directive replaced by the source it shows, as Python code."""
    def code(match: re.Match) -> str:
        return "```python\n" + included_source(match["path"], match["opts"]) + "\n```"

    return LITERALINCLUDE_BLOCK.sub(code, markdown)


def _texts(cells, outputs: bool = True) -> list[str]:
    """Every source, and every output's text (streams, data, errors), of these cells."""
    found = []
    for cell in cells:
        found.append(cell["source"])
        for out in cell.get("outputs", []) if outputs else []:
            found.append(out.get("text", ""))
            found += [v if isinstance(v, str) else "".join(v) for v in out.get("data", {}).values()]
            found.append(str(out.get("evalue", "")))
    return found


def _without_glue(cells) -> list:
    return [{**c, "outputs": [o for o in c.get("outputs", []) if _glue_name(o) is None]} for c in cells]


def leaks(reference, edition, answers: dict[str, list[str]] | None = None) -> list[str]:
    """What of the reference's answers and solutions its student edition still shows (empty when nothing).

    Searched: every line of an answer or solution cell (20 characters or more) that no public cell of
    the reference holds; the value of every glue that only solutions quote; and `answers`, the reference
    answers' values as text (name -> forms, such as "0.4567" and "0.457"), 4 characters or more. A value
    the book shows before the exercises (an output of a visible cell there) is the chapter's material,
    not an answer.
    """
    secret = [c for c in reference.cells if tags(c) & {"answer", "solution"}]
    public_cells = [c for c in reference.cells if not tags(c) & {"answer", "solution"}]
    first = reference.cells.index(answer_cells(reference)[0])
    shown_by_book = [c for c in reference.cells[:first] if c in public_cells and c.cell_type == "code"
                     and not tags(c) & {"remove-cell", "remove-output"}]
    code = "\n".join(_texts(public_cells, outputs=False) + [exercise_of(c)["stub"] for c in answer_cells(reference)])
    public = code + "\n" + "\n".join(_texts(_without_glue(shown_by_book)))
    shown = "\n".join(_texts(edition.cells) + _included(edition.cells)) + "\n" + json.dumps(edition.metadata)
    lines = {line.strip() for c in secret for line in c.source.splitlines()}
    # A solution line the chapter prints (a package function's source shown above a "by hand" exercise)
    # is a leak all the same: only the chapter's own code may hold it.
    found = [f"solution text {line!r}" for line in sorted(lines)
             if len(line) >= 20 and line not in code and line in shown]
    quoted_public = {m for c in public_cells if c.cell_type == "markdown" for m in GLUE_REF.findall(c.source)}
    quoted_secret = {m for c in secret if c.cell_type == "markdown" for m in GLUE_REF.findall(c.source)}
    values = {f"the glue {name!r}, which only a solution quotes,": [value]
              for name, value in _glued(reference.cells).items() if name in quoted_secret - quoted_public}
    values |= {f"the reference answer `{name}`": forms for name, forms in (answers or {}).items()}
    for what, forms in values.items():
        found += [f"{what} (= {text!r})" for text in forms if len(text) >= 4 and text not in public and text in shown]
    still_glued = set(_glued(edition.cells)) & (quoted_secret - quoted_public)
    return found + [f"the glue {name!r}, which only a solution quotes" for name in sorted(still_glued)]


LITERALINCLUDE = re.compile(r"literalinclude\}?\s+(\S+)(?P<opts>(?:\n\s*:[a-z-]+:.*)*)")


def _included(cells, folder: Path = Path("notebooks")) -> list[str]:
    """The text that `literalinclude` directives in markdown cells show (a whole file or `:pyobject:`)."""
    import ast

    found = []
    for cell in cells:
        if cell.cell_type != "markdown":
            continue
        for match in LITERALINCLUDE.finditer(cell.source):
            path = (folder / match.group(1)).resolve()
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
            wanted = re.search(r":pyobject:\s*(\S+)", match.group("opts") or "")
            if wanted and path.suffix == ".py":
                nodes = {n.name: n for n in ast.walk(ast.parse(text)) if hasattr(n, "name") and hasattr(n, "body")}
                node = nodes.get(wanted.group(1).split(".")[-1])
                text = ast.get_source_segment(text, node) or "" if node else ""
            found.append(text)
    return found


def _glued(cells) -> dict[str, str]:
    """Glue name -> the stored value's text, over these cells' outputs."""
    return {_glue_name(out): out.get("data", {}).get("application/papermill.record/text/plain", "").strip("'\"")
            for cell in cells for out in cell.get("outputs", []) if _glue_name(out)}


def chapter_notebooks(folder: Path = Path("notebooks")) -> list[Path]:
    """The chapter notebooks (NN-name.ipynb) that have answer cells, in order."""
    paths = sorted(folder.glob("[0-9][0-9]-*.ipynb"))
    return [p for p in paths if answer_cells(nbformat.read(p, as_version=4))]


def build(notebooks: list[Path], out: Path) -> list[Path]:
    """Write the student edition of each notebook into `out`; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        target = out / path.name
        reference = nbformat.read(path, as_version=4)
        edition = student_edition(reference, variant())
        found = leaks(reference, edition)
        if found:
            raise ValueError(f"{path.name}: the student edition would show " + "; ".join(found))
        nbformat.write(edition, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/NN-*.ipynb with exercises")
    parser.add_argument("--out", type=Path, default=Path("dist/student"))
    args = parser.parse_args(argv)
    notebooks = args.notebooks or chapter_notebooks()
    if not notebooks:
        print("no chapter notebook has answer cells yet", file=sys.stderr)
        return 1
    try:
        written = build(notebooks, args.out)
    except ValueError as err:
        print(f"make student: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path} (variant {variant()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
