"""Text a student controls (a folder name, an exception's message), made safe for each place it is written.

The terminal and every file get one printable line (`shown`); grades.csv a cell no spreadsheet runs as
a formula (`csv_cell`); feedback.md and summary.md Markdown with no HTML, link or table break (`md`).
"""

from __future__ import annotations

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")  # a spreadsheet reads such a cell as a formula (OWASP)
MD_ESCAPES = {"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;", "&": "&amp;"}


def shown(name: str) -> str:
    r"""A name a student chose, as one printable line: a newline, an escape or an undecodable byte spelled out.

    >>> shown("a\nb\x1b[2J\udcff")
    'a\\nb\\x1b[2J\\udcff'
    """
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(name))


def csv_cell(text: str) -> str:
    """A grades.csv cell a spreadsheet shows as text: one that would start a formula gets a leading '.

    >>> csv_cell("=HYPERLINK(1)"), csv_cell(" -1+1"), csv_cell("full marks")
    ("'=HYPERLINK(1)", "' -1+1", 'full marks')
    """
    return "'" + text if text.lstrip(" ")[:1] in FORMULA_START and text.strip(" ") else text


def md(text: str, limit: int | None = None) -> str:
    r"""Text a student controls, for Markdown: one line, no HTML, no link, nothing that breaks a table.

    >>> md("a|b <script> [x](y)\n")
    'a\\|b &lt;script&gt; \\[x\\](y)\\\\n'
    >>> md("a long name", limit=6)
    'a lon…'
    """
    line = shown(text)
    if limit is not None and len(line) > limit:
        line = line[: limit - 1] + "…"
    return "".join(MD_ESCAPES.get(ch, ch) for ch in line)
