"""Chapter 12's second-judge sample: 55 pooled (question, passage) pairs drawn at random, without any grade.

Reads the pool `ragcourse pool` wrote (path given), draws 55 lines with `random.Random(2)` (fixed before the
pool was graded), and writes two files: the sample for the second judge (id, question, the passage's text:
nothing of the first judge's grades), outside the repository, and `data/question_sets/judge2_sample.jsonl`,
the same ids with the question id and passage id only (the passage text stays out of the repository).

    python scripts/judge2_sample.py POOL.jsonl SAMPLE.jsonl
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from ragcourse.pipeline import build
from ragcourse.question_sets import QUESTION_SETS_DIR

SIZE, SEED = 55, 2
IDS = QUESTION_SETS_DIR / "judge2_sample.jsonl"


def corpus_id(docno: str) -> str:
    """The pool's passage id (a file name of the folder) as the course corpus names the chunk."""
    doc, span = docno.split("#", 1)
    return f"{doc.removesuffix('.md')}#{span}"


def main(pool: str, out: str) -> None:
    lines = [json.loads(x) for x in Path(pool).read_text(encoding="utf-8").splitlines() if x.startswith("{")]
    chunks = {c.id: c for c in build("E", dense=False).chunks}
    drawn = random.Random(SEED).sample(lines, SIZE)
    sample, ids = [], []
    for n, line in enumerate(drawn, start=1):
        docno = corpus_id(line["docno"])
        sample.append({"id": f"j{n:02d}", "question": line["question"], "chunk": chunks[docno].text})
        ids.append({"id": f"j{n:02d}", "qid": line["qid"], "docno": docno})
    Path(out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in sample), encoding="utf-8")
    IDS.write_text("".join(json.dumps(r) + "\n" for r in ids), encoding="utf-8")
    print(f"wrote {out} and {IDS}: {len(sample)} pairs")


if __name__ == "__main__":
    main(*sys.argv[1:3])
