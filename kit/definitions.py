"""The cells a student's function needs, cut from their notebook, and whether it is the package's own.

A function exercise's answer is run in a fresh sandbox, so it is defined there from the student's source:
the statement that defines it, and, transitively, the statements that define the names it reads
(imports, constants, the functions it calls), in notebook order. Nothing is taken from the student's kernel.

>>> cells = ["import math\\nX = 2", "y = slow()", "def f(a):\\n    return math.sqrt(a) * X"]
>>> program(cells, "f")
['import math', 'X = 2', 'def f(a):\\n    return math.sqrt(a) * X']
"""

from __future__ import annotations

import ast
import builtins
import copy
import pkgutil
from functools import cache

MAX_SOURCE = 2_000_000


def _statements(cells: list[str]) -> list[ast.stmt]:
    found = []
    for source in cells:
        if len(source) > MAX_SOURCE:
            continue
        try:
            found += ast.parse(_without_magics(source)).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python at all
            continue
    return found


def _without_magics(source: str) -> str:
    """IPython's line magics and shell escapes (`%matplotlib`, `!ls`) as `pass`, so the rest parses."""
    lines = source.splitlines()
    return "\n".join(line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip()[:1] in ("%", "!") else line
                     for line in lines)


def defines(node: ast.stmt) -> set[str]:
    """Names a top-level statement binds (assignments, imports, defs, loop and with targets)."""
    names = set()
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            if not isinstance(child, ast.Lambda):
                names.add(child.name)
    return names


def reads(node: ast.AST) -> set[str]:
    """Names a statement loads, less a function's own arguments and locals: enough to find what it needs."""
    loaded = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        args = node.args
        local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
        body = node.body if isinstance(node.body, list) else [node.body]
        local |= {n.id for b in body for n in ast.walk(b) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        declared = {name for b in body for n in ast.walk(b) if isinstance(n, ast.Global) for name in n.names}
        loaded -= local - declared
        loaded |= {n.id for d in [*node.args.defaults, *node.args.kw_defaults, *getattr(node, "decorator_list", [])]
                   if d is not None for n in ast.walk(d) if isinstance(n, ast.Name)}
    return loaded


def program(cells: list[str], name: str) -> list[str]:
    """The statements, in order, that define `name` and what it reads (empty when nothing defines it).

    Each statement's names are read once and indexed, so a notebook of n statements costs about n, not n^2.
    """
    import bisect

    body = _statements(cells)
    where: dict[str, list[int]] = {}
    for i, node in enumerate(body):
        for bound in defines(node):
            where.setdefault(bound, []).append(i)
    chosen, seen = set(), set()
    needs = [(name, len(body))]
    while needs:
        wanted, before = needs.pop()
        places = where.get(wanted, [])
        at = bisect.bisect_left(places, before) - 1
        i = places[at] if at >= 0 else None
        if i is None or (wanted, i) in seen:
            continue
        seen.add((wanted, i))
        if i not in chosen:
            chosen.add(i)
            needs += [(n, i) for n in reads(body[i]) - vars(builtins).keys()]
    return [ast.unparse(body[i]) for i in sorted(chosen)]


def binding(statements: list[str], name: str) -> ast.stmt | None:
    """The last statement that binds `name` among these."""
    found = None
    for node in _statements(statements):
        if name in defines(node):
            found = node
    return found


def not_own_work(statements: list[str], name: str, forbidden: tuple[str, ...] = ()) -> str | None:
    """Why the function `name` is not the student's own work (None when it is): an import, an alias of
    another object, a def whose body is the package's own up to names and constants, or a use of a
    function the exercise forbids."""
    node = binding(statements, name)
    if node is None:
        return None
    if isinstance(node, ast.Import | ast.ImportFrom):
        return f"`{name}` is imported, not written by you"
    if isinstance(node, ast.Assign) and not isinstance(node.value, ast.Lambda):
        return f"`{name}` is another function under a new name, not one written by you"
    if isinstance(node, ast.FunctionDef) and _body_key(node) in package_bodies():
        return f"`{name}` is the package's own function, copied: write it yourself"
    used = sorted(set(forbidden) & mentions(statements))
    if used:
        return f"`{name}` uses `{used[0]}`, which the exercise asks you not to call: write it yourself"
    return None


def mentions(statements: list[str]) -> set[str]:
    """Every name, attribute and string these statements use, and what a used import alias stands for;
    an import whose name nothing uses does not count (for a forbidden call).

    >>> sorted(mentions(["from m import auc, holm as h", "def f(x):\\n    return h(x, 'sign_test')"]))
    ['f', 'h', 'holm', 'sign_test', 'x']
    """
    found, aliases = set(), {}
    for statement in _statements(statements):
        if isinstance(statement, ast.Import | ast.ImportFrom):
            aliases |= {(a.asname or a.name).split(".")[0]: a.name.split(".") for a in statement.names}
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 100:
                found.add(node.value)
            elif isinstance(node, ast.FunctionDef):
                found.add(node.name)
    return found | {part for bound, parts in aliases.items() if bound in found for part in parts}


class _Anonymous(ast.NodeTransformer):
    """A function body with its names renamed in order of appearance, constants and annotations dropped."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _renamed(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(id=self._renamed(node.id), ctx=node.ctx)

    def visit_arg(self, node: ast.arg) -> ast.arg:
        return ast.arg(arg=self._renamed(node.arg))

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        return ast.Constant(value=type(node.value).__name__)


def _body_key(node: ast.FunctionDef) -> str:
    """The body up to names and constants (docstring dropped): a renamed copy has the same key.

    >>> a, b = (ast.parse(s).body[0] for s in ("def f(x):\\n    y = x + 1\\n    return y",
    ...                                       "def g(a):\\n    b = a + 2\\n    return b"))
    >>> _body_key(a) == _body_key(b)
    True
    """
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # the docstring does not count
    anonymous = _Anonymous()
    args = anonymous.visit(copy.deepcopy(node.args))
    body = [anonymous.visit(copy.deepcopy(b)) for b in body]
    return ast.dump(ast.Module(body=[ast.Expr(ast.Constant(len(args.args))), *body], type_ignores=[]),
                    annotate_fields=False)


def _substantial(node: ast.FunctionDef) -> bool:
    """Two statements or more besides the docstring, and 20 syntax nodes: a one-liner is too common to be a copy."""
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    return len(body) > 1 and sum(1 for b in body for _ in ast.walk(b)) >= 20


@cache
def package_bodies() -> frozenset[str]:
    """The bodies (docstrings dropped) of every function defined in the package, for `not_own_work`."""
    import ragcourse

    keys = set()
    for info in pkgutil.walk_packages(ragcourse.__path__, "ragcourse."):
        spec = info.module_finder.find_spec(info.name)
        origin = getattr(spec, "origin", None) if spec else None
        if not origin or not origin.endswith(".py"):
            continue
        try:
            tree = ast.parse(open(origin, encoding="utf-8").read())  # noqa: SIM115, PTH123
        except (OSError, SyntaxError):
            continue
        keys |= {_body_key(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and _substantial(n)}
    return frozenset(keys)
