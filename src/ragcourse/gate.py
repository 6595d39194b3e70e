"""The distance gate: the one part of a RAG pipeline that can say "no answer" (chapter 6).

A retriever always returns something: it sorts the whole index and hands back the top of the
list whether or not the answer is in the corpus. `gate` keeps at most `k` hits whose cosine
distance is *strictly* below a cut and returns `NoAnswer` when none passes, so the generator is
never called on evidence that is merely "the least far away". What a cut costs is measured
elsewhere: `ragcourse.evaluation.sweep` runs this gate at many cuts and counts the bluffs.
`SignalGate` generalises the cut to a linear score of several signals (`ragcourse.signals`); the
distance cut and the combined gate that chapter 6 fits are both stored here as constants.

Leaves out: choosing the cut for you (that is a product decision about the cost of a wrong answer),
per-query adaptive cuts, and score calibration of rerankers (the gate reads cosine distances only).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .counts import check_k

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


@dataclass(frozen=True)
class SignalGate:
    """A gate on several signals: answer when `score` (a linear log-odds of "answerable") is above `threshold`.

    score = bias + sum_i weights[i] * (signal[names[i]] - means[i]) / scales[i], rounded to 4 places.
    The distance cut t is the one-signal case: names ("distance",), weight -1, threshold -t.

    >>> SignalGate(("distance",), (0.0,), (1.0,), (-1.0,), 0.0, -0.575).answers({"distance": 0.5})
    True
    """

    names: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def __post_init__(self) -> None:
        sizes = {len(self.names), len(self.means), len(self.scales), len(self.weights)}
        if len(sizes) != 1 or not self.names or any(not s > 0 for s in self.scales):
            raise ValueError(f"names {self.names}, means, scales {self.scales}, weights: expected equal, "
                             "non-zero lengths and scales > 0")

    def score(self, signals: Mapping[str, float]) -> float:
        """The gate's score for one query's signals (a mapping with at least `names`)."""
        missing = [n for n in self.names if n not in signals]
        if missing:
            raise ValueError(f"signals {sorted(signals)} lack {missing}: the gate reads {list(self.names)}")
        columns = zip(self.names, self.means, self.scales, self.weights, strict=True)
        terms = (w * (signals[n] - m) / s for n, m, s, w in columns)
        return round(self.bias + sum(terms), 4) + 0.0

    def answers(self, signals: Mapping[str, float]) -> bool:
        """True when the score is strictly above the threshold (the boundary is refused, as in `gate`)."""
        return self.score(signals) > self.threshold


#: Chapter 6's distance cut for a cheap wrong answer: the smallest grid cut refusing at most 5 % of the
#: answerable queries.
CHEAP_CUT = 0.575
DISTANCE_GATE = SignalGate(("distance",), (0.0,), (1.0,), (-1.0,), 0.0, -CHEAP_CUT)
#: Chapter 6's combined gate: logistic regression on the distance and the late-interaction reranker's best
#: per-token score, fitted on the original 64 answerable and 30 out-of-domain queries (coefficients rounded);
#: threshold chosen to refuse no more of those 64 than `CHEAP_CUT` does. Read with `ragcourse.signals.measure`.
COMBINED_GATE = SignalGate(("distance", "rerank_top"), (0.4503, 0.5627), (0.1737, 0.146), (-0.756, 1.413),
                           1.221, -0.462)
#: The gate the chapter recommends and `ragcourse query --gate` applies: on the held-out queries the
#: combined gate did not bluff less than the distance cut, so the simpler gate stays.
RECOMMENDED_GATE = DISTANCE_GATE
