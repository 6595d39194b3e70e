"""Every timing the book quotes, measured once, side by side, and recorded with the machine (`make timings`).

The chapters read `benchmarks/results/timings.json` instead of timing themselves, so the book never
contradicts itself (one chapter measured under load, another on a quiet machine) and nbval compares
nothing that depends on the clock. Run it on a quiet machine:

    python benchmarks/timings.py [--out benchmarks/results/timings.json]

Per-query steps are timed with the book's one latency protocol, `ragcourse.evaluation.latency_ms`: a warm-up,
then each step runs three times on a query and the fastest run counts; the record holds the median over
queries. Cold costs (a chunk embedded with no cache, the generator's load) are measured on fixed samples.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

import numpy as np

from ragcourse import dense, models, pipeline
from ragcourse.bm25 import tokenize
from ragcourse.book.timings import TIMINGS_FILE, machine
from ragcourse.chunking import STRATEGIES
from ragcourse.evaluation import REPEATS, latency_ms
from ragcourse.groundtruth import load_questions, queries
from ragcourse.rerank import DEPTH

SAMPLE = 32  # chunks per strategy for the cold embedding cost


def embedding_costs(retrievers: dict) -> dict:
    """Cold embedding, ms per chunk for a fixed sample of each strategy, and the estimated full build."""
    embedder = next(iter(retrievers.values())).dense.embedder
    cold = dense.Embedder(model=embedder.model, name=embedder.name, fingerprint=embedder.fingerprint,
                          cache_dir=None, batch_size=embedder.batch_size)
    cold.encode([c.text for c in retrievers["C"].chunks[:8]])  # warm-up
    rows = {}
    for letter, retriever in retrievers.items():
        chunks = retriever.chunks
        sample = [c.text for c in chunks[:: len(chunks) // SAMPLE][:SAMPLE]]
        started, cpu = time.perf_counter(), time.process_time()
        cold.encode(sample)
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
        rows[letter] = {"sample": len(sample), "ms_per_chunk": round(1000 * seconds / len(sample), 2),
                        "cpu_ms_per_chunk": round(1000 * cpu_seconds / len(sample), 2),
                        "chunks": len(chunks),
                        "full_index_s": round(seconds / len(sample) * len(chunks), 1)}
    return rows


def query_steps(retriever: pipeline.Retriever, texts: list[str]) -> dict:
    """Per-query latency of every retrieval step the chapters compare, measured in one loop."""
    from rank_bm25 import BM25Okapi

    from ragcourse.rerank import LateInteractionReranker, maxsim_many

    embedder, chunks = retriever.dense.embedder, retriever.chunks
    vectors = {t: embedder.encode_query(t) for t in texts}
    okapi = BM25Okapi([tokenize(c.text) for c in chunks], k1=retriever.bm25.k1, b=retriever.bm25.b)
    reranker = LateInteractionReranker(embedder_model=embedder.model, fingerprint=embedder.fingerprint,
                                       remember_queries=False)  # every timed call encodes its query
    shortlists = {t: [chunks[i].text for i in retriever.rank(t, "hybrid")[:DEPTH]] for t in texts}
    reranker.index(sorted({p for s in shortlists.values() for p in s}))
    query_tokens = {t: reranker.query_tokens(t) for t in texts}
    cached = {t: reranker.passage_tokens(shortlists[t]) for t in texts}
    steps = {
        "bm25_scores": lambda t: retriever.bm25.scores(t),
        "bm25_rank": lambda t: retriever.bm25.rank(t),
        "rank_bm25_scores": lambda t: okapi.get_scores(tokenize(t)),
        "vector_scan": lambda t: dense.order(dense.cosine_distances(retriever.dense.vectors, vectors[t])),
        "query_embedding": lambda t: embedder.encode_query(t),
        "embed_and_scan": lambda t: retriever.dense.rank(t),
        "rerank_25": lambda t: reranker.score(t, shortlists[t]),
        "rerank_query_tokens": lambda t: reranker.query_tokens(t),
        "rerank_maxsim_25": lambda t: maxsim_many(query_tokens[t], cached[t]),
    }
    return {name: latency_ms(step, texts) for name, step in steps.items()}


def token_index_cost(retriever: pipeline.Retriever, n: int = 48) -> dict:
    """Building the late-interaction token index, cold: ms per chunk on a fixed sample."""
    from ragcourse.rerank import LateInteractionReranker

    cold = LateInteractionReranker(embedder_model=retriever.dense.embedder.model, cache_dir=None)
    chunks = retriever.chunks
    sample = [c.text for c in chunks[:: len(chunks) // n][:n]]
    started = time.perf_counter()
    cold.passage_tokens(sample)
    ms = 1000 * (time.perf_counter() - started) / len(sample)
    return {"sample": len(sample), "ms_per_chunk": round(ms, 2),
            "full_index_s": round(ms * len(chunks) / 1000, 1)}


def harness_cost(retriever: pipeline.Retriever, qs: list) -> dict:
    """Chapter 8's retrieval harness: dense and hybrid over every query, vectors cached, queries not."""
    from ragcourse.evaluation import KS, evaluate

    retriever._vectors.clear()
    started = time.perf_counter()
    for method in ("dense", "hybrid"):
        evaluate(retriever.rankings(qs, method), qs, KS)
    return {"seconds": round(time.perf_counter() - started, 2), "queries": len(qs), "methods": 2}


def generation_cost(retriever: pipeline.Retriever, question: str, max_new_tokens: int = 120) -> dict:
    """SmolLM2's load time and greedy generation speed on one grounded prompt (one thread, as chapter 7)."""
    import torch

    from ragcourse.citations import build_context

    started = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        tokenizer, model = models.load_generator()
    load_s = time.perf_counter() - started
    prompt = build_context(question, retriever.retrieve(question, 4)).prompt
    inputs = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                           return_tensors="pt", return_dict=True)
    with models.torch_threads(1), torch.no_grad():
        started = time.perf_counter()
        out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, temperature=None,
                             top_p=None, top_k=None, pad_token_id=tokenizer.eos_token_id)
        seconds = time.perf_counter() - started
    new = int(out.shape[1] - inputs["input_ids"].shape[1])
    return {"load_s": round(load_s, 2), "new_tokens": new, "seconds": round(seconds, 2),
            "tokens_per_s": round(new / seconds, 2), "threads": 1}


def measure() -> dict:
    """Everything, in one process, in a fixed order."""
    started = time.time()
    load = _loadavg()
    qs = queries(load_questions(subset="original"))
    texts = [q.text for q in qs]
    retrievers = {s: pipeline.build(s) for s in STRATEGIES}
    record = {"embedding": embedding_costs(retrievers)}
    record["per_query_ms"] = query_steps(retrievers["E"], texts)
    record["per_query_ms"] |= {"queries": len(texts), "repeats": REPEATS, "rerank_depth": DEPTH}
    record["token_index"] = token_index_cost(retrievers["E"])
    record["harness"] = harness_cost(retrievers["E"], qs)
    record["generation"] = generation_cost(retrievers["E"], qs[0].text)
    record["machine"] = machine() | {"load_average_before": load, "load_average_after": _loadavg(),
                                     "minutes": round((time.time() - started) / 60, 1)}
    return record


def _loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TIMINGS_FILE)
    args = parser.parse_args(argv)
    record = measure()
    if args.out.is_file():  # the "notebooks" section is `make run-costs`'s (scripts/notebook_costs.py): kept
        record |= {k: v for k, v in json.loads(args.out.read_text(encoding="utf-8")).items() if k == "notebooks"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=2, sort_keys=True))
    busy = max(record["machine"]["load_average_before"] or [0.0])
    if busy > 0.5:
        print(f"warning: load average {busy} before the run; the machine was not quiet", file=sys.stderr)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
