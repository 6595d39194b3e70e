"""Scale: BM25 against bm25s and rank-bm25, the exact scan against HNSW and Qdrant, at 1x to 100x the corpus.

One command rewrites ``benchmarks/results/scale.json`` (the appendix notebook only reads it):

    python benchmarks/bench_scale.py [--repeats 5] [--quick]

The corpus grows by copies of the strategy-E chunks. Copy j of a text drops each word with
probability 0.1 (seeded by j) and ends with the token ``copyj``, so document frequencies and lengths
are not exact multiples of the original's and BM25's statistics stay meaningful; copy j of a vector
is the chunk's vector plus Gaussian noise (sd 0.02 per dimension), renormalised. Times follow the
book's one latency protocol (`ragcourse.evaluation.latency_ms`): each query runs ``--repeats`` times, the
fastest run counts, and the median over the ground-truth queries is reported (BM25: the peers alternate
query by query, and the speedup is the median of the per-query ratios); the load average is
recorded before and after each section, since a busy machine slows everything down. Past 1x the
dense timings use 3 passes, and Qdrant's local mode (pure Python) is timed once over the first 16
queries (dense) and 2 queries (BM25). Exits 1 when BM25 is slower than
bm25s at any size or its scores leave the formula by more than 1e-9.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ragcourse.bm25 import BM25, tokenize
from ragcourse.evaluation import latencies_ms, latency_ms
from ragcourse.paths import RESULTS_DIR

RESULTS = RESULTS_DIR / "scale.json"
BM25_FACTORS, SCALE_FACTORS = (1, 10, 50), (1, 10, 100)


def grow_texts(texts: Sequence[str], factor: int) -> list[str]:
    """The texts, then factor - 1 perturbed copies (each word dropped with p = 0.1, plus ``copyj``)."""
    grown = list(texts)
    for j in range(1, factor):
        rng = random.Random(j)
        grown += [" ".join(w for w in t.split() if rng.random() >= 0.1) + f" copy{j}" for t in texts]
    return grown


def grow_vectors(vectors: np.ndarray, factor: int, sd: float = 0.02) -> np.ndarray:
    """The vectors, then factor - 1 noisy unit copies."""
    rng = np.random.default_rng(0)
    copies = [vectors] + [vectors + rng.normal(0, sd, vectors.shape).astype(np.float32) for _ in range(1, factor)]
    grown = np.concatenate(copies)
    return (grown / np.linalg.norm(grown, axis=1, keepdims=True)).astype(np.float32)


def ms_per_query(run: Callable[[object], object], queries: Sequence, repeats: int) -> float:
    """Ms per query by the book's latency protocol (`evaluation.latency_ms`: fastest of ``repeats``, median)."""
    return latency_ms(run, list(queries), repeats)


def interleaved(runs: dict[str, Callable[[object], object]], queries: Sequence, repeats: int) -> dict:
    """Each run's ms per query (fastest of ``repeats``), runs alternating query by query to share the load."""
    return latencies_ms(runs, list(queries), repeats)


def seconds(build: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    built = build()
    return built, time.perf_counter() - start


def load() -> dict:
    return {"load_average": [round(x, 2) for x in os.getloadavg()]}


def formula_gap(bm25: BM25, texts: Sequence[str], queries: Sequence[str], sample: int = 200) -> float:
    """Largest |ours - a plain transcription of the formula| over sampled texts and all queries."""
    tokens = [tokenize(t) for t in texts]
    df = Counter(t for toks in tokens for t in set(toks))
    n, avgdl = len(texts), sum(map(len, tokens)) / len(texts)
    picked = random.Random(0).sample(range(n), min(sample, n))
    worst = 0.0
    for query in queries:
        scores = bm25.scores(query)
        for d in picked:
            tf, dl, plain = Counter(tokens[d]), len(tokens[d]), 0.0
            for t in tokenize(query):
                if tf[t]:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    plain += idf * tf[t] * (bm25.k1 + 1) / (tf[t] + bm25.k1 * (1 - bm25.b + bm25.b * dl / avgdl))
            worst = max(worst, abs(plain - scores[d]))
    return worst


def bm25_row(texts: Sequence[str], queries: Sequence[str], repeats: int, with_okapi: bool) -> dict:
    """One corpus size: ms per query for ours, bm25s and (when asked) rank-bm25, with parity."""
    import bm25s

    ours, ours_build = seconds(lambda: BM25(texts))
    peer = bm25s.BM25(method="lucene", k1=ours.k1, b=ours.b)
    _, peer_build = seconds(lambda: peer.index([tokenize(t) for t in texts], show_progress=False))
    known = peer.vocab_dict

    def peer_scores(q: str) -> np.ndarray:  # same tokens; bm25s raises on a term it has not seen
        return peer.get_scores([t for t in tokenize(q) if t in known])

    passes = interleaved({"ragcourse": ours.scores, "bm25s": peer_scores}, queries, repeats)
    row = {"texts": len(texts), "build_s": {"ragcourse": ours_build, "bm25s": peer_build},
           "ms_per_query": {name: statistics.median(p) for name, p in passes.items()},
           "fastest_ms_per_query": {name: min(p) for name, p in passes.items()},
           # the ratio on each query, then its median: robust to a busy machine
           "speedup_vs_bm25s": statistics.median(b / a for a, b in zip(passes["ragcourse"], passes["bm25s"],
                                                                       strict=True))}
    if with_okapi:
        from rank_bm25 import BM25Okapi

        okapi, row["build_s"]["rank_bm25"] = seconds(lambda: BM25Okapi([tokenize(t) for t in texts]))
        row["ms_per_query"]["rank_bm25"] = ms_per_query(lambda q: okapi.get_scores(tokenize(q)),
                                                        queries, max(1, repeats // 2) if len(texts) < 5000 else 1)
    # bm25s "lucene" omits the (k1 + 1) factor and keeps float32: compare ours / (k1 + 1) to it
    row["max_gap_formula"] = formula_gap(ours, texts, queries)
    row["max_gap_bm25s"] = max(float(np.max(np.abs(ours.scores(q) / (ours.k1 + 1) - peer_scores(q))))
                               for q in queries)
    return row


def memory_mib() -> float:
    """This process's resident memory, MiB (for the engine, whose data lives in Python objects)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def scratch_and_ann(chunks, vectors, texts, qvecs, repeats: int) -> tuple[dict, BM25]:
    """The package's exact scan and BM25, and the HNSW graph, at one size (and the BM25 index)."""
    import faiss

    from ragcourse.ann import HNSWIndex, recall
    from ragcourse.dense import DenseIndex

    exact = DenseIndex(chunks=chunks, vectors=vectors, embedder=None)
    bm25, bm25_build = seconds(lambda: BM25(texts))
    graph, graph_build = seconds(lambda: HNSWIndex.from_dense(exact))
    postings = bm25.matrix.data.nbytes + bm25.matrix.indices.nbytes * 3 + bm25.matrix.indptr.nbytes
    return {
        "scratch": {"build_s": bm25_build, "memory_mib": (vectors.nbytes + postings) / 2**20,
                    "dense_ms": ms_per_query(lambda v: exact.search(v, k=10), qvecs, repeats)},
        "ann": {"build_s": graph_build, "memory_mib": len(faiss.serialize_index(graph.graph)) / 2**20,
                "dense_ms": ms_per_query(lambda v: graph.search(v, k=10), qvecs, repeats),
                "recall_at_10": statistics.mean(recall(graph.rank(v), exact.rank(v), 10) for v in qvecs)},
    }, bm25


def engine_row(retriever, queries, qvecs, dense_queries: int, bm25_queries: int) -> dict:
    """Qdrant local mode at one size: build (create + upload), dense and BM25 top-10 latency, memory growth.

    Local mode is pure Python and slow at size, so the larger sizes time fewer queries, once each.
    """
    from ragcourse.engines import QdrantEngine

    before = memory_mib()
    engine = QdrantEngine.connect()
    _, build = seconds(lambda: engine.index(retriever))
    pairs = list(zip(queries, qvecs, strict=True))
    return {"build_s": build, "memory_mib": memory_mib() - before,
            "dense_ms": ms_per_query(lambda p: engine.rank(p[0], "dense", p[1], limit=10),
                                     pairs[:dense_queries], 1),
            "bm25_ms": ms_per_query(lambda p: engine.rank(p[0], "bm25", limit=10), pairs[:bm25_queries], 1),
            "dense_queries": dense_queries, "bm25_queries": bm25_queries}


class _Grown:
    """A retriever-shaped bundle for the engine: grown chunks, vectors and BM25 (no embedder needed)."""

    def __init__(self, base, chunks, vectors, bm25) -> None:
        from types import SimpleNamespace

        self.strategy, self.chunks, self.bm25 = base.strategy, chunks, bm25
        self.dense = SimpleNamespace(vectors=vectors, embedder=base.dense.embedder)


def scale_rows(retriever, queries, qvecs, factors, repeats: int) -> list[dict]:
    from dataclasses import replace

    base_texts = [c.text for c in retriever.chunks]
    rows = []
    for factor in factors:
        texts = grow_texts(base_texts, factor)
        chunks = [replace(retriever.chunks[i % len(base_texts)], text=t) for i, t in enumerate(texts)]
        vectors = grow_vectors(retriever.dense.vectors, factor)
        row = {"factor": factor, "texts": len(texts), **load()}
        measured, bm25 = scratch_and_ann(chunks, vectors, texts, qvecs, repeats if factor == 1 else 3)
        row.update(measured)
        grown = _Grown(retriever, chunks, vectors, bm25)
        row["engine"] = engine_row(grown, queries, qvecs, *((64, 64) if factor == 1 else (16, 2)))
        rows.append(row)
        print(f"  {factor:>3}x {len(texts):>6} texts: exact {row['scratch']['dense_ms']:.2f} ms, "
              f"HNSW {row['ann']['dense_ms']:.2f} ms (recall@10 {row['ann']['recall_at_10']:.3f}), "
              f"Qdrant dense {row['engine']['dense_ms']:.1f} ms, BM25 {row['engine']['bm25_ms']:.0f} ms",
              flush=True)
    return rows


def print_bm25(rows: list[dict]) -> None:
    print(f"{'texts':>7} {'ragcourse':>10} {'bm25s':>8} {'rank-bm25':>10} {'x bm25s':>8} "
          f"{'|ours-formula|':>15} {'|ours/2.2-bm25s|':>17}   (ms per query)")
    for r in rows:
        ms = r["ms_per_query"]
        okapi = f"{ms['rank_bm25']:10.3f}" if "rank_bm25" in ms else f"{'-':>10}"
        print(f"{r['texts']:>7} {ms['ragcourse']:10.3f} {ms['bm25s']:8.3f} {okapi} {r['speedup_vs_bm25s']:8.2f} "
              f"{r['max_gap_formula']:15.1e} {r['max_gap_bm25s']:17.1e}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="BM25 only, no file written")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--bm25-only", action="store_true", help="re-measure BM25 only, keep the rest of --out")
    args = parser.parse_args(argv)

    from ragcourse import groundtruth, pipeline
    from ragcourse.book import timings

    retriever = pipeline.build("E")
    qs = groundtruth.queries(groundtruth.load_questions(subset="original"))
    queries = [q.text for q in qs]
    record = {"machine": timings.machine(), "repeats": args.repeats, "queries": len(queries),
              "bm25": {"start": load(), "rows": []}}
    base = [c.text for c in retriever.chunks]
    print(f"BM25, {len(queries)} queries, median of {args.repeats} passes, load {load()['load_average']}")
    for factor in BM25_FACTORS:
        row = bm25_row(grow_texts(base, factor), queries, args.repeats, with_okapi=factor <= 10)
        record["bm25"]["rows"].append({"factor": factor, **row})
    record["bm25"]["end"] = load()
    print_bm25(record["bm25"]["rows"])
    ok = all(r["speedup_vs_bm25s"] >= 1.0 and r["max_gap_formula"] <= 1e-9 for r in record["bm25"]["rows"])
    print("parity with the formula (<= 1e-9) and at least bm25s' speed:", "yes" if ok else "NO")
    if args.quick:
        return 0 if ok else 1
    if args.bm25_only:
        kept = json.loads(args.out.read_text(encoding="utf-8"))
        args.out.write_text(json.dumps(kept | {"bm25": record["bm25"]}, indent=1, sort_keys=True) + "\n",
                            encoding="utf-8")
        print(f"updated the BM25 section of {args.out}")
        return 0 if ok else 1
    print("Dense and engine, top 10:")
    qvecs = [retriever.query_vector(q) for q in queries]
    record["scale"] = scale_rows(retriever, queries, qvecs, SCALE_FACTORS, args.repeats)
    record["end"] = load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
