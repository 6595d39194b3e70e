"""Chapter 5 trial: SmolLM2-135M as a pointwise judge of the hybrid top 25 (a measurement, not a test).

Too slow for the notebook (about 25 s per query on 2 cores: 25 causal-LM forward passes), so this
script runs it once over the 64 development queries and writes, per query, the needle's rank in
the hybrid ranking and after the judge reranked the top 25, to `benchmarks/results/judge.json`.
Chapter 5 reads that file, checks that its hybrid ranks still equal the live ones (so a changed
pipeline forces a rerun), and computes every statistic itself. The judge (`SmolJudgeReranker`, a
`ragcourse.rerank.Reranker`) lives here: nothing in the package uses it.

Run: `make judge` (or `python benchmarks/judge_trial.py`). Nothing here is tuned on the questions:
the prompt was written once, before this run, and the shortlist size is the seed's.
"""

from __future__ import annotations

import json
import platform
import time

import numpy as np
import torch

from ragcourse import models, pipeline
from ragcourse.evaluation import first_hit_rank
from ragcourse.groundtruth import load_questions, queries
from ragcourse.paths import RESULTS_DIR
from ragcourse.rerank import DEPTH, USES, rerank_head

SHORTLIST = DEPTH  # chapter 5's shortlist
OUT = RESULTS_DIR / "judge.json"

JUDGE_SYSTEM = "You decide whether a passage answers a question. Reply with yes or no."


class SmolJudgeReranker:
    """Pointwise LLM judge: score = logit("yes") - logit("no") for the next token (SmolLM2-135M).

    Each (query, passage) pair becomes one chat prompt; the passage is cut to `max_length`
    tokens. Slow (a causal LM forward per pair) and, at 135M parameters, a weak judge: chapter 5
    measures it (`make judge`) at about the level of a random order. An experiment, kept here and
    out of the package.
    """

    def __init__(self, batch_size: int = 8, max_length: int = 256, use: str = "text") -> None:
        if batch_size < 1 or max_length < 8:
            raise ValueError(f"batch_size={batch_size!r}, max_length={max_length!r}: "
                             "expected batch_size >= 1 and max_length >= 8")
        if use not in USES:
            raise ValueError(f"use={use!r}: expected one of {list(USES)}")
        self.tokenizer, self.model = models.load_generator()
        self.name, self.use = "SmolLM2-135M judge", use
        self.batch_size, self.max_length = batch_size, max_length
        first = [self.tokenizer.encode(w, add_special_tokens=False)[0] for w in ("yes", "no")]
        self.yes_id, self.no_id = first

    def prompt(self, query: str, passage: str) -> str:
        """The chat prompt for one pair, ending where the assistant's answer starts."""
        ids = self.tokenizer.encode(passage, add_special_tokens=False)[: self.max_length]
        question = (f"Question: {query}\n\nPassage: {self.tokenizer.decode(ids)}\n\n"
                    "Does the passage answer the question? Reply yes or no.")
        messages = [{"role": "system", "content": JUDGE_SYSTEM},
                    {"role": "user", "content": question}]
        return self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                  add_generation_prompt=True)

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        """yes-minus-no logit per passage, batched with left padding."""
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        out = []
        for start in range(0, len(passages), self.batch_size):
            prompts = [self.prompt(query, p) for p in passages[start:start + self.batch_size]]
            batch = self.tokenizer(prompts, return_tensors="pt", padding=True)
            with torch.inference_mode():
                logits = self.model(**batch).logits[:, -1, :]
            out.extend((logits[:, self.yes_id] - logits[:, self.no_id]).tolist())
        return np.asarray(out, dtype=np.float32)


def main() -> None:
    retriever = pipeline.build("E")
    chunks, qs = retriever.chunks, queries(load_questions(subset="original"))
    judge = SmolJudgeReranker()
    torch.set_num_threads(1)  # two threads that wait on each other are slower on a shared 2-core machine
    rows, started = [], time.perf_counter()
    for n, q in enumerate(qs, start=1):
        hybrid = [chunks[i] for i in retriever.rank(q.text, "hybrid")]
        judged = rerank_head(judge, q.text, hybrid, SHORTLIST)
        rows.append({"query": q.id, "hybrid_rank": first_hit_rank(hybrid, q.needle),
                     "judge_rank": first_hit_rank(judged, q.needle)})
        print(f"{n}/{len(qs)} {q.id}: {rows[-1]['hybrid_rank']} -> {rows[-1]['judge_rank']} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    seconds = time.perf_counter() - started
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "reranker": judge.name, "system_prompt": JUDGE_SYSTEM, "shortlist": SHORTLIST, "strategy": "E",
        "queries": len(qs), "seconds": round(seconds, 1), "seconds_per_query": round(seconds / len(qs), 2),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch thread(s)",
        "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
