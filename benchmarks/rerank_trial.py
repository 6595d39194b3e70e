"""Chapter 5 trial: does late interaction improve a hybrid shortlist? (a measurement, not a test)

Strategy-E chunks; hybrid = RRF (k=60) of the full BM25 and dense rankings; the top 25 are
reranked and put back in front of the unchanged remainder, so MRR before and after is measured
over the same full ranking. Late interaction scores the chunk `text` (header + content) and,
separately, the `content`. Prints R@1, R@4, R@25, MRR, wins/losses on reciprocal rank, the paired
randomization p for MRR, MRR by phrasing, index build time and query-time ms per query.

Run: `python benchmarks/rerank_trial.py` (needs the corpus and data/questions.jsonl).
Nothing here is tuned on the questions: the shortlist size and k=60 are the seed's settings.
"""

from __future__ import annotations

import time

import pandas as pd

from ragcourse.bm25 import BM25
from ragcourse.chunking import chunk_corpus
from ragcourse.corpus import load_corpus
from ragcourse.dense import DenseIndex
from ragcourse.evaluation import evaluate, randomization_test, summarize
from ragcourse.fusion import rrf
from ragcourse.groundtruth import load_questions, queries
from ragcourse.rerank import LateInteractionReranker, latency, rerank

SHORTLIST = 25
KS = (1, 4, SHORTLIST)


def hybrid_rankings(chunks, qs) -> dict[str, list[int]]:
    """Query id -> every chunk position, fused best first."""
    bm25 = BM25([c.text for c in chunks])
    dense = DenseIndex.build(chunks)
    return {q.id: [int(i) for i in rrf([bm25.rank(q.text).tolist(), dense.rank(q.text).tolist()])]
            for q in qs}


def reranked(reranker, chunks, qs, fused) -> dict[str, list]:
    """Query id -> chunks: the reranked shortlist, then the rest of the hybrid ranking."""
    out = {}
    for q in qs:
        shortlist = [chunks[i] for i in fused[q.id][:SHORTLIST]]
        head = [r.chunk for r in rerank(reranker, q.text, shortlist)]
        out[q.id] = head + [chunks[i] for i in fused[q.id][SHORTLIST:]]
    return out


def report(label, table, base) -> dict:
    p = randomization_test(table["rr"], base["rr"])
    wins = int((table["rr"] > base["rr"]).sum())
    losses = int((table["rr"] < base["rr"]).sum())
    by_phrasing = table.groupby("phrasing")["rr"].mean().round(3).to_dict()
    summary = summarize(table, label).set_index("metric")["value"].round(3).to_dict()
    return {"system": label, **summary, "W/L (rr)": f"{wins}/{losses}", "p (MRR)": round(p, 4),
            **{f"MRR {k}": v for k, v in by_phrasing.items()}}


def encode_ms(reranker, qs) -> float:
    """Reference: ms to encode one query with the same model (most of late interaction's cost)."""
    started = time.perf_counter()
    for q in qs:
        reranker.query_tokens(q.text)
    return 1000 * (time.perf_counter() - started) / len(qs)


def main() -> None:
    docs = load_corpus()
    qs = queries(load_questions(corpus=docs))
    chunks = chunk_corpus(docs, "E")
    fused = hybrid_rankings(chunks, qs)
    base = evaluate({k: [chunks[i] for i in v] for k, v in fused.items()}, qs, KS)
    rows = [report("hybrid (RRF)", base, base)]
    timings = []
    for use in ("text", "content"):
        reranker = LateInteractionReranker(use=use)
        started = time.perf_counter()
        reranker.index([getattr(c, use) for c in chunks])
        built = time.perf_counter() - started
        rows.append(report(f"+ late interaction ({use})",
                           evaluate(reranked(reranker, chunks, qs, fused), qs, KS), base))
        shortlists = [[getattr(chunks[i], use) for i in fused[q.id][:SHORTLIST]] for q in qs]
        ms = latency(reranker, [q.text for q in qs], shortlists)
        tokens = sum(len(m) for m in reranker.passage_tokens([getattr(c, use) for c in chunks]))
        timings.append({"use": use, "index s (0 if cached)": round(built, 1),
                        "token vectors": tokens, "ms/query": round(ms, 1),
                        "ms/query encode only": round(encode_ms(reranker, qs), 1)})
    pd.set_option("display.width", 200)
    print(f"{len(chunks)} chunks, {len(qs)} queries, shortlist {SHORTLIST}")
    print(pd.DataFrame(rows).to_string(index=False))
    print(pd.DataFrame(timings).to_string(index=False))


if __name__ == "__main__":
    main()
