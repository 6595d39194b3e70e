"""Retrieval evaluation: needle hits, recall@k, MRR, Wilson intervals, paired tests, the gate's sweep (chapters 3-6).

What it implements: a query is answered by a chunk when the chunk's ``content`` contains the
query's verbatim needle sentence, whitespace collapsed on both sides (the corpus is hard-wrapped).
Per query we keep the rank of the first such chunk; recall@k and MRR summarise those ranks;
Wilson score intervals say how uncertain a rate over 64 queries is (`share_cell`, `share_table`: k of n with
its interval, as the book's tables print it); the sign test (exact McNemar)
and a sign-flip randomization test compare two systems on the same queries, `holm` adjusts their
p-values for the number of variants tried (Holm's step-down correction), and `verdict` turns a
comparison into the sentence the book prints. Chapter 6's measurements live here too, not beside
what they measure: `distances_to_needle`, `sweep` (the gate of `ragcourse.gate` at each cut), and
`auc`, `auc_interval`, `tradeoff`, `gate_mistakes` (how well a signal separates answerable from unanswerable).
How the book prints a p-value (`p_text`) and measures latency (`latency_ms`: a warm-up, the fastest of three
runs per item, the median over items) are defined here once, for the chapters and the benchmarks (`ragcourse
eval` times the one run it makes of each query and reports that run's median and 95th percentile).

What it leaves out: graded relevance and several relevant chunks per query (`ragcourse.graded`, chapter 12),
and corrections other than Holm's (e.g. false-discovery-rate control).
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from . import permissions
from .chunking import chunk_corpus
from .counts import check_k
from .gate import NoAnswer, gate
from .words import collapse

if TYPE_CHECKING:
    from .corpus import Document
    from .dense import Hit
    from .pipeline import Retriever

#: The cut-offs of recall@k the book reports (`evaluate`, `from_ranks` and the command line's report).
KS = (1, 4, 8, 20)


def _content(item: Any) -> str:
    """A ranked item is either a string or an object with ``.content`` (a Chunk)."""
    return item if isinstance(item, str) else item.content


def contains_needle(content: str, needle: str) -> bool:
    """True when ``needle`` occurs in ``content``, whitespace collapsed on both sides."""
    wanted = collapse(needle)
    if not wanted:
        raise ValueError(f"needle={needle!r}: expected a non-blank string")
    return wanted in collapse(content)


class SplitNeedle(NamedTuple):
    """Two chunks that meet inside a needle (their (start, end) spans and texts), and the needle hard-wrapped there."""

    needle: tuple[int, int]
    left_span: tuple[int, int]
    right_span: tuple[int, int]
    left: str
    right: str
    wrapped: str


def split_needle(text: str, needle: str, after: str, margin: int = 120) -> SplitNeedle:
    """Cut `needle` (in `text`) just after its words `after`, each chunk reaching `margin` characters beyond it.

    >>> split = split_needle("ab one, two cd", "one, two", after="one,", margin=2)
    >>> split.needle, split.left_span, split.right_span, split.left, split.right, split.wrapped
    ((3, 11), (1, 7), (7, 13), 'b one,', ' two c', 'one,\\n    two')
    """
    start = text.index(needle)
    cut = needle.index(after) + len(after)
    left, right = (max(0, start - margin), start + cut), (start + cut, start + len(needle) + margin)
    return SplitNeedle((start, start + len(needle)), left, right, text[slice(*left)], text[slice(*right)],
                       needle[:cut] + "\n    " + needle[cut:].lstrip())


def first_hit_rank(ranked: Iterable[Any], needle: str) -> int | None:
    """Rank (from 1) of the first item whose content contains ``needle``; None if none does."""
    for rank, item in enumerate(ranked, start=1):
        if contains_needle(_content(item), needle):
            return rank
    return None


def first_doc_rank(ranked: Iterable[Any], doc: str) -> int | None:
    """Rank (from 1) of the first item from document ``doc`` (an item has ``.doc_id``): a document-level hit
    at k when it is at most k, whichever chunk of the document it is. None if no item comes from it.

    >>> from types import SimpleNamespace as C
    >>> first_doc_rank([C(doc_id="a"), C(doc_id="b"), C(doc_id="b")], "b"), first_doc_rank([C(doc_id="a")], "b")
    (2, None)
    """
    return next((rank for rank, item in enumerate(ranked, start=1) if item.doc_id == doc), None)


def answers_destroyed(chunks: Iterable[Any], needles: Iterable[str]) -> list[str]:
    """Needles that no chunk contains whole (a boundary cut them), in input order."""
    contents = [collapse(_content(c)) for c in chunks]
    return [n for n in needles if not any(collapse(n) in c for c in contents)]


def destroyed_by_size(docs: Iterable[Document], needles: Sequence[str], sizes: Iterable[int],
                      strategy: str = "A") -> dict[int, int]:
    """How many of `needles` chunks of each size in `sizes` destroy (`strategy`, no overlap; chapter 2's grid).

    >>> from ragcourse.corpus import Document
    >>> destroyed_by_size([Document("d", "D", "## S\\nabcdef ghij\\n")], ["abcdef ghij"], [8, 40])
    {8: 1, 40: 0}
    """
    docs = list(docs)
    return {size: len(answers_destroyed(chunk_corpus(docs, strategy, target=size, overlap=0), needles))
            for size in sizes}


class Interval(NamedTuple):
    """A confidence interval (of a proportion, a mean or an AUC)."""

    low: float
    high: float


def wilson(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval (Wilson, JASA 1927) for ``successes`` out of ``n``.

    With p = s/n and z the two-sided normal quantile:
    centre = (p + z^2/2n) / (1 + z^2/n), half = z/(1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2).

    >>> [round(x, 3) for x in wilson(38, 64)]
    [0.471, 0.705]
    """
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"successes={successes!r}, n={n!r}: expected 0 <= successes <= n, n >= 1")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence!r}: expected a number in (0, 1), e.g. 0.95")
    z = stats.norm.ppf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return Interval(max(0.0, float(centre - half)), min(1.0, float(centre + half)))


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test on discordant pairs (exact McNemar), ties dropped.

    Under H0 wins ~ Binomial(wins + losses, 1/2):
    p = min(1, 2 * sum_{i <= min(wins, losses)} C(n, i) / 2^n).

    >>> round(sign_test(18, 3), 4)
    0.0015
    """
    if wins < 0 or losses < 0:
        raise ValueError(f"wins={wins!r}, losses={losses!r}: expected counts >= 0")
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1))
    return min(1.0, 2 * tail / 2**n)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given (Holm, Scand. J. Statistics 1979).

    Sort the m p-values ascending; the i-th smallest (i from 0) becomes
    max over j <= i of min(1, (m - j) * p_(j)). ``holm([0.01, 0.04, 0.03]) -> [0.03, 0.06, 0.06]``.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or len(p) == 0 or ((p < 0) | (p > 1)).any() or np.isnan(p).any():
        raise ValueError(f"p_values={list(p_values)!r}: expected a non-empty list of numbers in [0, 1]")
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (len(p) - np.arange(len(p))) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted.tolist()


def _sign_flip_p(diffs: np.ndarray, signs: np.ndarray, plus_one: bool) -> float:
    """Share of sign patterns whose |sum of signed differences| reaches the observed one."""
    observed = abs(diffs.sum())
    flipped = np.abs(signs @ diffs)
    hits = int(np.count_nonzero(flipped >= observed - 1e-9 * max(1.0, observed)))
    return (hits + 1) / (len(signs) + 1) if plus_one else hits / len(signs)


def randomization_test(
    a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided paired randomization (sign-flip) test on per-query values of one metric.

    H0: the two systems are exchangeable per query, so each difference d_q = a_q - b_q is as
    likely to have either sign. p = share of random sign flips with |sum s_q d_q| >= |sum d_q|,
    counting the observed pattern (p = (hits + 1) / (n_resamples + 1)); when 2^n <= n_resamples
    all flips are enumerated and p is exact. Recommended for IR by Smucker, Allan & Carterette
    (CIKM 2007). Deterministic for a given ``seed`` (numpy Generator).
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) == 0:
        raise ValueError(f"a {x.shape}, b {y.shape}: expected equal-length non-empty 1-d arrays")
    if n_resamples < 1:
        raise ValueError(f"n_resamples={n_resamples!r}: expected an integer >= 1")
    diffs = x - y
    if 2 ** len(diffs) <= n_resamples:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(diffs))))
        return _sign_flip_p(diffs, signs, plus_one=False)
    rng = np.random.default_rng(seed)
    signs = np.where(rng.random((n_resamples, len(diffs))) < 0.5, -1.0, 1.0)
    return _sign_flip_p(diffs, signs, plus_one=True)


#: The smallest p the book prints: 10,000 random sign flips (`randomization_test`) resolve nothing finer.
P_FLOOR = 0.0001


def p_text(p: float, bare: bool = False) -> str:
    """A p-value as the book prints it: "p = " to 4 places, "p < 0.0001" below `P_FLOOR`; `bare` (a table's
    p column) leaves out the "p".

    >>> p_text(0.05249), p_text(0.00003), p_text(0.0123, bare=True), p_text(0.00003, bare=True)
    ('p = 0.0525', 'p < 0.0001', '0.0123', '< 0.0001')
    """
    if not 0 <= p <= 1:
        raise ValueError(f"p={p!r}: expected a probability in [0, 1]")
    text = f"< {P_FLOOR}" if p < P_FLOOR else f"= {p:.4f}"
    return text.removeprefix("= ") if bare else f"p {text}"


class Paired(NamedTuple):
    """A paired comparison of A against B: queries A won, queries A lost, sign-test p."""

    wins: int
    losses: int
    p: float


def evaluate(
    rankings: Mapping[str, Sequence[Any]], queries: Iterable[Any], ks: Sequence[int] = KS
) -> pd.DataFrame:
    """One row per query: ``query``, ``phrasing``, ``rank`` (<NA> if no hit), ``hit@k``..., ``rr`` (1/rank, 0 if none).

    ``rankings``: query id -> contents or Chunks, best first, in full; a query has ``.id``, ``.needle``, ``.phrasing``.
    """
    queries = list(queries)
    missing = [q.id for q in queries if q.id not in rankings]
    if missing:
        raise ValueError(f"query {missing[0]!r} has no ranking; rankings cover {len(rankings)} ids")
    return from_ranks({q.id: first_hit_rank(rankings[q.id], q.needle) for q in queries}, queries, ks)


def _check_unique(query_ids: Iterable[str], where: str) -> None:
    """ValueError naming the query ids that occur more than once (a repeated query would be counted twice).

    >>> _check_unique(["q1/doc", "q2/doc", "q1/doc"], "queries")
    Traceback (most recent call last):
    ...
    ValueError: queries: query ids ['q1/doc'] occur more than once; each query must be scored once
    """
    repeated = [i for i, n in Counter(query_ids).items() if n > 1]
    if repeated:
        raise ValueError(f"{where}: query ids {repeated} occur more than once; each query must be scored once")


def from_ranks(
    ranks: Mapping[str, int | None], queries: Iterable[Any], ks: Sequence[int] = KS
) -> pd.DataFrame:
    """The `evaluate` table from each query's first-hit rank (None: no hit), e.g. ranks stored by a script."""
    if not ks:
        raise ValueError(f"ks={ks!r}: expected a non-empty sequence of integers >= 1")
    for i, k in enumerate(ks):
        check_k(k, f"ks[{i}]")
    queries = list(queries)
    _check_unique([q.id for q in queries], "queries")
    rows = []
    for q in queries:
        if q.id not in ranks:
            raise ValueError(f"query {q.id!r} has no rank; ranks cover {len(ranks)} ids")
        rank = ranks[q.id]
        if rank is not None and (not isinstance(rank, (int, np.integer)) or isinstance(rank, bool) or rank < 1):
            raise ValueError(f"query {q.id!r}: rank {rank!r}, expected None or an integer >= 1")
        row = {"query": q.id, "phrasing": q.phrasing, "rank": None if rank is None else int(rank)}
        row |= {f"hit@{k}": rank is not None and rank <= k for k in ks}
        row["rr"] = 0.0 if rank is None else 1 / rank
        rows.append(row)
    columns = ["query", "phrasing", "rank", *[f"hit@{k}" for k in ks], "rr"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype({"rank": "Int64"})


def _hit_columns(per_query: pd.DataFrame) -> list[str]:
    return [c for c in per_query.columns if str(c).startswith("hit@")]


def summarize(per_query: pd.DataFrame, label: str, confidence: float = 0.95) -> pd.DataFrame:
    """Tidy summary of an ``evaluate`` table: one row per metric (R@k for each hit@k, then MRR).

    R@k = (1/|Q|) * #{q : rank_q <= k}; MRR = (1/|Q|) * sum_q 1/rank_q, 0 if never answered (Voorhees, TREC-8 1999).
    Columns ``label, metric, value, hits, n, low, high``; low/high is R@k's Wilson interval (NaN for MRR).
    """
    n = len(per_query)
    if n == 0:
        raise ValueError("per_query is empty: expected the output of evaluate()")
    rows = []
    for col in _hit_columns(per_query):
        hits = int(per_query[col].sum())
        low, high = wilson(hits, n, confidence)
        metric = "R@" + col.removeprefix("hit@")
        rows.append({"metric": metric, "value": hits / n, "hits": hits, "low": low, "high": high})
    rows.append({"metric": "MRR", "value": float(per_query["rr"].mean()), "hits": pd.NA})
    frame = pd.DataFrame(rows, columns=["metric", "value", "hits", "low", "high"])
    frame.insert(0, "label", label)
    frame.insert(4, "n", n)
    return frame.astype({"hits": "Int64"})


def with_interval(value: float, low: float | None = None, high: float | None = None, digits: int = 3) -> str:
    """A metric as the book prints it, with its interval when it has one (MRR has none: NaN or None).

    >>> with_interval(0.5, 0.381, 0.619)
    '0.500 [0.381, 0.619]'
    >>> with_interval(0.51489, float("nan"), float("nan"))
    '0.515'
    """
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def share_cell(k: int, n: int, digits: int = 2, confidence: float = 0.95) -> str:
    """k of n as a table cell: the count, the share and its Wilson interval.

    >>> share_cell(3, 32)
    '3/32, 0.09 [0.03, 0.24]'
    """
    return f"{k}/{n}, " + with_interval(k / n, *wilson(k, n, confidence), digits=digits)


def share_table(frame: pd.DataFrame, flag: str, index: str, columns: str) -> pd.DataFrame:
    """A `share_cell` of the boolean column `flag` per (`index`, `columns`) pair, both in first-seen order.

    >>> frame = pd.DataFrame({"model": ["a", "a", "b", "b"], "prompt": ["x", "x", "x", "x"],
    ...                       "obeyed": [True, False, False, False]})
    >>> share_table(frame, "obeyed", "prompt", "model").loc["x"].tolist()
    ['1/2, 0.50 [0.09, 0.91]', '0/2, 0.00 [0.00, 0.66]']
    """
    counts = frame.groupby([index, columns], sort=False)[flag].agg(["sum", "size"])
    cells = pd.Series([share_cell(int(k), int(n)) for k, n in counts.itertuples(index=False)], index=counts.index)
    wide = cells.unstack(columns).loc[list(dict.fromkeys(frame[index])), list(dict.fromkeys(frame[columns]))]
    wide.index.name, wide.columns.name = index, None
    return wide


def interval_table(summaries: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """``summarize`` rows as one row per label, one ``with_interval`` cell per metric, in first-seen order."""
    cells = [with_interval(v, lo, hi) for v, lo, hi in
             zip(summaries["value"], summaries["low"], summaries["high"], strict=True)]
    wide = summaries.assign(cell=cells).pivot(index="label", columns="metric", values="cell")
    columns = list(metrics) if metrics is not None else list(dict.fromkeys(summaries["metric"]))
    wide = wide.loc[list(dict.fromkeys(summaries["label"])), columns]
    wide.columns.name = None
    return wide


def compare(per_query_a: pd.DataFrame, per_query_b: pd.DataFrame, metric: str) -> Paired:
    """Paired comparison of A against B on one per-query column (``hit@k`` or ``rr``).

    Queries are matched by id; A wins a query when its value is larger. p is the exact sign test
    on the wins and losses (ties dropped).
    """
    valid = [*_hit_columns(per_query_a), "rr"]
    if metric not in valid or metric not in per_query_b.columns:
        raise ValueError(f"metric={metric!r}: expected one of {valid} present in both tables")
    _check_unique(per_query_a["query"], "per_query_a")
    _check_unique(per_query_b["query"], "per_query_b")
    a = per_query_a.set_index("query")[metric]
    b = per_query_b.set_index("query")[metric]
    if set(a.index) != set(b.index) or len(a) != len(b):
        raise ValueError("the two tables cover different queries: compare runs on the same queries")
    b = b.loc[a.index]
    wins = int((a.to_numpy(float) > b.to_numpy(float)).sum())
    losses = int((a.to_numpy(float) < b.to_numpy(float)).sum())
    return Paired(wins, losses, sign_test(wins, losses))


def verdict(result: Paired, a: str, b: str, metric: str | None = None, alpha: float = 0.05) -> str:
    """The sentence the book prints for a paired comparison of A against B: no more than the test says.

    Below ``alpha`` it names the side that won more queries; with ``metric`` it is a whole sentence.

    >>> verdict(Paired(wins=12, losses=2, p=0.0129), "E", "C")
    'significant at 0.05, in favour of E'
    >>> verdict(Paired(wins=8, losses=6, p=0.79), "B", "A")
    'not significant at 0.05'
    >>> verdict(Paired(wins=3, losses=10, p=0.0923), "BM25", "dense", metric="R@4")
    'BM25 vs dense at R@4: +3/−10, not significant at 0.05 (p = 0.09)'
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r}: expected a number in (0, 1), e.g. 0.05")
    if result.p >= alpha:
        reading, shown = f"not significant at {alpha}", f"p = {result.p:.2f}"
    else:
        leader = a if result.wins > result.losses else b if result.losses > result.wins else None
        reading = f"significant at {alpha}" + (f", in favour of {leader}" if leader else "")
        shown = "p < 0.001" if result.p < 0.001 else f"p = {result.p:.3f}"
    if metric is None:
        return reading
    return f"{a} vs {b} at {metric}: +{result.wins}/\u2212{result.losses}, {reading} ({shown})"


def distances_to_needle(retriever: Retriever, query: str | np.ndarray, needle: str) -> float:
    """Cosine distance from a query (text or vector) to the nearest chunk whose content holds the needle.

    ``inf`` when no chunk holds it whole (a chunk boundary cut it).
    """
    distances = retriever.dense.distances(query)
    holders = [i for i, c in enumerate(retriever.chunks) if contains_needle(c.content, needle)]
    return float(np.min(distances[holders])) if holders else float("inf")


#: Columns of `sweep`, in order; "bluffed" is last on purpose (read it first).
SWEEP_COLUMNS = (
    "cut",
    "answered_with_needle",
    "answered_without_needle",
    "wrongly_refused",
    "ood_refused",
    "bluffed",
)


def _sweep_row(
    in_domain: Sequence[tuple[Sequence[Hit], str]],
    out_of_domain: Sequence[Sequence[Hit]],
    cut: float,
    k: int,
) -> dict[str, float | int]:
    """Count the five outcomes at one cut."""
    row: dict[str, float | int] = dict.fromkeys(SWEEP_COLUMNS, 0)
    row["cut"] = cut
    for hits, needle in in_domain:
        result = gate(hits, cut, k)
        if isinstance(result, NoAnswer):
            row["wrongly_refused"] += 1
        elif any(contains_needle(h.chunk.content, needle) for h in result.hits):
            row["answered_with_needle"] += 1
        else:
            row["answered_without_needle"] += 1
    for hits in out_of_domain:
        refused = isinstance(gate(hits, cut, k), NoAnswer)
        row["ood_refused" if refused else "bluffed"] += 1
    return row


#: Chapter 6's cuts on the cosine distance, 0.300 to 0.950 in steps of 0.025, then no threshold at all (inf).
CUTS = tuple(round(0.300 + 0.025 * i, 3) for i in range(27)) + (math.inf,)


def sweep(
    in_domain: Sequence[tuple[Sequence[Hit], str]],
    out_of_domain: Sequence[Sequence[Hit]],
    cuts: Sequence[float],
    k: int = 4,
) -> pd.DataFrame:
    """Run the real gate (`ragcourse.gate.gate`) at every cut and count what happens, one row per cut.

    `in_domain`: `(hits, needle)` pairs the corpus answers; `out_of_domain`: hit lists of questions it cannot.
    Per cut, answered_with_needle + answered_without_needle + wrongly_refused = len(in_domain), ood_refused +
    bluffed = len(out_of_domain); a needle counts only in a kept chunk's own `content`, not in its header.
    """
    if not cuts:
        raise ValueError("cuts must hold at least one cut; got an empty sequence")
    rows = [_sweep_row(in_domain, out_of_domain, cut, k) for cut in cuts]
    return pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))


def _scores(values: Sequence[float], name: str) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or len(x) == 0 or np.isnan(x).any():
        raise ValueError(f"{name}: expected a non-empty 1-d sequence of numbers, got shape {x.shape}")
    return x


def auc(answerable: Sequence[float], unanswerable: Sequence[float]) -> float:
    """Area under the trade-off curve: P(an answerable query scores above an unanswerable one), ties 1/2.

    The Mann-Whitney form of ROC AUC (Hanley & McNeil, Radiology 1982): mean over all pairs of
    1[a > u] + 1/2 * 1[a = u]. 1 separates perfectly, 0.5 is chance.

    >>> auc([0.9, 0.8, 0.4], [0.5, 0.4])
    0.75
    """
    a, u = _scores(answerable, "answerable")[:, None], _scores(unanswerable, "unanswerable")[None, :]
    return float(((a > u).sum() + 0.5 * (a == u).sum()) / (a.size * u.size))


def auc_interval(answerable: Sequence[float], unanswerable: Sequence[float], groups: Sequence[str] | None = None,
                 n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> Interval:
    """Percentile bootstrap interval of `auc` (Efron & Tibshirani 1993), seeded, resampling each side apart.

    `groups` labels the answerable scores (e.g. by question): a group is resampled whole, never split.
    """
    a, u = _scores(answerable, "answerable"), _scores(unanswerable, "unanswerable")
    labels = np.asarray(groups if groups is not None else np.arange(len(a)).astype(str))
    if len(labels) != len(a):
        raise ValueError(f"groups has {len(labels)} labels for {len(a)} answerable scores")
    names, index = np.unique(labels, return_inverse=True)
    members = [np.flatnonzero(index == g) for g in range(len(names))]
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_resamples):
        picked = np.concatenate([members[g] for g in rng.integers(0, len(members), len(members))])
        values.append(auc(a[picked], u[rng.integers(0, len(u), len(u))]))
    low, high = np.quantile(values, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Interval(float(low), float(high))


def tradeoff(answerable: Sequence[float], unanswerable: Sequence[float]) -> pd.DataFrame:
    """The bluff / wrong-refusal curve of a score (higher = answer): one row per threshold, answer when score > it.

    Columns ``threshold, refused, bluffed``: the shares of answerable queries refused and of unanswerable
    ones answered. Thresholds are -inf and every distinct score, so the curve runs from (0, 1) to (1, 0).

    >>> tradeoff([0.9, 0.4], [0.5]).to_dict("list")
    {'threshold': [-inf, 0.4, 0.5, 0.9], 'refused': [0.0, 0.5, 0.5, 1.0], 'bluffed': [1.0, 1.0, 0.0, 0.0]}
    """
    a, u = _scores(answerable, "answerable"), _scores(unanswerable, "unanswerable")
    thresholds = np.concatenate([[-np.inf], np.unique(np.concatenate([a, u]))])
    return pd.DataFrame({"threshold": thresholds,
                         "refused": [float((a <= t).mean()) for t in thresholds],
                         "bluffed": [float((u > t).mean()) for t in thresholds]})


class Mistakes(NamedTuple):
    """A gate's two mistakes on one query set, each a count out of n with its Wilson interval."""

    refused: int
    n_in: int
    refused_ci: Interval
    bluffed: int
    n_out: int
    bluffed_ci: Interval


def gate_mistakes(answered_in: Sequence[bool], answered_out: Sequence[bool], confidence: float = 0.95) -> Mistakes:
    """A gate's two mistakes: answerable queries refused and unanswerable ones answered (bluffed).

    Each is a count and its Wilson interval (queries taken as independent: one phrasing each).

    >>> m = gate_mistakes([True, True, False, True], [False, True])
    >>> (m.refused, m.n_in, m.bluffed, m.n_out)
    (1, 4, 1, 2)
    """
    answered_in, answered_out = np.asarray(answered_in, dtype=bool), np.asarray(answered_out, dtype=bool)
    refused, bluffed = int((~answered_in).sum()), int(answered_out.sum())
    n_in, n_out = len(answered_in), len(answered_out)
    return Mistakes(refused, n_in, wilson(refused, n_in, confidence),
                    bluffed, n_out, wilson(bluffed, n_out, confidence))


def question_of(query_id: str) -> str:
    """The question a query asks: query ids are ``<question id>/<phrasing>`` (`groundtruth.queries`), and a
    question id may itself hold a "/".

    >>> question_of("q1/ticket"), question_of("billing/refunds/doc"), question_of("q2")
    ('q1', 'billing/refunds', 'q2')
    """
    return str(query_id).rsplit("/", 1)[0]


def per_question(per_query: pd.DataFrame, column: str = "rr") -> pd.Series:
    """One value per question: the mean of ``column`` over its phrasings, indexed by question id.

    Query ids are ``<question id>/<phrasing>`` (``groundtruth.queries``). The two phrasings of one
    question are not independent samples, so intervals and paired tests treat the question as the unit.

    >>> per_query = pd.DataFrame({"query": ["q1/doc", "q1/ticket", "q2/doc", "q2/ticket"],
    ...                           "rr": [1.0, 0.5, 0.25, 0.0]})
    >>> per_question(per_query).to_dict()
    {'q1': 0.75, 'q2': 0.125}
    """
    if column not in per_query.columns:
        raise ValueError(f"column={column!r}: expected one of {list(per_query.columns)}")
    question = [question_of(q) for q in per_query["query"]]
    values = per_query[column].astype(float).groupby(question, sort=False).mean()
    values.index.name = "question"
    return values


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Student-t interval for the mean of per-question values: ``mean ± t_{n-1} · sd / sqrt(n)``.

    >>> low, high = mean_interval([0.0, 1.0, 0.5, 0.5])
    >>> round(low, 3), round(high, 3)
    (-0.15, 1.15)
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or len(x) < 2:
        raise ValueError(f"{x.shape}: expected a 1-d array of at least two values")
    half = stats.t.ppf((1 + confidence) / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return Interval(float(x.mean() - half), float(x.mean() + half))


def smallest_detectable(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true mean difference a two-sided paired test finds with probability ``power``.

    Normal approximation: ``(z_{1-alpha/2} + z_{power}) · sd / sqrt(n)``, with ``sd`` the standard
    deviation of the per-question differences. With sd 0.235 and 32 questions:

    >>> round(smallest_detectable(0.235, 32), 3)
    0.116
    """
    if n < 2 or not sd >= 0:
        raise ValueError(f"sd={sd!r}, n={n!r}: expected sd >= 0 and n >= 2")
    return float((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * sd / math.sqrt(n))


def smallest_testable(alpha: float = 0.05) -> int:
    """The fewest questions at which an exact two-sided sign or sign-flip test can reach ``alpha`` at all.

    Its smallest p over n questions is 2 / 2**n (every difference one way, or every one the other):
    5 questions give 0.0625 and 6 give 0.03125, so at 0.05:

    >>> smallest_testable(0.05), smallest_testable(0.0625), smallest_testable(0.01)
    (6, 5, 8)
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r}: expected a number between 0 and 1")
    n = max(1, math.ceil(math.log2(2 / alpha)) - 1)
    while 2 * 0.5**n > alpha:  # the logarithm may round either way at a power of two
        n += 1
    return n


def questions_needed(sd: float, difference: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """How many questions make ``difference`` the smallest detectable one (``smallest_detectable`` inverted),
    never fewer than ``smallest_testable(alpha)``: below that no result can be significant.

    >>> questions_needed(0.235, 0.05), questions_needed(0.03, 0.05)  # the formula gives 3 for the second
    (174, 6)
    """
    if not difference > 0:
        raise ValueError(f"difference={difference!r}: expected a number > 0")
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return max(smallest_testable(alpha), math.ceil((z * sd / difference) ** 2))


class Detectable(NamedTuple):
    """A paired comparison over questions: the observed mean difference (A - B), its p, and what it could detect.

    `smallest` is the difference these `n` questions detect (80 % power at alpha 0.05 by default);
    `n_to_detect` is how many questions would detect a difference of 0.05 (at least `smallest_testable(alpha)`).
    """

    difference: float
    p: float
    sd: float
    n: int
    smallest: float
    n_to_detect: int

    @property
    def needed_for_005(self) -> int:
        """The old name of `n_to_detect`, which chapters 8 and 9 still read."""
        return self.n_to_detect


class Estimate(NamedTuple):
    """A value with its confidence interval; unpacks as ``value, low, high``."""

    value: float
    low: float
    high: float

    @property
    def interval(self) -> Interval:
        return Interval(self.low, self.high)


def share_over_questions(query_ids: Sequence[str], flags: Sequence[bool]) -> Estimate:
    """The share of queries flagged, as a mean over questions, with its 95 % t interval clipped to [0, 1].

    >>> share_over_questions(["q1/doc", "q1/ticket", "q2/doc", "q2/ticket"], [True, False, True, True])
    Estimate(value=0.75, low=0.0, high=1.0)
    """
    shares = per_question(pd.DataFrame({"query": list(query_ids), "flag": np.asarray(flags, dtype=float)}), "flag")
    low, high = mean_interval(shares)
    return Estimate(float(shares.mean()), max(0.0, low), min(1.0, high))


def detectable(per_query_a: pd.DataFrame, per_query_b: pd.DataFrame, column: str = "rr",
               alpha: float = 0.05, power: float = 0.8) -> Detectable:
    """Compare A with B question by question: mean difference, randomization p, and the smallest
    difference this many questions could detect (80 % power at alpha 0.05 by default)."""
    a, b = per_question(per_query_a, column), per_question(per_query_b, column)
    if set(a.index) != set(b.index):
        raise ValueError("the two tables cover different questions: compare runs on the same queries")
    diffs = (a - b.loc[a.index]).to_numpy()
    sd = float(diffs.std(ddof=1))
    return Detectable(float(diffs.mean()), randomization_test(a.to_numpy(), b.loc[a.index].to_numpy()), sd,
                      len(diffs), smallest_detectable(sd, len(diffs), alpha, power),
                      questions_needed(sd, 0.05, alpha, power))


def ratio_over_questions(query_ids: Sequence[str], numerators: Sequence[int], denominators: Sequence[int],
                         resamples: int = 10_000, confidence: float = 0.95,
                         seed: int = 0) -> Estimate:
    """A ratio of sums (e.g. flagged / cited sentences) with a percentile bootstrap interval over questions.

    Units inside one query (sentences) and a question's two phrasings are not independent, so the
    bootstrap resamples whole questions (Efron & Tibshirani 1993); the seed makes it repeatable.

    >>> ratio_over_questions(["q1/doc", "q1/ticket", "q2/doc"], [1, 0, 2], [2, 2, 4], resamples=2000)
    Estimate(value=0.375, low=0.25, high=0.5)
    """
    frame = pd.DataFrame({"query": list(query_ids), "num": np.asarray(numerators, dtype=np.int64),
                          "den": np.asarray(denominators, dtype=np.int64)})
    if len(frame) == 0 or frame["den"].sum() == 0 or (frame["num"] < 0).any() or (frame["num"] > frame["den"]).any():
        raise ValueError("expected 0 <= numerator <= denominator per query and some denominator > 0")
    sums = frame.groupby([question_of(q) for q in frame["query"]], sort=False)[["num", "den"]].sum()
    num, den = sums["num"].to_numpy(), sums["den"].to_numpy()
    picks = np.random.default_rng(seed).integers(0, len(num), size=(resamples, len(num)))
    top, bottom = num[picks].sum(axis=1), den[picks].sum(axis=1)
    ratios = top[bottom > 0] / bottom[bottom > 0]
    low, high = np.quantile(ratios, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Estimate(float(num.sum() / den.sum()), float(low), float(high))


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
    groups = pd.Series(np.asarray(flags, dtype=np.float64)).groupby([question_of(q) for q in query_ids], sort=False)
    hits, sizes = groups.sum().to_numpy(), groups.size().to_numpy().astype(np.float64)
    if len(hits) < 2:
        raise ValueError(f"{len(hits)} question(s): an interval over questions needs at least 2")
    value = float(hits.sum() / sizes.sum())
    residual = (hits - value * sizes) / sizes.mean()  # each question's share of the estimate's error
    half = float(stats.t.ppf(0.975, len(hits) - 1) * residual.std(ddof=1) / math.sqrt(len(hits)))
    return Estimate(value, max(0.0, value - half), min(1.0, value + half))


def ndcg(rank: int | None, k: int) -> float:
    """nDCG@k with binary relevance and one relevant item (Järvelin & Kekäläinen, 2002).

    DCG@k = sum over ranks r <= k of rel_r / log2(r + 1); the ideal ranking puts the one relevant
    item first, so IDCG = 1 and nDCG@k = 1 / log2(rank + 1) when rank <= k, else 0.

    >>> ndcg(1, 4), round(ndcg(3, 4), 4), ndcg(5, 4), ndcg(None, 4)
    (1.0, 0.5, 0.0, 0.0)
    """
    return 0.0 if rank is None or rank > k else 1.0 / math.log2(rank + 1)


class Difference(NamedTuple):
    """A paired comparison of A with B over questions: wins, losses, the sign test's p, and the mean per-question
    difference A - B with its 95 % t interval (None below two questions), its sd and the number of questions."""

    wins: int
    losses: int
    p: float
    difference: float
    low: float | None
    high: float | None
    sd: float
    n: int


def difference(a: pd.Series, b: pd.Series) -> Difference:
    """A against B on one value per question (Series indexed by question, as `per_question` gives), paired.

    >>> difference(pd.Series({"q1": 1.0, "q2": 0.5, "q3": 1.0}), pd.Series({"q1": 0.5, "q2": 0.5, "q3": 0.0}))
    Difference(wins=2, losses=0, p=0.5, difference=0.5, low=-0.742..., high=1.742..., sd=0.5, n=3)
    """
    if set(a.index) != set(b.index) or len(a) != len(b):
        raise ValueError("the two runs cover different questions: compare runs on the same questions")
    diffs = (a - b.loc[a.index]).to_numpy(dtype=np.float64)
    wins, losses = int((diffs > 0).sum()), int((diffs < 0).sum())
    low, high = mean_interval(diffs) if len(diffs) >= 2 else (None, None)
    return Difference(wins, losses, sign_test(wins, losses), float(diffs.mean()), low, high,
                      float(diffs.std(ddof=1)) if len(diffs) >= 2 else 0.0, len(diffs))


def interaction(a: pd.DataFrame, b: pd.DataFrame, column: str, phrasings: tuple[str, str]) -> Paired:
    """Does A's advantage over B differ between two phrasings? Per question asked both ways, the difference of
    differences (A - B on the first phrasing) - (A - B on the second); an exact sign test on its signs.

    >>> t = lambda v: pd.DataFrame({"query": ["q1/doc", "q1/ticket", "q2/doc", "q2/ticket"], "rr": v})
    >>> interaction(t([1.0, 0.0, 1.0, 0.0]), t([0.0, 1.0, 0.0, 1.0]), "rr", ("doc", "ticket"))
    Paired(wins=2, losses=0, p=0.5)
    """
    def split(table: pd.DataFrame, phrasing: str) -> pd.Series:
        part = table[[str(q).rsplit("/", 1)[-1] == phrasing for q in table["query"]]]
        return per_question(part, column)

    first = split(a, phrasings[0]) - split(b, phrasings[0])
    second = split(a, phrasings[1]) - split(b, phrasings[1])
    both = first.index.intersection(second.index)
    delta = (first.loc[both] - second.loc[both]).to_numpy(dtype=np.float64)
    wins, losses = int((delta > 0).sum()), int((delta < 0).sum())
    return Paired(wins, losses, sign_test(wins, losses))


#: How often the latency protocol runs each item; the fastest run counts.
REPEATS = 3


def latencies_ms(steps: Mapping[str, Callable[[Any], object]], items: Sequence[Any],
                 repeats: int = REPEATS) -> dict[str, list[float]]:
    """The book's latency protocol, per item: each step is called once untimed on the first item (loading,
    first allocations), then runs `repeats` times on each item, and its fastest run counts, in ms (the
    `timeit` advice: slower runs measure other processes). Steps alternate item by item, so they share the
    machine's load.

    >>> times = latencies_ms({"len": len, "sorted": sorted}, ["ba", "c"], repeats=2)
    >>> sorted(times), [len(t) for t in times.values()]
    (['len', 'sorted'], [2, 2])
    """
    check_k(repeats, "repeats")
    if not items:
        raise ValueError("no items to time: expected at least one")
    fastest: dict[str, list[float]] = {name: [] for name in steps}
    for step in steps.values():
        step(items[0])
    for item in items:
        for name, step in steps.items():
            runs = []
            for _ in range(repeats):
                started = time.perf_counter()
                step(item)
                runs.append(1000 * (time.perf_counter() - started))
            fastest[name].append(min(runs))
    return fastest


def latency_ms(step: Callable[[Any], object], items: Sequence[Any], repeats: int = REPEATS) -> float:
    """The latency the book reports: the median over `items` of `latencies_ms` (fastest of `repeats`), in ms,
    rounded to 4 places at the source.

    >>> latency_ms(len, ["ab", "c"]) < 1000
    True
    """
    return round(statistics.median(latencies_ms({"step": step}, items, repeats)["step"]), 4)


def needle_found(chunks: Iterable[Any], needle: str) -> bool:
    """Does any of `chunks` (objects with `.content`) contain `needle`, whitespace collapsed?

    >>> from types import SimpleNamespace as C
    >>> needle_found([C(content="a  b"), C(content="c")], "a b"), needle_found([], "a")
    (True, False)
    """
    return any(contains_needle(c.content, needle) for c in chunks)


def filter_trials(retriever: Retriever, access: permissions.Access, queries: Sequence[Any],
                  ranked: Mapping[str, Sequence[Any]], k: int, vectors: Mapping[str, Any] | None = None,
                  ) -> pd.DataFrame:
    """Per query a user alone in a group may read (`one_user_per_group`): forbidden chunks and the needle in
    the user's top `k` with no filter (`ranked`, unfiltered), the post-filter (depth `k`) and the pre-filter.

    >>> import numpy as np
    >>> from types import SimpleNamespace as C
    >>> class Fake(C):  # ranks its chunks in their stored order
    ...     def with_chunks(self, chunks, vectors): return Fake(chunks=chunks, dense=C(vectors=vectors))
    ...     def rankings(self, qs, method, depth, vectors): return {q.id: self.chunks[:depth] for q in qs}
    >>> chunks = [C(doc_id="b", content="no"), C(doc_id="a", content="the answer")]
    >>> fake = Fake(chunks=chunks, dense=C(vectors=np.zeros((2, 1))))
    >>> from ragcourse.permissions import Access
    >>> access = Access({"a": frozenset({"dev"}), "b": frozenset({"ops"})}, {"bo": frozenset({"dev"})})
    >>> q = C(id="q1", doc="a", needle="answer")
    >>> filter_trials(fake, access, [q], {"q1": chunks}, k=1).iloc[0].to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'user': 'bo', 'query': 'q1', 'leaked, no filter': 1, 'leaked, post-filter': 0, 'leaked, pre-filter': 0,
     'results, post-filter': 0, 'found, no filter': False, 'found, post-filter': False, 'found, pre-filter': True}
    """
    found = needle_found
    rows = []
    for user in permissions.one_user_per_group(access).values():
        allowed = access.readable_by(user)
        asked = [q for q in queries if q.doc in allowed]
        own = permissions.pre_filter(retriever, allowed).rankings(asked, "hybrid", depth=k, vectors=vectors)
        for q in asked:
            post = permissions.post_filter(ranked[q.id], allowed, depth=k, k=k)
            rows.append({"user": user, "query": q.id,
                         "leaked, no filter": permissions.leaks(ranked[q.id][:k], allowed),
                         "leaked, post-filter": permissions.leaks(post, allowed),
                         "leaked, pre-filter": permissions.leaks(own[q.id], allowed),
                         "results, post-filter": len(post), "found, no filter": found(ranked[q.id][:k], q.needle),
                         "found, post-filter": found(post, q.needle), "found, pre-filter": found(own[q.id], q.needle)})
    return pd.DataFrame(rows)
