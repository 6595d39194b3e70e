"""The two sources' own figures, read from one data file so that the book glues them, never types them.

The original chapter is the measured pipeline the book replicates; the field report makes the
genre-chunking, expansion and reranking claims. `data/source_figures.csv` holds every figure the
book quotes from either, with the section that states it. The chapters glue them in their asides
("Beside the original chapter"); the sources page (book/sources.md) lists them all, read from the
same file at build time. Leaves out: rows that span lines (one figure per line), units (in `note`).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from ..paths import DATA_DIR
from ..precision import PUBLISHED
from .glue import glue

FIGURES_FILE = DATA_DIR / "source_figures.csv"
SOURCES = {"original": "the original chapter", "field": "the field report"}


@dataclass(frozen=True)
class Figure:
    """One quoted figure: its value as the source states it, which source, and where."""

    name: str
    value: int | float | str
    source: str
    where: str
    note: str = ""
    chapter: int | None = None


def _value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


_BLOCK = re.compile(r"^#\s*-+\s*chapter\s+(\d+)\s*-+\s*$")


def _chapters(lines: list[str]) -> dict[int, int | None]:
    """Line number -> the chapter whose ``# --- chapter N ---`` block the line sits in (None: before any)."""
    chapter, found = None, {}
    for number, line in enumerate(lines):
        if (block := _BLOCK.match(line)) is not None:
            chapter = int(block.group(1))
        found[number] = chapter
    return found


def _rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) for each data line; one figure per line, comment lines start with "#"."""
    lines = path.read_text(encoding="utf-8").splitlines()
    data = [(n, line) for n, line in enumerate(lines, start=1) if line.strip() and not line.startswith("#")]
    header = next(csv.reader([data[0][1]])) if data else []
    rows = []
    for number, line in data[1:]:
        fields = next(csv.reader([line]))
        if len(fields) != len(header):
            raise ValueError(f"{path.name}:{number}: {len(fields)} fields, expected {len(header)} "
                             f"({','.join(header)}); quote a value that contains a comma: {line!r}")
        rows.append((number, dict(zip(header, fields, strict=True))))
    return rows


def load(path: Path = FIGURES_FILE) -> dict[str, Figure]:
    """Every figure in the file, by name; a bad source or a repeated name is an error naming the row.

    >>> figure = next(iter(load().values()), None)
    >>> figure is None or figure.source in SOURCES
    True
    """
    chapter_of = _chapters(path.read_text(encoding="utf-8").splitlines())
    figures: dict[str, Figure] = {}
    for number, row in _rows(path):
        if row["source"] not in SOURCES:
            raise ValueError(f"{path.name}:{number}: {row['name']!r} has source {row['source']!r}; "
                             f"expected one of {sorted(SOURCES)}")
        if row["name"] in figures:
            raise ValueError(f"{path.name}:{number}: the figure {row['name']!r} appears twice")
        figures[row["name"]] = Figure(row["name"], _value(row["value"]), row["source"], row["where"],
                                      row["note"] or "", chapter_of[number - 1])
    return figures


def glue_figures(*names: str) -> None:
    """Glue each named figure as ``src_<name>``, for `{glue:text}` roles in the prose."""
    figures = load()
    missing = [n for n in names if n not in figures]
    if missing:
        raise KeyError(f"not in {FIGURES_FILE.name}: {missing}; add a row for each")
    for name in names:
        glue(f"src_{name}", figures[name].value, decimals=max(PUBLISHED, places(figures[name].value)))


def places(value: int | float | str) -> int:
    """Decimal places of a figure as the source states it, so gluing never rounds a source's number.

    >>> places(0.0015), places(1.14), places(32), places("E")
    (4, 2, 0, 0)
    """
    return max(0, -Decimal(repr(value)).as_tuple().exponent) if isinstance(value, float) else 0
