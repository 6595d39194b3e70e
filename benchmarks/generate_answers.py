"""Chapter 7 trial: SmolLM2-135M answers every query the gate lets through (a measurement, not a test).

For the 64 in-domain queries of the original questions and the 30 out-of-domain queries, this script
runs the book's pipeline (strategy E, hybrid top 4), then `citations.answer` at the chapter's gate cut
(the largest cut on a 0.005 grid with at most 10 % of the out-of-domain queries answered), with the
offline generator (`models.generate`: greedy, 120 new tokens, one thread). It stores, per query,
whether the gate answered, the sha256 of the prompt, the answer text, its new tokens and seconds, in
`benchmarks/results/answers.json`. Chapter 7's lab reads that file, checks every prompt hash against the
live pipeline (a changed pipeline forces a rerun) and computes every statistic itself with
`citations.check_answer`; no notebook generates text live.

Run: `nice -n 19 python benchmarks/generate_answers.py` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import platform
import time

from ragcourse import citations, models, pipeline
from ragcourse.evaluation import sweep
from ragcourse.gate import NoAnswer
from ragcourse.groundtruth import load_out_of_domain, load_questions, queries
from ragcourse.paths import RESULTS_DIR

OUT = RESULTS_DIR / "answers.json"
K, METHOD, STRATEGY = 4, "hybrid", "E"
BLUFF_BUDGET = 0.10
GRID = [round(0.300 + 0.005 * i, 3) for i in range(141)]  # 0.300, 0.305, ..., 1.000, as chapter 7
MAX_NEW_TOKENS = 120


def prompt_sha256(prompt: str) -> str:
    """The hex sha256 of a prompt's UTF-8 bytes: what the chapter compares with its live prompt."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def chosen_cut(in_domain_hits: list, ood_hits: list) -> float:
    """Chapter 7's rule: the largest grid cut at which at most BLUFF_BUDGET of out-of-domain queries pass."""
    table = sweep(in_domain_hits, ood_hits, GRID + [math.inf], k=K)
    return float(table.loc[table["bluffed"] <= BLUFF_BUDGET * len(ood_hits), "cut"].max())


def answer_row(query_id: str, kind: str, text: str, hits: list, cut: float) -> dict:
    """Gate, prompt, generate (only when the gate answers); the answer and its cost."""
    seen: dict = {}

    def generate(prompt: str) -> str:
        started = time.perf_counter()
        reply, new_tokens = models.generate(prompt, max_new_tokens=MAX_NEW_TOKENS, threads=1)
        seen.update(prompt_sha256=prompt_sha256(prompt), new_tokens=new_tokens,
                    seconds=round(time.perf_counter() - started, 2))
        return reply

    result = citations.answer(text, hits, generate=generate, cut=cut, k=K)
    if isinstance(result, NoAnswer):
        return {"query": query_id, "set": kind, "answered": False}
    return {"query": query_id, "set": kind, "answered": True, "prompt_sha256": seen["prompt_sha256"],
            "answer": result.text, "new_tokens": seen["new_tokens"], "seconds": seen["seconds"]}


def main() -> None:
    retriever = pipeline.build(STRATEGY)
    in_domain = [(q.id, "in", q.text, q.needle) for q in queries(load_questions(subset="original"))]
    ood = [(o.id, "out", o.query, None) for o in load_out_of_domain()]
    hits = {qid: retriever.retrieve(text, k=K, method=METHOD) for qid, _, text, _ in in_domain + ood}
    cut = chosen_cut([(hits[qid], needle) for qid, _, _, needle in in_domain],
                     [hits[qid] for qid, *_ in ood])
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF de-quantizer draws a progress bar
        models.load_generator()
    rows, started = [], time.perf_counter()
    for n, (qid, kind, text, _) in enumerate(in_domain + ood, start=1):
        rows.append(answer_row(qid, kind, text, hits[qid], cut))
        print(f"{n}/{len(in_domain) + len(ood)} {qid}: answered={rows[-1]['answered']} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    seconds = time.perf_counter() - started
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "generator": models.GENERATOR_GGUF, "max_new_tokens": MAX_NEW_TOKENS, "decoding": "greedy",
        "strategy": STRATEGY, "method": METHOD, "k": K, "cut": cut, "bluff_budget": BLUFF_BUDGET,
        "queries": len(rows), "generated": sum(r["answered"] for r in rows), "seconds": round(seconds, 1),
        "machine": f"{platform.machine()}, 1 torch thread", "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
