"""Chapter 3's three embedders on strategy E: each query's first-hit rank, the cost and the memory (`make embedders`).

all-MiniLM-L6-v2 (the book's embedder), multilingual-e5-small (4-bit, its own C engine, which prepends
"query: " and "passage: ") and all-mpnet-base-v2 each encode strategy E's chunks (their `text`, header
included, as the book's index does) and every query of the ground truth, one query at a time. Each runs in a
process of its own, on `models.threads()` threads (RAGCOURSE_THREADS, default 1), so its peak memory is
its own. Per embedder the record holds the ranks (not the vectors), the encode cost per passage (wall and CPU),
the query latency under the book's protocol (`evaluation.latency_ms` over the original questions' queries),
the peak RSS, the model's files, fingerprint and provenance, and the wall time. The record is written after
each embedder; a rerun skips the embedders already recorded for the same chunks, queries, model and threads.

    RAGCOURSE_THREADS=1 python benchmarks/embedders.py [--out benchmarks/results/embedders.json]

Progress goes to stderr. The package neither ships nor imports this script; the lab reads the record with
`ragcourse.book.embedders.load`, which checks it against the corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragcourse import models, pipeline
from ragcourse.book.embedders import EMBEDDERS, RUN_FILE, STRATEGY, fingerprint
from ragcourse.book.timings import machine
from ragcourse.dense import cosine_distances, model_fingerprint, order
from ragcourse.evaluation import REPEATS, first_hit_rank, latency_ms
from ragcourse.groundtruth import load_questions, queries

BATCH = 32  # passages per encode call, as the book's `Embedder` batches them


@dataclass(frozen=True)
class Encoder:
    """One embedder as the run uses it: passages to unit vectors, one query to a unit vector, where it lives."""

    name: str
    passages: Callable[[list[str]], np.ndarray]
    query: Callable[[str], np.ndarray]
    folder: Path
    provenance: dict
    threads: int


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def sentence_transformer(name: str, model, folder: Path, provenance: dict) -> Encoder:
    """A sentence-transformers model on `threads()` torch threads, encoded as the book's `Embedder` does."""
    import torch

    threads = models.threads()
    torch.set_num_threads(threads)

    def passages(texts: list[str]) -> np.ndarray:
        return model.encode(texts, batch_size=BATCH, convert_to_numpy=True, normalize_embeddings=True)

    def query(text: str) -> np.ndarray:
        return model.encode([text], convert_to_numpy=True, normalize_embeddings=True)[0]

    return Encoder(name, passages, query, folder, provenance, threads)


def installed_provenance(folder: Path) -> dict:
    """The provenance `make models` wrote beside an optional model (wheels with their sha256, licence)."""
    return json.loads((folder / "provenance.json").read_text(encoding="utf-8"))


def load_encoder(name: str) -> Encoder:
    """Load one of EMBEDDERS through `ragcourse.models` (ModelNotFoundError, with the command, if absent)."""
    if name == "MiniLM":
        from importlib import metadata

        folder = Path(models.embedder_spec().source)
        wheel = f"{models.EMBEDDER_WHEEL}=={metadata.version(models.EMBEDDER_WHEEL)}"
        return sentence_transformer(name, models.load_embedder(), folder,
                                    {"what": models.EMBEDDER_NAME, "wheels": [wheel]})
    if name == "mpnet":
        folder = models.installed_model("all-mpnet-base-v2")
        return sentence_transformer(name, models.load_mpnet(), folder, installed_provenance(folder))
    if name == "e5-small":
        folder = models.installed_model("e5-small")
        e5 = models.load_e5()
        return Encoder(name, e5.passage, e5.query, folder, installed_provenance(folder), models.threads())
    raise ValueError(f"embedder {name!r}: expected one of {list(EMBEDDERS)}")


def ranks(chunk_vectors: np.ndarray, query_vectors: dict[str, np.ndarray], chunks: Sequence,
          needles: dict[str, str]) -> dict[str, int | None]:
    """Each query's first-hit rank (None: no chunk holds its needle), ranking by cosine distance as the book does.

    >>> from types import SimpleNamespace as C
    >>> chunks = [C(content="alpha"), C(content="beta")]
    >>> ranks(np.eye(2, dtype=np.float32), {"q": np.array([0.0, 1.0])}, chunks, {"q": "alpha"})
    {'q': 2}
    """
    return {qid: first_hit_rank([chunks[i] for i in order(cosine_distances(chunk_vectors, vector))], needles[qid])
            for qid, vector in query_vectors.items()}


def timed_passages(encoder: Encoder, texts: list[str]) -> tuple[np.ndarray, float, float]:
    """All passages' vectors in batches of BATCH, with the wall and CPU seconds it took (progress to stderr)."""
    wall, cpu, parts = time.perf_counter(), time.process_time(), []
    for start in range(0, len(texts), BATCH):
        parts.append(np.asarray(encoder.passages(texts[start:start + BATCH]), dtype=np.float32))
        if start // BATCH % 5 == 0:
            log(f"{encoder.name}: {start + len(parts[-1])}/{len(texts)} passages")
    return np.vstack(parts), time.perf_counter() - wall, time.process_time() - cpu


def rss_mib() -> float:
    """This process's resident memory now, in MiB (from /proc; 0 where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def measure(name: str) -> dict:
    """One embedder's record: load, encode E's chunks and every query, rank, time queries; in this process."""
    started = time.perf_counter()
    chunks, qs = pipeline.build(STRATEGY, dense=False).chunks, queries(load_questions())
    texts = [c.text for c in chunks]
    before = rss_mib()
    encoder = load_encoder(name)
    load_s = time.perf_counter() - started
    encoder.passages(texts[:2]), encoder.query(qs[0].text)  # warm-up, not timed
    vectors, wall, cpu = timed_passages(encoder, texts)
    norms = np.linalg.norm(vectors, axis=1)
    if not np.allclose(norms, 1.0, atol=1e-3):
        raise ValueError(f"{name}: passage vectors are not unit length (norms {norms.min()}..{norms.max()})")
    query_started = time.perf_counter()
    query_vectors = {q.id: np.asarray(encoder.query(q.text), dtype=np.float32) for q in qs}
    query_s = time.perf_counter() - query_started
    log(f"{name}: {len(qs)} queries in {query_s:.1f} s; timing the original questions' queries")
    original = [q.text for q in queries(load_questions(subset="original"))]
    return {
        "ranks": ranks(vectors, query_vectors, chunks, {q.id: q.needle for q in qs}),
        "dim": int(vectors.shape[1]), "threads": encoder.threads,
        "ms_per_passage": round(1000 * wall / len(texts), 2), "cpu_ms_per_passage": round(1000 * cpu / len(texts), 2),
        "encode_s": round(wall, 1), "queries_s": round(query_s, 1),
        "ms_per_query": latency_ms(encoder.query, original), "latency_queries": len(original),
        "latency_repeats": REPEATS, "load_s": round(load_s, 1),
        "rss_before_mib": round(before),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "model_mib": round(folder_mib(encoder.folder), 1), "model_fingerprint": model_fingerprint(str(encoder.folder)),
        "provenance": encoder.provenance, "seconds": round(time.perf_counter() - started, 1),
    }


def recorded(record: dict, name: str, expected: dict) -> bool:
    """Is `name` already in `record`, made from the same chunks and queries on the same threads (resume)?

    >>> recorded({"chunks_sha256": "x", "embedders": {"e5": {"threads": 1}}}, "e5", {"chunks_sha256": "x"})
    True
    """
    same = all(record.get(key) == value for key, value in expected.items())
    return same and record.get("embedders", {}).get(name, {}).get("threads") == models.threads()


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run(out: Path) -> dict:
    """Every embedder not yet recorded, each in a child process; the record rewritten after each one."""
    chunks, qs = pipeline.build(STRATEGY, dense=False).chunks, queries(load_questions())
    expected = fingerprint([c.text for c in chunks], qs)
    record = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    if not all(record.get(key) == value for key, value in expected.items()):
        record = {}  # another corpus or query set: start again
    record |= expected | {"threads": models.threads(), "command": "make embedders"}
    record.setdefault("embedders", {})
    for name in EMBEDDERS:
        if recorded(record, name, expected):
            log(f"{name}: already recorded, skipped")
            continue
        log(f"{name}: starting (load average {loadavg()})")
        child = subprocess.run([sys.executable, __file__, "--one", name], check=True, stdout=subprocess.PIPE, text=True)
        record["embedders"][name] = json.loads(child.stdout) | {"load_average_after": loadavg()}
        record["seconds"] = round(sum(e["seconds"] for e in record["embedders"].values()), 1)
        record["machine"] = machine() | {"torch_threads": models.threads()}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        log(f"{name}: done in {record['embedders'][name]['seconds']} s, written to {out}")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RUN_FILE)
    parser.add_argument("--one", choices=EMBEDDERS, help="measure one embedder in this process, JSON to stdout")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one)))
        return 0
    run(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
