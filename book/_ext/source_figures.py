"""A Sphinx directive that shows data/source_figures.csv as a table, read when the book is built.

    :::{source-figures}
    :source: original
    :::

Each row: the glue name the chapters use (``src_<name>``), the value as the source states it, the
source, where in it the figure is stated, and the chapter that quotes it. The table is rebuilt
whenever the file changes, so it always lists every figure the text can quote.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import Directive, directives

from ragcourse.book.sources import FIGURES_FILE, SOURCES, load

HEADINGS = ("glued as", "value", "where the source states it", "quoted in")
WIDTHS = (36, 12, 40, 12)


def shown(value) -> str:
    """A figure as the page prints it: integers of five digits or more get thousands separators."""
    return f"{value:,}" if isinstance(value, int) and abs(value) >= 10_000 else str(value)


def _row(cells: list[nodes.Node]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += cell if isinstance(cell, nodes.paragraph) else nodes.paragraph("", "", cell)
        row += entry
    return row


def _where(figure, with_source: bool) -> nodes.paragraph:
    para = nodes.paragraph("", (f"{SOURCES[figure.source]}: " if with_source else "") + figure.where)
    if figure.note:
        para += nodes.Text(" (")
        para += nodes.emphasis("", figure.note)
        para += nodes.Text(")")
    return para


def _table(figures: list, with_source: bool) -> nodes.table:
    table = nodes.table(classes=["source-figures"])
    group = nodes.tgroup(cols=len(HEADINGS))
    table += group
    group.extend(nodes.colspec(colwidth=w) for w in WIDTHS)
    head = nodes.thead()
    head += _row([nodes.Text(h) for h in HEADINGS])
    body = nodes.tbody()
    for f in sorted(figures, key=lambda f: (f.chapter or 0, f.name)):
        body += _row([nodes.literal("", f"src_{f.name}"), nodes.Text(shown(f.value)), _where(f, with_source),
                      nodes.Text(f"ch. {f.chapter}" if f.chapter else "this page")])
    group += head
    group += body
    return table


class SourceFigures(Directive):
    """``source-figures``: the figures of one source (``:source: original|field``), or of both."""

    option_spec = {"source": lambda arg: directives.choice(arg, tuple(SOURCES))}
    has_content = False

    def run(self) -> list[nodes.Node]:
        self.state.document.settings.env.note_dependency(str(FIGURES_FILE))
        wanted = self.options.get("source")
        figures = [f for f in load().values() if wanted in (None, f.source)]
        who = SOURCES[wanted] if wanted else "the two sources"
        count = f"{len(figures)} figure{'s' if len(figures) != 1 else ''} from {who}"
        if not figures:
            return [nodes.paragraph("", f"The book quotes no figure from {who}.")]
        caption = nodes.paragraph("", f"{count[0].upper()}{count[1:]}, as the book quotes them.",
                                  classes=["source-figures-count"])
        return [caption, _table(figures, with_source=wanted is None)]


def source_figure_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{srcfig}`name```: the value of one row of the file, as text (the build fails on a missing name)."""
    inliner.document.settings.env.note_dependency(str(FIGURES_FILE))
    figure = load().get(text.strip())
    if figure is None:
        message = inliner.reporter.error(f"{text!r} is not a figure in {FIGURES_FILE.name}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    return [nodes.inline(rawtext, shown(figure.value), classes=["source-figure"])], []


def setup(app):
    app.add_directive("source-figures", SourceFigures)
    app.add_role("srcfig", source_figure_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
