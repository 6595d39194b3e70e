"""Record SPLADE-tiny for chapters 4 and 5: a first stage over strategy E, and a reranker of the hybrid top 25.

    make splade        (or: python benchmarks/splade_run.py)

CI never runs a model, so this runs once and writes `benchmarks/results/splade.json`:
- `development`: per query of the 210 development questions, the needle's rank in SPLADE's full ranking
  (chapter 4), in the hybrid ranking, and after SPLADE re-scored the hybrid top 25 (chapter 5);
- `held_out`: the hybrid rank and the re-scored rank of the 64 queries of `data/questions_confirm.jsonl`,
  chapter 5's declared test (declared in lab 5 before this script first ran);
- `latency_ms`: `evaluation.latency_ms` over the 64 queries of the original 32 questions (query encoding; the
  first stage: encode, score every chunk, sort; the reranker: encode, score 25 stored passage vectors, sort),
  and per passage over every 8th chunk text (encoding one text);
- what the chapters check when they read it: the sha256 of the chunk texts, of each query, of each shortlist,
  the corpus fingerprint and the model file's sha256 (checked here against data/models.lock.json); and the
  thread count (`RAGCOURSE_THREADS`, default 1), wall time, load and machine.

The chunk vectors are saved every 50 chunks to the user cache (`paths.user_cache_dir()`), so a stopped run
resumes where it was; progress goes to stdout.
"""

from __future__ import annotations

import json
import os
import time

from ragcourse import models, pipeline, splade
from ragcourse.book import timings
from ragcourse.build.models import read_lock
from ragcourse.corpus import fingerprint, load_corpus, sha256_file
from ragcourse.evaluation import first_hit_rank, latency_ms
from ragcourse.groundtruth import CONFIRM_FILE, load_questions, queries
from ragcourse.paths import user_cache_dir
from ragcourse.rerank import DEPTH, rerank_head

PARTIAL = user_cache_dir() / "splade-chunk-vectors.json"


def chunk_vectors(texts: list[str]) -> list[splade.SparseVector]:
    """Every chunk text's vector, resuming from the partial file and saving to it every 50 texts."""
    done = json.loads(PARTIAL.read_text(encoding="utf-8")) if PARTIAL.is_file() else {}
    PARTIAL.parent.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(texts), 50):
        todo = [t for t in dict.fromkeys(texts[start:start + 50]) if splade.texts_sha256([t]) not in done]
        for text, vector in zip(todo, splade.encode(todo), strict=True):
            done[splade.texts_sha256([text])] = {str(j): w for j, w in vector.items()}
        PARTIAL.write_text(json.dumps(done), encoding="utf-8")
        print(f"chunks {min(start + 50, len(texts))}/{len(texts)} encoded", flush=True)
    return [{int(j): w for j, w in done[splade.texts_sha256([t])].items()} for t in texts]


def rows(qs, chunks, retriever, reranker, vectors, first_stage: bool) -> list[dict]:
    """Per query: its hash, the hybrid rank, the rank after SPLADE re-scored the top 25, and (first_stage) SPLADE's."""
    out = []
    for i, q in enumerate(qs, 1):
        hybrid = [chunks[j] for j in retriever.rank(q.text, "hybrid")]
        row = {"query": q.id, "query_sha256": splade.texts_sha256([q.text]),
               "shortlist_sha256": splade.texts_sha256([c.text for c in hybrid[:DEPTH]]),
               "hybrid_rank": first_hit_rank(hybrid, q.needle),
               "rerank_rank": first_hit_rank(rerank_head(reranker, q.text, hybrid, DEPTH), q.needle)}
        if first_stage:
            order = splade.rank(splade.encode([q.text])[0], vectors)
            row["splade_rank"] = first_hit_rank([chunks[j] for j in order], q.needle)
        out.append(row)
        if i % 50 == 0 or i == len(qs):
            print(f"queries {i}/{len(qs)}", flush=True)
    return out


def latencies(timed, chunks, reranker, vectors) -> dict:
    """The book's latency protocol (`evaluation.latency_ms`) for each step, in ms."""
    shortlist = [c.text for c in chunks[:DEPTH]]  # any 25 stored passages: the cost does not depend on which
    return {"query_encoding": latency_ms(lambda q: splade.encode([q.text]), timed),
            "first_stage": latency_ms(lambda q: splade.rank(splade.encode([q.text])[0], vectors), timed),
            "rerank_25": latency_ms(lambda q: reranker.score(q.text, shortlist), timed),
            "passage_encoding": latency_ms(lambda c: splade.encode([c.text]), chunks[::8]),
            "queries_timed": len(timed), "passages_timed": len(chunks[::8])}


def model_sha256() -> str:
    """The installed model file's sha256, which must be the lock's."""
    digest = sha256_file(models.installed_model("splade-tiny") / "model.safetensors")
    if digest != read_lock()["splade-tiny"]["files_sha256"]["model.safetensors"]:
        raise SystemExit(f"SPLADE-tiny's model.safetensors has sha256 {digest}, not the lock's: run `make models`")
    return digest


def main() -> None:
    started, load_before = time.perf_counter(), os.getloadavg()
    corpus = load_corpus()
    retriever = pipeline.build("E", corpus=corpus)
    chunks = retriever.chunks
    texts = [c.text for c in chunks]
    print(f"{len(chunks)} chunks; estimate at ~30 ms a text: {len(chunks) * 0.03:.0f} s", flush=True)
    vectors = chunk_vectors(texts)
    reranker = splade.SpladeReranker()
    reranker.vectors.update(zip(texts, vectors, strict=True))
    development = queries(load_questions(corpus=corpus))
    held_out = queries(load_questions(CONFIRM_FILE, corpus=corpus))
    original = {q.id for q in load_questions(corpus=corpus, subset="original")}
    record = {
        "model": "SPLADE-tiny", "model_sha256": model_sha256(), "threads": models.threads(),
        "max_length": splade.MAX_LENGTH, "depth": DEPTH, "strategy": "E", "corpus_fingerprint": fingerprint(corpus),
        "chunks": len(chunks), "chunks_sha256": splade.texts_sha256(texts),
        "mean_entries_per_chunk": round(sum(map(len, vectors)) / len(vectors), 1),
        "development": {"rows": rows(development, chunks, retriever, reranker, vectors, True)},
        "held_out": {"rows": rows(held_out, chunks, retriever, reranker, vectors, False)},
        "latency_ms": latencies([q for q in development if q.question_id in original], chunks, reranker, vectors),
        "machine": timings.machine() | {"torch_threads": models.threads()},
    }
    record["load_average"] = {"before": [round(x, 2) for x in load_before],
                              "after": [round(x, 2) for x in os.getloadavg()]}
    record["wall_seconds"] = round(time.perf_counter() - started, 1)
    splade.RUN_FILE.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    PARTIAL.unlink(missing_ok=True)
    print(f"wrote {splade.RUN_FILE} in {record['wall_seconds']} s on {record['threads']} thread(s)", flush=True)


if __name__ == "__main__":
    main()
