"""One thread or two, on a machine that is shared: generation speed measured both ways (`make threads`).

SmolLM2-135M (chapter 7's generator) writes a fixed number of new tokens for one grounded prompt, greedily, on
1 and on 2 torch threads, first with nothing else asking for the CPU, then beside BUSY processes that each keep
one core busy (a pure-Python loop, the same priority) as another user's job would. Each condition is timed by
the book's latency protocol (`evaluation.latency_ms`: a warm-up, then the fastest of REPEATS runs); the load
average before each condition is stored.
The record, benchmarks/results/threads.json, is what chapter 7's lab reads to explain why every recorded model
run in this book uses one thread (`RAGCOURSE_THREADS`, default 1).

Run on an otherwise quiet machine: `make threads` (about 3 minutes).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time

from ragcourse import models, pipeline
from ragcourse.book.timings import machine
from ragcourse.citations import build_context
from ragcourse.evaluation import REPEATS, latency_ms
from ragcourse.groundtruth import load_questions
from ragcourse.paths import RESULTS_DIR

OUT = RESULTS_DIR / "threads.json"
NEW_TOKENS = 40
THREADS, BUSY = (1, 2), (0, 1)


def tokens_per_s(prompt: str, threads: int) -> tuple[float, int]:
    """New tokens per second by the book's latency protocol (`evaluation.latency_ms`), and the tokens written."""
    def write(text: str) -> int:
        return models.generate(text, max_new_tokens=NEW_TOKENS, threads=threads)[1]

    written = write(prompt)  # greedy: every run writes these same tokens
    return round(written / (latency_ms(write, [prompt], REPEATS) / 1000), 1), written


@contextlib.contextmanager
def busy(count: int):
    """`count` processes that each keep one core busy until the block ends."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    time.sleep(1.0 if count else 0.0)
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def main() -> None:
    question = load_questions(subset="original")[0]
    hits = pipeline.build("E").retrieve(question.question, k=4, method="hybrid")
    prompt = build_context(question.question, hits).prompt
    with contextlib.redirect_stderr(io.StringIO()):
        models.load_generator()
    rows = []
    for competing in BUSY:
        for threads in THREADS:
            load = os.getloadavg()[0]
            with busy(competing):
                speed, written = tokens_per_s(prompt, threads)
            rows.append({"threads": threads, "busy_processes": competing, "tokens_per_s": speed,
                         "new_tokens": written, "load_average_before": round(load, 2)})
            print(rows[-1], flush=True)
    OUT.write_text(json.dumps({"model": models.GENERATOR_GGUF, "new_tokens": NEW_TOKENS, "repeats": REPEATS,
                               "machine": machine(), "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
