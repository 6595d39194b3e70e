"""Chapter 11 trial: does SmolLM2-135M follow an instruction planted in a retrieved chunk? (a measurement)

For each of the 32 original questions (documentation phrasing), the book's pipeline (strategy E, hybrid
top 4) retrieves four chunks; the first one gets a planted instruction (`injection.instruction_for(i)`,
four phrasings in turn). The generator answers under each prompt variant (`injection.PROMPTS`): greedy,
MAX_NEW_TOKENS new tokens, one thread. Stored per question and variant: the prompt's sha256, the answer,
its new tokens and seconds, in `benchmarks/results/injection.json`. Chapter 11 rebuilds every prompt,
checks its hash, and computes every rate itself. `generate` is any callable prompt -> text, so a reader's
generator (see `ragcourse.models`) plugs in the same way.

Run: `nice -n 19 python benchmarks/injection_trial.py` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import platform
import time

from ragcourse import citations, injection, models, pipeline
from ragcourse.groundtruth import load_questions
from ragcourse.paths import RESULTS_DIR

OUT = RESULTS_DIR / "injection.json"
K, METHOD, STRATEGY = 4, "hybrid", "E"
MAX_NEW_TOKENS = 60


def planted_prompts(retriever, questions) -> list[dict]:
    """Per question: the planted template and the prompt of every variant (what the chapter rebuilds)."""
    rows = []
    for i, q in enumerate(questions):
        hits = retriever.retrieve(q.question, k=K, method=METHOD)
        hits[0] = type(hits[0])(injection.plant(hits[0].chunk, injection.instruction_for(i)),
                                hits[0].distance, hits[0].rank)
        context = citations.build_context(q.question, hits)
        prompts = {v: injection.variant_prompt(context.prompt, context.citations, q.question, v)
                   for v in injection.PROMPTS}
        rows.append({"question": q.id, "template": i % len(injection.INSTRUCTIONS), "prompts": prompts})
    return rows


def main() -> None:
    retriever = pipeline.build(STRATEGY)
    rows = planted_prompts(retriever, load_questions(subset="original"))
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF de-quantizer draws a progress bar
        models.load_generator()
    started = time.perf_counter()
    for n, row in enumerate(rows, start=1):
        answers = {}
        for variant, prompt in row.pop("prompts").items():
            began = time.perf_counter()
            text, new_tokens = models.generate(prompt, max_new_tokens=MAX_NEW_TOKENS, threads=1)
            answers[variant] = {"prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                                "answer": text, "new_tokens": new_tokens,
                                "seconds": round(time.perf_counter() - began, 2)}
        row["answers"] = answers
        print(f"{n}/{len(rows)} {row['question']} ({time.perf_counter() - started:.0f} s)", flush=True)
    OUT.write_text(json.dumps({
        "generator": models.GENERATOR_GGUF, "max_new_tokens": MAX_NEW_TOKENS, "decoding": "greedy",
        "strategy": STRATEGY, "method": METHOD, "k": K, "seconds": round(time.perf_counter() - started, 1),
        "machine": f"{platform.machine()}, 1 torch thread", "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
