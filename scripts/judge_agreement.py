"""Agreement of chapter 12's two judges, and what it does to nDCG@10 and MAP of the BM25 run (no model loads).

Reads `data/question_sets/pool_judged.jsonl` (judge A), `judge2_sample.jsonl` (the sampled pairs' ids) and
`judge2_labels.jsonl` (judge B's grades: `id`, `label`, `reason`); prints the cross-table, raw agreement, Cohen's
kappa unweighted and linearly weighted (scikit-learn) with a bootstrap interval over the pairs (2,000 draws,
`numpy.random.default_rng(12)`), and BM25's mean nDCG@10 and MAP on the pooled questions under A's grades and
with B's grades on the sampled pairs.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from ragcourse import graded
from ragcourse.pipeline import build
from ragcourse.question_sets import QUESTION_SETS_DIR


def _lines(name: str) -> list[dict]:
    text = (QUESTION_SETS_DIR / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def main() -> None:
    grades: dict[str, dict[str, int]] = {}
    for j in _lines("pool_judged.jsonl"):
        grades.setdefault(j["qid"], {})[j["docno"]] = int(j["grade"])
    second = {r["id"]: int(r["label"]) for r in _lines("judge2_labels.jsonl")}
    pairs = [(s["qid"], s["docno"], s["id"]) for s in _lines("judge2_sample.jsonl") if s["id"] in second]
    a = np.array([grades[q][d] for q, d, _ in pairs])
    b = np.array([second[i] for _, _, i in pairs])
    print(pd.crosstab(pd.Series(a, name="judge A"), pd.Series(b, name="judge B")))
    weighted = cohen_kappa_score(a, b, labels=[0, 1, 2], weights="linear")
    rng, boot = np.random.default_rng(12), []
    for _ in range(2000):
        pick = rng.integers(0, len(pairs), len(pairs))
        if len(set(a[pick]) | set(b[pick])) > 1:
            boot.append(cohen_kappa_score(a[pick], b[pick], labels=[0, 1, 2], weights="linear"))
    low, high = np.percentile(boot, [2.5, 97.5])
    plain = cohen_kappa_score(a, b, labels=[0, 1, 2])
    print(f"{len(pairs)} pairs; agreement {np.mean(a == b):.3f}; kappa {plain:.3f}; "
          f"weighted kappa {weighted:.3f} [{low:.3f}, {high:.3f}]")
    swapped = {q: dict(found) for q, found in grades.items()}
    for q, d, i in pairs:
        swapped[q][d] = second[i]
    retriever = build("E", dense=False)
    questions = _lines("pool_questions.jsonl")
    for label, judged in (("A", grades), ("B on the sample", swapped)):
        rows = [graded.measures([retriever.chunks[i].id for i in retriever.bm25.rank(q["question"])],
                                judged[q["id"]], [10]) for q in questions]
        table = pd.DataFrame(rows)
        print(f"BM25, grades {label}: nDCG@10 {table['graded_ndcg@10'].mean():.3f}, MAP {table['ap'].mean():.3f}")


if __name__ == "__main__":
    main()
