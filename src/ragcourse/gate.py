"""The distance gate: the one part of a RAG pipeline that can say "no answer" (chapter 6).

A retriever always returns something: it sorts the whole index and hands back the top of the
list whether or not the answer is in the corpus. `gate` keeps at most `k` hits whose cosine
distance is *strictly* below a cut and returns `NoAnswer` when none passes, so the generator is
never called on evidence that is merely "the least far away". What a cut costs is measured
elsewhere: `ragcourse.evaluation.sweep` runs this gate at many cuts and counts the bluffs.

Leaves out: choosing the cut for you (that is a product decision about the cost of a wrong answer),
per-query adaptive cuts, and score calibration of rerankers (the gate reads cosine distances only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .dense import check_k

if TYPE_CHECKING:
    from .dense import Hit


@dataclass(frozen=True)
class Answered:
    """The gate let evidence through: `hits` are the kept hits, in rank order (at most k)."""

    query: str
    cut: float
    hits: tuple[Hit, ...]


@dataclass(frozen=True)
class NoAnswer:
    """Nothing was under the cut; `nearest_distance` is the best distance seen (None: no hits)."""

    query: str
    cut: float
    nearest_distance: float | None

    def __str__(self) -> str:
        return f'NO ANSWER: nothing under cosine distance {self.cut:.3f} for "{self.query}"'


def _check_cut(cut: float) -> None:
    """Reject a cut that is not a number, and NaN (every comparison with NaN is False)."""
    if isinstance(cut, bool) or not isinstance(cut, int | float) or math.isnan(cut):
        raise ValueError(f"cut={cut!r}: expected a number (a cosine distance, or math.inf)")


def gate(hits: Sequence[Hit], cut: float, k: int = 4, query: str = "") -> Answered | NoAnswer:
    """Keep at most `k` hits with `distance < cut`, in rank order; otherwise `NoAnswer`.

    The boundary is refused: a hit at exactly `distance == cut` does not pass. `cut=math.inf`
    is "no threshold" (every hit passes, so out-of-domain questions are always answered).

    Example: distances 0.40, 0.60, 0.70 at ranks 1, 2, 3 with cut=0.65 -> Answered keeping
    ranks 1 and 2; the same hits with cut=0.40 -> NoAnswer(cut=0.4, nearest_distance=0.4).
    """
    _check_cut(cut)
    check_k(k)
    ordered = sorted(hits, key=lambda h: h.rank)
    kept = tuple(h for h in ordered if h.distance < cut)[:k]
    if kept:
        return Answered(query=query, cut=cut, hits=kept)
    nearest = min((h.distance for h in ordered), default=None)
    return NoAnswer(query=query, cut=cut, nearest_distance=nearest)
