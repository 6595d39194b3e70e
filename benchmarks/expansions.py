"""Store a generator's query reformulations for chapter 10 (too slow to generate inside nbval).

    python benchmarks/expansions.py [--subset original|all] [--model smollm2|qwen]

Greedy decoding under `expansion.REWRITE_PROMPT` and its token budget. `--model smollm2` (the default):
SmolLM2-135M on one torch thread, into benchmarks/results/expansions.json. `--model qwen`:
Qwen2.5-Coder-1.5B-Instruct through llama.cpp (`make llama`) on `RAGCOURSE_THREADS` threads, into
expansions_qwen.json. Each record holds the prompt, the model, and for each query its raw output, the parsed
rewrites, the new tokens and the seconds taken (with the machine and its load, so the generator's share of
latency can be read with its conditions). Chapter 10's lab checks the prompt and budget before reading it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import time

from ragcourse import expansion, groundtruth, models
from ragcourse.book import timings

OUT = {"smollm2": expansion.REWRITES_FILE, "qwen": expansion.QWEN_REWRITES_FILE}


def qwen(prompt: str) -> tuple[str, int]:
    """The 1.5B model's rewrites of one query: (text, new tokens), as `models.generate` gives SmolLM2's."""
    reply = models.generate_qwen(prompt, expansion.REWRITE_TOKENS)
    return reply.text, reply.new_tokens


def generator(model: str):
    """(model file, prompt -> (text, new tokens)) for `model`, loaded once."""
    if model == "qwen":
        models.load_qwen_llama()
        return models.QWEN_GGUF, qwen
    with contextlib.redirect_stderr(io.StringIO()):
        models.load_generator()
    return models.GENERATOR_GGUF, lambda prompt: models.generate(prompt, expansion.REWRITE_TOKENS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subset", choices=("original", "all"), default="original")
    parser.add_argument("--model", choices=sorted(OUT), default="smollm2")
    args = parser.parse_args()
    queries = groundtruth.queries(groundtruth.load_questions(subset=args.subset))
    name, generate = generator(args.model)
    rows, started = {}, time.perf_counter()
    for i, q in enumerate(queries, 1):
        start = time.perf_counter()
        text, tokens = generate(expansion.REWRITE_PROMPT.format(query=q.text))
        rewrites = expansion.parse_reformulations(text, q.text, cut=tokens >= expansion.REWRITE_TOKENS)
        rows[q.id] = {"query": q.text, "output": text, "rewrites": rewrites, "new_tokens": tokens,
                      "seconds": round(time.perf_counter() - start, 2)}
        print(f"{i}/{len(queries)} {q.id} {tokens} tokens {rows[q.id]['seconds']} s", flush=True)
    record = {"model": name, "prompt": expansion.REWRITE_PROMPT, "max_new_tokens": expansion.REWRITE_TOKENS,
              "subset": args.subset, "threads": models.threads() if args.model == "qwen" else 1,
              "wall_s": round(time.perf_counter() - started, 1),
              "machine": timings.machine(), "load_average": [round(x, 2) for x in os.getloadavg()],
              "queries": rows}
    OUT[args.model].write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT[args.model]}")


if __name__ == "__main__":
    main()
