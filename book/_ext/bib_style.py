"""A pybtex style for the bibliography page whose labels match the author-year citations in the text.

With `bibtex_reference_style: author_year` a citation reads "(Wilson, 1927)"; this style labels the
entry it points to "Wilson 1927" (two authors: "Robertson & Zaragoza 2009"; more: "Cormack et al. 2009"),
sorted by author and year, instead of pybtex's default "[Wil27]".
"""

from __future__ import annotations

import pybtex.plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle


def _surname(person) -> str:
    return " ".join(person.prelast_names + person.last_names).replace("{", "").replace("}", "")


class AuthorYearLabels(BaseLabelStyle):
    """Labels "Wilson 1927", "Robertson & Zaragoza 2009", "Cormack et al. 2009"."""

    def format_labels(self, sorted_entries):
        labels = []
        for entry in sorted_entries:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [_surname(p) for p in people]
            who = names[0] if len(names) == 1 else " & ".join(names) if len(names) == 2 else f"{names[0]} et al."
            labels.append(f"{who} {entry.fields.get('year', '')}".strip())
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
    pybtex.plugin.register_plugin("pybtex.style.labels", "ragcourse_author_year", AuthorYearLabels)
    pybtex.plugin.register_plugin("pybtex.style.formatting", "ragcourse_author_year", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
