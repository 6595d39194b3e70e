"""Reciprocal rank fusion: combine rankings by rank, never by score (chapter 4).

What it implements: RRF (Cormack, Clarke & Buettcher, "Reciprocal Rank Fusion outperforms
Condorcet and individual Rank Learning Methods", SIGIR 2009) and a weighted variant. Cosine
distances and BM25 scores live on different, unbounded scales; RRF throws the scores away and adds
``1 / (c + rank)`` for every list an id appears in, so there is nothing to calibrate. The constant is
``c`` (60), as on the book's notation page: ``k`` is always a ranking cut-off (the paper and Qdrant call it k).

Fused scores are rounded to `ragcourse.precision.DECIMALS` (6) places, like every score the course
ranks by, so a difference below 1e-6 never decides an order. Equal fused scores are ordered by the
best (smallest) rank the id reached in any list, then by first appearance (list 0 top to bottom,
then list 1, ...), not by the ids themselves, so ids need only be hashable, not comparable.

What it leaves out: score-based fusion (CombSUM, min-max normalisation) and learned weights.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import NamedTuple

from .precision import DECIMALS

#: RRF's constant c: a list adds 1 / (c + rank) for an id at `rank` (Cormack et al. use 60).
RRF_C = 60


class Fused(NamedTuple):
    """One fused id: its RRF score and the best rank (from 1) it reached in any input list."""

    id: Hashable
    score: float
    best_rank: int


def _check(lists: Sequence[Sequence[Hashable]], weights: Sequence[float], c: float) -> None:
    if not (isinstance(c, int | float) and math.isfinite(c) and c > 0):
        raise ValueError(f"c={c!r}: expected a finite number > 0 (conventionally 60)")
    if len(weights) != len(lists):
        raise ValueError(f"{len(weights)} weights for {len(lists)} lists: expected one per list")
    bad = [w for w in weights if not (math.isfinite(w) and w >= 0)]
    if bad:
        raise ValueError(f"weights {bad!r}: expected finite numbers >= 0")
    for i, ranking in enumerate(lists):
        if len(set(ranking)) != len(ranking):
            raise ValueError(f"list {i} repeats an id: expected rankings without duplicates")


def fuse(
    lists: Sequence[Sequence[Hashable]], c: float = RRF_C, weights: Sequence[float] | None = None
) -> list[Fused]:
    """Weighted RRF with scores: ``score(d) = sum_i w_i / (c + rank_i(d))``, rank from 1.

    Lists that do not contain ``d`` add nothing. Best first; ties as in the module docstring.

    >>> fuse([["a", "b"], ["b", "c"]], c=60)[0]
    Fused(id='b', score=0.032522, best_rank=1)

    (``1/(60+2) + 1/(60+1)`` = 0.0325224..., rounded to 6 places: "b" is second in one list and first
    in the other.)
    """
    weights = [1.0] * len(lists) if weights is None else list(weights)
    _check(lists, weights, c)
    score: dict[Hashable, float] = {}
    best: dict[Hashable, int] = {}
    for ranking, w in zip(lists, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + w / (c + rank)
            best[item] = min(best.get(item, rank), rank)
    score = {item: round(value, DECIMALS) for item, value in score.items()}
    first_seen = {item: i for i, item in enumerate(score)}  # dict keeps insertion order
    order = sorted(score, key=lambda d: (-score[d], best[d], first_seen[d]))
    return [Fused(d, score[d], best[d]) for d in order]


def rrf(lists: Sequence[Sequence[Hashable]], c: float = RRF_C) -> list[Hashable]:
    """Reciprocal rank fusion: ids best first by ``sum_i 1 / (c + rank_i(d))`` (rank from 1).

    Worked example, c = 60: 1 scores ``1/61 + 1/62``, 3 scores ``1/63 + 1/61`` and 2 scores ``1/62``.

    >>> rrf([[1, 2, 3], [3, 1]])
    [1, 3, 2]
    """
    return [f.id for f in fuse(lists, c)]


def weighted_rrf(
    lists: Sequence[Sequence[Hashable]], weights: Sequence[float], c: float = RRF_C
) -> list[Hashable]:
    """RRF with one weight per list: ``sum_i w_i / (c + rank_i(d))``.

    Worked example, c = 60: "a" scores ``2/61 + 1/62``, "b" scores ``2/62 + 1/61``.

    >>> weighted_rrf([["a", "b"], ["b", "a"]], [2, 1])
    ['a', 'b']
    """
    return [f.id for f in fuse(lists, c, weights)]
