"""The book's measurements on your own folder: `results.json` and a self-contained `report.html` (`ragcourse eval`).

`measure` runs every strategy x method (x rerank) over a `folder.FolderCorpus` with the package's
own pieces: `pipeline.build` chunks and indexes, `evaluation.evaluate`/`summarize` score,
`evaluation.share_over_questions` gives intervals over questions (a question's phrasings are not
independent), `evaluation.compare` pairs each run with the first, question by question, and
`evaluation.sweep` runs the gate at chapter 6's cuts when out-of-domain queries are given.
Every float is rounded at the source (`precision.rounded`: 3 places, p-values 4), so the JSON is
the same on every machine. `write` saves the JSON and renders it as one HTML file whose plots
are inline PNGs: it opens offline, from anywhere, and loads nothing from another host.

Leaves out: per-query rankings (not saved), rerank runs in the sweep (the gate reads the first
stage's cosine distances), and any choice of a cut for you.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import pipeline
from ..corpus import profile
from ..dense import Embedder, top_hits
from ..evaluation import (
    KS,
    SWEEP_COLUMNS,
    answers_destroyed,
    compare,
    evaluate,
    per_question,
    share_over_questions,
    summarize,
    sweep,
    verdict,
    with_interval,
)
from ..groundtruth import OutOfDomain, Question
from ..precision import rounded
from .folder import FolderCorpus, folder_queries

#: Chapter 6's cuts (cosine distance), then no threshold at all (written as null).
CUTS = tuple(round(0.300 + 0.025 * i, 3) for i in range(27)) + (math.inf,)
GATE_K = 4
RESULTS, REPORT = "results.json", "report.html"
METRICS = tuple(f"hit@{k}" for k in KS) + ("rr",)


@dataclass(frozen=True)
class Run:
    """One strategy x method (x rerank): its per-query table and the questions its chunking cut."""

    strategy: str
    method: str
    rerank: bool
    per_query: pd.DataFrame
    destroyed: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.strategy}/{self.method}" + (" + rerank" if self.rerank else "")


def by_question(per_query: pd.DataFrame) -> pd.DataFrame:
    """The per-query table averaged over each question's phrasings (`evaluation.per_question`), same columns."""
    return pd.DataFrame({c: per_question(per_query, c) for c in METRICS}).rename_axis("query").reset_index()


def _destroyed(retriever: pipeline.Retriever, questions: Sequence[Question]) -> tuple[str, ...]:
    """Ids of the questions whose needle no chunk of this strategy holds whole."""
    cut = set(answers_destroyed(retriever.chunks, [q.needle for q in questions]))
    return tuple(q.id for q in questions if q.needle in cut)


def _reranked(reranker, rankings: dict, qs: Sequence) -> dict:
    """Each ranking with its first 25 reranked (`rerank.rerank_rankings`), the rest in place."""
    from ..rerank import rerank_rankings

    return rerank_rankings(reranker, qs, rankings)


def _default_reranker():
    from .. import rerank

    return rerank.default_reranker()


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


def measure(corpus: FolderCorpus, questions: Sequence[Question], out_of_domain: Sequence[OutOfDomain],
            strategies: Sequence[str], methods: Sequence[str], rerank: bool, embedder: Embedder,
            progress: bool | None = None) -> dict:
    """Every run on the folder, as the `results.json` dictionary (rounded at the source)."""
    if len(questions) < 2:
        raise ValueError(f"{len(questions)} question(s): intervals over questions need at least 2")
    qs = folder_queries(questions)
    vectors = dict(zip([q.id for q in qs], embedder.encode_queries([q.text for q in qs]), strict=True))
    ood_vectors = {} if not out_of_domain else dict(zip(
        [o.id for o in out_of_domain], embedder.encode_queries([o.query for o in out_of_domain]), strict=True))
    runs, rows = [], []
    reranker = _default_reranker() if rerank else None  # one for all runs: it keeps passage vectors
    for strategy in strategies:
        retriever = pipeline.build(strategy, corpus=list(corpus.documents), embedder=embedder, progress=progress)
        destroyed = _destroyed(retriever, questions)
        for method in methods:
            rankings = retriever.rankings(qs, method, vectors=vectors)
            runs.append(Run(strategy, method, False, evaluate(rankings, qs, KS), destroyed))
            if rerank:
                runs.append(Run(strategy, method, True, evaluate(_reranked(reranker, rankings, qs), qs, KS), destroyed))
            if out_of_domain:
                rows += _sweep_rows(retriever, method, qs, vectors, out_of_domain, ood_vectors)
    return {"corpus": corpus_summary(corpus), "runs": [run_entry(r) for r in runs],
            "paired": paired_entries(runs), "sweep": rounded(rows)}


def corpus_summary(corpus: FolderCorpus) -> dict:
    """Documents, characters and `## ` sections of the corpus, and every failed file with its reason."""
    table = profile(list(corpus.documents))
    return {"documents": len(corpus.documents), "characters": int(table["characters"].sum()),
            "sections": int(table["sections"].sum()),
            "failed": [{"path": f.path, "reason": f.reason} for f in corpus.failed]}


def run_entry(run: Run) -> dict:
    """One run as `results.json` holds it: recall@k and MRR, with 95 % t intervals over questions."""
    values = summarize(run.per_query, run.label).set_index("metric")["value"]
    intervals = {str(k): list(share_over_questions(run.per_query["query"], run.per_query[f"hit@{k}"]).interval)
                 for k in KS}  # t intervals over questions, clipped to [0, 1]
    return rounded({"strategy": run.strategy, "method": run.method, "rerank": run.rerank,
                    "queries": len(run.per_query), "recall": {str(k): float(values[f"R@{k}"]) for k in KS},
                    "recall_interval": intervals, "mrr": float(values["MRR"]),
                    "answers_destroyed": list(run.destroyed)})


def paired_entries(runs: Sequence[Run]) -> list[dict]:
    """Each run against the first, question by question: wins, losses and the sign test's p per metric."""
    if not runs:
        return []
    first = by_question(runs[0].per_query)
    against = {"strategy": runs[0].strategy, "method": runs[0].method, "rerank": runs[0].rerank}
    out = []
    for run in runs[1:]:
        mine = by_question(run.per_query)
        for metric in METRICS:
            result = compare(mine, first, metric)
            name = "MRR" if metric == "rr" else "R@" + metric.removeprefix("hit@")
            out.append({"strategy": run.strategy, "method": run.method, "rerank": run.rerank,
                        "against": against, "metric": name, "wins": result.wins, "losses": result.losses,
                        "p": rounded(result.p, 4)})
    return out


# ---------------------------------------------------------------- writing


def write(results: dict, out: str | Path) -> Path:
    """Write `results.json` and `report.html` into the folder `out`; returns the folder."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RESULTS).write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (folder / REPORT).write_text(render(results), encoding="utf-8")
    return folder


def _label(entry: dict) -> str:
    return f"{entry['strategy']}/{entry['method']}" + (" + rerank" if entry["rerank"] else "")


def _png(fig) -> str:
    """A matplotlib figure as an inline <img> (base64 PNG): nothing for the browser to fetch."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{data}">'


def recall_plot(runs: Sequence[dict]) -> str:
    """Recall@k per run, with its interval over questions as error bars, as an inline PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.8))
    for i, run in enumerate(runs):
        ks = np.array(KS, dtype=float) * (1 + 0.03 * (i - len(runs) / 2))  # side by side, not on top
        value = np.array([run["recall"][str(k)] for k in KS])
        low, high = (np.array([run["recall_interval"][str(k)][j] for k in KS]) for j in (0, 1))
        ax.errorbar(ks, value, yerr=[value - low, high - value], marker="o", capsize=3, label=_label(run))
    ax.set_xscale("log")
    ax.set_xticks(KS, [str(k) for k in KS])
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k (95 % interval over questions)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return _png(fig)


def sweep_plot(rows: Sequence[dict]) -> str:
    """Bluffed against wrongly refused at each finite cut, one line per run, as an inline PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for (strategy, method), part in table[table["cut"].notna()].groupby(["strategy", "method"], sort=False):
        ax.plot(part["wrongly_refused"], part["bluffed"], marker="o", markersize=3, label=f"{strategy}/{method}")
    ax.set_xlabel("in-domain queries wrongly refused")
    ax.set_ylabel("out-of-domain queries bluffed")
    ax.set_title("each point a cut: lower left is better", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return _png(fig)


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, escape=True, border=0, na_rep="")


def _runs_table(runs: Sequence[dict]) -> pd.DataFrame:
    rows = []
    for run in runs:
        row = {"run": _label(run), "queries": run["queries"]}
        row |= {f"R@{k}": with_interval(run["recall"][str(k)], *run["recall_interval"][str(k)]) for k in KS}
        row |= {"MRR": f"{run['mrr']:.3f}", "answers destroyed": len(run["answers_destroyed"])}
        rows.append(row)
    return pd.DataFrame(rows)


def _paired_table(paired: Sequence[dict]) -> pd.DataFrame:
    from ..evaluation import Paired

    rows = [{"run": _label(p), "against": _label(p["against"]), "metric": p["metric"],
             "wins": p["wins"], "losses": p["losses"], "p": f"{p['p']:.4f}",
             "reading": verdict(Paired(p["wins"], p["losses"], p["p"]), _label(p), _label(p["against"]))}
            for p in paired]
    return pd.DataFrame(rows)


def _destroyed_table(runs: Sequence[dict]) -> pd.DataFrame:
    seen: dict[str, list[str]] = {}
    for run in runs:
        seen.setdefault(run["strategy"], run["answers_destroyed"])
    return pd.DataFrame([{"strategy": s, "questions cut": len(ids), "ids": ", ".join(ids) or "none"}
                         for s, ids in seen.items()])


_STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}th,td{padding:.25em .6em;
border-bottom:1px solid #ddd;text-align:left}th{background:#f4f4f4}h2{margin-top:1.6em}
.note{color:#555;font-size:.9em}img{max-width:100%}"""


def render(results: dict) -> str:
    """The report as one HTML page, from the `results.json` dictionary alone."""
    c, runs, paired, rows = results["corpus"], results["runs"], results["paired"], results["sweep"]
    e = html.escape
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>ragcourse eval report</title>"
             f"<style>{_STYLE}</style></head><body><h1>ragcourse eval report</h1>",
             "<h2 id='corpus'>Corpus</h2>",
             f"<p>{c['documents']} documents, {c['characters']:,} characters, {c['sections']} sections; "
             f"{len(c['failed'])} file(s) failed.</p>"]
    if c["failed"]:
        parts.append(_table(pd.DataFrame(c["failed"])[["path", "reason"]]))
    parts += ["<h2 id='runs'>Runs</h2><p class='note'>Recall@k with its 95 % t interval over questions "
              "(a question's two phrasings are not independent), clipped to [0, 1]; MRR over queries.</p>",
              _table(_runs_table(runs)), "<h2 id='recall'>Recall@k</h2>", recall_plot(runs),
              f"<h2 id='paired'>Paired tests against {e(_label(runs[0]))}</h2>",
              "<p class='note'>Question by question: wins and losses, exact sign test.</p>",
              _table(_paired_table(paired)) if paired else "<p>Only one run: nothing to pair.</p>",
              "<h2 id='destroyed'>Answers destroyed by chunking</h2>", _table(_destroyed_table(runs)),
              "<h2 id='sweep'>Threshold sweep</h2>"]
    if rows:
        shown = pd.DataFrame(rows).assign(cut=lambda t: [("none" if pd.isna(x) else f"{x:.3f}") for x in t["cut"]])
        parts += [sweep_plot(rows), _table(shown)]
    else:
        parts.append("<p>No out-of-domain queries given (<code>--out-of-domain</code>): no sweep.</p>")
    return "\n".join(parts) + "\n</body></html>\n"
