"""The report of `ragcourse eval`: `results.json`, a self-contained `report.html`, a CSV and a TREC run per run.

`write` saves what `runs.measure` measured into an output folder it owns: `results.json`;
`report.html`, one HTML file whose plots are inline PNGs (it opens offline, from anywhere, and
loads nothing from another host), failures first: the missed questions of each run, worst first,
with the chunk ranked first instead; `queries-<run>.csv`, one row per query; `run-<run>.trec` and
`qrels-<strategy>.trec`, which ranx and trec_eval read (and `qrels-graded.trec`, the graded judgements as
measured, when `--judgements` gave some). `summary` is the small table printed at the end.

Never loses a file: `prepare_out` refuses an output folder inside the documents folder (the next run
would read the report as a document) and a folder holding files this command did not write; a marker
file (`.ragcourse-eval`) lists what it wrote, and only those files are ever replaced.

Leaves out: any choice of a cut for you, and rankings deeper than `runs.TREC_DEPTH` in the run files.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pandas as pd

from ..documents import printable
from ..evaluation import KS, Paired, p_text, questions_needed, verdict, with_interval
from .folder import shorten
from .runs import EXCERPT, LATENCY_PROTOCOL, TREC_DEPTH, Run

RESULTS, REPORT, MARKER = "results.json", "report.html", ".ragcourse-eval"
MISSED_SHOWN = 50


class OutputError(ValueError):
    """The output folder could lose a user's file: the message says why and what to do."""


# ---------------------------------------------------------------- the output folder


def refuse_inside(path: str | Path, docs: str | Path, option: str) -> None:
    """OutputError if `path` (where `option` writes) is inside the documents folder `docs`, or is it."""
    if Path(path).resolve().is_relative_to(Path(docs).resolve()):
        raise OutputError(f"{option} {str(path)!r} is inside DOCS_DIR {str(docs)!r}: what it writes would be read "
                          "as documents by the next run (or overwrite one of yours); choose a folder outside it")


def prepare_out(out: str | Path, docs: str | Path) -> Path:
    """The output folder, made if needed; OutputError if it is inside `docs` or holds files not written here."""
    folder, documents = Path(out).resolve(), Path(docs).resolve()
    if folder.is_relative_to(documents):
        raise OutputError(f"--out {str(out)!r} is inside DOCS_DIR {str(docs)!r}: the report would be read as a "
                          "document by the next run (or overwrite one of yours); choose a folder outside it")
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"--out {str(out)!r} is a file, not a folder: choose a new or empty folder")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / MARKER).is_file():
        raise OutputError(f"--out {str(out)!r} holds files that ragcourse eval did not write (it has no {MARKER} "
                          "marker): nothing was overwritten; choose a new or empty folder")
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / MARKER).is_file():
        _mark(folder, [])
    return folder


def _mark(folder: Path, written: Sequence[str]) -> None:
    note = {"written_by": "ragcourse eval", "files": sorted(written),
            "note": "ragcourse eval replaces only the files listed here; delete this folder to start afresh"}
    (folder / MARKER).write_text(json.dumps(note, indent=1) + "\n", encoding="utf-8")


def _written_before(folder: Path) -> list[str]:
    """The files the marker says an earlier run wrote: plain names of this folder only (a marker edited to name
    `../file` or `sub/file` never deletes anything outside what eval writes)."""
    try:
        names = json.loads((folder / MARKER).read_text(encoding="utf-8")).get("files", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [n for n in names if isinstance(n, str) and n == Path(n).name and n not in ("", ".", "..", MARKER)
            and (n in (RESULTS, REPORT) or n.endswith((".csv", ".trec")))]


def slug(label: str) -> str:
    """A run's label as a file name part: `slug("E/hybrid+rerank") -> "E-hybrid-rerank"`."""
    return label.replace("/", "-").replace("+", "-")


def trec_id(chunk_id: str) -> str:
    """A chunk or query id without whitespace (TREC splits on it): `trec_id("my notes.md#0") -> "my%20notes.md#0"`."""
    return quote(chunk_id, safe="/#,-._~")


def trec_run(run: Run) -> str:
    """The run in TREC format (`qid Q0 docno rank score tag`), scores falling with rank so no tool reorders it."""
    lines = []
    for query, ids in run.top.items():
        qid = trec_id(query)
        lines += [f"{qid} Q0 {trec_id(c)} {r} {len(ids) - r + 1} {slug(run.label)}" for r, c in enumerate(ids, 1)]
    return "\n".join(lines) + "\n"


def trec_qrels(run: Run) -> str:
    """Relevance judgements in TREC format (`qid 0 docno 1`): the chunk holding each query's needle."""
    held = [(d["query"], d["needle_chunk"]) for d in run.details if d["needle_chunk"] is not None]
    rows = [f"{trec_id(query)} 0 {trec_id(chunk['id'])} 1" for query, chunk in held]
    return "\n".join(rows) + "\n"


def graded_qrels(grades: dict) -> str:
    """Graded judgements in TREC format (`qid 0 docno grade`), per query measured, passages by chunk id: with the
    run files, what trec_eval and ir_measures read to reproduce the report's graded figures."""
    rows = [f"{trec_id(query)} 0 {trec_id(passage)} {grade}" for query, judged in grades.items()
            for passage, grade in judged.items()]
    return "\n".join(rows) + "\n"


def query_table(run: Run) -> pd.DataFrame:
    """One row per query (the CSV): rank, the measures, latency, where the needle is, and what came first instead."""
    table = run.per_query.drop(columns=["query", "phrasing"])
    details = pd.DataFrame([{
        "query": d["query"], "question": d["question"], "phrasing": d["phrasing"], "text": d["text"],
        "needle_doc": d["doc"], "needle_locator": (d["needle_chunk"] or {}).get("locator", ""),
        "first_locator": (d["first"] or {}).get("locator", ""), "first_section": (d["first"] or {}).get("section", ""),
        "first_excerpt": (d["first"] or {}).get("excerpt", "")} for d in run.details])
    return pd.concat([details.iloc[:, :4], table.reset_index(drop=True), details.iloc[:, 4:]], axis=1)


def write(results: dict, runs: Sequence[Run], out: str | Path, grades: dict | None = None) -> list[Path]:
    """Write every file into the prepared folder `out` (replacing only what an earlier run wrote); the paths."""
    folder = Path(out)
    for name in _written_before(folder):
        (folder / name).unlink(missing_ok=True)
    files = {RESULTS: json.dumps(results, ensure_ascii=False, indent=1) + "\n", REPORT: render(results)}
    for run in runs:
        files[f"run-{slug(run.label)}.trec"] = trec_run(run)
        if run.strategy != "run":  # a run file's qrels would be its own chunks', not a strategy's
            files.setdefault(f"qrels-{run.strategy}.trec", trec_qrels(run))
    if grades:
        files["qrels-graded.trec"] = graded_qrels(grades)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    for run in runs:
        name = f"queries-{slug(run.label)}.csv"
        query_table(run).to_csv(folder / name, index=False, float_format="%.4g")
        files[name] = ""
    _mark(folder, list(files))
    return [folder / name for name in files]


# ---------------------------------------------------------------- the terminal summary


def summary(results: dict) -> str:
    """The small table printed at the end: recall@k, nDCG at the largest k, MRR (by phrasing) and latency."""
    ks, rows = results["ks"], []
    for run in results["runs"]:
        row = {"run": run["label"]} | {f"R@{k}": f"{run['recall'][str(k)]:.3f}" for k in ks}
        row |= {f"nDCG@{ks[-1]}": f"{run['ndcg'][str(ks[-1])]:.3f}", "MRR": f"{run['mrr']:.3f}"}
        row |= {f"MRR {p}": f"{f['mrr']:.3f}" for p, f in run["by_phrasing"].items()}
        if run.get("graded"):
            row |= {f"graded nDCG@{ks[-1]}": f"{run['graded']['ndcg'][str(ks[-1])]:.3f}",
                    "MAP": f"{run['graded']['map']:.3f}"}
        row |= {f"missed@{ks[-1]}": len(missed(run, ks[-1])), "median ms/query": _ms(run)}
        rows.append(row)
    return pd.DataFrame(rows).to_string(index=False)


def _ms(run: dict) -> str:
    """The median over queries of the time to rank one (`runs.LATENCY_PROTOCOL`), or "—" for a run file's run (its
    time was not measured here)."""
    return "—" if run["latency_ms"] is None else f"{run['latency_ms']['median']:.2f}"


def questions_entry(checked) -> dict:
    """The questions as `results.json` holds them: how many were measured, and each line left out with why."""
    return {"measured": len(checked.questions),
            "rejected": [{"where": r.where, "reason": r.reason} for r in checked.rejected]}


def missed_lines(results: dict, shown: int = 3) -> list[str]:
    """The terminal's list of each run's worst misses at the largest k: query, rank, what was asked, where the
    needle is and what came first instead."""
    k, out = results["ks"][-1], []
    for run in results["runs"]:
        rows = missed(run, k)
        if not rows:
            continue
        out.append(f"{run['label']}: {len(rows)} of {run['queries']} queries missed at {k}"
                   + (f" ({shown} worst shown; all in report.html and the run's CSV)" if len(rows) > shown else ""))
        for d in rows[:shown]:
            rank = "no chunk holds the needle whole" if d["rank"] is None else f"rank {d['rank']}"
            first = (d["first"] or {}).get("locator", "")
            needle = (d["needle_chunk"] or {}).get("locator", d["doc"])
            out.append(f"  {d['query']} ({rank}): {printable(d['text'])[:80]!r} needle in {printable(needle)}"
                       + (f", first instead {printable(first)}" if first else ""))
    return out + ([""] if out else [])


def missed(run: dict, k: int) -> list[dict]:
    """The run's queries whose needle is not in its top k, worst first (no chunk holds it whole: worst of all)."""
    out = [d for d in run["per_query"] if d["rank"] is None or d["rank"] > k]
    return sorted(out, key=lambda d: (-(d["rank"] or 10**9), d["query"]))


def _png(fig, alt: str = "plot") -> str:
    """A matplotlib figure as an inline <img> (base64 PNG): nothing for the browser to fetch."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def recall_plot(runs: Sequence[dict], ks: Sequence[int]) -> str:
    """Recall@k per run, with its interval over questions as error bars, as an inline PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.8))
    for i, run in enumerate(runs):
        xs = np.array(ks, dtype=float) * (1 + 0.03 * (i - len(runs) / 2))  # side by side, not on top
        value = np.array([run["recall"][str(k)] for k in ks])
        low, high = (np.array([run["recall_interval"][str(k)][j] for k in ks]) for j in (0, 1))
        ax.errorbar(xs, value, yerr=[value - low, high - value], marker="o", capsize=3, label=run["label"])
    ax.set_xscale("log")
    ax.set_xticks(list(ks), [str(k) for k in ks])
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k (95 % interval over questions)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return _png(fig, "recall@k of each run at each cut-off k, with 95 % intervals over questions")


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
    return _png(fig, "out-of-domain queries bluffed against in-domain queries wrongly refused, one point per cut")


def figure(image: str, number: int, caption: str) -> str:
    """An inline image with its numbered caption, for a reader who cannot see the plot as much as one who can.

    >>> figure("<img>", 1, "Recall & MRR.")
    '<figure><img><figcaption>Figure 1. Recall &amp; MRR.</figcaption></figure>'
    """
    return f"<figure>{image}<figcaption>Figure {number}. {html.escape(caption)}</figcaption></figure>"


_FIGURES = re.compile(r"<td>([-+−–\d.,%/\[\]() ]+)</td>")


def _table(frame: pd.DataFrame) -> str:
    """A frame as an HTML table in a scrolling box; a cell of figures breaks only at its spaces.

    >>> _FIGURES.sub(r"<td class='n'>\\1</td>", "<td>0.481</td><td>0.3 [0.2, 0.4]</td><td>a/b.rst</td>")
    "<td class='n'>0.481</td><td class='n'>0.3 [0.2, 0.4]</td><td>a/b.rst</td>"
    """
    table = frame.to_html(index=False, escape=True, border=0, na_rep="")
    return "<div class='scroll'>" + _FIGURES.sub(r"<td class='n'>\1</td>", table) + "</div>"


def _runs_table(runs: Sequence[dict], ks: Sequence[int]) -> pd.DataFrame:
    rows = []
    for run in runs:
        row = {"run": run["label"], "queries": run["queries"]}
        row |= {f"R@{k}": with_interval(run["recall"][str(k)], *run["recall_interval"][str(k)]) for k in ks}
        row |= {f"nDCG@{ks[-1]}": f"{run['ndcg'][str(ks[-1])]:.3f}", "MRR": f"{run['mrr']:.3f}",
                "median ms/query": _ms(run), "answers destroyed": len(run["answers_destroyed"])}
        rows.append(row)
    return pd.DataFrame(rows)


def _graded_table(runs: Sequence[dict], ks: Sequence[int]) -> pd.DataFrame:
    """Graded measures per run (and per phrasing): nDCG@k and MAP with their intervals, bpref, the condensed forms,
    and the share of the top k judged."""
    rows = []
    for run in runs:
        parts = [("all", run.get("graded"))] + [(p, f.get("graded")) for p, f in run["by_phrasing"].items()]
        for split, g in (part for part in parts if part[1]):
            row = {"run": run["label"], "phrasing": split, "judged queries": g["queries"]}
            row |= {f"nDCG@{k}": with_interval(g["ndcg"][str(k)], *(g["ndcg_interval"][str(k)] or (None, None)))
                    for k in ks[-2:]}
            row |= {"MAP": with_interval(g["map"], *(g["map_interval"] or (None, None))), "bpref": f"{g['bpref']:.3f}",
                    f"nDCG'@{ks[-1]}": f"{g['condensed_ndcg'][str(ks[-1])]:.3f}", "MAP'": f"{g['condensed_map']:.3f}",
                    f"judged@{ks[-1]}": f"{g['judged'][str(ks[-1])]:.3f}"}
            rows.append(row)
    return pd.DataFrame(rows)


def _graded_section(results: dict) -> list[str]:
    """The graded judgements' section, when `--judgements` gave some: what the measures are, then the table."""
    runs, ks = results["runs"], results.get("ks", list(KS))
    if not any(run.get("graded") for run in runs):
        return []
    return ["<h2 id='graded'>Graded judgements</h2><p class='note'>Over the queries judged: nDCG@k (linear gains, "
            "log2(rank + 1) discount, as trec_eval) and MAP (relevant = grade 1 or more), each with its 95 % interval "
            "over questions; bpref, and nDCG' and MAP' over the condensed list (unjudged passages dropped), which "
            "unjudged passages cannot move; judged@k, the share of the top k a judge read: when it is low, the "
            "first measures count unread passages as not relevant. Over the top "
            f"{TREC_DEPTH} of each run, as its run file and qrels-graded.trec hold them.</p>",
            _table(_graded_table(runs, ks))]


def _document_table(runs: Sequence[dict], ks: Sequence[int]) -> pd.DataFrame:
    """Document-level recall@k (any chunk of the needle's document within k) beside the chunk-level one."""
    rows = []
    for run in runs:
        row = {"run": run["label"]}
        for k in ks:
            row[f"doc R@{k}"] = with_interval(run["doc_recall"][str(k)], *run["doc_recall_interval"][str(k)])
            row[f"chunk R@{k}"] = f"{run['recall'][str(k)]:.3f}"
        rows.append(row)
    return pd.DataFrame(rows)


def _phrasing_table(runs: Sequence[dict], ks: Sequence[int]) -> pd.DataFrame:
    rows = [{"run": run["label"], "phrasing": p, "queries": f["queries"]}
            | {f"R@{k}": with_interval(f["recall"][str(k)], *(f.get("recall_interval", {}).get(str(k)) or (None,) * 2))
               for k in ks}
            | {f"nDCG@{ks[-1]}": f"{f['ndcg'][str(ks[-1])]:.3f}", "MRR": f"{f['mrr']:.3f}",
               f"missed@{ks[-1]}": sum(1 for d in missed(run, ks[-1]) if d["phrasing"] == p)}
            for run in runs for p, f in run["by_phrasing"].items()]
    return pd.DataFrame(rows)


def _missed_table(run: dict, k: int) -> pd.DataFrame:
    rows = []
    for d in missed(run, k)[:MISSED_SHOWN]:
        first = d["first"] or {}
        rows.append({"rank": "none holds it" if d["rank"] is None else d["rank"], "query": d["query"],
                     "asked": shorten(d["text"], EXCERPT), "needle in": _where(d["needle_chunk"]) or d["doc"],
                     "ranked first instead": _where(first), "section": first.get("section", ""),
                     "its text": first.get("excerpt", "")})
    return pd.DataFrame(rows)


def _where(chunk: dict | None) -> str:
    """A chunk's place: its source file's line:column when found there, beside its offsets in the extracted text.

    >>> _where({"locator": "a.rst#char=0,9", "source": "a.rst:4:1"}), _where({"locator": "a.md#char=0,9"})
    ('a.rst:4:1 (a.rst#char=0,9)', 'a.md#char=0,9')
    """
    if not chunk:
        return ""
    return f"{chunk['source']} ({chunk['locator']})" if chunk.get("source") else chunk["locator"]


def _missed_section(runs: Sequence[dict], k: int) -> list[str]:
    parts = [f"<h2 id='missed'>Missed questions</h2><p class='note'>Per run, the queries whose needle is not in "
             f"the top {k}, worst first, with the chunk ranked first instead (at most {MISSED_SHOWN} a run; "
             "every query is in the run's CSV).</p>"]
    for run in runs:
        rows = missed(run, k)
        parts.append(f"<h3>{html.escape(run['label'])}: {len(rows)} of {run['queries']} missed</h3>")
        parts.append(_table(_missed_table(run, k)) if rows else "<p>None.</p>")
    return parts


ALPHA = 0.05
#: How a phrasing is named in a sentence.
SPLIT_NAMES = {"all": "Over all questions", "doc": "Asked as the documentation would", "ticket": "Asked as tickets"}


def _metric_value(run: dict, split: str, metric: str, ks: Sequence[int]) -> float:
    figures = run if split == "all" else run["by_phrasing"][split]
    return figures["mrr"] if metric == "MRR" else figures["recall"][metric.removeprefix("R@")]


def _pick(results: dict, split: str, metric: str = "MRR") -> str:
    """One sentence for one split: the run to pick, by how much and how sure; or that the data cannot decide,
    and about how many questions would (`evaluation.questions_needed`, 80 % power at 0.05)."""
    runs, where = results["runs"], SPLIT_NAMES.get(split, f"Asked as {split}")
    best = max(runs, key=lambda r: _metric_value(r, split, metric, results["ks"]))["label"]
    against = [e for e in results["splits"] if e["split"] == split and e["metric"] == metric and best in (e["a"],
                                                                                                       e["b"])]
    value = _metric_value(next(r for r in runs if r["label"] == best), split, metric, results["ks"])
    if all(e["a"] == best and e["p_holm"] < ALPHA for e in against):
        e = min(against, key=lambda e: e["difference"])
        return (f"{where}: pick {best} (" + metric + f" {value:.3f}). It beats every other run; the closest, "
                f"{e['b']}, by {e['difference']:.3f} (95 % interval {e['low']:.3f} to {e['high']:.3f}; "
                f"{e['wins']} questions better, {e['losses']} worse; Holm-adjusted {p_text(e['p_holm'])}).")
    e = max((e for e in against if e["p_holm"] >= ALPHA or e["a"] != best), key=lambda e: e["p_holm"])
    other = e["b"] if e["a"] == best else e["a"]
    needed = questions_needed(e["sd"], abs(e["difference"])) if e["difference"] and e["sd"] > 0 else None
    family = sum(1 for x in results["splits"] if x["split"] == split and x["metric"] == metric)
    need = ("no difference was measured at all" if needed is None else
            f"about {needed} questions would detect a difference this large (80 % power at 0.05), against "
            f"{e['questions']} now" if needed > e["questions"] else
            f"a difference this large is within reach of {e['questions']} questions, but not once Holm's correction "
            f"counts the {family} pairs tested; fewer runs, or more questions, would settle it")
    shown = f"{e['difference']:.3f}" + ("" if e["low"] is None else f", 95 % interval {e['low']:.3f} to "
                                                                     f"{e['high']:.3f}")
    return (f"{where}: the data cannot decide between {best} and {other} on {metric} (difference {shown}; "
            f"{e['wins']} questions one way, {e['losses']} the other; Holm-adjusted {p_text(e['p_holm'])}); {need}.")


def decision(results: dict) -> list[str]:
    """The sentences the report opens on: per split (all questions, then each phrasing), the run to pick on MRR,
    or that the data cannot decide; the phrasings' disagreement; each reranker that costs a phrasing a quarter
    of its MRR or more."""
    runs = results["runs"]
    if len(runs) < 2:
        return [f"Only one run ({runs[0]['label']}): nothing to choose between."]
    splits = ["all", *runs[0]["by_phrasing"]]
    out = [_pick(results, split) for split in splits]
    opposite = [h for h in results.get("heterogeneity", []) if h["metric"] == "MRR" and (h["opposite"] or
                                                                                         h["p"] < ALPHA)]
    if opposite:
        h = min(opposite, key=lambda h: h["p"])
        shown = ", ".join(f"{p} {d:+.3f}" for p, d in h["difference"].items())
        out.append(f"The phrasings disagree: {h['a']} against {h['b']} on MRR is {shown} (interaction sign test "
                   f"{h['wins']}–{h['losses']}, {p_text(h['p'])}); read each phrasing's line, not the pooled one.")
    by_label = {r["label"]: r for r in runs}
    for run in runs:
        first = by_label.get(run["label"].removesuffix("+rerank")) if run["rerank"] else None
        for split in (splits if first else []):
            before, after = (_metric_value(r, split, "MRR", results["ks"]) for r in (first, run))
            if after <= 0.75 * before:
                out.append(f"Reranking lowers {first['label']}'s MRR {SPLIT_NAMES.get(split, split).lower()} "
                           f"from {before:.3f} to {after:.3f}.")
    return out


def _splits_table(splits: Sequence[dict], metrics: Sequence[str]) -> pd.DataFrame:
    rows = [{"split": e["split"], "metric": e["metric"], "A": e["a"], "B": e["b"],
             "A − B [95 %]": with_interval(e["difference"], e["low"], e["high"]),
             "wins–losses": f"{e['wins']}–{e['losses']}", "p": p_text(e["p"], bare=True),
             "p (Holm)": p_text(e["p_holm"], bare=True)}
            for e in splits if e["metric"] in metrics]
    return pd.DataFrame(rows)


def _heterogeneity_table(rows: Sequence[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"A": h["a"], "B": h["b"], "metric": h["metric"]}
                         | {f"A − B, {p}": f"{d:+.3f}" for p, d in h["difference"].items()}
                         | {"opposite signs": "yes" if h["opposite"] else "", "interaction": f"{h['wins']}–"
                            f"{h['losses']}, {p_text(h['p'])}"} for h in rows])


def _splits_section(results: dict) -> list[str]:
    ks, splits = results["ks"], results.get("splits", [])
    if not splits:
        return []
    parts = ["<h2 id='splits'>Every pair, every phrasing</h2><p class='note'>Each pair of runs over all questions "
             f"and per phrasing, on MRR and R@{ks[-1]} (and graded nDCG@{ks[-1]} and MAP when judged): the mean "
             "per-question difference (A the higher) with its "
             "95 % t interval, wins and losses, the exact sign test's p, and Holm's adjusted p across the pairs of "
             f"one split and metric. Every R@k is in results.json.</p>",
             _table(_splits_table(splits, ("MRR", f"R@{ks[-1]}", f"nDCG@{ks[-1]} graded", "MAP")))]
    if results.get("heterogeneity"):
        parts += ["<h3 id='heterogeneity'>Do the phrasings disagree?</h3><p class='note'>Per pair, each phrasing's "
                  "mean difference, and a sign test of the method × phrasing interaction over the questions asked "
                  "both ways.</p>", _table(_heterogeneity_table(results["heterogeneity"]))]
    return parts


def _paired_table(paired: Sequence[dict]) -> pd.DataFrame:
    rows = [{"run": p["label"], "against": p["against"]["label"], "metric": p["metric"],
             "wins": p["wins"], "losses": p["losses"], "p": p_text(p["p"], bare=True),
             "reading": verdict(Paired(p["wins"], p["losses"], p["p"]), p["label"], p["against"]["label"])}
            for p in paired]
    return pd.DataFrame(rows)


def _destroyed_table(runs: Sequence[dict]) -> pd.DataFrame:
    seen: dict[str, list[str]] = {}
    for run in runs:
        seen.setdefault(run["strategy"], run["answers_destroyed"])
    return pd.DataFrame([{"strategy": s, "questions cut": len(ids), "ids": ", ".join(ids) or "none"}
                         for s, ids in seen.items()])


_STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}
td{overflow-wrap:anywhere}th,td.n{overflow-wrap:normal}th,td{padding:.25em .6em;
border-bottom:1px solid #ddd;text-align:left;vertical-align:top}th{background:#f4f4f4}h2{margin-top:1.6em}
.note{color:#555;font-size:.9em}
.verdict{background:#f4f8ff;border-left:4px solid #36c;padding:.2em 1em}
img{max-width:100%;height:auto}.scroll{overflow-x:auto;max-width:100%}
figure{margin:1em 0}figcaption{color:#555;font-size:.9em}td:first-child{white-space:nowrap}
@media (max-width:600px){body{margin:1em auto;padding:0 .5em}table{font-size:.8em}}"""


LEFT_OUT_SHOWN = 100  # lines of a questions file listed on the page as left out (all are in results.json)


def _left_out_section(rejected: Sequence[dict]) -> list[str]:
    """The questions file's lines that were not measured, each with where and why (nothing when none)."""
    if not rejected:
        return []
    many = len(rejected) > LEFT_OUT_SHOWN
    shown = f"the first {LEFT_OUT_SHOWN} are listed, every one is in results.json. " if many else ""
    return [f"<h2 id='left-out'>Questions left out</h2><p class='note'>{len(rejected)} line(s) of the questions "
            "(or out-of-domain, run or judgements) files could not be used; every other line was; "
            f"{shown}Fix them and run again.</p>",
            _table(pd.DataFrame(list(rejected)[:LEFT_OUT_SHOWN])[["where", "reason"]])]


def _corpus_line(c: dict) -> str:
    """The corpus in one sentence, at the top: what was read, and how many files each list at the end holds."""
    return (f"<p id='corpus'>{c['documents']} documents, {c['characters']:,} characters, {c['sections']} sections; "
            f"{len(c['failed'])} file(s) failed to read, {len(c.get('no_text', []))} hold no text, "
            f"{sum(k['count'] for k in c.get('kept_as_text', []))} directive(s) kept as plain text, "
            f"{len(c['skipped'])} file(s) are not documents, {len(c.get('excluded', []))} excluded by --exclude "
            "(<a href='#files'>listed at the end</a>).</p>")


def _folded(rows: Sequence[dict], summary: str, columns: Sequence[str]) -> str:
    return f"<details><summary>{summary}</summary>" + _table(pd.DataFrame(list(rows))[list(columns)]) + "</details>"


def _files_section(c: dict) -> list[str]:
    """Every file not read as a document, folded by kind: failed, no text, directives kept as text, not documents."""
    parts = ["<h2 id='files'>Files</h2>"]
    if c["failed"]:
        parts.append(_folded(c["failed"], f"{len(c['failed'])} file(s) failed to read", ("path", "reason")))
    if c.get("no_text"):
        parts.append(_folded(c["no_text"], f"{len(c['no_text'])} file(s) hold no text (empty, or markup "
                             "only, such as autodoc stubs)", ("path", "reason")))
    if c.get("kept_as_text"):
        parts.append(_folded(c["kept_as_text"], "Directives this reader does not know, kept as plain text (their "
                             "arguments and body), per file", ("path", "directive", "count")))
    if c["skipped"]:
        parts.append(_folded([{"path": p} for p in c["skipped"]], f"{len(c['skipped'])} file(s) skipped: not "
                             "documents by type (read: .md .markdown .rst .txt .html .htm .pdf)", ("path",)))
    if c.get("excluded"):
        parts.append(_folded([{"path": p} for p in c["excluded"]], f"{len(c['excluded'])} path(s) excluded by "
                             "--exclude: never read", ("path",)))
    return parts if len(parts) > 1 else [*parts, "<p>Every file was read.</p>"]


def _sweep_section(rows: Sequence[dict]) -> list[str]:
    parts = ["<h2 id='sweep'>Threshold sweep</h2>"]
    if not rows:
        return [*parts, "<p>No out-of-domain queries given (<code>--out-of-domain</code>): no sweep.</p>"]
    shown = pd.DataFrame(rows).assign(cut=lambda t: [("none" if pd.isna(x) else f"{x:.3f}") for x in t["cut"]])
    return [*parts, figure(sweep_plot(rows), 2, "The gate at each cut (chapter 6): out-of-domain queries answered "
                           "anyway (bluffed) against in-domain queries refused; lower left is better."), _table(shown)]


def render(results: dict) -> str:
    """The report as one HTML page, from the `results.json` dictionary alone: the answer first (the corpus in a
    line, the runs, the splits and the tests), then the misses, and the files not read folded at the end."""
    c, runs, paired, rows = results["corpus"], results["runs"], results["paired"], results["sweep"]
    ks = results.get("ks", list(KS))
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             "<meta name='viewport' content='width=device-width, initial-scale=1'><title>ragcourse eval report</title>"
             f"<style>{_STYLE}</style></head><body><h1>ragcourse eval report</h1>",
             "<div id='verdict' class='verdict'>" + "".join(f"<p>{html.escape(x)}</p>" for x in decision(results))
             + "</div>", _corpus_line(c),
             "<h2 id='runs'>Runs</h2><p class='note'>Recall@k with its 95 % t interval over questions (a question's "
             "two phrasings are not independent), clipped to [0, 1]; nDCG (binary relevance) and MRR over "
             "queries; the time to rank one query, reranking included, as the median over queries of "
             f"{html.escape(LATENCY_PROTOCOL)} (embeddings excluded: the query's, "
             "and for late interaction its token vectors, are computed beforehand).</p>",
             _table(_runs_table(runs, ks))]
    if all("doc_recall" in run for run in runs):
        parts += ["<h2 id='documents'>Chunk or document?</h2><p class='note'>Document-level recall@k: a hit when "
                  "any chunk of the needle's document ranks within k, with its 95 % interval over questions, beside "
                  "the chunk-level recall@k. High at document level and low at chunk level: the retriever finds "
                  "the page and the chunking hides the passage; low at both: the retriever misses.</p>",
                  _table(_document_table(runs, ks))]
    if any(run["by_phrasing"] for run in runs):
        parts += ["<h2 id='phrasing'>By phrasing</h2><p class='note'>The same runs, documentation phrasing and "
                  "ticket phrasing apart: means over each phrasing's queries, recall@k with its 95 % interval over "
                  "questions.</p>", _table(_phrasing_table(runs, ks))]
    parts += _graded_section(results)
    parts += _splits_section(results)
    parts += ["<h2 id='paired'>Paired tests</h2>",
              "<p class='note'>Question by question, each run against the baseline and each reranked run against "
              "its own first stage: wins and losses, exact sign test.</p>",
              _table(_paired_table(paired)) if paired else "<p>Only one run: nothing to pair.</p>",
              "<h2 id='recall'>Recall@k</h2>", figure(recall_plot(runs, ks), 1, f"Recall@k of each run at k = "
              f"{', '.join(map(str, ks))}, with its 95 % interval over questions: overlapping bars do not settle a "
              "comparison; the paired tests above do.")]
    parts += _missed_section(runs, ks[-1])
    parts += ["<h2 id='destroyed'>Answers destroyed by chunking</h2>", _table(_destroyed_table(runs)),
              *_sweep_section(rows)]
    parts += [*_left_out_section(results.get("questions", {}).get("rejected", [])), *_files_section(c)]
    return "\n".join(parts) + "\n</body></html>\n"
