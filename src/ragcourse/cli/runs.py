"""The book's measurements on your own folder, query by query (`ragcourse eval`): what `results.json` holds.

`measure` runs every strategy x method (x rerank) over a `folder.FolderCorpus` with the package's
own pieces: `pipeline.build` chunks and indexes, `evaluation.evaluate` finds each query's first
chunk holding its needle, `evaluation.query_share` gives intervals over questions (a
question's phrasings are not independent), `evaluation.compare` pairs runs question by question,
and `evaluation.sweep` runs the gate at chapter 6's cuts when out-of-domain queries are given.
Every split is measured with its uncertainty (`split_entries`): each pair of runs, over all questions and
per phrasing, per metric, with the mean difference's interval, the sign test and Holm's correction across
the pairs of one split and metric; and, per pair, whether the phrasings disagree (`heterogeneity`).

Per query it keeps what a practitioner acts on: the rank of the first chunk holding the needle,
that chunk, and the chunk ranked first instead (document, section, locator, excerpt), the
ranking time, and the top of the ranking for a TREC run file. Each run is split by phrasing when
the questions have two. Paired tests compare each run with the baseline (`--baseline`, else the
first run), and each reranked run with its own first stage. Every float is rounded at the source
(`precision.rounded`: 3 places, p-values 4), so everything but the latencies is the same on every machine.

With graded judgements (`--judgements`, `judged`), each run also gets chapter 12's measures per query
(`graded.measures`: nDCG@k, AP, bpref, their condensed forms, judged@k) over the top `TREC_DEPTH` its run file
holds, with the same intervals over questions and the same paired tests in every split.

Leaves out: graded measures for questions nobody judged (they are left out of those means), rerank runs in the sweep
(the gate reads the first stage's cosine distances), and any choice of a cut for you.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import graded, pipeline
from ..chunking import Chunk
from ..corpus import profile
from ..dense import Embedder, top_hits
from ..evaluation import (
    CUTS,
    KS,
    REPEATS,
    SWEEP_COLUMNS,
    answers_destroyed,
    compare,
    difference,
    evaluate,
    first_doc_rank,
    holm,
    interaction,
    latencies_ms,
    ndcg,
    per_question,
    query_share,
    question_of,
    sweep,
)
from ..groundtruth import OutOfDomain, Query, Question
from ..precision import rounded
from ..words import collapse
from .folder import FolderCorpus, folder_queries

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


def chunk_entry(chunk: Chunk) -> dict:
    """Where a chunk is and what it says: document, section, locator (RFC 5147 `#char=`) and an excerpt."""
    text = collapse(chunk.content)
    return {"id": chunk.id, "doc": chunk.doc_id, "section": chunk.section, "start": chunk.start, "end": chunk.end,
            "locator": f"{chunk.doc_id}#char={chunk.start},{chunk.end}",
            "excerpt": text if len(text) <= EXCERPT else text[:EXCERPT - 1] + "…"}


def _detail(q: Query, ranking: Sequence[Chunk], rank: int | None, ms: float) -> dict:
    """One query's row of `results.json`: its rank, the chunk holding the needle, the chunk first instead."""
    return {"query": q.id, "question": q.question_id, "phrasing": q.phrasing, "text": q.text, "doc": q.doc,
            "rank": rank, "latency_ms": None if math.isnan(ms) else round(ms, 3),
            "needle_chunk": None if rank is None else chunk_entry(ranking[rank - 1]),
            "first": None if rank == 1 or not ranking else chunk_entry(ranking[0])}


#: What one query's latency is (`evaluation.latencies_ms`, the book's protocol); a run gives its median and p95.
LATENCY_PROTOCOL = f"each query's fastest of {REPEATS} runs after one untimed warm-up"


def timed(step: Callable[[Query], object], qs: Sequence[Query]) -> dict[str, float]:
    """Query id -> ms of `step(query)` by the book's protocol (`evaluation.latencies_ms`); queries asked in the
    same words are timed once (a ranking depends on the text alone).

    >>> from types import SimpleNamespace as Q
    >>> sorted(timed(vars, [Q(id="a", text="x"), Q(id="b", text="x")]))
    ['a', 'b']
    """
    first: dict[str, Query] = {}
    for q in qs:
        first.setdefault(q.text, q)
    ms = dict(zip(first, latencies_ms({"step": step}, list(first.values()))["step"], strict=True))
    return {q.id: ms[q.text] for q in qs}


def make_run(strategy: str, method: str, rerank: bool, rankings: dict, ms: dict, qs: Sequence[Query],
             ks: Sequence[int], destroyed: tuple[str, ...], grades: dict | None = None) -> Run:
    """A Run from full rankings (query id -> chunks) and their times; with `grades` (`judged`), graded measures."""
    table = evaluate(rankings, qs, ks)
    ranks = [None if pd.isna(r) else int(r) for r in table["rank"]]
    doc_ranks = [first_doc_rank(rankings[q.id], q.doc) for q in qs]
    for k in ks:
        table[f"ndcg@{k}"] = [ndcg(r, k) for r in ranks]
    for k in ks:  # document level: any chunk of the needle's document within k
        table[f"doc_hit@{k}"] = [r is not None and r <= k for r in doc_ranks]
    if grades is not None:
        add_graded(table, rankings, qs, grades, ks)
    table["latency_ms"] = [ms[q.id] for q in qs]
    details = tuple(_detail(q, rankings[q.id], r, ms[q.id]) for q, r in zip(qs, ranks, strict=True))
    top = {q.id: [c.id for c in rankings[q.id][:TREC_DEPTH]] for q in qs}
    return Run(strategy, method, rerank, table, details, top, destroyed)


def graded_columns(ks: Sequence[int]) -> list[str]:
    """The per-query columns of `graded.measures`, in its order."""
    return [*(f"graded_ndcg@{k}" for k in ks), "ap", "bpref", *(f"condensed_ndcg@{k}" for k in ks), "condensed_ap",
            *(f"judged@{k}" for k in ks)]


def passage_id(item) -> str:
    """The id judgements give a retrieved chunk or passage: `doc#start-end` (a chunk's id) whatever named it."""
    return f"{item.doc_id}#{item.start}-{item.end}"


def add_graded(table: pd.DataFrame, rankings: dict, qs: Sequence[Query], grades: dict, ks: Sequence[int]) -> None:
    """`graded.measures` of each judged query's top TREC_DEPTH (what its run file holds), in place; NaN for a query
    nobody judged."""
    rows = [graded.measures([passage_id(c) for c in rankings[q.id][:TREC_DEPTH]], grades[q.id], ks)
            if q.id in grades else {} for q in qs]
    extra = pd.DataFrame(rows, columns=graded_columns(ks), index=table.index, dtype=float)
    for column in extra.columns:
        table[column] = extra[column]


_JUDGED = re.compile(r"(?s)(.+)#(?:(\d+)-(\d+)|char=(\d+),(\d+))")


def judged_passage(docno: str, texts: dict[str, str]) -> str | None:
    """The id (`doc#start-end`) of the passage a judgement names, by a chunk's id or by offsets into a document's
    text (`doc#char=start,end`); None when it names no passage of the folder as read.

    >>> judged_passage("a.md#char=0,4", {"a.md": "Tents"}), judged_passage("a.md#0-9", {"a.md": "Tents"})
    ('a.md#0-4', None)
    """
    found = _JUDGED.fullmatch(docno)
    if found is None or found.group(1) not in texts:
        return None
    start, end = (int(x) for x in (found.group(2, 3) if found.group(2) else found.group(4, 5)))
    return f"{found.group(1)}#{start}-{end}" if start < end <= len(texts[found.group(1)]) else None


def judged(name: str, items: Sequence, qs: Sequence[Query], texts: dict[str, str]) -> tuple[dict, list]:
    """Query id -> {passage id: grade} from a judgements file's lines (`records.parse_judgements`): a qid names a
    query (`q1/doc`) or a question (each of its phrasings); a line naming no question measured or no passage of
    the folder as read is left out (file:line, why)."""
    from ..records import Rejected, where

    phrasings: dict[str, list[str]] = {}
    for q in qs:
        phrasings.setdefault(q.question_id, []).append(q.id)
    asked, grades, rejected = {q.id for q in qs}, {}, []
    for item in items:
        targets, passage = [item.query] if item.query in asked else phrasings.get(item.query, []), \
            judged_passage(item.docno, texts)
        why = (f"query {item.query[:120]!r} is not one of the questions measured" if not targets else
               f"{item.docno[:120]!r} names no passage of the documents read (expected DOC#START-END, a chunk's id, "
               "or DOC#char=START,END)" if passage is None else None)
        if why is not None:
            rejected.append(Rejected(where(name, item.line), why))
            continue
        for target in targets:
            grades.setdefault(target, {})[passage] = item.grade
    return grades, rejected


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
    ks: tuple[int, ...] = KS
    baseline: str | None = None
    reranker: Callable | None = None  # makes the reranker (one for all runs: it keeps passage vectors)
    run_files: tuple[tuple[str, dict], ...] = ()  # (name, `records.parse_trec_run`'s items): other systems' runs
    judgements: dict | None = None  # query id -> {passage id: grade} (`judged`): graded measures for every run


def _method_runs(retriever, method, qs, vectors, settings, reranker, destroyed) -> list[Run]:
    """The run of one method on one strategy, and its reranked run when asked for, each query timed (`timed`)."""
    from ..rerank import rerank_rankings

    ranked: dict[str, list[int]] = {}

    def rank(q: Query) -> None:
        ranked[q.text] = retriever.rank(q.text, method, vectors.get(q.id))

    ms = timed(rank, qs)  # the timed runs' own rankings, read back through the one builder
    rankings = pipeline.rank_all(lambda text, *_: ranked[text], retriever.chunks, qs, method, vectors=vectors)
    runs = [make_run(retriever.strategy, method, False, rankings, ms, qs, settings.ks, destroyed, settings.judgements)]
    if reranker is not None:
        reranked: dict[str, list[Chunk]] = {}

        def rerank(q: Query) -> None:
            reranked[q.text] = rerank_rankings(reranker, [q], rankings)[q.id]

        second = timed(rerank, qs)
        total = {q.id: ms[q.id] + second[q.id] for q in qs}
        runs.append(make_run(retriever.strategy, method, True, {q.id: reranked[q.text] for q in qs}, total, qs,
                             settings.ks, destroyed, settings.judgements))
    return runs


def _warm(reranker, chunks: Sequence[Chunk], qs: Sequence[Query]) -> None:
    """Load the reranker and, for late interaction, every chunk's and query's token vectors (embeddings, as the
    first stage's are), so a reranked run's latency is the reranking itself, the same in every run. The chunks'
    token vectors are saved in the cache (keyed like the embeddings), so a re-run encodes only what changed."""
    if hasattr(reranker, "passage_tokens"):
        reranker.index([getattr(c, getattr(reranker, "use", "text")) for c in chunks])
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
    runs, rows, chunks = [], [], {}
    reranker = settings.reranker() if settings.rerank and settings.reranker else None
    for strategy in settings.strategies:
        progress(f"strategy {strategy}: chunking and embedding {len(corpus.documents)} documents")
        retriever = pipeline.build(strategy, corpus=list(corpus.documents), embedder=embedder, progress=bar,
                                   dense=not lexical)
        destroyed, chunks = _destroyed(retriever, questions), chunks or {c.id: c for c in retriever.chunks}
        if reranker is not None and retriever.chunks:
            progress(f"strategy {strategy}: preparing the reranker")
            _warm(reranker, retriever.chunks, qs)
        for method in settings.methods:
            progress(f"{strategy}/{method}: ranking {len(qs)} queries" + (" and reranking" if reranker else ""))
            runs += _method_runs(retriever, method, qs, vectors, settings, reranker, destroyed)
            if out_of_domain:
                rows += _sweep_rows(retriever, method, qs, vectors, out_of_domain, ood_vectors)
    if hasattr(reranker, "save"):  # late interaction: passages' and queries' token vectors, for the next run
        reranker.save()
    files = [file_run(name, items, corpus, chunks, qs, settings.ks, settings.judgements)
             for name, items in settings.run_files]
    runs += [run for run, _ in files]
    add_sources(runs, corpus.root)
    results = {"corpus": corpus_summary(corpus), "ks": list(settings.ks), "left_out": [
               {"where": r.where, "reason": r.reason} for _, rejected in files for r in rejected],
               "runs": [run_entry(r, settings.ks) for r in runs],
               "paired": paired_entries(runs, settings.ks, settings.baseline),
               "splits": split_entries(runs, settings.ks), "heterogeneity": heterogeneity(runs, settings.ks),
               "sweep": rounded(rows)}
    return results, runs


def add_sources(runs: Sequence[Run], root: str) -> None:
    """Give each chunk a run's details name (the needle's, the one first instead) its place in the source file,
    `path:line:column` (`folder.source_position`), when its words are found there; PDFs have none."""
    from .folder import source_position

    texts: dict[str, str | None] = {}

    def source(doc: str) -> str | None:
        if doc not in texts:
            path = Path(root) / doc
            texts[doc] = None if not root or path.suffix.lower() == ".pdf" else \
                path.read_bytes().decode("utf-8-sig", errors="replace") if path.is_file() else None
        return texts[doc]

    for detail in (d for run in runs for d in run.details):
        for entry in (detail["needle_chunk"], detail["first"]):
            text = source(entry["doc"]) if entry else None
            found = source_position(text, entry["excerpt"]) if text else None
            if found:
                entry["source"] = f"{entry['doc']}:{found[0]}:{found[1]}"


def corpus_summary(corpus: FolderCorpus) -> dict:
    """Documents, characters and `## ` sections; every file that failed to read, and apart every file that holds
    no text, each with its reason; the files not documents; each directive kept as plain text, per file."""
    table = profile(list(corpus.documents))
    return {"documents": len(corpus.documents), "characters": int(table["characters"].sum()),
            "sections": int(table["sections"].sum()),
            "failed": [{"path": f.path, "reason": f.reason} for f in corpus.failed if not f.no_text],
            "no_text": [{"path": f.path, "reason": f.reason} for f in corpus.failed if f.no_text],
            "skipped": list(corpus.skipped),
            "kept_as_text": [{"path": path, "directive": name, "count": n} for path, name, n in corpus.kept_as_text],
            "excluded": list(corpus.excluded)}


def _figures(table: pd.DataFrame, ks: Sequence[int]) -> dict:
    """Recall@k, nDCG@k, MRR and document-level recall@k: plain means over the table's queries."""
    return {"queries": len(table), "recall": {str(k): float(table[f"hit@{k}"].mean()) for k in ks},
            "ndcg": {str(k): float(table[f"ndcg@{k}"].mean()) for k in ks}, "mrr": float(table["rr"].mean()),
            "doc_recall": {str(k): float(table[f"doc_hit@{k}"].mean()) for k in ks}}


def _graded_figures(table: pd.DataFrame, ks: Sequence[int]) -> dict | None:
    """Means over the judged queries of nDCG@k, AP (MAP), bpref, their condensed forms and judged@k; nDCG@k and MAP
    with their 95 % intervals over questions (`query_share`; None below two questions). None when none was judged."""
    judged = table[table["ap"].notna()] if "ap" in table.columns else table.iloc[:0]
    if judged.empty:
        return None
    several = len({question_of(q) for q in judged["query"]}) >= 2

    def interval(column: str) -> list | None:
        return list(query_share(judged["query"], judged[column]).interval) if several else None

    mean = {c: float(judged[c].mean()) for c in graded_columns(ks)}
    return {"queries": len(judged), "ndcg": {str(k): mean[f"graded_ndcg@{k}"] for k in ks},
            "ndcg_interval": {str(k): interval(f"graded_ndcg@{k}") for k in ks},
            "map": mean["ap"], "map_interval": interval("ap"), "bpref": mean["bpref"],
            "condensed_ndcg": {str(k): mean[f"condensed_ndcg@{k}"] for k in ks}, "condensed_map": mean["condensed_ap"],
            "judged": {str(k): mean[f"judged@{k}"] for k in ks}}


def _phrasing_figures(part: pd.DataFrame, ks: Sequence[int]) -> dict:
    """One phrasing's figures, each recall@k with its 95 % interval over questions (None below two questions)."""
    figures = _figures(part, ks)
    if "ap" in part.columns:
        figures["graded"] = _graded_figures(part, ks)
    figures["recall_interval"] = {str(k): list(query_share(part["query"], part[f"hit@{k}"]).interval)
                                  if len(part) >= 2 else None for k in ks}
    return figures


def run_entry(run: Run, ks: Sequence[int]) -> dict:
    """One run as `results.json` holds it: figures with 95 % t intervals over questions, by phrasing, per query."""
    table = run.per_query
    entry = {"strategy": run.strategy, "method": run.method, "rerank": run.rerank, "label": run.label,
             **_figures(table, ks)}
    for column, name in (("hit", "recall_interval"), ("doc_hit", "doc_recall_interval")):
        entry[name] = {str(k): list(query_share(table["query"], table[f"{column}@{k}"]).interval) for k in ks}
    phrasings = list(dict.fromkeys(table["phrasing"]))
    if "ap" in table.columns:
        entry["graded"] = _graded_figures(table, ks)
    entry["by_phrasing"] = {p: _phrasing_figures(table[table["phrasing"] == p], ks) for p in phrasings} \
        if len(phrasings) > 1 else {}
    entry["latency_ms"] = None if table["latency_ms"].isna().all() else {  # a run file's: not measured here
        "median": float(table["latency_ms"].median()), "p95": float(table["latency_ms"].quantile(0.95)),
        "protocol": LATENCY_PROTOCOL}
    entry["answers_destroyed"] = list(run.destroyed)
    entry = rounded(entry)
    entry["per_query"] = list(run.details)
    return entry


class Passage(NamedTuple):
    """A passage a run file names by offsets into a document's text (`doc#char=start,end`), read as a chunk."""

    id: str
    doc_id: str
    section: str
    start: int
    end: int
    content: str


_OFFSETS = re.compile(r"(?s)(.+)#char=(\d+),(\d+)")


def resolve(docno: str, chunks: dict[str, Chunk], texts: dict[str, str]) -> Chunk | Passage | str:
    """The chunk a run file's docno names (a chunk id, as in qrels-STRATEGY.trec), or the passage at offsets
    of a document's text (`doc#char=start,end`, the report's locators); else why it names nothing.

    >>> resolve("a.md#char=0,4", {}, {"a.md": "Tents pitch."}).content, resolve("b.md#0", {}, {})
    ('Tent', "unknown chunk or document id 'b.md#0'")
    """
    if docno in chunks:
        return chunks[docno]
    offsets = _OFFSETS.fullmatch(docno)
    if offsets is None or offsets.group(1) not in texts:
        return f"unknown chunk or document id {docno[:120]!r}"
    doc, start, end = offsets.group(1), int(offsets.group(2)), int(offsets.group(3))
    if not start < end <= len(texts[doc]):
        return f"{docno[:120]!r}: offsets outside the document's {len(texts[doc])} characters"
    return Passage(docno, doc, "", start, end, texts[doc][start:end])


def file_run(name: str, items: dict, corpus: FolderCorpus, chunks: dict[str, Chunk], qs: Sequence[Query],
             ks: Sequence[int], grades: dict | None = None) -> tuple[Run, list]:
    """Another system's run (`records.parse_trec_run` of a file), scored on the same needles as a Run labelled
    `run/NAME`, and each line naming nothing (file:line, why) left out; a query it does not rank ranks nothing."""
    from ..records import Rejected

    texts, rankings, rejected = {d.id: d.text for d in corpus.documents}, {}, []
    for q in qs:
        rankings[q.id] = []
        for item in items.get(q.id, []):
            found = resolve(item.docno, chunks, texts)
            if isinstance(found, str):
                rejected.append(Rejected(f"{name}:{item.line}", found))
            else:
                rankings[q.id].append(found)
    asked = {q.id for q in qs}
    rejected += [Rejected(f"{name}:{lines[0].line}", f"query {query[:120]!r} is not one of the questions measured")
                 for query, lines in items.items() if query not in asked]
    return make_run("run", Path(name).stem, False, rankings, dict.fromkeys(asked, math.nan), qs, ks, (),
                    grades), rejected


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


ALPHA = 0.05


def _values(run: Run, split: str, column: str) -> pd.Series:
    """One value per question of `column`: over all of a question's phrasings (`split` "all"), or one phrasing."""
    table = run.per_query if split == "all" else run.per_query[run.per_query["phrasing"] == split]
    return per_question(table, column).dropna()  # a graded measure: the questions judged only


def split_entries(runs: Sequence[Run], ks: Sequence[int]) -> list[dict]:
    """Every pair of runs, over all questions and per phrasing, per metric: A (the higher mean) against B, the
    mean per-question difference with its 95 % interval, wins, losses, the sign test's p, and its Holm-adjusted
    p across the pairs of the same split and metric (the family the report reads at once)."""
    phrasings = list(dict.fromkeys(runs[0].per_query["phrasing"])) if runs else []
    splits = ["all", *phrasings] if len(phrasings) > 1 else ["all"]
    metrics = [(f"hit@{k}", f"R@{k}") for k in ks] + [("rr", "MRR")]
    if runs and "ap" in runs[0].per_query.columns:
        metrics += [(f"graded_ndcg@{ks[-1]}", f"nDCG@{ks[-1]} graded"), ("ap", "MAP")]
    out = []
    for split, (column, name) in itertools.product(splits, metrics):
        family = []
        for x, y in itertools.combinations(runs, 2):
            vx, vy = _values(x, split, column), _values(y, split, column)
            if vx.empty:  # nobody judged a question of this split
                continue
            a, b, va, vb = (x, y, vx, vy) if vx.mean() >= vy.mean() else (y, x, vy, vx)
            d = difference(va, vb)
            family.append({"split": split, "metric": name, "a": a.label, "b": b.label, "questions": d.n,
                           "wins": d.wins, "losses": d.losses, "p": d.p, "difference": d.difference,
                           "low": d.low, "high": d.high, "sd": d.sd})
        adjusted = holm([e["p"] for e in family]) if family else []
        out += [rounded({**e, "p": rounded(e["p"], 4), "p_holm": rounded(q, 4)}) for e, q in zip(family, adjusted,
                                                                                                   strict=True)]
    return out


def heterogeneity(runs: Sequence[Run], ks: Sequence[int]) -> list[dict]:
    """Per pair of runs and metric, when the questions have two phrasings: each phrasing's mean difference, whether
    their signs are opposite, and the interaction's sign test (`evaluation.interaction`)."""
    phrasings = tuple(dict.fromkeys(runs[0].per_query["phrasing"])) if runs else ()
    if len(phrasings) != 2:
        return []
    out = []
    for (column, name), (x, y) in itertools.product([(f"hit@{ks[-1]}", f"R@{ks[-1]}"), ("rr", "MRR")],
                                                    itertools.combinations(runs, 2)):
        means = {p: float((_values(x, p, column) - _values(y, p, column)).mean()) for p in phrasings}
        test = interaction(x.per_query, y.per_query, column, phrasings)
        out.append(rounded({"a": x.label, "b": y.label, "metric": name, "difference": means,
                            "opposite": bool(means[phrasings[0]] * means[phrasings[1]] < 0),
                            "wins": test.wins, "losses": test.losses, "p": rounded(test.p, 4)}))
    return out
