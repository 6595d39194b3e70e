"""Chapter 7 with the 1.5B model: its answers, and its verdicts as the judge of citation support (a recording).

`answers` runs Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, llama.cpp, `models.generate_qwen`: greedy, 120 new tokens,
`RAGCOURSE_THREADS` threads) on every query chapter 7's gate lets through, under the chapter's prompt
(`citations.build_context`, the same plan as `generate_answers.py`) and under the same prompt with one format
example (`example=True`), then on all 30 out-of-domain queries with no gate (their top 4 sources, with the
example), to see whether the model refuses by itself. `judge` asks the same model, with
`attribution.judge_prompt`, every SUPPORTED/NOT question that ALCE's citation recall and precision need:
first the hand-labelled pairs of `data/citation_labels.jsonl` (to validate the judge), then SmolLM2's stored
answers, then the 1.5B model's answers with the example (`--questions N` keeps the first N in-domain
questions, to fit the time).

Both write `benchmarks/results/answers_qwen.json` / `citation_judge.json` after every item and skip what is
stored on a restart (each run's wall time is appended to `runs`). Chapter 7's lab checks every prompt hash
against the live pipeline and computes every statistic itself; no notebook runs the model.

Run: `make answers-qwen` (about 30 min for the answers and 25 min for the judge, one thread each).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

from generate_answers import MAX_NEW_TOKENS, METHOD, STRATEGY, K, chosen_cut, prompt_sha256

from ragcourse import attribution, models, pipeline
from ragcourse.corpus import load_corpus
from ragcourse.evaluation import question_of
from ragcourse.groundtruth import load_out_of_domain, load_questions, queries
from ragcourse.paths import DATA_DIR, RESULTS_DIR

ANSWERS = RESULTS_DIR / "answers_qwen.json"
JUDGE = RESULTS_DIR / "citation_judge.json"
LABELS = DATA_DIR / "citation_labels.jsonl"
JUDGE_TOKENS = 3


def plan() -> tuple[float, list[tuple[str, str, str, list]]]:
    """The chapter's cut and (query id, set, text, top-K hits) for the 64 in-domain and 30 out-of-domain queries."""
    retriever = pipeline.build(STRATEGY)
    in_domain = [(q.id, "in", q.text, q.needle) for q in queries(load_questions(subset="original"))]
    ood = [(o.id, "out", o.query, None) for o in load_out_of_domain()]
    hits = {qid: retriever.retrieve(text, k=K, method=METHOD) for qid, _, text, _ in in_domain + ood}
    cut = chosen_cut([(hits[qid], needle) for qid, _, _, needle in in_domain], [hits[qid] for qid, *_ in ood])
    return cut, [(qid, kind, text, hits[qid]) for qid, kind, text, _ in in_domain + ood]


def load(path: Path, header: dict) -> dict:
    """The stored record to resume, or a new one with `header`."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else dict(header, runs=[], rows=[])


def save(path: Path, record: dict) -> None:
    """Write the record whole (a temporary file, then a rename: a killed run never leaves half a file)."""
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    partial.replace(path)


def header(role: str) -> dict:
    return {"model": models.QWEN_GGUF, "runtime": f"llama.cpp ({models.LLAMA_PACKAGE})", "role": role,
            "threads": models.threads(), "decoding": "greedy, temperature 0",
            "machine": f"{platform.machine()}, {os.cpu_count()} cores"}


def record_answers(cut: float, items: list) -> None:
    """Every gated answer, then every ungated out-of-domain answer, resumably."""
    record = load(ANSWERS, header("generator") | {"max_new_tokens": MAX_NEW_TOKENS, "strategy": STRATEGY,
                                                  "method": METHOD, "k": K, "cut": cut})
    done = {(r["query"], r["mode"]) for r in record["rows"]}
    todo = [(key, ctx) for key, ctx in attribution.recorded_contexts(items, cut, K).items() if key not in done]
    started, run = time.perf_counter(), {"started": datetime.datetime.now().isoformat(timespec="seconds")}
    record["runs"].append(run)
    for n, ((qid, mode), ctx) in enumerate(todo, start=1):
        t = time.perf_counter()
        reply = models.generate_qwen(ctx.prompt, MAX_NEW_TOKENS)
        record["rows"].append({"query": qid, "mode": mode, "prompt_sha256": prompt_sha256(ctx.prompt),
                               "answer": reply.text, "prompt_tokens": reply.prompt_tokens,
                               "new_tokens": reply.new_tokens, "seconds": round(time.perf_counter() - t, 2)})
        run.update(items=n, wall_s=round(time.perf_counter() - started, 1))
        save(ANSWERS, record)
        print(f"{n}/{len(todo)} {qid} {mode}: {reply.prompt_tokens}+{reply.new_tokens} tokens "
              f"({time.perf_counter() - started:.0f} s)", flush=True)


def live_judge(record: dict, tag: str):
    """A judge that answers from the record when it can, else asks the model and saves the verdict at once."""
    stored = {r["prompt_sha256"]: r["supported"] for r in record["rows"]}
    started, run = time.perf_counter(), {"started": datetime.datetime.now().isoformat(timespec="seconds"), "for": tag}
    record["runs"].append(run)

    def judge(prompt: str) -> bool:
        key = attribution.prompt_sha256(prompt)
        if key not in stored:
            t = time.perf_counter()
            reply = models.generate_qwen(prompt, JUDGE_TOKENS)
            stored[key] = attribution.verdict(reply.text)
            record["rows"].append({"prompt_sha256": key, "for": tag, "reply": reply.text, "supported": stored[key],
                                   "prompt_tokens": reply.prompt_tokens, "seconds": round(time.perf_counter() - t, 2)})
            run.update(items=run.get("items", 0) + 1, wall_s=round(time.perf_counter() - started, 1))
            save(JUDGE, record)
            print(f"{tag} {run['items']}: {reply.text.strip()!r} ({run['wall_s']:.0f} s)", flush=True)
        return stored[key]
    return judge


def judge_answers(answers: dict, ctxs: dict, judge) -> None:
    """Ask `judge` what ALCE needs for every stored answer (only what its earlier verdicts leave open)."""
    for key, text in answers.items():
        attribution.attribution(text, ctxs[key].citations, judge)


def record_judge(cut: float, items: list, questions: int) -> None:
    """The judge's verdicts: hand-labelled pairs, SmolLM2's answers, then the 1.5B model's (first `questions`)."""
    record = load(JUDGE, header("judge") | {"max_tokens": JUDGE_TOKENS})
    record["questions"] = questions
    ctxs = attribution.recorded_contexts(items, cut, K)
    judge = live_judge(record, "labels")
    texts = {d.id: d.text for d in load_corpus()}
    for row in attribution.read_labels(LABELS):
        judge(attribution.labelled_prompt(row, texts))
    smol = json.loads((RESULTS_DIR / "answers.json").read_text(encoding="utf-8"))["rows"]
    judge_answers({(r["query"], "gated"): r["answer"] for r in smol if r["answered"]}, ctxs,
                  live_judge(record, "smollm2"))
    in_questions = list(dict.fromkeys(question_of(qid) for qid, kind, *_ in items if kind == "in"))
    kept = set(in_questions[:questions]) | {question_of(qid) for qid, kind, *_ in items if kind == "out"}
    qwen = json.loads(ANSWERS.read_text(encoding="utf-8"))["rows"] if ANSWERS.is_file() else []  # so far
    judge_answers({(r["query"], r["mode"]): r["answer"] for r in qwen
                   if r["mode"] == "example" and question_of(r["query"]) in kept}, ctxs, live_judge(record, "qwen"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["answers", "judge"])
    parser.add_argument("--questions", type=int, default=32, help="in-domain questions whose 1.5B answers are judged")
    args = parser.parse_args()
    cut, items = plan()
    models.load_qwen_llama()
    if args.part == "answers":
        record_answers(cut, items)
    else:
        record_judge(cut, items, args.questions)


if __name__ == "__main__":
    main()
