"""Chapter 12's judged pool: which questions are pooled, by a rule fixed before any pool was seen.

Five questions from each set (needle-first, topic-first, generated), drawn with `random.Random(12)` from the
set in file order (topic-first: answerable or not; generated: the first 20, the set as it was before the
larger run), written as `ragcourse pool` reads them (id, question, doc, needle when there is one) to
`data/question_sets/pool_questions.jsonl`. Then, from the worktree:

    ragcourse pool data/corpus --questions data/question_sets/pool_questions.jsonl \
        --out data/question_sets/pool.jsonl -k 3 --rerank

pools the top 3 of dense, BM25 and hybrid, each also reranked, for every question: what one judge can read
with care in the time this book had (15 questions, about 120 chunks).
"""

from __future__ import annotations

import json
import random

from ragcourse.question_sets import QUESTION_SETS_DIR, load_set

PER_SET, SEED = 5, 12
OUT = QUESTION_SETS_DIR / "pool_questions.jsonl"


def main() -> None:
    rng = random.Random(SEED)
    lines = []
    for procedure in ("needle-first", "topic-first", "generated"):
        questions = load_set(procedure)[:20] if procedure == "generated" else load_set(procedure)
        for q in rng.sample(questions, PER_SET):
            record = {"id": q.id, "question": q.question, "doc": q.doc}
            if q.needle:
                record["needle"] = q.needle
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    OUT.write_text("".join(lines), encoding="utf-8")
    print(f"wrote {OUT}: {len(lines)} questions")


if __name__ == "__main__":
    main()
