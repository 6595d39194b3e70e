"""Chapter 5 trial: SmolLM2-135M as a pointwise judge of the hybrid top 25 (a measurement, not a test).

Too slow for the notebook (about 25 s per query on 2 cores: 25 causal-LM forward passes), so this
script runs it once over the 64 development queries and writes, per query, the needle's rank in
the hybrid ranking and after the judge reranked the top 25, to `benchmarks/results/judge.json`.
Chapter 5 reads that file, checks that its hybrid ranks still equal the live ones (so a changed
pipeline forces a rerun), and computes every statistic itself.

Run: `make judge` (or `python benchmarks/judge_trial.py`). Nothing here is tuned on the questions:
the prompt was written once, before this run, and the shortlist size is the seed's.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import torch

from ragcourse import pipeline
from ragcourse.evaluation import first_hit_rank
from ragcourse.groundtruth import load_questions, queries
from ragcourse.rerank import JUDGE_SYSTEM, SmolJudgeReranker, rerank_head

SHORTLIST = 25
OUT = Path(__file__).resolve().parent / "results" / "judge.json"


def main() -> None:
    retriever = pipeline.build("E")
    chunks, qs = retriever.chunks, queries(load_questions())
    judge = SmolJudgeReranker()
    torch.set_num_threads(1)  # two threads that wait on each other are slower on a shared 2-core machine
    rows, started = [], time.perf_counter()
    for n, q in enumerate(qs, start=1):
        hybrid = [chunks[i] for i in retriever.rank(q.text, "hybrid")]
        judged = rerank_head(judge, q.text, hybrid, SHORTLIST)
        rows.append({"query": q.id, "hybrid_rank": first_hit_rank(hybrid, q.needle),
                     "judge_rank": first_hit_rank(judged, q.needle)})
        print(f"{n}/{len(qs)} {q.id}: {rows[-1]['hybrid_rank']} -> {rows[-1]['judge_rank']} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    seconds = time.perf_counter() - started
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "reranker": judge.name, "system_prompt": JUDGE_SYSTEM, "shortlist": SHORTLIST, "strategy": "E",
        "queries": len(qs), "seconds": round(seconds, 1), "seconds_per_query": round(seconds / len(qs), 2),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch thread(s)",
        "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
