"""How long `ragcourse eval` takes on a 1,000-file folder, cold and with the embedding cache warm.

The folder is the course corpus cut into 1,000 Markdown files at paragraph boundaries (each file
titled `<document title> (part i)`), written to a temporary folder and never kept; the questions
are the original chapter's 32 (64 queries), without `doc`, so `eval` finds each needle's file
itself. Both runs are separate processes sharing one fresh cache folder (`--cache-dir`), so the
cold run embeds every chunk and the second embeds none; their results.json agree except for the
measured per-query latencies, whose medians the record keeps. Run it on a quiet machine:

    python benchmarks/eval_folder.py [--files 1000] [--out benchmarks/results/eval_folder.json]

The record holds the machine (`ragcourse.book.timings.machine`) and the load average before and after,
because a loaded machine (other jobs on the same cores) stretches every time in it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ragcourse.book.timings import machine
from ragcourse.chunking import paragraph_spans
from ragcourse.cli.runs import without_latency
from ragcourse.corpus import load_corpus
from ragcourse.groundtruth import load_questions
from ragcourse.paths import RESULTS_DIR

OUT = RESULTS_DIR / "eval_folder.json"


def split_corpus(dest: Path, files: int) -> int:
    """Write the corpus as `files` Markdown files, each a run of whole paragraphs of one document."""
    docs = load_corpus()
    paragraphs = [[d.text[s:e] for s, e in paragraph_spans(d.text)] for d in docs]
    total = sum(len(p) for p in paragraphs)
    shares = [max(1, round(files * len(p) / total)) for p in paragraphs]
    shares[max(range(len(docs)), key=lambda i: shares[i])] += files - sum(shares)  # exactly `files`
    written = 0
    for doc, pars, share in zip(docs, paragraphs, shares, strict=True):
        bounds = [round(i * len(pars) / share) for i in range(share + 1)]
        for part, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False), start=1):
            path = dest / doc.id / f"part-{part:03d}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# {doc.title} (part {part})\n\n" + "\n\n".join(pars[a:b]) + "\n", encoding="utf-8")
            written += 1
    return written


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_eval(docs: Path, questions: Path, out: Path, cache: Path) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one `ragcourse eval` process (model load included).

    CPU seconds (user + system, all threads) stretch far less than wall-clock ones on a loaded machine.
    """
    env = dict(os.environ, RAGCOURSE_PROGRESS="0")
    started, cpu = time.perf_counter(), _child_cpu()
    subprocess.run([sys.executable, "-m", "ragcourse", "eval", str(docs), "--questions", str(questions),
                    "--cache-dir", str(cache), "--out", str(out)], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started, _child_cpu() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = split_corpus(root / "docs", args.files)
        questions = root / "questions.jsonl"
        questions.write_text("".join(json.dumps({"id": q.id, "needle": q.needle, "question": q.question,
                                                 "ticket": q.ticket}) + "\n"
                                     for q in load_questions(subset="original")), encoding="utf-8")
        load_before = os.getloadavg()
        cold = timed_eval(root / "docs", questions, root / "cold", root / "cache")
        warm = timed_eval(root / "docs", questions, root / "warm", root / "cache")
        load_after = os.getloadavg()
        results = json.loads((root / "cold" / "results.json").read_text(encoding="utf-8"))
        warm_results = json.loads((root / "warm" / "results.json").read_text(encoding="utf-8"))
        latency = {r["label"]: r["latency_ms"]["median"] for r in warm_results["runs"]}
        same = without_latency(results) == without_latency(warm_results)
    record = {"files": files, "documents": results["corpus"]["documents"], "failed": len(results["corpus"]["failed"]),
              "characters": results["corpus"]["characters"], "queries": results["runs"][0]["queries"],
              "runs": [f"{r['strategy']}/{r['method']}" for r in results["runs"]],
              "cold_seconds": round(cold[0], 1), "warm_seconds": round(warm[0], 1),
              "speedup": round(cold[0] / warm[0], 1), "cold_cpu_seconds": round(cold[1], 1),
              "warm_cpu_seconds": round(warm[1], 1), "cpu_speedup": round(cold[1] / warm[1], 1),
              "same_results": same, "median_ms_per_query_warm": latency,
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in load_after], "machine": machine()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
