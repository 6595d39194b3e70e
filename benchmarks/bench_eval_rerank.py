"""Issue 42's check: a no-change `ragcourse eval --rerank` re-run costs at most 2x the same re-run without it.

The folder is the course corpus exported as files (each with its title), the questions all 210 of the course (420
queries), the run E/hybrid, with a private, fresh cache (`--cache-dir`) so nothing outside the benchmark warms it. A
first run with `--rerank` fills the cache (embeddings and token vectors; not timed); then the plain and the
`--rerank` re-run alternate, ``--repeats`` times each, every one a fresh process as a user starts it (start-up and
reading included). Both CPU seconds (user + system of the child, which stretch little under load) and wall seconds
are kept, with the load average before and after. Exits 1 when the median `--rerank` re-run takes more than 2x the
median plain one in CPU seconds, or when a re-run's results differ from the first run's (latencies aside).

    python benchmarks/bench_eval_rerank.py [--repeats 3] [--out benchmarks/results/eval_rerank.json] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ragcourse.book.timings import machine
from ragcourse.cli.folder import export_corpus
from ragcourse.cli.runs import without_latency
from ragcourse.corpus import load_corpus
from ragcourse.paths import DATA_DIR, RESULTS_DIR

OUT = RESULTS_DIR / "eval_rerank.json"
#: Issue 42: "A no-change --rerank re-run is at most 2x the plain re-run."
LIMIT = 2.0


def _child_times() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def timed_eval(docs: Path, questions: Path, out: Path, cache: Path, rerank: bool) -> dict:
    """One `ragcourse eval` process on the course corpus: wall, user and system seconds."""
    command = [sys.executable, "-m", "ragcourse", "eval", str(docs), "--questions", str(questions),
               "--methods", "hybrid", "--cache-dir", str(cache), "--out", str(out), *(["--rerank"] if rerank else [])]
    env = dict(os.environ, RAGCOURSE_PROGRESS="0")
    (user, system), started = _child_times(), time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    wall, (user_after, system_after) = time.perf_counter() - started, _child_times()
    return {"wall": round(wall, 2), "user": round(user_after - user, 2), "system": round(system_after - system, 2)}


def questions_file(dest: Path) -> Path:
    """All 210 questions of the course, as a reader's questions file (id, needle, question, ticket: eval finds
    each needle's file itself)."""
    keep = ("id", "needle", "question", "ticket")
    lines = [json.dumps({k: record[k] for k in keep if k in record})
             for name in ("questions.jsonl", "questions_added.jsonl")
             for record in map(json.loads, (DATA_DIR / name).read_text(encoding="utf-8").splitlines())]
    dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def _same(a: Path, b: Path) -> bool:
    read = [json.loads((p / "results.json").read_text(encoding="utf-8")) for p in (a, b)]
    return without_latency(read[0]) == without_latency(read[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cache-dir", type=Path, default=None, help="a cache to keep (default: a fresh one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        questions, cache = questions_file(root / "questions.jsonl"), args.cache_dir or root / "cache"
        docs = root / "docs"
        export_corpus(load_corpus(), docs)
        first = timed_eval(docs, questions, root / "first", cache, rerank=True)
        load_before, runs = os.getloadavg(), {"plain": [], "rerank": []}
        for i in range(args.repeats):
            for kind in runs:
                out = root / f"{kind}-{i}"
                runs[kind].append(timed_eval(docs, questions, out, cache, rerank=kind == "rerank"))
                runs[kind][-1]["same_results"] = _same(root / "first", out) if kind == "rerank" else None
        load_after = os.getloadavg()
    median = {kind: {key: statistics.median(r[key] for r in rs) for key in ("user", "system", "wall")}
              for kind, rs in runs.items()}
    cpu = {kind: m["user"] + m["system"] for kind, m in median.items()}
    ratio = round(cpu["rerank"] / cpu["plain"], 2)
    record = {"run": "E/hybrid", "queries": 420, "first_run_rerank": first, "runs": runs, "median": median,
              "cpu_ratio": ratio, "wall_ratio": round(median["rerank"]["wall"] / median["plain"]["wall"], 2),
              "limit": LIMIT, "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in load_after], "machine": machine()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: record[k] for k in ("median", "cpu_ratio", "wall_ratio", "load_average_before",
                                              "load_average_after")}, indent=1))
    same = all(r["same_results"] for r in runs["rerank"])
    if ratio > LIMIT or not same:
        print(f"FAIL: --rerank re-run {ratio}x the plain re-run in CPU seconds (limit {LIMIT}x); "
              f"results the same as the first run: {same}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
