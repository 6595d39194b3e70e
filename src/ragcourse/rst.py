"""reStructuredText to the course's Markdown: docutils' own parser, then a walk over its doctree (chapter 1).

Implements: `parse` (docutils with offline, quiet settings: no config files, no file or URL insertion,
no raw, never halting) and `render_document`, which walks a doctree into plain Markdown: one paragraph
per line, `## ` for a section (`### ` and deeper for its subsections), fenced code, pipe tables and
``$$`` math. The course corpus is built with it (`ragcourse.build.corpus`), and a reader's own ``.rst``
files are read with it (`ragcourse.documents`), so both come out the same way.

Sphinx's markup keeps its words though docutils does not know it (`sphinx_markup`, registered for one parse
only): version notes read "Changed in version 5.3: ...", an API description (`attribute`, `method`,
`function`, `class`, ...) is its signature then its body, `seealso` is "See also: ...", `glossary`, `hlist`
and `only` are their bodies, and a role (`:ref:`, `:setting:`, `:class:`...) is its text (a `title <target>`
its title). A directive neither knows is kept as plain text (its arguments, then its body) and counted
(`kept_as_text`), as is a table docutils cannot parse (its source lines, as code). Only directives with no text
in the source (`toctree`, `index`) are dropped, and of autodoc's `auto*` only what Sphinx would generate (a body
written under it is kept, with its sections).

Leaves out: images (only captions survive), raw HTML, tables of contents, link-target lists, docinfo front
matter and what Sphinx generates at build time (autodoc). Needs docutils; `ragcourse.documents` imports this
module only for an ``.rst`` file.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
from collections.abc import Callable, Iterator

from .corpus import fence
from .words import collapse


class _Nodes:
    """`docutils.nodes`, imported at first use: importing this module loads no docutils (tests/test_layout.py)."""

    def __getattr__(self, name: str):
        from docutils import nodes as real

        return getattr(real, name)


nodes = _Nodes()

#: docutils settings: no config files, no file/URL insertion, no raw, never halt, quiet.
DOCUTILS_SETTINGS = {
    "_disable_config": True,
    "halt_level": 5,
    "report_level": 2,
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "language_code": "en",
    "smart_quotes": False,
    "syntax_highlight": "none",
    "sectnum_xform": False,
    "strip_comments": True,
}




@contextlib.contextmanager
def _isolated_registries() -> Iterator[None]:
    """Restore docutils' global role/directive tables after a parse (role/default-role leak)."""
    from docutils.parsers.rst import directives, roles

    saved_roles, saved_directives = dict(roles._roles), dict(directives._directives)
    try:
        yield
    finally:
        roles._roles.clear()
        roles._roles.update(saved_roles)
        directives._directives.clear()
        directives._directives.update(saved_directives)


def parse(source: str, source_path: str):
    """Parse reStructuredText into a docutils doctree with the offline, quiet settings (Sphinx's markup kept)."""
    from docutils.core import publish_doctree

    settings = dict(DOCUTILS_SETTINGS, warning_stream=io.StringIO())
    with _isolated_registries():
        sphinx_markup(source)
        return publish_doctree(source, source_path=source_path, settings_overrides=settings)


#: Sphinx's version notes: directive -> the words Sphinx writes before the version.
VERSION_NOTES = {"versionadded": "New in version", "versionchanged": "Changed in version",
                 "deprecated": "Deprecated since version", "versionremoved": "Removed in version"}
#: Sphinx's API descriptions (any domain: `py:method` is `method`): the signature, then the body.
DESCRIPTIONS = frozenset({"function", "class", "method", "attribute", "data", "exception", "decorator",
                          "classmethod", "staticmethod", "property", "describe", "object", "option", "envvar",
                          "type", "member", "macro", "var", "struct", "enum", "enumerator", "setting"})
#: Sphinx directives whose body is text under a label, or text as it is.
LABELLED = {"seealso": "See also", "glossary": "", "hlist": "", "only": "", "centered": "", "tabs": "", "tab": ""}
#: Sphinx directives with no text of their own in the source (navigation, indexing, build-time generation).
NO_TEXT = frozenset({"toctree", "index", "highlight", "currentmodule", "module", "default-domain", "literalinclude",
                     "tabularcolumns", "sectionauthor", "codeauthor", "moduleauthor", "automodule", "autoclass",
                     "autofunction", "automethod", "autoattribute", "autodata", "autoexception", "autosummary",
                     "autoproperty", "autodecorator", "program"})
_DIRECTIVE = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z0-9][\w:.+-]*)[ \t]*::", re.M)
_ROLE = re.compile(r"(?<![\w`\\]):([A-Za-z][\w:.+-]*):`")


def _kind(name: str) -> str:
    """A directive's name without its domain: `_kind("py:method") -> "method"`, `_kind("note") -> "note"`."""
    return name.rsplit(":", 1)[-1]


def sphinx_markup(source: str) -> None:
    """Register, in docutils' tables, a text role for each role and a keeping directive for each directive
    `source` names that docutils does not know (call inside `_isolated_registries`: nothing leaks)."""
    from docutils.parsers.rst import directives, roles
    from docutils.parsers.rst.languages import en

    named = {n.lower() for n in _ROLE.findall(source)}  # docutils looks names up lower-cased (:RFC: is :rfc:)
    for name in named - set(roles._role_registry) - set(en.roles) - set(roles._roles):
        roles.register_local_role(name, _text_role)
    for name in {n.lower() for n in _DIRECTIVE.findall(source)}:
        known = name in directives._directive_registry or name in en.directives
        if name == "class" or not known:
            directives.register_directive(name, _keeping(name))


def role_text(text: str) -> str:
    """What Sphinx shows for a role's text: the title of `title <target>`, the last part of `~a.b`, no `!`.

    >>> role_text("the broker <broker_url>"), role_text("~celery.app.Celery"), role_text("!x"), role_text("a<b")
    ('the broker', 'Celery', 'x', 'a<b')
    """
    titled = re.fullmatch(r"(?s)(.*?)\s*<[^<>]+>", text)
    if titled and titled.group(1).strip():
        return titled.group(1).strip()
    if text.startswith("~"):
        return text[1:].rsplit(".", 1)[-1]
    return text.lstrip("!")


def _text_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """A role docutils does not know (`:ref:`, `:setting:`, `:class:`...): its text, as Sphinx shows it."""
    from docutils import utils

    return [nodes.Text(role_text(utils.unescape(text)))], []


class _AnyOption(dict):
    """An option table that takes every option (a Sphinx directive's `:noindex:`, `:type:`...) as text
    (never empty: docutils reads options only when a directive has some)."""

    def __init__(self) -> None:
        super().__init__(noindex=str)

    def __missing__(self, key: str):
        from docutils.parsers.rst import directives

        return directives.unchanged


def _keeping(name: str):
    """A directive class for `name` that keeps its words: a container carrying the directive's name and its
    arguments, with its body parsed inside (docutils' own `class` when the argument is a class name)."""
    from docutils.parsers.rst import Directive
    from docutils.parsers.rst.directives.misc import Class

    class Keeping(Directive):
        has_content, final_argument_whitespace = True, True
        optional_arguments = 0 if _kind(name) in LABELLED else 1  # `.. seealso:: text`: the text is the body
        option_spec = _AnyOption()

        def run(self):
            argument = collapse(self.arguments[0]) if self.arguments else ""
            if name == "class" and re.fullmatch(r"[a-z0-9 _-]+", argument):  # docutils' class directive
                return Class(name, self.arguments, {}, self.content, self.lineno, self.content_offset,
                             self.block_text, self.state, self.state_machine).run()
            node = nodes.container(ragcourse=name)
            if _kind(name) in NO_TEXT:  # autodoc's text is generated; what is written in its body is kept
                if _kind(name).startswith("auto"):  # with its own sections, as Sphinx parses it
                    self.state.nested_parse(self.content, self.content_offset, node, match_titles=True)
                return [node] if node.children else []
            if _kind(name) in VERSION_NOTES:  # the version, then text whose markup is parsed as a paragraph's
                node["version"], _, argument = argument.partition(" ")
            if argument:
                words = [nodes.Text(argument)] if _kind(name) in DESCRIPTIONS else \
                    self.state.inline_text(argument, self.lineno)[0]
                node += nodes.paragraph(argument, "", *words)
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    return Keeping


def kept_as_text(doctree) -> dict[str, int]:
    """The directives neither docutils nor this module knows, kept as plain text: name -> how many times.

    >>> kept_as_text(parse(".. tabset:: x\\n\\n   Body.\\n\\n.. note:: Known.\\n\\n.. seealso:: Too.\\n", "t.rst"))
    {'tabset': 1}
    >>> kept_as_text(parse("===  ===\\na    b\\n===  ===\\ncccccc d\\n===  ===\\n", "t.rst"))
    {'malformed table': 1}
    """
    from collections import Counter

    names = [n["ragcourse"] for n in doctree.findall(nodes.container) if n.get("ragcourse")]
    names += [MALFORMED_TABLE for _ in doctree.findall(_malformed_table)]
    return dict(sorted(Counter(n for n in names if not _known(n)).items()))


#: What `kept_as_text` calls a table docutils could not parse: its source lines are kept, as code.
MALFORMED_TABLE = "malformed table"


def _malformed_table(node) -> bool:
    """A docutils error about a table it could not parse (the table's source is the message's literal block)."""
    return isinstance(node, nodes.system_message) and node.get("level", 0) >= 3 and \
        node.children[0].astext().startswith("Malformed table") and len(node.children) > 1


def _known(name: str) -> bool:
    kind = _kind(name)
    return kind in VERSION_NOTES or kind in DESCRIPTIONS or kind in LABELLED or kind in NO_TEXT


def _kept(node) -> list[str]:
    """A kept directive as Markdown blocks: a version note, a description, a labelled body or plain text."""
    kind = _kind(node["ragcourse"])
    if kind in VERSION_NOTES:
        return _labelled(f"{VERSION_NOTES[kind]} {node['version']}".strip(), node, colon=bool(node.children))
    if LABELLED.get(kind):
        return _labelled(LABELLED[kind], node)
    return blocks(node)


# One small renderer per node family. Block renderers return a list of Markdown blocks (joined
# later by one blank line); inline rendering returns plain text (markup dropped, math as $...$).
def _problematic(node: nodes.problematic) -> str:
    """Unresolved markup keeps its words: '`inline markup`_' -> 'inline markup'."""
    return re.sub(r"^:[\w.-]+:|`|_{1,2}$", "", node.astext())


def inline(node: nodes.Node) -> str:
    """Plain text of a node's inline content (no backquotes or asterisks; math as $...$)."""
    if isinstance(node, nodes.Text):
        return node.astext()
    handler = _inline_table().get(type(node))
    if handler is not None:
        return handler(node)
    return "".join(inline(child) for child in node.children)


def _text(node: nodes.Node) -> str:
    return collapse(inline(node))


def _is_dropped(node: nodes.Node) -> bool:
    if _malformed_table(node):
        return False
    return isinstance(node, _dropped()) or (
        isinstance(node, nodes.topic) and "contents" in node["classes"])


def blocks(node: nodes.Element) -> list[str]:
    """Render the children of `node` as Markdown blocks, skipping empty ones."""
    out: list[str] = []
    for child in node.children:
        out.extend(block(child))
    return [b for b in out if b.strip()]


def block(node: nodes.Node) -> list[str]:
    """Render one block-level node (dispatch on its family)."""
    if _is_dropped(node):
        return []
    for family, render in _block_table():
        if isinstance(node, family):
            return render(node)
    if isinstance(node, nodes.TextElement):
        return [_text(node)]
    return blocks(node) if isinstance(node, nodes.Element) else [collapse(node.astext())]


def _first_content(node: nodes.Element) -> nodes.Node | None:
    """First child that renders to something (titles and labels count as dropped)."""
    return next((c for c in node.children if not _is_dropped(c)), None)


def _labelled(label: str, node: nodes.Element, colon: bool = True) -> list[str]:
    """Blocks of `node` led by 'label: ' (merged into a first paragraph, else its own line); `colon=False`: 'label '."""
    body = blocks(node)
    lead = label + ":" if colon and not label.endswith(":") else label
    if body and isinstance(_first_content(node), nodes.paragraph):
        body[0] = f"{lead} {body[0]}"
    elif label:
        body.insert(0, lead)
    return body


def _section(node: nodes.section) -> list[str]:
    level, parent = 1, node.parent
    while parent is not None:
        level += isinstance(parent, nodes.section)
        parent = parent.parent
    heading = "#" * min(level + 1, 6) + " " + _text(node[0])
    return [heading, *blocks(node)]


def _literal_block(node: nodes.literal_block) -> list[str]:
    classes = node.get("classes", [])
    language = next((c for c in classes if c != "code"), "") if "code" in classes else ""
    return [fence(node.astext(), language)]


def _line_block(node: nodes.line_block, indent: str = "") -> list[str]:
    lines: list[str] = []
    for child in node.children:
        if isinstance(child, nodes.line_block):
            lines.extend(_line_block(child, indent + "  ")[0].split("\n"))
        else:
            lines.append(indent + _text(child))
    return ["\n".join(lines)]


def _block_quote(node: nodes.block_quote) -> list[str]:
    text = "\n\n".join(blocks(node))
    return ["\n".join("> " + line if line else ">" for line in text.split("\n"))]


def _item(marker: str, body: list[str]) -> str:
    """A list item: marker + blocks, continuation lines indented under the marker.

    >>> _item("- ", ["a", "b"]), _item("1. ", ["```\\nx\\n```"])
    ('- a\\n\\n  b', '1.\\n   ```\\n   x\\n   ```')
    """
    lines = "\n\n".join(body).split("\n")
    pad = " " * len(marker)
    rest = [pad + line if line else "" for line in lines[1:]]
    if lines[0].startswith("`"):  # a fence never shares its line with the marker
        return "\n".join([marker.rstrip(), pad + lines[0], *rest])
    return "\n".join([marker + lines[0], *rest])


def _join_items(items: list[str]) -> list[str]:
    """Tight list when every item is one line, else items separated by a blank line.

    >>> _join_items(["- a", "- b"]), _join_items(["- a", "- b\\n\\n  c"])
    (['- a\\n- b'], ['- a\\n\\n- b\\n\\n  c'])
    """
    if not items:
        return []
    return ["\n".join(items) if all("\n" not in i for i in items) else "\n\n".join(items)]


def _roman(number: int) -> str:
    """Lower-case Roman numeral.

    >>> _roman(14), _roman(1999)
    ('xiv', 'mcmxcix')
    """
    out = ""
    for value, letters in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"),
                           (90, "xc"), (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"),
                           (4, "iv"), (1, "i")):
        count, number = divmod(number, value)
        out += letters * count
    return out


def _enum_label(enumtype: str, number: int) -> str:
    """The label of item `number` of a docutils enumerated list.

    >>> _enum_label("arabic", 3), _enum_label("upperalpha", 2), _enum_label("upperroman", 4)
    ('3', 'B', 'IV')
    """
    labels = {"arabic": str(number), "loweralpha": chr(96 + number),
              "upperalpha": chr(64 + number), "lowerroman": _roman(number),
              "upperroman": _roman(number).upper()}
    return labels.get(enumtype, str(number))


def _enumerated_list(node: nodes.enumerated_list) -> list[str]:
    start, kind = node.get("start", 1), node.get("enumtype", "arabic")
    prefix, suffix = node.get("prefix", ""), node.get("suffix", ".")
    items = [_item(f"{prefix}{_enum_label(kind, start + i)}{suffix} ", blocks(item))
             for i, item in enumerate(node.children)]
    return _join_items(items)


def _definition_list(node: nodes.definition_list) -> list[str]:
    items = []
    for entry in node.children:
        term = " ".join(_text(t) for t in entry.children if isinstance(t, nodes.term))
        kinds = [_text(c) for c in entry.children if isinstance(c, nodes.classifier)]
        label = f"{term} ({', '.join(kinds)})" if kinds else term
        definition = next(c for c in entry.children if isinstance(c, nodes.definition))
        items.append(_item("- ", _labelled(label, definition)))
    return _join_items(items)


def _field_list(node: nodes.field_list) -> list[str]:
    if isinstance(node.parent, nodes.document):
        return []  # front matter that the docinfo transform did not take
    items = [_item("- ", _labelled(_text(field[0]), field[1])) for field in node.children]
    return _join_items(items)


def _option(node: nodes.option) -> str:
    """'--stylesheet=<URL>' (option_argument.astext() already starts with its delimiter)."""
    return "".join(part.astext() for part in node.children)


def _option_list(node: nodes.option_list) -> list[str]:
    items = []
    for entry in node.children:
        group, description = entry[0], entry[1]
        label = ", ".join(_option(option) for option in group.children)
        items.append(_item("- ", _labelled(label, description)))
    return _join_items(items)


def _admonition(node: nodes.Element) -> list[str]:
    """'.. note::' -> 'Note: ...'; generic admonitions, topics and sidebars use their title."""
    if isinstance(node, nodes.admonition | nodes.topic | nodes.sidebar):
        titles = [_text(c) for c in node.children if isinstance(c, nodes.title | nodes.subtitle)]
        label = " - ".join(titles)
    else:
        label = node.tagname.capitalize()
    if not blocks(node):
        return []  # e.g. the 'Links' topic once its target notes are removed
    return _labelled(label, node)


def _footnote(node: nodes.footnote | nodes.citation) -> list[str]:
    label = next((c.astext() for c in node.children if isinstance(c, nodes.label)), "")
    return _labelled(f"[{label}]", node, colon=False)


def _cell_text(entry: nodes.Element) -> str:
    """One table cell on one line: blocks joined by spaces, list items by '; ' (the list '- Space bar' / '- Return'
    becomes 'Space bar; Return'), code collapsed."""
    parts: list[str] = []
    for child in entry.children:
        if isinstance(child, nodes.literal_block | nodes.doctest_block):
            parts.append(collapse(child.astext()))
        elif isinstance(child, nodes.bullet_list | nodes.enumerated_list):
            parts.append("; ".join(_cell_text(item) for item in child.children))
        else:
            parts.extend(collapse(b) for b in block(child))
    return " ".join(p for p in parts if p)


def _grid(rows: list[nodes.row], ncols: int) -> list[list[str]]:
    """Place cells on an ncols-wide grid; cells covered by a row/column span stay ''."""
    grid, carry = [], [0] * ncols
    for row in rows:
        cells: list[str | None] = [None] * ncols
        for col in range(ncols):
            if carry[col]:
                cells[col], carry[col] = "", carry[col] - 1
        col = 0
        for entry in row.children:
            while col < ncols and cells[col] is not None:
                col += 1
            width = entry.get("morecols", 0) + 1
            for offset in range(min(width, ncols - col)):
                cells[col + offset] = _cell_text(entry) if offset == 0 else ""
                carry[col + offset] = entry.get("morerows", 0)
            col += width
        grid.append([c or "" for c in cells])
    return grid


def _pipe_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _table(node: nodes.table) -> list[str]:
    """Pipe table when the table has a header row; otherwise one line per row."""
    out = [_text(c) for c in node.children if isinstance(c, nodes.title)]
    tgroup = next(c for c in node.children if isinstance(c, nodes.tgroup))
    ncols = tgroup["cols"]
    head = [r for part in tgroup.findall(nodes.thead) for r in part.children]
    body = [r for part in tgroup.findall(nodes.tbody) for r in part.children]
    body_grid = [cells for cells in _grid(body, ncols) if any(cells)]
    if head:
        head_grid = _grid(head, ncols)
        header = [collapse(" ".join(column)) for column in zip(*head_grid, strict=True)]
        lines = [_pipe_row(header), _pipe_row(["---"] * ncols), *map(_pipe_row, body_grid)]
    else:
        lines = [" | ".join(c for c in cells if c) for cells in body_grid]
    return [*out, "\n".join(lines)]


@functools.cache
def _dropped() -> tuple[type, ...]:
    """Node types dropped from the text (a function: docutils is imported at first use)."""
    return (
    nodes.Invisible, nodes.docinfo, nodes.decoration, nodes.system_message, nodes.raw,
    nodes.image, nodes.transition, nodes.title, nodes.subtitle, nodes.label, nodes.colspec,
    )


@functools.cache
def _block_table() -> tuple[tuple[type, Callable[[nodes.Node], list[str]]], ...]:
    """Block node type -> its renderer, first match wins."""
    return (
    (nodes.section, _section),
    (nodes.paragraph, lambda n: [_text(n)]),
    (nodes.literal_block, _literal_block),
    (nodes.doctest_block, lambda n: [fence(n.astext())]),
    (nodes.math_block, lambda n: ["$$\n" + n.astext().strip("\n") + "\n$$"]),
    (nodes.line_block, _line_block),
    (nodes.block_quote, _block_quote),
    (nodes.attribution, lambda n: ["-- " + _text(n)]),
    (nodes.bullet_list, lambda n: _join_items([_item("- ", blocks(item)) for item in n.children])),
    (nodes.enumerated_list, _enumerated_list),
    (nodes.definition_list, _definition_list),
    (nodes.field_list, _field_list),
    (nodes.option_list, _option_list),
    (nodes.Admonition | nodes.topic | nodes.sidebar, _admonition),
    (nodes.footnote | nodes.citation, _footnote),
    (nodes.figure, blocks),  # the image is dropped; caption and legend stay as paragraphs
    (nodes.table, _table),
    (nodes.container, lambda n: _kept(n) if n.get("ragcourse") else blocks(n)),
    (nodes.system_message, lambda n: [fence(n.children[1].astext())]),  # a malformed table, as its source
    )


@functools.cache
def _inline_table() -> dict[type, Callable[[nodes.Node], str]]:
    """Inline node type -> its rendering."""
    return {
    nodes.math: lambda n: f"${n.astext()}$",
    nodes.footnote_reference: lambda n: f"[{n.astext()}]",
    nodes.citation_reference: lambda n: f"[{n.astext()}]",
    nodes.problematic: _problematic,
    nodes.image: lambda n: n.get("alt", ""),
    nodes.raw: lambda n: "",
    nodes.system_message: lambda n: "",
    }


def _drop_target_notes(doctree: nodes.document) -> None:
    """Remove the footnotes that 'target-notes' generates and their [n] markers mid-sentence."""
    notes = [f for f in doctree.findall(nodes.footnote)
             if any(name.startswith("TARGET_NOTE: ") for name in f["names"])]
    ids = {i for note in notes for i in note["ids"]}
    for ref in list(doctree.findall(nodes.footnote_reference)):
        if ref.get("refid") in ids:
            parent = ref.parent
            position = parent.index(ref)
            if position and parent[position - 1].astext() == " ":
                parent.remove(parent[position - 1])
            parent.remove(ref)
    for note in notes:
        note.parent.remove(note)


def render_document(doctree: nodes.document) -> tuple[str, str]:
    """Doctree -> (title, Markdown text without the title line).

    >>> rst = "Title\\n=====\\n\\nSome *emphasis*, :math:`x^2`.\\n\\nPart\\n----\\n\\nText.\\n"
    >>> render_document(parse(rst, "t.rst"))
    ('Title', 'Some emphasis, $x^2$.\\n\\n## Part\\n\\nText.\\n')
    """
    _drop_target_notes(doctree)
    title = next((_text(c) for c in doctree.children if isinstance(c, nodes.title)), "")
    return title, "\n\n".join(blocks(doctree)) + "\n"
