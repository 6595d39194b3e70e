"""The student edition: each chapter with its answers stubbed, its solutions removed, nothing that leaks.

`python -m kit.student [--out dist/student] [notebooks ...]` (the Makefile's `make student`). Per chapter:
- every cell tagged `solution` is dropped (the solution prose and the cells that compute what it quotes);
- every cell tagged `answer` becomes its `exercise.stub` (which raises NotImplementedError), and its
  metadata keeps id, kind, points and minutes only (the rubric is the instructor's);
- every code output after the first answer cell is cleared: those cells may use an answer, so their
  stored outputs could show the reference answer or something computed from it;
- glue outputs, and the outputs of cells the book hides (`remove-cell`, `remove-output`), are dropped:
  Jupyter does not show glue, and a hidden bookkeeping cell may compute what a solution quotes;
- a first cell checks the student's environment against the one the grader uses, and, for a variant other
  than 0, fixes RAGCOURSE_VARIANT so the student's run draws the same constants as the grader.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path

import nbformat

from ragcourse.book.exercises import VARIANT_ENV, environment, variant

GLUE_REF = re.compile(r"\{glue(?::[a-z]+)?\}`([^`:]+)")
KEPT_EXERCISE_KEYS = ("id", "kind", "points", "minutes")
HIDE_TAGS = {"hide-input", "hide-output", "hide-cell", "remove-input", "remove-output", "remove-cell"}


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
    nb.cells = [preamble(variant_number), *kept]
    nb.metadata["ragcourse"] = {"edition": "student", "variant": variant_number}
    return nb


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
