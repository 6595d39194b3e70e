"""A pybtex style for the bibliography page whose labels match the author-year citations in the text.

With `bibtex_reference_style: author_year` a citation reads "(Wilson, 1927)"; this style labels the
entry it points to "Wilson 1927" (two authors: "Robertson & Zaragoza 2009"; more: "Cormack et al. 2009"),
sorted by author and year, instead of pybtex's default "[Wil27]". Names are decoded from LaTeX
("Aum{\\"u}ller" is "Aumüller"), and two works with one author-year label are told apart in the label and
in every citation of them: "Gao et al. 2023a" on the page, "(Gao et al., 2023a)" in the text.
"""

from __future__ import annotations

import re

import pybtex.plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinxcontrib.bibtex.style import template
from sphinxcontrib.bibtex.style.referencing import basic_author_year, extra_year


def _surname(person) -> str:
    """The surname as printed: `Aum{\\"u}ller` -> "Aumüller" (LaTeX accents decoded, braces gone)."""
    return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")


@template.node
def year_as_labelled(children, data) -> Text:
    """The year a citation prints, with the letter its entry's label carries ("2023a") when two works share one."""
    assert not children
    printed = template.year.format_data(data)
    entry = data.get("formatted_entry")
    suffix = re.search(r"\d([a-j])$", entry.label) if entry is not None else None
    return Text(printed, suffix.group(1)) if suffix else printed


def _who(names: list[str], entry) -> str:
    """"Wilson", "Robertson & Zaragoza", "Cormack et al.", or for a work without authors its title's first part."""
    if not names:
        return Text.from_latex(entry.fields.get("title", "Anonymous")).render_as("text").split(":")[0]
    return names[0] if len(names) == 1 else " & ".join(names) if len(names) == 2 else f"{names[0]} et al."


class AuthorYearLabels(BaseLabelStyle):
    """Labels "Wilson 1927", "Robertson & Zaragoza 2009", "Cormack et al. 2009"."""

    def format_labels(self, sorted_entries):
        labels = []
        for entry in sorted_entries:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [_surname(p) for p in people]
            who = _who(names, entry)
            labels.append(f"{who} {entry.fields.get('year', 'n.d.')}")
        seen: dict[str, int] = {}
        for label in labels:  # two works with one label: "Gao et al. 2023a", "Gao et al. 2023b"
            if labels.count(label) > 1:
                seen[label] = seen.get(label, 0) + 1
                yield label + "abcdefghij"[seen[label] - 1]
            else:
                yield label


class AuthorYearStyle(PlainStyle):
    default_label_style = "ragcourse_author_year"


def setup(app):
    # sphinxcontrib-bibtex's author-year citations read the module-level `year` node of these two modules.
    basic_author_year.year = extra_year.year = year_as_labelled
    pybtex.plugin.register_plugin("pybtex.style.labels", "ragcourse_author_year", AuthorYearLabels)
    pybtex.plugin.register_plugin("pybtex.style.formatting", "ragcourse_author_year", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
