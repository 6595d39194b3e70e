"""The two sources' own figures, read from one data file so that the book glues them, never types them.

The original chapter is the measured pipeline the book replicates; the field report makes the
genre-chunking, expansion and reranking claims. `data/source_figures.csv` holds every figure the
book quotes from either, with the section that states it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ragcourse.precision import glue

FIGURES_FILE = Path(__file__).resolve().parents[2] / "data" / "source_figures.csv"
SOURCES = {"original": "the original chapter", "field": "the field report"}


@dataclass(frozen=True)
class Figure:
    """One quoted figure: its value as the source states it, which source, and where."""

    name: str
    value: int | float | str
    source: str
    where: str
    note: str = ""


def _value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def load(path: Path = FIGURES_FILE) -> dict[str, Figure]:
    """Every figure in the file, by name; a bad source or a repeated name is an error naming the row."""
    rows = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    figures: dict[str, Figure] = {}
    for row in csv.DictReader(rows):
        if row["source"] not in SOURCES:
            raise ValueError(f"{path.name}: {row['name']!r} has source {row['source']!r}; expected one of {sorted(SOURCES)}")
        if row["name"] in figures:
            raise ValueError(f"{path.name}: the figure {row['name']!r} appears twice")
        figures[row["name"]] = Figure(row["name"], _value(row["value"]), row["source"], row["where"], row["note"] or "")
    return figures


def glue_figures(*names: str) -> None:
    """Glue each named figure as ``src_<name>``, for `{glue:text}` roles in the prose."""
    figures = load()
    missing = [n for n in names if n not in figures]
    if missing:
        raise KeyError(f"not in {FIGURES_FILE.name}: {missing}; add a row for each")
    for name in names:
        glue(f"src_{name}", figures[name].value)
