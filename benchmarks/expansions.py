"""Store SmolLM2's query reformulations for chapter 10 (too slow to generate inside nbval).

    python benchmarks/expansions.py [--subset original|all]

Greedy decoding, one thread; writes benchmarks/results/expansions.json: the prompt, the model, and for each
query its raw output, the parsed rewrites, the new tokens and the seconds taken (with the machine and its load,
so the generator's share of latency can be read with its conditions). Chapter 10 re-generates a few and checks
they match.
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

OUT = expansion.REWRITES_FILE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subset", choices=("original", "all"), default="original")
    args = parser.parse_args()
    queries = groundtruth.queries(groundtruth.load_questions(subset=args.subset))
    with contextlib.redirect_stderr(io.StringIO()):
        models.load_generator()
    rows = {}
    for i, q in enumerate(queries, 1):
        start = time.perf_counter()
        text, tokens = models.generate(expansion.REWRITE_PROMPT.format(query=q.text), expansion.REWRITE_TOKENS)
        rows[q.id] = {"query": q.text, "output": text, "rewrites": expansion.parse_reformulations(text, q.text),
                      "new_tokens": tokens, "seconds": round(time.perf_counter() - start, 2)}
        print(f"{i}/{len(queries)} {q.id} {tokens} tokens {rows[q.id]['seconds']} s", flush=True)
    record = {"model": models.GENERATOR_GGUF, "prompt": expansion.REWRITE_PROMPT,
              "max_new_tokens": expansion.REWRITE_TOKENS, "subset": args.subset,
              "machine": timings.machine(), "load_average": [round(x, 2) for x in os.getloadavg()],
              "queries": rows}
    OUT.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
