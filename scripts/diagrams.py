"""Draw the book's three diagrams as SVG files, with matplotlib only (no outside host, no graphviz).

    python scripts/diagrams.py [OUT_DIR]      (default: book/figures)

Writes pipeline.svg (chunk -> index -> retrieve -> fuse -> rerank -> gate -> cite), text-content.svg
(a chunk's embedded `text` = header + overlap + `content`) and gate-outcomes.svg (the gate's five
outcomes, as `ragcourse.evaluation.sweep` counts them). The bytes are the same on every run: the SVG
ids come from a fixed hash salt, the file carries no date, and every style is set here, not read
from a matplotlibrc. tests/test_diagrams.py regenerates them and compares the bytes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "book" / "figures"
# Colour-blind-safe (Okabe-Ito); every colour is also said in words on the diagram.
BLUE, ORANGE, GREEN, RED, GREY, SKY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#999999", "#56B4E9"
INK = "#222222"
STYLE = {
    "svg.hashsalt": "ragcourse",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 12,
    "path.simplify": False,
}


def _box(ax, x, y, w, h, label, colour, sub="", fontsize=13, text_colour="white"):
    """A rounded box centred on (x, y), a bold label and an optional smaller line under it."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor=colour, edgecolor=INK, linewidth=1.2))
    dy = 0.13 if sub else 0.0
    ax.text(x, y + dy, label, ha="center", va="center", fontsize=fontsize, fontweight="bold", color=text_colour)
    if sub:
        ax.text(x, y - 0.17, sub, ha="center", va="center", fontsize=fontsize - 3.5, color=text_colour)


def _arrow(ax, start, end, colour=INK, style="-|>", **kw):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=16, linewidth=1.5,
                                 color=colour, shrinkA=0, shrinkB=0, **kw))


def _canvas(width: float, height: float, xlim: float, ylim: float, y0: float = 0.0):
    fig, ax = plt.subplots(figsize=(width, height))
    ax.set_xlim(0, xlim)
    ax.set_ylim(y0, y0 + ylim)
    ax.set_axis_off()
    fig.subplots_adjust(0, 0, 1, 1)
    return fig, ax


def pipeline():
    """The seven steps, each with the chapter that builds it; the gate's refusal branches off."""
    steps = [("chunk", "ch. 2"), ("index", "ch. 3, 8"), ("retrieve", "dense, BM25"), ("fuse", "RRF, ch. 4"),
             ("rerank", "ch. 5"), ("gate", "ch. 6"), ("cite", "ch. 7")]
    fig, ax = _canvas(8.4, 2.73, 10.0, 3.25, y0=-0.15)
    w, h, y = 1.15, 0.85, 2.0
    xs = [0.75 + i * 1.42 for i in range(len(steps))]
    for i, (x, (name, sub)) in enumerate(zip(xs, steps, strict=True)):
        colour = GREY if i < 2 else (RED if name == "gate" else BLUE)
        _box(ax, x, y, w, h, name, colour, sub)
        if i:
            _arrow(ax, (xs[i - 1] + w / 2, y), (x - w / 2, y))
    ax.text((xs[0] + xs[1]) / 2, 2.75, "once, ahead of time", ha="center", fontsize=10.5, color=INK)
    ax.text((xs[2] + xs[-1]) / 2, 2.75, "for every query", ha="center", fontsize=10.5, color=INK)
    ax.plot([xs[0] - w / 2, xs[1] + w / 2], [2.62, 2.62], color=GREY, linewidth=2)
    ax.plot([xs[2] - w / 2, xs[-1] + w / 2], [2.62, 2.62], color=BLUE, linewidth=2)
    for x, label, colour in ((xs[0], "documents", INK), (xs[2], "query", INK)):
        ax.text(x, 0.5, label, ha="center", va="center", fontsize=11.5, fontweight="bold", color=colour)
        _arrow(ax, (x, 0.72), (x, y - h / 2))
    for x, label, sub, colour in ((xs[5], "NO ANSWER", "nothing close\nenough", RED),
                                  (xs[-1], "answer", "+ the exact\npassages", INK)):
        _arrow(ax, (x, y - h / 2), (x, 0.75), colour=colour)
        ax.text(x, 0.5, label, ha="center", va="center", fontsize=11.5, fontweight="bold", color=colour)
        ax.text(x, 0.36, sub, ha="center", va="top", fontsize=9.5, color=INK, linespacing=1.2)
    ax.text(xs[3] - w / 2, 1.05, "grey: built offline, stored on disk\nblue: runs for each query\nred: may refuse",
            ha="left", va="top", fontsize=9.5, color=INK, linespacing=1.4)
    return fig


def _segment(ax, x0, x1, y, h, colour, label, text_colour="white", hatch=None):
    ax.add_patch(FancyBboxPatch((x0, y), x1 - x0, h, boxstyle="square,pad=0", facecolor=colour, edgecolor=INK,
                                linewidth=1.2, hatch=hatch))
    ax.text((x0 + x1) / 2, y + h / 2, label, ha="center", va="center", fontsize=10.5, color=text_colour,
            fontfamily="DejaVu Sans Mono")


def _brace(ax, x0, x1, y, label, below=True, colour=INK):
    """A square bracket under (or over) [x0, x1] with a label."""
    d = -0.12 if below else 0.12
    y = y + d / 2
    ax.plot([x0 + 0.04, x0 + 0.04, x1 - 0.04, x1 - 0.04], [y, y + d, y + d, y], color=colour, linewidth=1.4)
    ax.text((x0 + x1) / 2, y + 2.6 * d, label, ha="center", va="top" if below else "bottom", fontsize=10.5,
            color=colour)


def text_content():
    """Top: the document, two neighbouring chunks. Bottom: what chunk i embeds, and what it quotes."""
    fig, ax = _canvas(8.4, 3.1, 10.0, 3.7, y0=0.7)
    ax.text(0.2, 4.15, "document.text", ha="left", fontsize=11.5, fontweight="bold", color=INK)
    y_doc, h = 3.35, 0.5
    _segment(ax, 0.2, 1.2, y_doc, h, "white", "…", text_colour=INK)
    _segment(ax, 1.2, 4.4, y_doc, h, SKY, "chunk i−1", text_colour=INK)
    _segment(ax, 4.4, 9.0, y_doc, h, GREEN, "chunk i: [start, end)")
    _segment(ax, 9.0, 9.8, y_doc, h, "white", "…", text_colour=INK)
    ax.add_patch(FancyBboxPatch((3.6, y_doc), 0.8, h, boxstyle="square,pad=0", facecolor="none", edgecolor=ORANGE,
                                linewidth=2.5))
    ax.text(4.0, y_doc + h + 0.12, "last 64 chars", ha="center", fontsize=9.5, color=INK)

    ax.text(0.2, 2.35, "chunk i's text (what is embedded)", ha="left", fontsize=11.5, fontweight="bold", color=INK)
    y_txt = 1.45
    _segment(ax, 0.2, 3.0, y_txt, h, GREY, "[Title > Section]⏎")
    _segment(ax, 3.0, 4.4, y_txt, h, ORANGE, "overlap", text_colour=INK)
    _segment(ax, 4.4, 9.0, y_txt, h, GREEN, "content")
    _arrow(ax, (4.0, y_doc), (3.7, y_txt + h), colour=ORANGE)
    _arrow(ax, (6.7, y_doc), (6.7, y_txt + h), colour=GREEN)
    _brace(ax, 0.2, 3.0, y_txt, "header (E, F)")
    _brace(ax, 3.0, 4.4, y_txt, "overlap (B, D, F)")
    _brace(ax, 4.4, 9.0, y_txt, "content = document.text[start:end]\nwhat a citation quotes")
    ax.text(9.8, 2.35, "header + overlap + content = text", ha="right", fontsize=10.5, color=INK)
    return fig


def gate_outcomes():
    """Two kinds of question, two gate decisions, five outcomes (the columns of the sweep table)."""
    fig, ax = _canvas(8.4, 3.86, 10.0, 4.6)
    _box(ax, 5.0, 4.1, 3.6, 0.6, "query → top k hits → gate", GREY, fontsize=12)
    _box(ax, 2.5, 2.95, 3.1, 0.75, "in-domain", BLUE, "the corpus holds the answer", fontsize=12)
    _box(ax, 7.7, 2.95, 3.1, 0.75, "out-of-domain", BLUE, "the corpus cannot answer", fontsize=12)
    _arrow(ax, (4.2, 3.8), (2.9, 3.33))
    _arrow(ax, (5.8, 3.8), (7.3, 3.33))
    leaves = [  # x, title, column name, colour, text colour, parent x, edge label
        (1.0, "answered,\nneedle kept", "answered_with_needle", GREEN, "white", 2.5, "passes"),
        (3.0, "answered,\nno needle", "answered_without_needle", ORANGE, INK, 2.5, "passes"),
        (5.0, "wrongly\nrefused", "wrongly_refused", ORANGE, INK, 2.5, "refused"),
        (7.0, "refused", "ood_refused", GREEN, "white", 7.7, "refused"),
        (9.0, "bluffed", "bluffed", RED, "white", 7.7, "passes"),
    ]
    y_leaf = 1.2
    for x, title, column, colour, tc, parent, edge in leaves:
        ax.add_patch(FancyBboxPatch((x - 0.85, y_leaf - 0.5), 1.7, 1.0, boxstyle="round,pad=0.02,rounding_size=0.08",
                                    facecolor=colour, edgecolor=INK, linewidth=1.2))
        ax.text(x, y_leaf + 0.08, title, ha="center", va="center", fontsize=11, fontweight="bold", color=tc,
                linespacing=1.15)
        ax.text(x, y_leaf - 0.72, column, ha="center", va="center", fontsize=8.5, color=INK,
                fontfamily="DejaVu Sans Mono")
        _arrow(ax, (parent, 2.57), (x, y_leaf + 0.5))
        on_edge = parent + (2.57 - 2.1) / (2.57 - y_leaf - 0.5) * (x - parent)
        right = x >= parent
        ax.text(on_edge + (0.15 if right else -0.15), 2.1, edge, ha="left" if right else "right", va="center",
                fontsize=9.5, color=INK)
    ax.text(0.15, 0.18, "green: the right outcome   orange: a miss the user can see   red: a confident wrong answer",
            ha="left", va="center", fontsize=9.5, color=INK)
    return fig


DIAGRAMS: dict[str, Callable[[], plt.Figure]] = {
    "pipeline": pipeline,
    "text-content": text_content,
    "gate-outcomes": gate_outcomes,
}


def write_all(out: Path = OUT) -> list[Path]:
    """Draw every diagram into `out` as <name>.svg; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(STYLE)
        for name, draw in DIAGRAMS.items():
            fig = draw()
            path = out / f"{name}.svg"
            fig.savefig(path, format="svg", metadata={"Date": None})
            plt.close(fig)
            written.append(path)
    return written


if __name__ == "__main__":
    for p in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(p)
