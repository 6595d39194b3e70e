"""Time ragcourse's sparse BM25 against rank_bm25's BM25Okapi on strategy-E chunks (chapter 4).

Both score every chunk's ``text`` (header included) for the same queries, one after the other in
one process, with the same tokenizer, k1 and b; the numbers are medians of ms/query over repeats.
Queries are the 64 ground-truth queries when ``data/questions.jsonl`` exists, else section titles.

    python benchmarks/bench_bm25.py [--repeats 7] [--min-speedup 10]

Exits 1 when the speedup is below ``--min-speedup``, 2 when the corpus cache is missing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragcourse.bm25 import BM25, tokenize


@dataclass(frozen=True)
class BenchmarkResult:
    """Median milliseconds per query for ``ragcourse.bm25.BM25`` and for ``rank_bm25.BM25Okapi``."""

    n_texts: int
    n_queries: int
    repeats: int
    ours_ms: float
    rank_bm25_ms: float

    @property
    def speedup(self) -> float:
        """How many times faster ``BM25.scores`` is than ``BM25Okapi.get_scores``."""
        return self.rank_bm25_ms / self.ours_ms


def _ms_per_query(score: Callable[[str], object], queries: Sequence[str], repeats: int) -> float:
    """Median over ``repeats`` passes of the mean milliseconds per query."""
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for q in queries:
            score(q)
        runs.append((time.perf_counter() - start) * 1000 / len(queries))
    return statistics.median(runs)


def benchmark(texts: Sequence[str], queries: Sequence[str], repeats: int = 7) -> BenchmarkResult:
    """Time ``BM25.scores`` against ``BM25Okapi.get_scores`` in one run.

    Same k1 and b for both; query tokenizing is timed for both; median over ``repeats`` passes.
    """
    from rank_bm25 import BM25Okapi

    if len(queries) == 0 or repeats < 1:
        raise ValueError(f"need queries (got {len(queries)}) and repeats >= 1 (got {repeats})")
    ours = BM25(texts)
    okapi = BM25Okapi([tokenize(t) for t in texts], k1=ours.k1, b=ours.b)
    ours_ms = _ms_per_query(ours.scores, queries, repeats)
    theirs_ms = _ms_per_query(lambda q: okapi.get_scores(tokenize(q)), queries, repeats)
    return BenchmarkResult(len(texts), len(queries), repeats, ours_ms, theirs_ms)


def load_queries(chunks) -> tuple[list[str], str]:
    """The ground-truth query texts if available, else up to 64 distinct section titles."""
    from ragcourse import groundtruth

    if groundtruth.QUESTIONS_FILE.is_file():
        return [q.text for q in groundtruth.queries(groundtruth.load_questions())], "ground truth"
    titles = sorted({c.section for c in chunks if c.section})
    return titles[:64], "section titles"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--min-speedup", type=float, default=10.0)
    args = parser.parse_args(argv)

    from ragcourse.chunking import chunk_corpus
    from ragcourse.corpus import CorpusError, load_corpus

    try:
        chunks = chunk_corpus(load_corpus(), "E")
    except CorpusError as err:
        print(f"corpus unavailable: {err}", file=sys.stderr)
        return 2
    queries, source = load_queries(chunks)
    result = benchmark([c.text for c in chunks], queries, repeats=args.repeats)
    print(
        f"{result.n_texts} strategy-E chunks, {result.n_queries} queries ({source}), "
        f"median of {result.repeats} repeats"
    )
    print(f"ragcourse.bm25.BM25.scores      {result.ours_ms:8.4f} ms/query")
    print(f"rank_bm25 BM25Okapi.get_scores  {result.rank_bm25_ms:8.4f} ms/query")
    print(f"speedup                         {result.speedup:8.1f}x")
    return 0 if result.speedup >= args.min_speedup else 1


if __name__ == "__main__":
    sys.exit(main())
