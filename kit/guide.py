"""The instructor guide's tables: per chapter, its objectives, prerequisites and time, and each exercise.

`python -m kit.guide` writes book/instructor-tables.inc, which book/instructor-guide.md includes; the book
build writes it too (book/_ext/instructor_tables.py), so it is generated, never committed or edited.
The public tables carry no rubric (a rubric states the expected prediction); `python -m kit.guide
--instructor FILE` (`make guide`) writes the instructor edition: the guide with every rubric and the
instructor-only notes of kit/instructor-notes.md, never part of the book.
Objectives, prerequisites and time come from each chapter's "In this chapter" admonition; an exercise's
kind, minutes and rubric from its answer cell; its points and what it checks from its hidden check (the
`@check` declaration in kit/checks/chNN.py, the one place an exercise's points are written).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt

from kit.hidden import Hidden, load
from kit.student import answer_cells
from ragcourse.words import collapse

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "instructor-tables.inc"
GUIDE = ROOT / "book" / "instructor-guide.md"
NOTES = ROOT / "kit" / "instructor-notes.md"
INCLUDE = "```{include} instructor-tables.inc\n```"
ADMONITION = re.compile(r":::\{admonition\} In this chapter\n(.*?)\n:::", re.DOTALL)
GLUE = re.compile(r"\{glue(?::[a-z]+)?\}`([^`:]+)(?::[^`]*)?`")
CHAPTER_LINK = re.compile(r"\]\(((?:labs/)?\d\d-[\w-]+\.ipynb)")  # a chapter or its lab, from notebooks/
GRADED_BY_RUBRIC = ("prediction", "written")
LEARN = re.compile(r"\*\*You will learn:?\*\*:?\s*(.*?)(?=\n\s*\n|\*\*Prerequisites|\*\*Time|\Z)", re.DOTALL)


@dataclass(frozen=True)
class Overview:
    """A chapter's "In this chapter" admonition, parsed: what it teaches, what it needs, how long."""

    objectives: tuple[str, ...]
    prerequisites: str
    time: str


def overview(nb) -> Overview:
    """Parse the "In this chapter" admonition (see CONTRIBUTING.md, "Chapter layout")."""
    text = "\n".join(c.source for c in nb.cells[:3] if c.cell_type == "markdown")
    match = ADMONITION.search(text)
    if not match:
        raise ValueError("no ':::{admonition} In this chapter' near the top of the notebook")
    body = _glue_values(nb, match.group(1))
    objectives = _objectives(body)
    prerequisites = re.search(r"\*\*Prerequisites:?\*\*:?\s*(.*?)(?=\*\*Time|\Z)", body, re.DOTALL)
    time = re.search(r"\*\*Time:?\*\*:?\s*(.*)", body, re.DOTALL)
    return Overview(objectives, _one_line(prerequisites.group(1) if prerequisites else "none stated"),
                    _one_line(time.group(1) if time else "not stated"))


def _objectives(body: str) -> tuple[str, ...]:
    """The admonition's objectives, each whole: its top-level bullets as Markdown reads them (a wrapped
    bullet keeps its tail), or else the clauses of a "**You will learn** a; b; and c." sentence.

    >>> _objectives("**You will learn**\\n- to cut a text\\n  at a boundary;\\n- to count.\\n\\n**Time:** 5 min")
    ('to cut a text at a boundary;', 'to count.')
    >>> _objectives("**You will learn** how to cut; how to count; and why it matters.\\n**Time:** 5 min")
    ('how to cut', 'how to count', 'why it matters')
    """
    tokens = MarkdownIt("commonmark").parse(body)
    items, depth = [], 0
    for i, token in enumerate(tokens):
        if token.type == "bullet_list_open":
            depth += 1
        elif token.type == "bullet_list_close":
            depth -= 1
        elif token.type == "list_item_open" and depth == 1:
            inline = next(t for t in tokens[i:] if t.type == "inline")
            items.append(collapse(inline.content))
    if items:
        return tuple(items)
    sentence = LEARN.search(body)
    if not sentence:
        return ()
    clauses = (collapse(c) for c in sentence.group(1).split(";"))
    return tuple(re.sub(r"^and ", "", c).rstrip(".") for c in clauses if c)


def _one_line(text: str) -> str:
    return CHAPTER_LINK.sub(r"](notebooks/\1", collapse(text))


def _glue_values(nb, text: str) -> str:
    """Replace {glue:text}`name` roles by the stored value (a glue role cannot cross pages)."""
    stored = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                stored[name] = out["data"].get("application/papermill.record/text/plain", "").strip("'\"")
    return GLUE.sub(lambda m: stored.get(m.group(1), m.group(1)), text)


def _cell(text: str) -> str:
    return collapse(str(text)).replace("|", "\\|") or "(none)"


def chapter_table(path: Path, checks: dict[str, Hidden], instructor: bool = False) -> list[str]:
    """The guide's section for one chapter: overview, then one row per exercise (rubrics: instructor only)."""
    nb = nbformat.read(path, as_version=4)
    title = next((c.source.splitlines()[0].lstrip("# ") for c in nb.cells if c.cell_type == "markdown"), path.stem)
    try:
        over = overview(nb)
    except ValueError:
        over = Overview((), "(no 'In this chapter' box yet)", "(no 'In this chapter' box yet)")
    lines = [f"### Chapter {int(path.name[:2])}: {title}", "", "**Objectives.**", ""]
    lines += [f"- {_one_line(o)}" for o in over.objectives] or ["- (not stated yet)"]
    lines += ["", f"**Prerequisites.** {over.prerequisites}", "", f"**Time.** {over.time}", ""]
    answers = [c.metadata["exercise"] for c in answer_cells(nb)]
    if not answers:
        return lines + ["No graded exercises yet.", ""]
    lines += ["| Ex. | Kind | Points | Min | The hidden check tests |", "|---|---|---|---|---|"]
    points = {ex["id"]: checks[ex["id"]].points if ex["id"] in checks else 0 for ex in answers}
    for ex in answers:
        tests = checks[ex["id"]].tests if ex["id"] in checks else "**no hidden check registered**"
        lines.append(f"| {ex['id']} | {ex.get('kind', '?')} | {points[ex['id']] or '?'} | {ex.get('minutes', '?')} "
                     f"| {_cell(tests)} |")
    by_rubric = [ex for ex in answers if ex.get("kind") in GRADED_BY_RUBRIC]
    for ex in answers if instructor else []:  # every rubric: a value exercise's names its discussed questions
        if ex in by_rubric or str(ex.get("rubric", "")).strip():
            lines += ["", f"**Rubric, exercise {ex['id']} ({ex['kind']}).** {_cell(ex.get('rubric') or '(none yet)')}"]
    if by_rubric and not instructor:
        lines += ["", f"Read against a rubric: {', '.join(ex['id'] for ex in by_rubric)} (the rubrics are in the "
                  "instructor edition, `make guide`)."]
    total = sum(points.values())
    minutes = sum(int(ex.get("minutes", 0)) for ex in answers)
    return lines + ["", f"{len(answers)} exercises, {total} points, about {minutes} min of exercises.", ""]


def tables(notebooks: list[Path], checks_dir: Path, instructor: bool = False) -> str:
    """The whole generated file (the instructor edition's tables hold the rubrics)."""
    lines = ["<!-- Generated by `python -m kit.guide` from the notebooks and kit/checks: do not edit. -->", ""]
    for path in notebooks:
        check_file = checks_dir / f"ch{path.name[:2]}.py"
        checks = load(check_file.read_text(encoding="utf-8"), str(check_file)) if check_file.exists() else {}
        lines += chapter_table(path, checks, instructor)
    return "\n".join(lines).rstrip() + "\n"


def write_tables(notebooks: list[Path] | None = None, out: Path = OUT,
                 checks_dir: Path = ROOT / "kit" / "checks") -> bool:
    """Write the public tables to `out` when their text changed (True when it was written)."""
    text = tables(notebooks or chapters(), checks_dir)
    if out.exists() and out.read_text(encoding="utf-8") == text:
        return False
    out.write_text(text, encoding="utf-8")
    return True


def chapters() -> list[Path]:
    """The chapters (lessons) whose exercises the guide lists, in order."""
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def instructor_edition(notebooks: list[Path], checks_dir: Path) -> str:
    """The instructor edition: the public guide, its tables with the rubrics, then the instructor-only notes."""
    guide = GUIDE.read_text(encoding="utf-8")
    if INCLUDE not in guide:
        raise ValueError(f"{GUIDE} no longer includes instructor-tables.inc")
    head = "<!-- The INSTRUCTOR edition (`make guide`): rubrics and answers. Do not publish or hand out. -->\n\n"
    body = guide.replace(INCLUDE, tables(notebooks, checks_dir, instructor=True).split("\n", 2)[2])
    return head + body.rstrip() + "\n\n" + NOTES.read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instructor", type=Path, help="write the instructor edition (with rubrics) to this file")
    args = parser.parse_args(argv)
    notebooks = chapters()
    if args.instructor:
        args.instructor.parent.mkdir(parents=True, exist_ok=True)
        args.instructor.write_text(instructor_edition(notebooks, ROOT / "kit" / "checks"), encoding="utf-8")
        print(f"wrote {args.instructor} (the instructor edition: do not publish it)")
        return 0
    print(f"wrote {OUT}" if write_tables(notebooks) else f"{OUT} is current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
