"""Draw chapter 2's diagram: where the six chunking strategies cut one short document.

    python scripts/diagrams_ch02.py [OUT_DIR]      (default: book/figures)

Writes strategies-cut.svg. The cuts are not drawn by hand: the script runs `ragcourse.chunking.chunk`
on a two-paragraph toy document (budget 40 characters, overlap 12, scaled down from 512 and 64 so the
whole document fits on a page) and draws each strategy's chunks under the same text. The bytes are the
same on every run (fixed hash salt, no date, every style set here).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.font_manager import FontProperties  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.textpath import TextPath  # noqa: E402

from ragcourse.chunking import STRATEGIES, Chunk, chunk  # noqa: E402
from ragcourse.corpus import Document  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "book" / "figures"
BLUE, ORANGE, RED, GREY, INK = "#0072B2", "#E69F00", "#D55E00", "#999999", "#222222"
FILLS = ("#cfe6f5", "#fbe3b4")  # light blue and light orange, alternating chunk by chunk
STYLE = {"svg.hashsalt": "ragcourse", "svg.fonttype": "path", "font.family": "DejaVu Sans",
         "font.size": 11, "path.simplify": False}

TOY = Document("toy", "Primer",
               "## Lists\nLists must start a new paragraph. Indent nested items by two spaces.\n\n"
               "A blank line ends a list.\n")
NEEDLE = "Lists must start a new paragraph."
TARGET, OVERLAP = 40, 12
BREAK = TOY.text.index("Indent")  # the display wraps the document into two lines here
FONT = 12.5  # points
CW = 0.602 * FONT / 72  # inches per character; strategies_cut measures the rendered advance
LEFT, LINE, TOP = 1.4, 0.3, 0.25  # inches: label column, line height, top margin


def display_lines(text: str) -> list[tuple[int, str]]:
    """(first offset, shown text) for the two display lines; a newline shows as a pilcrow.

    >>> display_lines("ab\\ncd")[0]
    (0, 'ab¶cd')
    """
    shown = text.rstrip("\n").replace("\n", "¶")
    return [(0, shown[:BREAK]), (BREAK, shown[BREAK:])] if len(shown) > BREAK else [(0, shown)]


def overlap_span(previous: Chunk | None, current: Chunk, overlap: int) -> tuple[int, int] | None:
    """The document span copied from the previous chunk into `current.text`, or None.

    >>> overlap_span(None, TOY_CHUNK, 12) is None
    True
    """
    if previous is None or previous.doc_id != current.doc_id:
        return None
    tail = len(previous.content[-overlap:])
    return previous.end - tail, previous.end


TOY_CHUNK = chunk(TOY, "C", target=TARGET, overlap=OVERLAP)[0]


def _span_on_lines(ax, y0: float, start: int, end: int, draw) -> None:
    """Call draw(x, y, width) for the part of [start, end) that falls on each display line."""
    for row, (first, shown) in enumerate(display_lines(TOY.text)):
        a, b = max(start, first), min(end, first + len(shown))
        if a < b:
            draw(LEFT + (a - first) * CW, y0 + row * LINE, (b - a) * CW)


def _text(ax, y0: float, colour: str = INK) -> None:
    for row, (_, shown) in enumerate(display_lines(TOY.text)):
        ax.text(LEFT, y0 + row * LINE + LINE / 2, shown, fontsize=FONT, fontfamily="DejaVu Sans Mono",
                va="center", ha="left", color=colour)


def _block(ax, y0: float, letter: str) -> None:
    spec = STRATEGIES[letter]
    chunks = chunk(TOY, letter, target=TARGET, overlap=OVERLAP)
    ax.text(0.05, y0 + 0.12, f"{letter}", fontsize=13, fontweight="bold", va="center", color=INK)
    ax.text(0.3, y0 + 0.12, spec.cutter, fontsize=10, va="center", color=INK)
    extras = [w for w, on in (("+ overlap", spec.overlap), ("+ header", spec.header)) if on]
    for n, extra in enumerate(extras):
        ax.text(0.3, y0 + 0.33 + 0.2 * n, extra, fontsize=9.5, va="center",
                color=BLUE if extra == "+ header" else INK)
    previous = None
    for c in chunks:
        fill = FILLS[c.index % 2]
        _span_on_lines(ax, y0, c.start, c.end,
                       lambda x, y, w, f=fill: ax.add_patch(Rectangle((x, y + 0.02), w, LINE - 0.04, color=f)))
        ov = overlap_span(previous, c, OVERLAP) if spec.overlap else None
        if ov:  # copied into this chunk's embedded text only: a hatched bar in this chunk's colour
            _span_on_lines(ax, y0, *ov, lambda x, y, w, f=FILLS[c.index % 2]: ax.add_patch(
                Rectangle((x, y + LINE - 0.07), w, 0.07, facecolor=f, edgecolor=GREY, hatch="////", lw=0.6)))
        if previous is not None:  # the cut: a red bar where the previous chunk ends
            _span_on_lines(ax, y0, previous.end - 1, previous.end,
                           lambda x, y, w: ax.plot([x + w, x + w], [y - 0.02, y + LINE + 0.02], color=RED, lw=2))
        previous = c
    _text(ax, y0)
    start = TOY.text.index(NEEDLE)
    _span_on_lines(ax, y0, start, start + len(NEEDLE),
                   lambda x, y, w: ax.plot([x, x + w], [y + LINE - 0.01] * 2, color=INK, lw=1.2))


def strategies_cut():
    """One row per strategy under the same two-line document: chunks shaded, cuts in red, overlap hatched."""
    global CW
    rows = list(STRATEGIES)
    block = 2 * LINE + 0.32
    width, height = LEFT + 64 * CW + 0.2, TOP + block * len(rows) + 0.65
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    mono = FontProperties(family="DejaVu Sans Mono")
    wide, one = (TextPath((0, 0), "x" * n, size=FONT, prop=mono).get_extents().x1 for n in (61, 1))
    CW = (wide - one) / 60 / 72  # the rendered advance, in inches (= data units here)
    y = TOP
    for letter in rows:
        _block(ax, y, letter)
        y += block
    legend = (f"A toy document, budget {TARGET} characters, overlap {OVERLAP} (the book: 512 and 64).",
              "Shading: one chunk each. Red: a cut. Underlined: the answer sentence. \u00b6: a line break.",
              "Hatched: copied into the next chunk's embedded text only. + header: [Primer > Lists], embedded only.")
    for n, line in enumerate(legend):
        ax.text(0.05, y + 0.05 + 0.2 * n, line, fontsize=9.5, va="center", color=INK)
    return fig


def write_all(out: Path = OUT) -> list[Path]:
    """Draw the chapter's diagram into `out`; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    with plt.rc_context(STYLE):
        fig = strategies_cut()
        path = out / "strategies-cut.svg"
        fig.savefig(path, format="svg", metadata={"Date": None})
        plt.close(fig)
    return [path]


if __name__ == "__main__":
    for written in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(written)
