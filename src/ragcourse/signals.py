"""Signals a gate can read beside the distance, and the logistic fit that combines them (chapter 6).

Per query, on the dense top `k` of a strategy (the chunks a gate would keep) and the reranker's view of
the dense top `depth`:

- `distance`: cosine distance of the best dense hit (what the distance gate reads);
- `rerank_top`: the reranker's score of its best passage, per query token (late interaction sums one
  cosine per query token, so a long ticket would otherwise score higher than a short question);
- `rerank_margin`: `rerank_top` minus the mean per-token score of the next `MARGIN_HITS` passages;
- `coverage`: the share of the query's content words (`ragcourse.words.query_words`) found
  in the kept chunks' text;
- `agreement`: the share of the dense top `k` that BM25's top `k` also holds.

Every signal is rounded to `DECIMALS` places where it is made, so no decision downstream depends on
float noise that differs between CPUs. `fit_logistic` fits the combined gate (`ragcourse.gate.SignalGate`).
What it leaves out: stemming (``table`` and ``tables`` are different content words), an LLM's yes/no
judgement, and any calibration of the combined score into a probability one could trust out of sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from . import precision
from .bm25 import tokenize
from .words import query_words

#: Decimal places every signal keeps (4: a flip needs float noise within 1e-7 of a boundary 1e-4 wide).
DECIMALS = 4
#: How many passages after the reranker's best one its margin is measured against.
MARGIN_HITS = 3
#: The signals, in the order of `Signals`' fields; `HIGHER_ANSWERS[name]` is False when a low value argues
#: for answering.
NAMES = ("distance", "rerank_top", "rerank_margin", "coverage", "agreement")
HIGHER_ANSWERS = {"distance": False, "rerank_top": True, "rerank_margin": True, "coverage": True, "agreement": True}


@dataclass(frozen=True)
class Signals:
    """One query's gate signals, each rounded to `DECIMALS` places."""

    distance: float
    rerank_top: float
    rerank_margin: float
    coverage: float
    agreement: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def coverage(query: str, texts: Sequence[str]) -> float:
    """Share of the query's content words that occur (as tokens) in any of `texts`; 0 without content words.

    >>> coverage("add a caption to a figure", ["A figure may have a caption."])
    0.6667
    """
    wanted = query_words(query)
    found = {w for t in texts for w in tokenize(t)}
    return round(len(wanted & found) / len(wanted), DECIMALS) if wanted else 0.0


def agreement(first: Sequence[int], second: Sequence[int], k: int) -> float:
    """Share of the first ranking's top k that the second ranking's top k also holds.

    >>> agreement([3, 1, 7, 2], [1, 9, 3, 8], k=4)
    0.5
    """
    if k < 1:
        raise ValueError(f"k={k!r}: expected an integer >= 1")
    return round(len(set(first[:k]) & set(second[:k])) / k, DECIMALS)


def margin(scores: Sequence[float], following: int = MARGIN_HITS) -> float:
    """The best score minus the mean of the next `following` scores (scores in any order; 0 for one score).

    >>> margin([0.5, 0.9, 0.7, 0.6, 0.1])
    0.3
    """
    ordered = np.sort(np.asarray(scores, dtype=np.float64))[::-1]
    if len(ordered) == 0:
        raise ValueError("scores is empty: expected at least one score")
    rest = ordered[1:1 + following]
    return round(float(ordered[0] - rest.mean()) if len(rest) else 0.0, DECIMALS)


def nearest_distance(retriever, query: str) -> float:
    """The `distance` signal alone: cosine distance of the query's best dense hit, rounded to `DECIMALS`."""
    return round(float(retriever.dense.distances(retriever.query_vector(query)).min()), DECIMALS)


def measure(retriever, reranker, query: str, k: int = 4, depth: int = 25) -> Signals:
    """The five signals of one query: dense top `k` (strategy of `retriever`), reranker over the dense top `depth`.

    A reranker with `query_tokens` (late interaction) has its scores divided by the query's token count.
    """
    dense = retriever.rank(query, "dense")
    shortlist = [retriever.chunks[i] for i in dense[:max(k, depth)]]
    field = getattr(reranker, "use", "text")
    scores = np.asarray(reranker.score(query, [getattr(c, field) for c in shortlist]), dtype=np.float64)
    per_token = len(reranker.query_tokens(query)) if hasattr(reranker, "query_tokens") else 1
    scores = precision.rounded_scores(scores / per_token)
    return Signals(
        distance=nearest_distance(retriever, query),
        rerank_top=round(float(scores.max()), DECIMALS),
        rerank_margin=margin(scores),
        coverage=coverage(query, [c.text for c in shortlist[:k]]),
        agreement=agreement(dense, retriever.rank(query, "bm25"), k),
    )


def matrix(signals: Sequence[Signals], names: Sequence[str] = NAMES) -> np.ndarray:
    """The chosen signals as a float64 array, one row per query (columns in the order of `names`)."""
    unknown = [n for n in names if n not in NAMES]
    if unknown or not names:
        raise ValueError(f"names={list(names)!r}: expected a non-empty list drawn from {list(NAMES)}")
    return np.array([[getattr(s, n) for n in names] for s in signals], dtype=np.float64).reshape(len(signals), -1)



def oriented(name: str, signals: Sequence[Signals]) -> np.ndarray:
    """One signal over `signals`, signed so that higher always argues for answering (`HIGHER_ANSWERS`).

    >>> rows = [Signals(0.25, 1.0, 0.5, 0.3, 0.5), Signals(0.5, 2.0, 0.1, 0.1, 0.0)]
    >>> oriented("distance", rows).tolist(), oriented("rerank_top", rows).tolist()
    ([-0.25, -0.5], [1.0, 2.0])
    """
    return (1 if HIGHER_ANSWERS[name] else -1) * matrix(signals, [name])[:, 0]

def fit_logistic(x: np.ndarray, y: Sequence[bool], penalty: float = 1.0,
                 iterations: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Logistic regression on standardized columns by Newton's method: (means, scales, weights, bias).

    Minimises sum of log-losses + penalty/2 * |w|^2 (the bias is not penalised); columns are
    standardized with their mean and population standard deviation. Deterministic, float64, to 1e-12.
    """
    x, target = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or len(x) != len(target) or len(set(target.tolist())) != 2:
        raise ValueError(f"x {x.shape}, y of {len(target)}: expected (n, d) rows and both classes in y")
    means, scales = x.mean(axis=0), x.std(axis=0)
    if (scales == 0).any():
        raise ValueError(f"columns {np.flatnonzero(scales == 0).tolist()} are constant: nothing to fit")
    design = np.column_stack([(x - means) / scales, np.ones(len(x))])
    ridge = np.diag([penalty] * x.shape[1] + [0.0])
    beta = np.zeros(design.shape[1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-design @ beta))
        gradient = design.T @ (p - target) + ridge @ beta
        step = np.linalg.solve(design.T @ (design * (p * (1 - p))[:, None]) + ridge, gradient)
        beta -= step
        if np.abs(step).max() < 1e-12:
            break
    return means, scales, beta[:-1], float(beta[-1])
