"""Do two question sets rank the methods alike? Kendall's tau between method orderings, bootstrapped (chapter 12).

Each set gives every method a mean score over its questions (MRR, R@k); the methods' order in one set is
compared with their order in another by Kendall's tau-b (`scipy.stats.kendalltau`, ties counted as ties).
The means are rounded to `precision.PUBLISHED` places first, so a difference no reader sees decides no order.
Its uncertainty: resample each set's questions with replacement (the same draw for every method of a set,
since a question is scored by every method), recompute the means and tau, and take percentiles (values tau
took, not interpolated between them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
from scipy.stats import kendalltau

from .precision import PUBLISHED


class TauInterval(NamedTuple):
    """Kendall's tau of two sets' method orderings, its bootstrap percentile interval, and the resamples
    where tau is undefined (every method tied in one set) and left out."""

    tau: float
    low: float
    high: float
    resamples: int
    undefined: int


def _matrix(scores: Mapping[str, Sequence[float]], methods: Sequence[str]) -> np.ndarray:
    """Methods x questions, checked: every method scored on the same number of questions."""
    rows = [np.asarray(scores[m], dtype=float) for m in methods]
    if len({len(r) for r in rows}) != 1 or len(rows[0]) == 0:
        raise ValueError("every method needs a score for each question of the set, and the set questions")
    return np.vstack(rows)


def order_tau(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Kendall's tau-b between the methods' mean scores in two sets (same methods), rounded means.

    >>> order_tau({"bm25": 0.5, "dense": 0.6, "hybrid": 0.7}, {"bm25": 0.4, "dense": 0.3, "hybrid": 0.8})
    0.333
    >>> order_tau({"x": 0.1, "y": 0.2}, {"x": 0.9, "y": 0.8})
    -1.0
    """
    if set(a) != set(b) or len(a) < 2:
        raise ValueError(f"both sets need the same two or more methods, got {sorted(a)} and {sorted(b)}")
    methods = sorted(a)
    tau = kendalltau([round(a[m], PUBLISHED) for m in methods], [round(b[m], PUBLISHED) for m in methods])[0]
    return round(float(tau), PUBLISHED)


def tau_interval(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]], resamples: int = 2000,
                 seed: int = 12, confidence: float = 0.95) -> TauInterval:
    """`order_tau` of two sets' per-question scores (method -> one score per question of the set), with a
    bootstrap interval over each set's questions.

    >>> a = {"m1": [0, 0, 1, 1], "m2": [1, 1, 1, 0], "m3": [1, 1, 1, 1]}
    >>> b = {"m1": [0, 1, 0], "m2": [1, 1, 0], "m3": [1, 1, 1]}
    >>> tau_interval(a, b, resamples=200).tau
    1.0
    """
    if set(a) != set(b):
        raise ValueError(f"both sets need the same methods, got {sorted(a)} and {sorted(b)}")
    methods = sorted(a)
    ma, mb = _matrix(a, methods), _matrix(b, methods)
    point = order_tau(dict(zip(methods, ma.mean(axis=1), strict=True)),
                      dict(zip(methods, mb.mean(axis=1), strict=True)))
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(resamples):
        ra = ma[:, rng.integers(0, ma.shape[1], ma.shape[1])].mean(axis=1)
        rb = mb[:, rng.integers(0, mb.shape[1], mb.shape[1])].mean(axis=1)
        taus.append(order_tau(dict(zip(methods, ra, strict=True)), dict(zip(methods, rb, strict=True))))
    taus = np.asarray(taus)
    defined = taus[~np.isnan(taus)]
    tail = (1 - confidence) / 2 * 100
    if not len(defined):
        return TauInterval(point, np.nan, np.nan, resamples, resamples)
    # tau takes few values (steps of 1/3 for four methods): the interval's ends are values it took
    low, high = np.percentile(defined, tail, method="lower"), np.percentile(defined, 100 - tail, method="higher")
    return TauInterval(point, round(float(low), PUBLISHED), round(float(high), PUBLISHED), resamples,
                       int(np.isnan(taus).sum()))
