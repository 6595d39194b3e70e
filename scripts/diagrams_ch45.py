"""Draw chapter 4's and chapter 5's diagrams as SVG files, with matplotlib only.

    python scripts/diagrams_ch45.py [OUT_DIR]      (default: book/figures)

Writes bm25-shape.svg (BM25's term-frequency saturation, k_1, and length normalisation, b),
rrf-example.svg (reciprocal rank fusion of two four-item lists, worked by hand, c = 60) and
rerank-architectures.svg (bi-encoder, cross-encoder, late interaction: what is encoded when, and the
cost per query). The bytes are the same on every run (fixed hash salt, no date);
tests/test_diagrams_ch45.py regenerates them and compares.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "book" / "figures"
BLUE, ORANGE, GREEN, RED, GREY, SKY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#999999", "#56B4E9"
INK = "#222222"
STYLE = {"svg.hashsalt": "ragcourse-ch45", "svg.fonttype": "path", "font.family": "DejaVu Sans",
         "font.size": 10, "axes.edgecolor": INK, "text.color": INK, "axes.labelcolor": INK,
         "xtick.color": INK, "ytick.color": INK}
RRF_C = 60
DENSE, SPARSE = ["A", "B", "C", "D"], ["C", "A", "E", "B"]


def bm25_shape(path: Path) -> None:
    """Left: f (k1 + 1) / (f + k1) against f for three k1. Right: one occurrence's weight against |d|/avgdl."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    f = np.linspace(0, 10, 201)
    for k1, colour in ((0.5, SKY), (1.2, BLUE), (2.0, ORANGE)):
        left.plot(f, f * (k1 + 1) / (f + k1), color=colour, lw=2, label=f"$k_1$ = {k1}")
        left.axhline(k1 + 1, color=colour, lw=0.8, ls=":")
    left.plot(f, f, color=GREY, lw=1, ls="--", label="raw count $f$")
    left.set(xlabel="$f_{t,d}$: times the term occurs in the chunk", ylabel="term-frequency part",
             title="saturation: repeats help less and less", ylim=(0, 3.3), xlim=(0, 10))
    left.legend(fontsize=8, loc="lower right", frameon=False)
    ratio = np.linspace(0.2, 3, 200)
    for b, colour in ((0.0, GREY), (0.75, BLUE), (1.0, RED)):
        right.plot(ratio, 2.2 / (1 + 1.2 * (1 - b + b * ratio)), color=colour, lw=2, label=f"$b$ = {b}")
    right.axvline(1, color=INK, lw=0.6, ls=":")
    right.annotate("average length:\nweight exactly 1", (1, 1), xytext=(1.4, 1.45), fontsize=8,
                   arrowprops={"arrowstyle": "->", "color": INK, "lw": 0.8})
    right.set(xlabel=r"$|d|\,/\,\overline{|d|}$: chunk length over the mean", ylabel="weight of one occurrence",
              title="length normalisation ($k_1$ = 1.2, $f$ = 1)", ylim=(0, 1.9))
    right.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def _box(ax, x, y, w, h, text, colour, size=10, weight="normal"):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor=colour, edgecolor=INK, lw=0.8, alpha=0.9))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight)


def _arrow(ax, start, end, colour=INK, style="-", lw=1.0):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color=colour,
                                 lw=lw, linestyle=style, shrinkA=2, shrinkB=2))


def rrf_scores() -> list[tuple[str, float, str]]:
    """The worked example: (id, fused score, the sum written out), best first, ties by best rank."""
    items = sorted(set(DENSE) | set(SPARSE))
    rows = []
    for item in items:
        ranks = [lst.index(item) + 1 for lst in (DENSE, SPARSE) if item in lst]
        terms = " + ".join(f"1/{RRF_C + r}" for r in ranks)
        rows.append((item, sum(1 / (RRF_C + r) for r in ranks), terms, min(ranks)))
    rows.sort(key=lambda r: (-round(r[1], 6), r[3]))
    return [(item, score, terms) for item, score, terms, _ in rows]


def rrf_example(path: Path) -> None:
    """Two ranked lists joined item by item, and the fused list with each score as a sum."""
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.set(xlim=(0, 8.2), ylim=(0, 5.6))
    ax.axis("off")
    ax.text(0.9, 5.25, "dense", ha="center", weight="bold", color=BLUE)
    ax.text(2.9, 5.25, "BM25", ha="center", weight="bold", color=ORANGE)
    ax.text(6.2, 5.25, f"fused by RRF, c = {RRF_C}", ha="center", weight="bold", color=GREEN)
    ys = [4.4, 3.4, 2.4, 1.4, 0.4]
    for r, (a, b) in enumerate(zip(DENSE, SPARSE, strict=True)):
        ax.text(0.1, ys[r] + 0.3, f"{r + 1}", ha="center", va="center", fontsize=9, color=GREY)
        _box(ax, 0.4, ys[r], 1.0, 0.6, a, "#cfe3f1")
        _box(ax, 2.4, ys[r], 1.0, 0.6, b, "#f8e3bb")
    for r, item in enumerate(DENSE):
        if item in SPARSE:
            s = SPARSE.index(item)
            ax.plot([1.45, 2.35], [ys[r] + 0.3, ys[s] + 0.3], color=GREY, lw=0.8, ls="--")
    for r, (item, score, terms) in enumerate(rrf_scores()):
        _box(ax, 4.6, ys[r], 0.8, 0.6, item, "#cdebdf")
        ax.text(5.6, ys[r] + 0.3, f"{terms} = {score:.6f}", va="center", fontsize=9.5)
    _arrow(ax, (3.6, 2.7), (4.45, 2.7), GREEN, lw=1.5)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


COLUMNS = (
    ("bi-encoder", BLUE, "#cfe3f1",
     ["passage → encoder → 1 vector", "(every chunk, once)"],
     ["query → encoder → 1 vector", "dot product with every chunk vector"],
     "1 query pass + N dot products"),
    ("cross-encoder", RED, "#f6d2bf",
     ["nothing to precompute", ""],
     ["[query ; passage] → encoder → score", "once per candidate: attention across both"],
     "25 full passes (one per pair)"),
    ("late interaction", GREEN, "#cdebdf",
     ["passage → encoder → 1 vector per token", "(every chunk, once; stored)"],
     ["query → encoder → 1 vector per token", "MaxSim: Σ_i max_j  q_i · p_j"],
     "1 query pass + one matrix product"),
)


def rerank_architectures(path: Path) -> None:
    """Three columns: what each design encodes at indexing time, at query time, and its cost per query."""
    fig, ax = plt.subplots(figsize=(10, 4.6))
    ax.set(xlim=(0, 12), ylim=(0, 6.2))
    ax.axis("off")
    ax.text(0.05, 4.55, "indexing\ntime", fontsize=9, color=GREY, va="center")
    ax.text(0.05, 2.55, "query\ntime", fontsize=9, color=GREY, va="center")
    ax.text(0.05, 0.7, "cost per\nquery", fontsize=9, color=GREY, va="center")
    for i, (title, ink, fill, index_lines, query_lines, cost) in enumerate(COLUMNS):
        x = 1.2 + i * 3.6
        ax.text(x + 1.6, 5.85, title, ha="center", weight="bold", color=ink, fontsize=11)
        _box(ax, x, 4.05, 3.3, 1.0, "\n".join(index_lines), fill, size=8.5)
        _box(ax, x, 2.05, 3.3, 1.0, "\n".join(query_lines), fill, size=8.5)
        _box(ax, x, 0.3, 3.3, 0.8, cost, "white", size=8.5, weight="bold")
        _arrow(ax, (x + 1.65, 4.0), (x + 1.65, 3.1), ink, style="--" if i == 1 else "-")
        _arrow(ax, (x + 1.65, 2.0), (x + 1.65, 1.15), ink)
    ax.text(6.0, 3.55, "(cross-encoder: the passage waits for the query)", ha="center", fontsize=8, color=RED)
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


DRAWINGS = {"bm25-shape.svg": bm25_shape, "rrf-example.svg": rrf_example,
            "rerank-architectures.svg": rerank_architectures}


def write_all(out: Path = OUT) -> list[Path]:
    """Draw every diagram into `out`; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with plt.rc_context(STYLE):
        for name, draw in DRAWINGS.items():
            draw(out / name)
            written.append(out / name)
    return written


if __name__ == "__main__":
    for p in write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(p)
