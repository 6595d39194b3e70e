"""Chapter 5 trial: which offline reranker improves a hybrid shortlist? (a measurement, not a test)

Strategy-E chunks; hybrid = RRF (k=60) of the full BM25 and dense rankings; the top 25 are
reranked and put back in front of the unchanged remainder (`rerank_rankings`), so MRR before and
after is measured over the same full ranking. Every variant scored while developing chapter 5 is
listed, with its paired randomization p against hybrid and Holm's adjustment for the number of
variants: late interaction with each punctuation setting, on `text` and on `content`, and fused back
with hybrid by RRF. The fine-tuned cross-encoder (`benchmarks/reranker_ranks.py` loads it) is added when
`models/reranker` holds it. `latency` (mean ms of `Reranker.score` per query) lives here, since
nothing in the package measures time.

Run: `make reranker` (needs the corpus and data/questions.jsonl). The shortlist size and k=60 are the
seed's settings; nothing here is tuned on the questions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import pandas as pd

from ragcourse import pipeline
from ragcourse.evaluation import evaluate, holm, latency_ms, randomization_test, summarize
from ragcourse.fusion import rrf
from ragcourse.groundtruth import load_questions, queries
from ragcourse.rerank import DEPTH, SKIP_PUNCTUATION, LateInteractionReranker, Reranker, rerank_rankings

SHORTLIST = DEPTH  # chapter 5's shortlist
KS = (1, 4, SHORTLIST)


def latency(reranker: Reranker, queries: Sequence[str], shortlists: Sequence[Sequence[str]]) -> float:
    """Milliseconds of `reranker.score` per query, by the book's latency protocol (`evaluation.latency_ms`).

    Passages the reranker caches (late interaction) should be indexed beforehand: this measures
    query time, not index time.
    """
    if len(queries) != len(shortlists) or not queries:
        raise ValueError(f"{len(queries)} queries, {len(shortlists)} shortlists: "
                         "expected as many of each, at least one")
    return latency_ms(lambda pair: reranker.score(pair[0], list(pair[1])), list(zip(queries, shortlists, strict=True)))


def variants() -> list[tuple[str, object]]:
    """(label, reranker) for every late-interaction variant tried, the default first."""
    out = [(f"late interaction, text, skip punctuation: {side}", LateInteractionReranker(skip_punctuation=side))
           for side in SKIP_PUNCTUATION]
    out.append(("late interaction, content, skip punctuation: both", LateInteractionReranker(use="content")))
    out.append(("late interaction, content, skip punctuation: none",
                LateInteractionReranker(use="content", skip_punctuation="none")))
    import reranker_ranks  # a sibling script: `python benchmarks/rerank_trial.py` puts benchmarks/ on the path

    try:
        out.append(("fine-tuned cross-encoder (models/reranker)", reranker_ranks.load_reranker()))
    except reranker_ranks.RerankerFilesError as missing:  # absent or altered: say so, measure the rest
        print(f"no fine-tuned cross-encoder: {missing}")
    return out


def row(label: str, table: pd.DataFrame, base: pd.DataFrame) -> dict:
    summary = summarize(table, label).set_index("metric")["value"].round(3).to_dict()
    by_phrasing = table.groupby("phrasing")["rr"].mean().round(3).to_dict()
    return {"system": label, **summary, "W/L (rr)": f"{(table.rr > base.rr).sum()}/{(table.rr < base.rr).sum()}",
            "p (MRR)": randomization_test(table["rr"], base["rr"]), **{f"MRR {k}": v for k, v in by_phrasing.items()}}


def main() -> None:
    retriever = pipeline.build("E")
    chunks, qs = retriever.chunks, queries(load_questions(subset="original"))
    hybrid = retriever.rankings(qs, "hybrid")
    base = evaluate(hybrid, qs, KS)
    rows, timings = [], []
    for label, reranker in variants():
        started = time.perf_counter()
        if isinstance(reranker, LateInteractionReranker):
            reranker.index([getattr(c, reranker.use) for c in chunks])
        built = time.perf_counter() - started
        reranked = rerank_rankings(reranker, qs, hybrid, SHORTLIST)
        rows.append(row(label, evaluate(reranked, qs, KS), base))
        if label.endswith("skip punctuation: both") and "text" in label:  # the default, fused back
            fused = {q.id: rrf([hybrid[q.id], reranked[q.id]]) for q in qs}  # chunks are hashable
            rows.append(row("RRF(hybrid, default late interaction)", evaluate(fused, qs, KS), base))
        shortlists = [[getattr(c, reranker.use) for c in hybrid[q.id][:SHORTLIST]] for q in qs]
        timings.append({"system": label, "index s (0 if cached)": round(built, 1),
                        "ms/query": round(latency(reranker, [q.text for q in qs], shortlists), 1)})
    table = pd.DataFrame(rows)
    table["p Holm"] = holm(table["p (MRR)"].tolist())
    table[["p (MRR)", "p Holm"]] = table[["p (MRR)", "p Holm"]].round(4)
    pd.set_option("display.width", 250)
    print(f"{len(chunks)} chunks, {len(qs)} queries, shortlist {SHORTLIST}; hybrid MRR {base.rr.mean():.3f}")
    print(table.to_string(index=False))
    print(pd.DataFrame(timings).to_string(index=False))


if __name__ == "__main__":
    main()
