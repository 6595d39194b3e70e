"""The distance gate: the one part of a RAG pipeline that can say "no answer" (chapter 6).

A retriever always returns something: it sorts the whole index and hands back the top of the
list whether or not the answer is in the corpus. `gate` keeps at most `k` hits whose cosine
distance is *strictly* below a cut and returns `NoAnswer` when none passes, so the generator is
never called on evidence that is merely "the least far away". `sweep` measures the trade a cut
makes, with the column most teams never compute: bluffs, out-of-domain questions answered anyway.

Leaves out: choosing the cut for you (that is a product decision about the cost of a wrong answer),
per-query adaptive cuts, and score calibration of rerankers (the gate reads cosine distances only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from .evaluation import contains_needle

if TYPE_CHECKING:
    from .dense import Hit

#: Columns of `sweep`, in order; "bluffed" is last on purpose (read it first).
SWEEP_COLUMNS = (
    "cut",
    "answered_with_needle",
    "answered_without_needle",
    "wrongly_refused",
    "ood_refused",
    "bluffed",
)


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


def _check_cut_and_k(cut: float, k: int) -> None:
    """Reject a NaN cut (every comparison with NaN is False) and a k below 1."""
    if isinstance(cut, bool) or not isinstance(cut, int | float) or math.isnan(cut):
        raise ValueError(f"cut must be a number (a cosine distance, or math.inf); got {cut!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1; got {k!r}")


def gate(hits: Sequence[Hit], cut: float, k: int = 4, query: str = "") -> Answered | NoAnswer:
    """Keep at most `k` hits with `distance < cut`, in rank order; otherwise `NoAnswer`.

    The boundary is refused: a hit at exactly `distance == cut` does not pass. `cut=math.inf`
    is "no threshold" (every hit passes, so out-of-domain questions are always answered).

    Example: distances 0.40, 0.60, 0.70 at ranks 1, 2, 3 with cut=0.65 -> Answered keeping
    ranks 1 and 2; the same hits with cut=0.40 -> NoAnswer(cut=0.4, nearest_distance=0.4).
    """
    _check_cut_and_k(cut, k)
    ordered = sorted(hits, key=lambda h: h.rank)
    kept = tuple(h for h in ordered if h.distance < cut)[:k]
    if kept:
        return Answered(query=query, cut=cut, hits=kept)
    nearest = min((h.distance for h in ordered), default=None)
    return NoAnswer(query=query, cut=cut, nearest_distance=nearest)


def _has_needle(hits: Sequence[Hit], needle: str) -> bool:
    """True when some kept chunk's own `content` contains the needle (whitespace collapsed)."""
    return any(contains_needle(h.chunk.content, needle) for h in hits)


def _sweep_row(
    in_domain: Sequence[tuple[Sequence[Hit], str]],
    out_of_domain: Sequence[Sequence[Hit]],
    cut: float,
    k: int,
) -> dict[str, float | int]:
    """Count the five outcomes at one cut."""
    row: dict[str, float | int] = dict.fromkeys(SWEEP_COLUMNS, 0)
    row["cut"] = cut
    for hits, needle in in_domain:
        result = gate(hits, cut, k)
        if isinstance(result, NoAnswer):
            row["wrongly_refused"] += 1
        elif _has_needle(result.hits, needle):
            row["answered_with_needle"] += 1
        else:
            row["answered_without_needle"] += 1
    for hits in out_of_domain:
        refused = isinstance(gate(hits, cut, k), NoAnswer)
        row["ood_refused" if refused else "bluffed"] += 1
    return row


def sweep(
    in_domain: Sequence[tuple[Sequence[Hit], str]],
    out_of_domain: Sequence[Sequence[Hit]],
    cuts: Sequence[float],
    k: int = 4,
) -> pd.DataFrame:
    """Run the real gate at every cut and count what happens, one row per cut.

    `in_domain` holds `(hits, needle)` pairs (the question has an answer in the corpus);
    `out_of_domain` holds hit lists for questions the corpus cannot answer. Per cut:
    `answered_with_needle` + `answered_without_needle` + `wrongly_refused` = len(in_domain) and
    `ood_refused` + `bluffed` = len(out_of_domain). The needle is looked for in the kept chunks'
    own `content` only, so a needle that appears only in a header does not count.
    """
    if not cuts:
        raise ValueError("cuts must hold at least one cut; got an empty sequence")
    rows = [_sweep_row(in_domain, out_of_domain, cut, k) for cut in cuts]
    return pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))
