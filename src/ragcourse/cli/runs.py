"""The book's measurements on your own folder, query by query (`ragcourse eval`): what `results.json` holds.

`measure` runs every strategy x method (x rerank) over a `folder.FolderCorpus` with the package's
own pieces: `pipeline.build` chunks and indexes, `evaluation.evaluate` finds each query's first
chunk holding its needle, `query_share` gives intervals over questions (a
question's phrasings are not independent), `evaluation.compare` pairs runs question by question,
and `evaluation.sweep` runs the gate at chapter 6's cuts when out-of-domain queries are given.

Per query it keeps what a practitioner acts on: the rank of the first chunk holding the needle,
that chunk, and the chunk ranked first instead (document, section, locator, excerpt), the
ranking time, and the top of the ranking for a TREC run file. Each run is split by phrasing when
the questions have two. Paired tests compare each run with the baseline (`--baseline`, else the
first run), and each reranked run with its own first stage. Every float is rounded at the source
(`precision.rounded`: 3 places, p-values 4), so everything but the latencies is the same on every machine.

Leaves out: graded relevance (a needle is in one chunk: nDCG is binary), rerank runs in the sweep
(the gate reads the first stage's cosine distances), and any choice of a cut for you.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .. import pipeline
from ..chunking import Chunk
from ..corpus import collapse, profile
from ..dense import Embedder, top_hits
from ..evaluation import (
    KS,
    SWEEP_COLUMNS,
    Estimate,
    answers_destroyed,
    compare,
    evaluate,
    per_question,
    sweep,
)
from ..groundtruth import OutOfDomain, Query, Question
from ..precision import rounded
from .folder import FolderCorpus, folder_queries

DEFAULT_KS = KS  # the book's cut-offs (evaluation.KS); --k replaces them
#: Chapter 6's cuts (cosine distance), then no threshold at all (written as null).
CUTS = tuple(round(0.300 + 0.025 * i, 3) for i in range(27)) + (math.inf,)
GATE_K = 4
#: How much of a ranking a TREC run file keeps per query, and how long a chunk's excerpt is.
TREC_DEPTH, EXCERPT = 100, 240

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Run:
    """One strategy x method (x rerank): per-query table, per-query details, ranking tops, cut answers."""

    strategy: str
    method: str
    rerank: bool
    per_query: pd.DataFrame  # evaluate's columns, ndcg@k, latency_ms
    details: tuple[dict, ...]
    top: dict  # query id -> chunk ids, best first (TREC_DEPTH of them)
    destroyed: tuple[str, ...]

    @property
    def label(self) -> str:
        return label_of(self.strategy, self.method, self.rerank)


def label_of(strategy: str, method: str, rerank: bool) -> str:
    """A run's name, as `--baseline` takes it: `label_of("E", "hybrid", True) -> "E/hybrid+rerank"`."""
    return f"{strategy}/{method}" + ("+rerank" if rerank else "")


def query_share(query_ids: Sequence[str], flags: Sequence[bool]) -> Estimate:
    """The share of queries flagged (the plain mean over queries that trec_eval gives) with a 95 % t interval that
    counts each question once: the linearised ratio interval over questions (a question's phrasings are not
    independent). With as many phrasings per question it is `share_over_questions`'s interval; with some
    questions asked once and some twice that interval is around another mean, and may even exclude this one.

    >>> query_share(["q1/doc", "q1/ticket", "q2/doc", "q2/ticket"], [True, False, True, True])
    Estimate(value=0.75, low=0.0, high=1.0)
    >>> [round(x, 3) for x in query_share(["a/doc", "a/ticket", "b/doc", "c/doc"], [True, True, False, True])]
    [0.75, 0.0, 1.0]
    """
    question = [str(q).rsplit("/", 1)[0] for q in query_ids]
    groups = pd.Series(np.asarray(flags, dtype=np.float64)).groupby(question, sort=False)
    hits, sizes = groups.sum().to_numpy(), groups.size().to_numpy().astype(np.float64)
    if len(hits) < 2:
        raise ValueError(f"{len(hits)} question(s): an interval over questions needs at least 2")
    value = float(hits.sum() / sizes.sum())
    residual = (hits - value * sizes) / sizes.mean()  # each question's share of the estimate's error
    half = float(stats.t.ppf(0.975, len(hits) - 1) * residual.std(ddof=1) / math.sqrt(len(hits)))
    return Estimate(value, max(0.0, value - half), min(1.0, value + half))


def ndcg(rank: int | None, k: int) -> float:
    """nDCG@k with binary relevance and one relevant chunk (Järvelin & Kekäläinen, 2002).

    DCG@k = sum over ranks r <= k of rel_r / log2(r + 1); the ideal ranking puts the one relevant
    chunk first, so IDCG = 1 and nDCG@k = 1 / log2(rank + 1) when rank <= k, else 0.

    >>> ndcg(1, 4), round(ndcg(3, 4), 4), ndcg(5, 4), ndcg(None, 4)
    (1.0, 0.5, 0.0, 0.0)
    """
    return 0.0 if rank is None or rank > k else 1.0 / math.log2(rank + 1)


def chunk_entry(chunk: Chunk) -> dict:
    """Where a chunk is and what it says: document, section, locator (RFC 5147 `#char=`) and an excerpt."""
    text = collapse(chunk.content)
    return {"id": chunk.id, "doc": chunk.doc_id, "section": chunk.section, "start": chunk.start, "end": chunk.end,
            "locator": f"{chunk.doc_id}#char={chunk.start},{chunk.end}",
            "excerpt": text if len(text) <= EXCERPT else text[:EXCERPT - 1] + "…"}


def _detail(q: Query, ranking: Sequence[Chunk], rank: int | None, ms: float) -> dict:
    """One query's row of `results.json`: its rank, the chunk holding the needle, the chunk first instead."""
    return {"query": q.id, "question": q.question_id, "phrasing": q.phrasing, "text": q.text, "doc": q.doc,
            "rank": rank, "latency_ms": round(ms, 3),
            "needle_chunk": None if rank is None else chunk_entry(ranking[rank - 1]),
            "first": None if rank == 1 or not ranking else chunk_entry(ranking[0])}


class _Clock:
    """Milliseconds spent per query text by a wrapped callable (a first stage's `rank`, a reranker's `score`)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    def per_query(self, text: str, repeats: Counter) -> float:
        """The time of one query with this text: queries asked in the same words (`repeats`) share it evenly."""
        return self.ms.get(text, 0.0) / max(1, repeats[text])

    def wrap(self, fn: Callable) -> Callable:
        def timed(query: str, *args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(query, *args, **kwargs)
            finally:
                self.ms[query] = self.ms.get(query, 0.0) + 1000 * (time.perf_counter() - started)
        return timed


class _TimedReranker:
    """A reranker that times its `score` calls per query and is otherwise the reranker it wraps."""

    def __init__(self, inner, clock: _Clock) -> None:
        self.inner, self.score = inner, clock.wrap(inner.score)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def make_run(strategy: str, method: str, rerank: bool, rankings: dict, ms: dict, qs: Sequence[Query],
             ks: Sequence[int], destroyed: tuple[str, ...]) -> Run:
    """A Run from full rankings (query id -> chunks) and their times."""
    table = evaluate(rankings, qs, ks)
    ranks = [None if pd.isna(r) else int(r) for r in table["rank"]]
    for k in ks:
        table[f"ndcg@{k}"] = [ndcg(r, k) for r in ranks]
    table["latency_ms"] = [ms[q.id] for q in qs]
    details = tuple(_detail(q, rankings[q.id], r, ms[q.id]) for q, r in zip(qs, ranks, strict=True))
    top = {q.id: [c.id for c in rankings[q.id][:TREC_DEPTH]] for q in qs}
    return Run(strategy, method, rerank, table, details, top, destroyed)


def _destroyed(retriever: pipeline.Retriever, questions: Sequence[Question]) -> tuple[str, ...]:
    """Ids of the questions whose needle no chunk of this strategy holds whole."""
    cut = set(answers_destroyed(retriever.chunks, [q.needle for q in questions]))
    return tuple(q.id for q in questions if q.needle in cut)


def _hits(retriever: pipeline.Retriever, text: str, vector: np.ndarray, method: str) -> list:
    """The first stage's top GATE_K as Hits with cosine distances (what `Retriever.retrieve` gives)."""
    distances = retriever.dense.distances(vector)
    return top_hits(retriever.chunks, distances, GATE_K, ranking=retriever.rank(text, method, vector))


def _sweep_rows(retriever, method, qs, vectors, ood, ood_vectors) -> list[dict]:
    in_domain = [(_hits(retriever, q.text, vectors[q.id], method), q.needle) for q in qs]
    outside = [_hits(retriever, o.query, ood_vectors[o.id], method) for o in ood]
    table = sweep(in_domain, outside, CUTS, k=GATE_K)
    rows = []
    for row in table.to_dict("records"):
        row = {c: (None if c == "cut" and math.isinf(row[c]) else row[c]) for c in SWEEP_COLUMNS}
        rows.append({"strategy": retriever.strategy, "method": method, **row})
    return rows


@dataclass(frozen=True)
class Settings:
    """What `measure` runs: strategies, methods, rerank, cut-offs, the baseline's label, and the reranker."""

    strategies: tuple[str, ...]
    methods: tuple[str, ...]
    rerank: bool = False
    ks: tuple[int, ...] = DEFAULT_KS
    baseline: str | None = None
    reranker: Callable | None = None  # makes the reranker (one for all runs: it keeps passage vectors)


def _method_runs(retriever, method, qs, vectors, settings, reranker, destroyed) -> list[Run]:
    """The run of one method on one strategy, and its reranked run when asked for, each query timed."""
    from ..rerank import rerank_rankings

    first = _Clock()
    rankings = pipeline.rank_all(first.wrap(retriever.rank), retriever.chunks, qs, method, vectors=vectors)
    repeats = Counter(q.text for q in qs)
    ms = {q.id: first.per_query(q.text, repeats) for q in qs}
    runs = [make_run(retriever.strategy, method, False, rankings, ms, qs, settings.ks, destroyed)]
    if reranker is not None:
        second = _Clock()
        reranked = rerank_rankings(_TimedReranker(reranker, second), qs, rankings)
        total = {q.id: ms[q.id] + second.per_query(q.text, repeats) for q in qs}
        runs.append(make_run(retriever.strategy, method, True, reranked, total, qs, settings.ks, destroyed))
    return runs


def _warm(reranker, chunks: Sequence[Chunk], qs: Sequence[Query]) -> None:
    """Load the reranker and, for late interaction, every chunk's and query's token vectors (embeddings, as the
    first stage's are), so a reranked run's latency is the reranking itself, the same in every run."""
    if hasattr(reranker, "passage_tokens"):
        reranker.passage_tokens([getattr(c, getattr(reranker, "use", "text")) for c in chunks])
        for q in qs:
            reranker.query_tokens(q.text)
    else:
        reranker.score(qs[0].text, [chunks[0].text])


def _query_vectors(embedder: Embedder, texts: dict[str, str]) -> dict:
    return dict(zip(texts, embedder.encode_queries(list(texts.values())), strict=True)) if texts else {}


def measure(corpus: FolderCorpus, questions: Sequence[Question], out_of_domain: Sequence[OutOfDomain],
            settings: Settings, embedder: Embedder, progress: Progress = lambda _: None,
            bar: bool | None = None) -> tuple[dict, list[Run]]:
    """Every run on the folder: the `results.json` dictionary (rounded at the source) and the Runs."""
    if len(questions) < 2:
        raise ValueError(f"{len(questions)} question(s): intervals over questions need at least 2")
    qs = folder_queries(questions)
    lexical = set(settings.methods) == {"bm25"} and not out_of_domain  # BM25 alone loads no model (nor torch)
    vectors = {} if lexical else _query_vectors(embedder, {q.id: q.text for q in qs})
    ood_vectors = _query_vectors(embedder, {o.id: o.query for o in out_of_domain})
    runs, rows = [], []
    reranker = settings.reranker() if settings.rerank and settings.reranker else None
    for strategy in settings.strategies:
        progress(f"strategy {strategy}: chunking and embedding {len(corpus.documents)} documents")
        retriever = pipeline.build(strategy, corpus=list(corpus.documents), embedder=embedder, progress=bar,
                                   dense=not lexical)
        destroyed = _destroyed(retriever, questions)
        if reranker is not None and retriever.chunks:
            progress(f"strategy {strategy}: preparing the reranker")
            _warm(reranker, retriever.chunks, qs)
        for method in settings.methods:
            progress(f"{strategy}/{method}: ranking {len(qs)} queries" + (" and reranking" if reranker else ""))
            runs += _method_runs(retriever, method, qs, vectors, settings, reranker, destroyed)
            if out_of_domain:
                rows += _sweep_rows(retriever, method, qs, vectors, out_of_domain, ood_vectors)
    results = {"corpus": corpus_summary(corpus), "ks": list(settings.ks),
               "runs": [run_entry(r, settings.ks) for r in runs],
               "paired": paired_entries(runs, settings.ks, settings.baseline), "sweep": rounded(rows)}
    return results, runs


def corpus_summary(corpus: FolderCorpus) -> dict:
    """Documents, characters and `## ` sections; every failed file with its reason; the files not documents."""
    table = profile(list(corpus.documents))
    return {"documents": len(corpus.documents), "characters": int(table["characters"].sum()),
            "sections": int(table["sections"].sum()),
            "failed": [{"path": f.path, "reason": f.reason} for f in corpus.failed],
            "skipped": list(corpus.skipped)}


def _figures(table: pd.DataFrame, ks: Sequence[int]) -> dict:
    """Recall@k, nDCG@k and MRR: plain means over the table's queries."""
    return {"queries": len(table), "recall": {str(k): float(table[f"hit@{k}"].mean()) for k in ks},
            "ndcg": {str(k): float(table[f"ndcg@{k}"].mean()) for k in ks}, "mrr": float(table["rr"].mean())}


def run_entry(run: Run, ks: Sequence[int]) -> dict:
    """One run as `results.json` holds it: figures with 95 % t intervals over questions, by phrasing, per query."""
    table = run.per_query
    entry = {"strategy": run.strategy, "method": run.method, "rerank": run.rerank, "label": run.label,
             **_figures(table, ks)}
    entry["recall_interval"] = {str(k): list(query_share(table["query"], table[f"hit@{k}"]).interval)
                                for k in ks}
    phrasings = list(dict.fromkeys(table["phrasing"]))
    entry["by_phrasing"] = {p: _figures(table[table["phrasing"] == p], ks) for p in phrasings} \
        if len(phrasings) > 1 else {}
    entry["latency_ms"] = {"median": float(table["latency_ms"].median()),
                           "p95": float(table["latency_ms"].quantile(0.95))}
    entry["answers_destroyed"] = list(run.destroyed)
    entry = rounded(entry)
    entry["per_query"] = list(run.details)
    return entry


def without_latency(results: dict) -> dict:
    """`results` without its latencies, in place: what two runs on the same folder and questions agree on."""
    for run in results["runs"]:
        run.pop("latency_ms")
        for query in run["per_query"]:
            query.pop("latency_ms")
    return results


def _pairs(runs: Sequence[Run], baseline: str | None) -> list[tuple[Run, Run]]:
    """(run, against) pairs: every run against the baseline, and each reranked run against its first stage."""
    by_label = {r.label: r for r in runs}
    if baseline is not None and baseline not in by_label:
        raise ValueError(f"--baseline {baseline!r} is not one of the runs: {list(by_label)}")
    base = by_label[baseline] if baseline else runs[0]
    pairs = [(r, base) for r in runs if r is not base]
    pairs += [(r, by_label[label_of(r.strategy, r.method, False)]) for r in runs
              if r.rerank and by_label[label_of(r.strategy, r.method, False)] is not base]
    return pairs


def paired_entries(runs: Sequence[Run], ks: Sequence[int], baseline: str | None = None) -> list[dict]:
    """Each pair of `_pairs`, question by question: wins, losses and the exact sign test's p per metric."""
    if not runs:
        return []
    out = []
    for run, against in _pairs(runs, baseline):
        mine, theirs = _by_question(run.per_query, ks), _by_question(against.per_query, ks)
        for metric in [f"hit@{k}" for k in ks] + ["rr"]:
            result = compare(mine, theirs, metric)
            name = "MRR" if metric == "rr" else "R@" + metric.removeprefix("hit@")
            out.append({"strategy": run.strategy, "method": run.method, "rerank": run.rerank, "label": run.label,
                        "against": {"strategy": against.strategy, "method": against.method,
                                    "rerank": against.rerank, "label": against.label},
                        "metric": name, "wins": result.wins, "losses": result.losses, "p": rounded(result.p, 4)})
    return out


def _by_question(per_query: pd.DataFrame, ks: Sequence[int]) -> pd.DataFrame:
    """The per-query table averaged over each question's phrasings (`evaluation.per_question`)."""
    columns = [f"hit@{k}" for k in ks] + ["rr"]
    return pd.DataFrame({c: per_question(per_query, c) for c in columns}).rename_axis("query").reset_index()
