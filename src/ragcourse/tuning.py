"""Grid searches over a retriever's constants, each setting scored by MRR over queries (chapter 4).

Chapter 4's exercises tune BM25's $(k_1, b)$ and weighted RRF's BM25 weight $w$ and constant $c$; its lab
quotes the grid's best for the solutions. Both call these functions, so the grid is written once: `bm25_per_query`,
`bm25_mrr` and `weighted_hybrid` score one setting, `best` picks a grid's winner with the chapter's tie rule.
What it leaves out: any search but an exhaustive grid, and held-out evaluation (exercise 4.1 asks for it).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import pandas as pd

from .bm25 import BM25
from .evaluation import evaluate
from .fusion import weighted_rrf
from .pipeline import rank_all


def bm25_per_query(chunks: Sequence, queries: Sequence, k1: float = 1.2, b: float = 0.75,
                   field: str = "text") -> pd.DataFrame:
    """The `evaluate` table of BM25 with constants (`k1`, `b`) over each chunk's `field` ("text" or "content")."""
    model = BM25([getattr(c, field) for c in chunks], k1=k1, b=b)
    return evaluate(rank_all(lambda text, _method: model.rank(text), chunks, queries, "bm25"), queries)


def bm25_mrr(chunks: Sequence, queries: Sequence, k1: float, b: float) -> float:
    """MRR over `queries` of BM25 with constants (`k1`, `b`) over the chunks' `text`."""
    return float(bm25_per_query(chunks, queries, k1, b)["rr"].mean())


def weighted_hybrid(chunks: Sequence, queries: Sequence, dense_lists: Mapping[str, list[int]],
                    bm25_lists: Mapping[str, list[int]], w: float, c: float = 60) -> pd.DataFrame:
    """The `evaluate` table of weighted RRF: the dense ranking at weight 1, the BM25 ranking at weight `w`."""
    fused = {q.id: weighted_rrf([dense_lists[q.id], bm25_lists[q.id]], [1.0, w], c=c) for q in queries}
    # rank_all hands each query's entry of `fused` to the ranker, which returns it as the query's ranking
    return evaluate(rank_all(lambda _text, _method, ranking: ranking, chunks, queries, "hybrid", vectors=fused),
                    queries)


def best(scores: Mapping[Hashable, float]) -> Hashable:
    """The setting with the highest score; among equal scores the smallest setting (tuples: element by element).

    >>> best({(1.2, 0.75): 0.48, (0.9, 0.5): 0.49, (0.5, 1.0): 0.49})
    (0.5, 1.0)
    """
    return min(scores, key=lambda setting: (-scores[setting], setting))


#: Exercise 4.1's grid of k1, and its grids of b, one per term (`book.exercises.choose` picks one).
GRID_K1 = (0.5, 0.9, 1.2, 1.6, 2.0)
GRIDS_B = [(0.25, 0.5, 0.75, 1.0), (0.3, 0.6, 0.75, 0.9), (0.2, 0.4, 0.75, 0.8)]
#: Exercise 4.2's grids of BM25's weight w, and exercise 4.3's of RRF's constant c, one per term.
GRIDS_W = [(0.0, 0.25, 0.5, 1.0, 2.0, 4.0), (0.0, 0.1, 0.3, 1.0, 3.0), (0.0, 0.2, 0.6, 1.0, 1.5)]
GRIDS_RRF_C = [(1, 10, 60, 600, 6000), (2, 20, 60, 200, 2000)]
