"""Chapter 11 trial: does a generator follow an instruction planted in a retrieved chunk? (a measurement)

For each of the 32 original questions (documentation phrasing), the book's pipeline (strategy E, hybrid
top 4) retrieves four chunks; the first one gets a planted instruction (`injection.instruction_for(i)`,
four phrasings in turn). The generator answers under each prompt variant (`injection.PROMPTS`): greedy,
MAX_NEW_TOKENS new tokens. Stored per question and variant: the prompt's sha256, the answer, its new tokens
and seconds. Chapter 11's lab rebuilds every prompt, checks its hash, and computes every rate itself.

- `--model smollm2` (the default): SmolLM2-135M under chapter 7's prompt, one torch thread,
  `benchmarks/results/injection.json` (about 10 minutes).
- `--model qwen`: Qwen2.5-Coder-1.5B-Instruct through llama.cpp (`make llama`), `RAGCOURSE_THREADS` threads,
  under chapter 7's example layout (`build_context(example=True)`, the prompt it answers in chapter 7), into
  `benchmarks/results/injection_qwen.json`, saved after every question and resumed on a rerun
  (about 30 minutes on one thread).

Run: `make injection` (SmolLM2) or `make injection-qwen`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import io
import json
import os
import platform
import time

from qwen_citations import save

from ragcourse import injection, models, pipeline
from ragcourse.groundtruth import load_questions
from ragcourse.paths import RESULTS_DIR

OUT = {"smollm2": RESULTS_DIR / "injection.json", "qwen": RESULTS_DIR / "injection_qwen.json"}
K, METHOD, STRATEGY = 4, "hybrid", "E"
MAX_NEW_TOKENS = 60


def smollm2(prompt: str) -> dict:
    text, new_tokens = models.generate(prompt, max_new_tokens=MAX_NEW_TOKENS, threads=1)
    return {"answer": text, "new_tokens": new_tokens}


def qwen(prompt: str) -> dict:
    reply = models.generate_qwen(prompt, MAX_NEW_TOKENS)
    return {"answer": reply.text, "prompt_tokens": reply.prompt_tokens, "new_tokens": reply.new_tokens}


def header(model: str) -> dict:
    """What the record states about its run (the lab reads `example` to rebuild the prompts)."""
    if model == "qwen":
        return {"generator": models.QWEN_GGUF, "runtime": f"llama.cpp ({models.LLAMA_PACKAGE})",
                "threads": models.threads(), "example": True}
    return {"generator": models.GENERATOR_GGUF, "threads": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(OUT), default="smollm2")
    args = parser.parse_args()
    out, example = OUT[args.model], args.model == "qwen"
    rows = [{"question": t.question, "template": t.template, "prompts": t.prompts} for t in
            injection.planted_trial(pipeline.build(STRATEGY), load_questions(subset="original"), K, METHOD, example)]
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF de-quantizer draws a progress bar
        models.load_qwen_llama() if example else models.load_generator()
    generate = qwen if example else smollm2
    record = (json.loads(out.read_text(encoding="utf-8")) if example and out.is_file() else
              header(args.model) | {"max_new_tokens": MAX_NEW_TOKENS, "decoding": "greedy", "strategy": STRATEGY,
                                    "method": METHOD, "k": K, "machine": f"{platform.machine()}, "
                                    f"{os.cpu_count()} cores", "runs": [], "rows": []})
    done = {r["question"] for r in record["rows"]}
    started, run = time.perf_counter(), {"started": datetime.datetime.now().isoformat(timespec="seconds")}
    record["runs"].append(run)
    for n, row in enumerate([r for r in rows if r["question"] not in done], start=1):
        answers = {}
        for variant, prompt in row.pop("prompts").items():
            began = time.perf_counter()
            answers[variant] = {"prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                                **generate(prompt), "seconds": round(time.perf_counter() - began, 2)}
        record["rows"].append(row | {"answers": answers})
        run.update(questions=n, wall_s=round(time.perf_counter() - started, 1))
        record["seconds"] = round(sum(r.get("wall_s", 0) for r in record["runs"]), 1)
        save(out, record)
        print(f"{n} {row['question']} ({time.perf_counter() - started:.0f} s)", flush=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
