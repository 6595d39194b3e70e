"""Fairness of the hidden checks (issues 43-45): every exercise of every chapter, called directly on a namespace.

For each exercise: at least two correct answers written differently (numpy against Python types, another
algorithm, rounding the text allows) get full marks; a typical mistake gets less, with feedback that names
what is wrong, never the expected value (nor only "partly right"); a constant of the right type never gets
full marks. No notebook runs: the chapter material a check reads from the reference run is given here as
a small hand-made stand-in. Where a check recomputes something that needs the whole chapter (the MRR of a
BM25 grid, a reranker's scores), that one computation is replaced by a stated table, so what is tested is
the comparison the student meets; the real recomputation is what `kit self-test` runs on each chapter.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kit.hidden import load, score  # noqa: E402
from ragcourse.book.exercises import choose  # noqa: E402

CHAPTERS = sorted(ROOT.glob("kit/checks/ch[0-9][0-9].py"))


@dataclass
class Case:
    """Namespaces for one exercise: correct ones, a typical mistake, constants, and what must never be shown."""

    right: list[dict]
    wrong: dict
    constants: list[dict] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)


_LOADED: dict[str, dict] = {}
FEEDBACK: list[tuple[str, float, str, list[str]]] = []  # (exercise, points, feedback, secrets) below full marks


def checks(exercise: str):
    """The registered hidden check of `exercise` (each chapter's file loaded once)."""
    chapter = f"{int(exercise.split('.')[0]):02d}"
    if chapter not in _LOADED:
        path = ROOT / "kit" / "checks" / f"ch{chapter}.py"
        _LOADED[chapter] = load(path.read_text(encoding="utf-8"), str(path))
    return _LOADED[chapter][exercise]


def every_exercise() -> list[str]:
    return [ex for path in CHAPTERS for ex in load(path.read_text(encoding="utf-8"), str(path))]


def stub(exercise: str, name: str, value, monkeypatch) -> None:
    """Replace one helper of a check's own module (its globals) for this test."""
    monkeypatch.setitem(checks(exercise).fn.__globals__, name, value)


# ---- chapter 1 ----------------------------------------------------------------------------------------

def _fences_a(text):
    """The reference's own count, returned as a numpy integer (right whatever its type)."""
    return np.int64(checks("1.3").fn.__globals__["_reference_count"](text))


def _fences_b(text):
    opened, count = "", 0
    for raw in text.split("\n"):
        line = raw.lstrip(" >").rstrip()
        run = len(line) - len(line.lstrip("`"))
        if not opened and run >= 3:
            opened, count = line[:run], count + 1
        elif opened and line == opened:
            opened = ""
    return count


def case_1_1(mp):
    from ragcourse.corpus import load_corpus, sections

    found = {(d.id, s.title): s.end - s.start for d in load_corpus() for s in sections(d.text) if s.headed}
    ranked = sorted(found, key=lambda k: (-found[k], k[0], k[1]))
    rank = choose("1.1", [1, 2, 3])
    best = ranked[rank - 1]
    return Case([{"answer_section": best}, {"answer_section": [np.str_(best[0]), best[1]]}],
                {"answer_section": ranked[rank]}, [{"answer_section": ("", "")}], [best[1]])


def _repeated_sentence(min_words: int) -> dict:
    from ragcourse.corpus import load_corpus
    from ragcourse.words import collapse

    for doc in load_corpus():
        text = collapse(doc.text)
        for sentence in re.split(r"(?<=[.!?]) ", text):
            if len(sentence.split()) >= min_words and text.count(sentence) > 1 and "blank line" not in sentence:
                return {"doc": doc.id, "needle": sentence}
    raise AssertionError("no repeated sentence in the corpus")


def case_1_2(mp):
    found = _repeated_sentence(choose("1.2", [8, 10, 6]))
    why = "It appears twice in the same document, so a grader cannot tell which copy was meant."
    other = {"doc": np.str_(found["doc"]), "needle": "  " + found["needle"].replace(" ", "\n", 1)}
    return Case([{"answer_repeat": found, "answer_why": why}, {"answer_repeat": other, "answer_why": why}],
                {"answer_repeat": found}, [{"answer_repeat": {"doc": "", "needle": ""}, "answer_why": ""}])


def case_1_3(mp):
    return Case([{"count_code_blocks": _fences_a}, {"count_code_blocks": _fences_b}],
                {"count_code_blocks": lambda text: text.count("```") // 2},
                [{"count_code_blocks": lambda text: 0}, {"count_code_blocks": lambda text: 1}])


def case_1_4(mp):
    reason = "most needles are long and specific sentences"
    return Case([{"prediction_unique": 40, "prediction_reason": reason},
                 {"prediction_unique": np.int64(40), "prediction_reason": reason}],
                {"prediction_unique": 40})


# ---- chapter 2 ----------------------------------------------------------------------------------------

@cache
def _tokenizer():
    from ragcourse.models import load_embedder

    return load_embedder().tokenizer


def _tail_a(content, n):
    enc = _tokenizer()(content, add_special_tokens=False, return_offsets_mapping=True)
    starts, words = [s for s, _ in enc["offset_mapping"]], enc.word_ids()
    if len(starts) <= n:
        return content
    word_starts = [s for i, s in enumerate(starts) if i == 0 or words[i] != words[i - 1]]
    return content[max(w for w in word_starts if sum(s >= w for s in starts) >= n):]


def _tail_b(content, n):
    enc = _tokenizer()(content, add_special_tokens=False, return_offsets_mapping=True)
    pieces = list(zip(enc.word_ids(), (s for s, _ in enc["offset_mapping"]), strict=True))
    taken, at = 0, 0
    for i in range(len(pieces) - 1, -1, -1):
        taken += 1
        if taken >= n and (i == 0 or pieces[i - 1][0] != pieces[i][0]):
            at = pieces[i][1]
            break
    return str(np.str_(content[at:]))


def case_2_1(mp):
    return Case([{"token_tail": _tail_a}, {"token_tail": _tail_b}], {"token_tail": lambda c, n: c[-4 * n:]},
                [{"token_tail": lambda c, n: c}])


def case_2_2(mp):
    low = choose("2.2", checks("2.2").fn.__globals__["LOWS_2_2"])
    losses = {size: 15 + (size - low - 200) ** 2 % 7 + (size % 3 == 1) for size in range(low, low + 513)}
    stub("2.2", "_blind_losses", lambda start: losses if start == low else {}, mp)  # 513 chunkings: see the module
    best = min(t for t, n in losses.items() if n == min(losses.values()))
    worst = max(losses, key=losses.get)
    return Case([{"best_size": best}, {"best_size": np.int64(best)}, {"best_size": float(best)}],
                {"best_size": worst}, [{"best_size": low}], [str(best)])


def case_2_3(mp):
    reason = "smaller chunks cut more needles in two"
    return Case([{"predicted_destroyed": 9, "predicted_over_window": 120, "prediction_reason": reason},
                 {"predicted_destroyed": np.int64(9), "predicted_over_window": np.int32(120),
                  "prediction_reason": reason}],
                {"predicted_destroyed": 9, "predicted_over_window": 120})


# ---- chapter 3 ----------------------------------------------------------------------------------------

def _wilson_by_hand(s, n, z=1.959964):
    p = s / n
    denom = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return centre - half, centre + half


def case_3_1(mp):
    ctx = {"hits": pd.DataFrame({"R@20": [41, 30]}, index=["E", "C"]), "STRATEGY_3_1": "E", "qs": list(range(64))}
    low, high = _wilson_by_hand(41, 64)
    p, half = 41 / 64, 1.96 * math.sqrt(41 / 64 * 23 / 64 / 64)
    return Case([{**ctx, "answer_wilson": (low, high)}, {**ctx, "answer_wilson": np.array([low, high])},
                 {**ctx, "answer_wilson": [round(low, 5), round(high, 5)]},
                 {**ctx, "answer_wilson": (round(low, 4), np.float32(round(high, 4)))}],  # the text's 4 places
                {**ctx, "answer_wilson": (p - half, p + half)}, [{**ctx, "answer_wilson": (0.0, 1.0)}],
                [f"{low:.4f}", f"{high:.4f}"])


def case_3_2(mp):
    e = pd.DataFrame({"query": ["q1", "q2", "q3", "q4"], "rr": [1.0, 0.5, 1.0, 0.25]})
    c = pd.DataFrame({"query": ["q1", "q2", "q3", "q4"], "rr": [1.0, 0.1, 0.2, 0.25]})
    ctx = {"per_query": {"E": e, "C": c}}
    return Case([{**ctx, "answer_query": "q3"}, {**ctx, "answer_query": np.str_("q3")}],
                {**ctx, "answer_query": "q1"}, [{**ctx, "answer_query": "q2"}], ["q3"])


def case_3_3(mp):
    from ragcourse.evaluation import wilson

    n = next(n for n in range(2, 10_000, 2) if (wilson(n // 2, n)[1] - wilson(n // 2, n)[0]) / 2 <= 0.05)
    z = 1.959964
    closed = 2 * math.ceil((z**2 / (4 * 0.05**2) - z**2) / 2)
    ctx = {"HALF_3_3": 0.05}
    return Case([{**ctx, "answer_n": n}, {**ctx, "answer_n": np.int16(n)}, {**ctx, "answer_n": float(closed)}],
                {**ctx, "answer_n": n + 40}, [{**ctx, "answer_n": 2}, {**ctx, "answer_n": np.int8(4)}], [str(n)])


def _sign_a(wins, losses):
    n = wins + losses
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n)


def _sign_b(wins, losses):
    n, low = wins + losses, min(wins, losses)
    row = [1]
    for _ in range(n):
        row = [a + b for a, b in zip([0, *row], [*row, 0], strict=True)]
    return np.float64(min(1, 2 * sum(row[: low + 1]) / 2**n))


def case_3_4(mp):
    one_sided = lambda w, lo: sum(math.comb(w + lo, i) for i in range(min(w, lo) + 1)) / 2 ** (w + lo)  # noqa: E731
    return Case([{"sign_p": _sign_a}, {"sign_p": _sign_b}], {"sign_p": one_sided},
                [{"sign_p": lambda w, lo: 1.0}, {"sign_p": lambda w, lo: 0.5}])


def case_3_5(mp):
    why = "the two phrasings share few words with each other"
    return Case([{"prediction_3_5": {"both": 0.5, "one": 0.3, "none": 0.2, "why": why}},
                 {"prediction_3_5": {"both": np.float64(0.5), "one": 0.3, "none": np.float32(0.2), "why": why}}],
                {"prediction_3_5": {"both": 0.5, "one": 0.5, "none": 0.5, "why": why}})


# ---- chapter 4 ----------------------------------------------------------------------------------------

BM25_GRID = {(0.9, 0.5): 0.41234, (0.9, 0.75): 0.45678, (1.2, 0.5): 0.43111, (1.2, 0.75): 0.44222}
W_GRID = {0.5: 0.5012, 1.0: 0.5123, 2.0: 0.5391}
C_GRID = {1: 0.48765, 10: 0.50321, 60: 0.51234}


def case_4_1(mp):
    stub("4.1", "_bm25_mrr", lambda ns, k1, b: BM25_GRID[(k1, b)], mp)
    ctx = {"GRID_K1": [0.9, 1.2], "GRID_B": [0.5, 0.75]}
    return Case([{**ctx, "answer_4_1": {"k1": 0.9, "b": 0.75, "mrr": 0.45678}},
                 {**ctx, "answer_4_1": {"k1": np.float64(0.9), "b": np.float32(0.75), "mrr": 0.457}},
                 {**ctx, "answer_4_1": pd.Series({"k1": 0.9, "b": 0.75, "mrr": np.float64(0.4568)})}],
                {**ctx, "answer_4_1": {"k1": 1.2, "b": 0.75, "mrr": 0.44222}},
                [{**ctx, "answer_4_1": {"k1": 0.9, "b": 0.75, "mrr": 0.5}}], ["0.45678", "0.457"])


def case_4_2(mp):
    stub("4.2", "_hybrid_mrr", lambda ns, w, c=60: W_GRID[w], mp)
    ctx = {"GRID_W": [0.5, 1.0, 2.0]}
    return Case([{**ctx, "answer_4_2": {"w": 2.0, "mrr": 0.5391}},
                 {**ctx, "answer_4_2": {"w": np.int64(2), "mrr": np.float32(0.539)}}],
                {**ctx, "answer_4_2": {"w": 1.0, "mrr": 0.5123}}, [{**ctx, "answer_4_2": {"w": 1, "mrr": 0.5}}],
                ["0.5391", "0.539"])


def case_4_3(mp):
    stub("4.3", "_hybrid_mrr", lambda ns, w, c=60: C_GRID[c], mp)
    ctx = {"GRID_RRF_C": [1, 10, 60]}
    return Case([{**ctx, "answer_4_3": dict(C_GRID)},
                 {**ctx, "answer_4_3": {np.int64(c): round(v, 3) for c, v in C_GRID.items()}},
                 {**ctx, "answer_4_3": pd.Series(C_GRID)}],
                {**ctx, "answer_4_3": {**C_GRID, 60: 0.4}}, [{**ctx, "answer_4_3": dict.fromkeys(C_GRID, 0.5)}],
                ["0.48765", "0.50321", "0.51234"])


def _rrf_a(lists, c=60):
    score, best, first = {}, {}, {}
    for ranking in lists:
        for rank, doc in enumerate(ranking, start=1):
            score[doc] = score.get(doc, 0.0) + 1 / (c + rank)
            best[doc] = min(best.get(doc, rank), rank)
            first.setdefault(doc, len(first))
    return sorted(score, key=lambda d: (-score[d], best[d], first[d]))


def _rrf_b(lists, m=60):  # another name for c: the check passes it by position
    docs = list(dict.fromkeys(d for ranking in lists for d in ranking))
    rows = [(sum(1 / (m + r.index(d) + 1) for r in lists if d in r), min(r.index(d) for r in lists if d in r), i, d)
            for i, d in enumerate(docs)]
    return [row[3] for row in sorted(rows, key=lambda row: (-row[0], row[1], row[2]))]


def _rrf_from_0(lists, c=60):
    score = {}
    for ranking in lists:
        for rank, doc in enumerate(ranking):
            score[doc] = score.get(doc, 0.0) + 1 / (c + rank)
    return sorted(score, key=lambda d: -score[d])


def case_4_4(mp):
    return Case([{"rrf_by_hand": _rrf_a}, {"rrf_by_hand": _rrf_b}], {"rrf_by_hand": _rrf_from_0},
                [{"rrf_by_hand": lambda lists, c=60: []}, {"rrf_by_hand": lambda lists, c=60: list(lists[0])}])


def case_4_5(mp):
    why = "headers add the words a question shares with titles"
    return Case([{"prediction_4_5": {"direction": "up", "why": why}},
                 {"prediction_4_5": {"direction": np.str_("down"), "why": why}}],
                {"prediction_4_5": {"direction": "higher", "why": why}})


# ---- chapter 5 ----------------------------------------------------------------------------------------

DEPTH_TABLE = {10: (0.41, 0.5123), 25: (0.45, 0.5432), 50: (0.44, 0.5399)}


def case_5_1(mp):
    why = "a deeper list gives the reranker more needles"
    return Case([{"prediction_depth": 25, "prediction_reason": why},
                 {"prediction_depth": np.int64(50), "prediction_reason": why}], {"prediction_depth": 25})


def case_5_2(mp):
    stub("5.2", "rerank_rankings", lambda reranker, qs, chunks, depth: depth, mp)
    stub("5.2", "evaluate", lambda depth, qs, ks: pd.DataFrame({"hit@1": [DEPTH_TABLE[depth][0]],
                                                                "rr": [DEPTH_TABLE[depth][1]]}), mp)
    ctx = {"few": [], "reranker": None, "hybrid_chunks": None}
    return Case([{**ctx, "answer_depth": dict(DEPTH_TABLE)},
                 {**ctx, "answer_depth": {np.int64(d): np.round(np.array(v), 3) for d, v in DEPTH_TABLE.items()}}],
                {**ctx, "answer_depth": {d: v[::-1] for d, v in DEPTH_TABLE.items()}},
                [{**ctx, "answer_depth": {d: np.empty((0, 2)) for d in DEPTH_TABLE}},
                 {**ctx, "answer_depth": {d: np.array([[0.5]]) for d in DEPTH_TABLE}}],
                ["0.5123", "0.5432", "0.5399"])


def _maxsim_a(q, p):
    return float((np.asarray(q) @ np.asarray(p).T).max(axis=1).sum())


def _maxsim_b(q, p):
    return np.float64(sum(max(float(np.dot(row, col)) for col in p) for row in q))


def case_5_3(mp):
    return Case([{"maxsim_by_hand": _maxsim_a}, {"maxsim_by_hand": _maxsim_b}],
                {"maxsim_by_hand": lambda q, p: float((q @ p.T).max(axis=1).mean())},
                [{"maxsim_by_hand": lambda q, p: 1.0}, {"maxsim_by_hand": lambda q, p: np.empty(0)}])


def case_5_4(mp):
    corpus, questions, qs, n = _unreachable(choose("5.4", checks("5.4").fn.__globals__["SIZES_5_4"]))
    ctx = {"corpus": corpus, "questions": questions, "qs": qs}
    return Case([{**ctx, "answer_unreachable": n}, {**ctx, "answer_unreachable": np.int32(n)}],
                {**ctx, "answer_unreachable": n // 2}, [{**ctx, "answer_unreachable": 0}], [str(n)])


@cache
def _unreachable(size: int):
    from ragcourse.chunking import chunk_corpus
    from ragcourse.corpus import load_corpus
    from ragcourse.evaluation import answers_destroyed
    from ragcourse.groundtruth import load_questions

    corpus, questions = load_corpus(), load_questions()
    qs = [SimpleNamespace(needle=q.needle) for q in questions for _ in range(2)]  # two phrasings each
    destroyed = set(answers_destroyed(chunk_corpus(corpus, "A", target=size), [q.needle for q in questions]))
    return corpus, questions, qs, sum(q.needle in destroyed for q in qs)


def _holm_a(p_values):
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(np.minimum(1, (len(p) - np.arange(len(p))) * p[order]))
    return adjusted


def _holm_b(p_values):
    m, running, out = len(p_values), 0.0, [0.0] * len(p_values)
    for i, j in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        running = max(running, min(1.0, (m - i) * p_values[j]))
        out[j] = running
    return out


def case_5_5(mp):
    table = pd.DataFrame({"p": [0.01, 0.2, 0.03, 0.04]})
    ctx = {"family_p": list(table["p"])}
    return Case([{**ctx, "holm_by_hand": _holm_a, "answer_holm": _holm_a(table["p"])},
                 {**ctx, "holm_by_hand": _holm_b, "answer_holm": tuple(_holm_b(list(table["p"])))}],
                {**ctx, "holm_by_hand": lambda p: [min(1.0, x * len(p)) for x in p],
                 "answer_holm": [min(1.0, x * 4) for x in table["p"]]},
                [{**ctx, "holm_by_hand": lambda p: [1.0] * len(p), "answer_holm": [1.0] * 4},
                 {**ctx, "holm_by_hand": lambda p: np.empty(0), "answer_holm": np.empty(0)}],
                ["0.09"])  # holm(family_p) is (0.04, 0.2, 0.09, 0.09): 0.09 is no input


# ---- chapter 6 ----------------------------------------------------------------------------------------

OOD_DISTANCES = [0.62, 0.55, 0.71, 0.58]
IN_DISTANCES = [0.2, 0.31, 0.44, 0.57, 0.6]


def _fake_sweep(in_pairs, hits, cuts, k=4):
    return pd.DataFrame({"bluffed": [sum(d < c for d in OOD_DISTANCES) for c in cuts],
                         "answered_with_needle": [sum(d < c for d in IN_DISTANCES) for c in cuts]})


def case_6_1(mp):
    stub("6.1", "sweep", _fake_sweep, mp)
    ctx = {"out_of_domain": [SimpleNamespace(kind="absurd"), SimpleNamespace(kind="near")] * 2,
           "ood_hits": [[SimpleNamespace(distance=d)] for d in OOD_DISTANCES], "in_pairs": [], "K": 4}
    return Case([{**ctx, "zero_bluff": (0.55, 3)}, {**ctx, "zero_bluff": [np.float64(0.55), np.int64(3)]}],
                {**ctx, "zero_bluff": (0.55, 4)}, [{**ctx, "zero_bluff": (0.0, 0)}, {**ctx, "zero_bluff": (1.0, 5)}],
                ["0.55"])


def case_6_2(mp):
    rule = choose("6.2", ["expensive", "cheap"])
    cut = 0.6
    ctx = {f"{rule}_cut": cut, "ood_hits": [[SimpleNamespace(distance=d)] for d in OOD_DISTANCES]}
    refused = [d >= cut for d in OOD_DISTANCES]
    return Case([{**ctx, "l2_cut": math.sqrt(2 * cut), "l2_refused": refused},
                 {**ctx, "l2_cut": np.float32(math.sqrt(2 * cut)).astype(np.float64) * 0 + math.sqrt(2 * cut),
                  "l2_refused": np.array(refused)}],
                {**ctx, "l2_cut": 2 * cut, "l2_refused": refused},
                [{**ctx, "l2_cut": math.sqrt(2 * cut), "l2_refused": [True] * 4},
                 {**ctx, "l2_cut": math.sqrt(2 * cut), "l2_refused": [False] * 4}])


def _best_cut_a(table, weight):
    finite = table[np.isfinite(table["cut"])]
    costs = weight * finite["bluffed"] + finite["wrongly_refused"]
    return float(finite.loc[costs == costs.min(), "cut"].min())


def _best_cut_b(table, weight):
    rows = [(weight * b + r, c) for c, b, r in zip(table["cut"], table["bluffed"], table["wrongly_refused"],
                                                   strict=True) if math.isfinite(c)]
    return np.float64(min(rows)[1])


def case_6_3(mp):
    table = checks("6.3").fn.__globals__["_table"]([0.3, 0.45, 0.6, math.inf], [0, 2, 3, 5], [9, 4, 1, 0])
    return Case([{"table": table, "best_cut": _best_cut_a}, {"table": table, "best_cut": _best_cut_b}],
                {"table": table, "best_cut": lambda t, w: float(t.loc[(w * t["bluffed"] + t["wrongly_refused"])
                                                                      [np.isfinite(t["cut"])].idxmin(), "cut"])},
                [{"table": table, "best_cut": lambda t, w: 0.5}])


def case_6_4(mp):
    why = "k only limits how many hits are kept after the gate"
    return Case([{"prediction_6_4": {"bluffs": "same", "with_needle": "fewer", "why": why}},
                 {"prediction_6_4": {"bluffs": np.str_("more"), "with_needle": "same", "why": why}}],
                {"prediction_6_4": {"bluffs": "same", "with_needle": "fewer", "why": "k"}})


def _auc_a(answerable, unanswerable):
    wins = sum((a > u) + 0.5 * (a == u) for a in answerable for u in unanswerable)
    return wins / (len(answerable) * len(unanswerable))


def _auc_b(answerable, unanswerable):
    a, u = np.array(answerable)[:, None], np.array(unanswerable)[None, :]
    return np.mean((a > u) + 0.5 * (a == u))


def case_6_5(mp):
    no_ties = lambda a, u: _auc_a(a, u) - 0.5 * sum(x == y for x in a for y in u) / (len(a) * len(u))  # noqa: E731
    return Case([{"auc_by_pairs": _auc_a}, {"auc_by_pairs": _auc_b}], {"auc_by_pairs": no_ties},
                [{"auc_by_pairs": lambda a, u: 0.5}, {"auc_by_pairs": lambda a, u: 1.0}])


# ---- chapter 7 ----------------------------------------------------------------------------------------

def case_7_1(mp):
    from ragcourse.citations import PdfPage, SheetRange

    page, sheet, cells = choose("7.1", [(12, "Q1 sales", "B2:D9"), (7, "Q3 costs", "C4:F20"),
                                        (31, "EU returns", "A2:A40")])
    pdf, rng = PdfPage(page).fragment(), SheetRange(sheet, cells).fragment()
    return Case([{"pdf_fragment": pdf, "sheet_fragment": rng},
                 {"pdf_fragment": np.str_(pdf), "sheet_fragment": np.str_(rng)}],
                {"pdf_fragment": pdf, "sheet_fragment": f"#{sheet}!{cells}"},
                [{"pdf_fragment": "#page=1", "sheet_fragment": "#sheet"}], [rng])


def case_7_2(mp):
    from ragcourse.citations import text_fragment_url

    number = choose("7.2", [4, 2, 3])
    sources = [SimpleNamespace(doc_id=f"doc-{i}", quote=f"Quote number {i} says enough words to cite.")
               for i in range(1, 5)]
    page = lambda doc_id: f"https://docs.example.org/{doc_id}.html"  # noqa: E731
    want = text_fragment_url(page(f"doc-{number}"), sources[number - 1].quote, words=3)
    ctx = {"context": SimpleNamespace(citations=sources), "html_page": page}
    return Case([{**ctx, "my_link": want}, {**ctx, "my_link": np.str_(want)}],
                {**ctx, "my_link": text_fragment_url(page(f"doc-{number}"), sources[number - 1].quote, words=4)},
                [{**ctx, "my_link": page(f"doc-{number}")}], [want.partition("#:~:text=")[2]])


def _weak_a(answer, cits):
    return checks("7.3").fn.__globals__["_reference"](answer, cits)


def _weak_b(answer, cits):
    from ragcourse.citations import sentences

    quotes = {c.n: set(re.findall(r"[a-z]{5,}", c.quote.lower())) for c in cits}
    out = []
    for sentence in sentences(answer):
        cited = [int(n) for n in re.findall(r"\[(\d+)\]", sentence) if int(n) in quotes]
        words = set(re.findall(r"[a-z]{5,}", re.sub(r"\[\d+\]", " ", sentence).lower()))
        if cited and all(not words & quotes[n] for n in cited):
            out.append(np.str_(sentence))
    return tuple(out)


def case_7_3(mp):
    def case_sensitive(answer, cits):
        from ragcourse.citations import sentences

        quotes = {c.n: set(re.findall(r"[A-Za-z]{5,}", c.quote)) for c in cits}
        return [s for s in sentences(answer) if (ns := [int(n) for n in re.findall(r"\[(\d+)\]", s)
                                                        if int(n) in quotes])
                and not any(set(re.findall(r"[A-Za-z]{5,}", s)) & quotes[n] for n in ns)]

    return Case([{"weakly_supported": _weak_a}, {"weakly_supported": _weak_b}], {"weakly_supported": case_sensitive},
                [{"weakly_supported": lambda a, c: []}])


def case_7_4(mp):
    why = "the checker only asks whether [1] names a source"
    return Case([{"prediction_7_4": {"ok": True, "why": why}}, {"prediction_7_4": {"ok": np.False_, "why": why}}],
                {"prediction_7_4": {"ok": "yes", "why": why}})


def case_7_5(mp):
    from ragcourse.citations import cited_sentences, unsupported_sentences

    glob = checks("7.5").fn.__globals__
    threshold = choose("7.5", [0.75, 0.25, 0.6])
    measured = [{"group": "in", "answered": True, "text": t, "citations": glob["_SOURCES"]} for t in glob["_CASES"]]
    measured += [{"group": "out", "answered": True, "text": glob["_CASES"][0], "citations": glob["_SOURCES"]}]
    inside = [m for m in measured if m["group"] == "in"]
    flagged = sum(len(unsupported_sentences(m["text"], m["citations"], threshold)) for m in inside)
    cited = sum(len(cited_sentences(m["text"], m["citations"])) for m in inside)
    ctx = {"measured": measured}
    return Case([{**ctx, "answer_7_5": (flagged, cited)}, {**ctx, "answer_7_5": [np.int64(flagged), cited]}],
                {**ctx, "answer_7_5": (flagged + 1, cited)}, [{**ctx, "answer_7_5": (0, 0)}])


# ---- chapter 8 ----------------------------------------------------------------------------------------

def _limited(limit, at_most):
    from ragcourse import documents

    def extract_limited(path, doc_id, max_bytes=documents.MAX_BYTES):
        doc = documents.read_document(path, doc_id)
        text = doc.text
        lines = len(text.splitlines()) if at_most else text.count("\n") + (bool(text) and not text.endswith("\n"))
        if lines > limit:
            raise documents.ExtractionError(f"{doc_id}: {lines} lines, over the limit of {limit}")
        return doc

    return extract_limited


def case_8_1(mp, tmp_path):
    from ragcourse import documents

    limit = choose("8.1", [250, 200, 300])
    write = checks("8.1").fn.__globals__["_write"]
    write(tmp_path, "fine.md", 5)
    write(tmp_path, "long.md", 3 * limit)
    ctx = {"broken_dir": tmp_path, "after": SimpleNamespace(failed=[]),
           "line_limited": SimpleNamespace(failed=[SimpleNamespace(doc_id="long.md")])}

    def off_by_one(path, doc_id, max_bytes=documents.MAX_BYTES):
        doc = documents.read_document(path, doc_id)
        if len(doc.text.splitlines()) >= limit:
            raise documents.ExtractionError("too many lines")
        return doc

    return Case([{**ctx, "extract_limited": _limited(limit, True)}, {**ctx, "extract_limited": _limited(limit, False)}],
                {**ctx, "extract_limited": off_by_one}, [{**ctx, "extract_limited": lambda p, d, max_bytes=0: None}])


def case_8_2(mp, tmp_path):
    from ragcourse import index as ix
    from ragcourse.corpus import sha256_file

    for name, text in (("a.md", "# A\n\nsame\n"), ("b.md", "# B\n\nedited\n"), ("c.md", "# C\n\nsame\n")):
        (tmp_path / name).write_text(text, encoding="utf-8")
    record = lambda d, h, n=1: SimpleNamespace(doc_id=d, sha256=h, attempts=n)  # noqa: E731
    stamped = ix.Index(records=(record("a.md", sha256_file(tmp_path / "a.md")), record("b.md", "old"),
                                record("c.md", sha256_file(tmp_path / "c.md"))), chunks=(), vectors=np.zeros((0, 1)))
    rebuilt = ix.Index(records=tuple(record(r.doc_id, sha256_file(tmp_path / r.doc_id), 1 + (r.doc_id == "b.md"))
                                     for r in stamped.records), chunks=(), vectors=np.zeros((0, 1)))
    ctx = {"stamped": stamped, "stamped_dir": tmp_path, "rebuilt": rebuilt}
    return Case([{**ctx, "changed": ["b.md"]}, {**ctx, "changed": np.array(["b.md"])}],
                {**ctx, "changed": ["a.md", "b.md", "c.md"]}, [{**ctx, "changed": []}])


def _gate_a(baseline, candidate, metric="R@8"):
    base = baseline.set_index("metric").loc[metric]
    return bool(candidate.set_index("metric").loc[metric, "value"] >= base["value"] - (base["high"] - base["low"]) / 2)


def _gate_b(baseline, candidate, metric="R@8"):
    b = baseline[baseline["metric"] == metric].iloc[0]
    c = candidate[candidate["metric"] == metric].iloc[0]
    return np.bool_(b["value"] - c["value"] <= (b["high"] - b["low"]) / 2)


def case_8_3(mp):
    per_query = {"dense": pd.DataFrame({"hit@8": [1, 1, 0, 1] * 10, "rr": [1, 0.5, 0, 0.25] * 10}),
                 "hybrid": pd.DataFrame({"hit@8": [1, 1, 0, 1] * 9 + [1, 0, 0, 1], "rr": [1, 0.5, 0, 0.5] * 10})}
    below_low = lambda b, c, metric="R@8": bool(c.set_index("metric").loc[metric, "value"]  # noqa: E731
                                                >= b.set_index("metric").loc[metric, "low"])
    return Case([{"per_query": per_query, "gate_passes": _gate_a}, {"per_query": per_query, "gate_passes": _gate_b}],
                {"per_query": per_query, "gate_passes": below_low},
                [{"per_query": per_query, "gate_passes": lambda b, c, metric="R@8": True}])


def case_8_4(mp):
    why = "tickets share few words with the documentation"
    return Case([{"prediction_8_4": {"bm25_r8": 0.5, "passes": False, "why": why}},
                 {"prediction_8_4": {"bm25_r8": np.float32(0.5), "passes": True, "why": why}}],
                {"prediction_8_4": {"bm25_r8": 50, "passes": False, "why": why}})


def case_8_5(mp, tmp_path):
    from ragcourse import documents
    from ragcourse.chunking import chunk

    body = "\n\n".join(f"## Part {i}\n\n" + " ".join(f"Sentence {j} of part {i} about options." for j in range(40))
                       for i in range(6))
    original = f"# EP 10: Notes\n\n{body}\n"
    target = tmp_path / "eps-ep-010" / "05.md"
    target.parent.mkdir()
    target.write_text(original.replace("# EP 10", "# EP 10 (revised)", 1), encoding="utf-8")
    (tmp_path / "before.md").write_text(original, encoding="utf-8")
    old = {c.text for c in chunk(documents.read_document(tmp_path / "before.md", "eps-ep-010/05.md"), "E")}
    n = sum(c.text not in old for c in chunk(documents.read_document(target, "eps-ep-010/05.md"), "E"))
    assert n > 2, "the stand-in edit should change several chunks"
    why = "a title edit changes the header of every chunk"
    ctx = {"target": target, "original": original}
    return Case([{**ctx, "answer_8_5": {"predicted": n, "measured": n, "why": why}},
                 {**ctx, "answer_8_5": {"predicted": np.int64(n), "measured": 0, "why": why}}],
                {**ctx, "answer_8_5": {"predicted": 1, "measured": 1, "why": why}},
                [{**ctx, "answer_8_5": {"predicted": c, "measured": n, "why": why}} for c in (0, 1, np.int64(2))],
                [str(n)])


# ---- chapters 9 to 11 -----------------------------------------------------------------------------------

def case_9_1(mp):
    why = "short chunks split a needle more often"
    return Case([{"prediction_9_1": {"direction": "up", "why": why}},
                 {"prediction_9_1": {"direction": np.str_("same"), "why": why}}],
                {"prediction_9_1": {"direction": "up", "why": "no"}})


def _breaks_a(answer, n):
    from ragcourse.genre_chunking import ANSWER_WORDS

    numbers = [int(x) for x in re.findall(r"\d+", answer)]
    if not numbers or ANSWER_WORDS.sub("", re.sub(r"\d+", "", answer)):
        return ()
    valid = tuple(sorted({k for k in numbers if 2 <= k <= n}))
    distinct = sorted(set(numbers))
    counting = len(distinct) >= 3 and distinct[0] in (1, 2) and distinct == list(range(distinct[0], distinct[-1] + 1))
    if not any(1 <= k <= n for k in numbers) or not valid or len(valid) == n - 1 or counting:
        return ()
    return valid


def _every_number(answer, n):
    return tuple(sorted({int(x) for x in re.findall(r"\d+", answer)} & set(range(2, n + 1))))


def case_9_2(mp):
    return Case([{"usable_breaks": _breaks_a}, {"usable_breaks": lambda a, n: np.array(_breaks_a(a, n), dtype=int)}],
                {"usable_breaks": _every_number}, [{"usable_breaks": lambda a, n: ()}])


def case_9_3(mp):
    target, counts, chunks = _destroyed_per_genre()
    ctx = {"TARGET_9_3": target}
    return Case([{**ctx, "answer_9_3": counts}, {**ctx, "answer_9_3": pd.Series(counts).astype("int64")}],
                {**ctx, "answer_9_3": chunks}, [{**ctx, "answer_9_3": dict.fromkeys(counts, 0)}])


@cache
def _destroyed_per_genre():
    from ragcourse.chunking import chunk_corpus
    from ragcourse.evaluation import answers_destroyed
    from ragcourse.genres import GENRES, load_genre
    from ragcourse.groundtruth import load_genre_questions

    target = 600
    counts, chunks = {}, {}
    for genre in GENRES:
        docs = load_genre(genre)
        cut = chunk_corpus(docs, "A", target=target)
        counts[genre] = len(answers_destroyed(cut, [q.needle for q in load_genre_questions(genre, corpus=docs)]))
        chunks[genre] = len(cut)
    return target, counts, chunks


def case_10_1(mp):
    return Case([{"prediction_10_1": 0.4, "reason_10_1": "feedback amplifies what the first pass found"},
                 {"prediction_10_1": np.float64(0.4), "reason_10_1": "fewer texts, so less drift from the question"}],
                {"prediction_10_1": 40, "reason_10_1": "feedback amplifies what the first pass found"})


def _last_a(ticket):
    lines = [line.strip() for line in ticket.splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[\w.]+(Error|Exception|Warning)\b.*:", line)]
    return errors[-1] if errors else ticket.strip()


def _last_b(ticket):
    found = re.findall(r"^\s*([\w.]*(?:Error|Exception|Warning)\w*:.*?)\s*$", ticket, flags=re.MULTILINE)
    return np.str_(found[-1] if found else ticket.strip())


def case_10_2(mp):
    return Case([{"last_error_line": _last_a}, {"last_error_line": _last_b}],
                {"last_error_line": lambda t: t.strip().splitlines()[-1] if t.strip() else ""},
                [{"last_error_line": lambda t: ""}])


def case_10_3(mp):
    from ragcourse import evaluation

    mp.setattr(evaluation, "detectable", lambda a, b: SimpleNamespace(difference=0.02345, p=0.04567))
    ctx = {"rerank_runs": {"feedback": 1, "none": 2}}
    return Case([{**ctx, "answer_10_3": (0.02345, 0.04567)}, {**ctx, "answer_10_3": np.array([0.023, 0.046])},
                 {**ctx, "answer_10_3": [round(0.02345, 3), round(0.04567, 4)]}],  # "rounded to 3 and 4 places"
                {**ctx, "answer_10_3": (-0.02345, 0.04567)}, [{**ctx, "answer_10_3": (0.0, 0.5)}],
                ["0.02345", "0.04567"])


def case_11_1(mp):
    return Case([{"prediction_11_1": 0.5, "reason_11_1": "forbidden chunks crowd the top four places"},
                 {"prediction_11_1": np.float16(0.5), "reason_11_1": "the post-filter leaves the places empty"}],
                {"prediction_11_1": 1.5, "reason_11_1": "forbidden chunks crowd the top four places"})


def _top_a(scores, doc_ids, allowed, k):
    return sorted((i for i, d in enumerate(doc_ids) if d in allowed), key=lambda i: (-scores[i], i))[:k]


def _top_b(scores, doc_ids, allowed, k):
    order = np.lexsort((np.arange(len(scores)), -np.asarray(scores, dtype=float))) if scores else []
    return np.array([i for i in order if doc_ids[i] in allowed][:k], dtype=np.int64)


def case_11_2(mp):
    post = lambda s, d, a, k: [i for i in sorted(range(len(s)), key=lambda i: (-s[i], i))[:k] if d[i] in a]  # noqa: E731
    return Case([{"readable_top_k": _top_a}, {"readable_top_k": _top_b}], {"readable_top_k": post},
                [{"readable_top_k": lambda s, d, a, k: []}])


def case_11_3(mp):
    from ragcourse import permissions

    mp.setattr(permissions, "post_filter", lambda ranked, allowed, depth, k: [c for c in ranked[:depth]
                                                                             if c in allowed][:k])
    queries = [SimpleNamespace(id=f"q{i}", doc="a" if i % 3 else "b", needle=f"n{i}") for i in range(12)]
    ranked = {q.id: (["b"] * (i % 9) + ["a"]) for i, q in enumerate(queries)}
    readable = lambda groups: {"a"} if groups == "u1" else {"a", "b"}  # noqa: E731
    access = SimpleNamespace(groups_of=lambda user: user, readable=readable, readable_by=readable)
    ctx = {"asker": {"x": "u1", "y": "u2"}, "access": access, "queries": queries, "ranked": ranked,
           "found": lambda kept, needle: "a" in kept}
    kept = [("a" in permissions.post_filter(ranked[q.id], allow, depth=8, k=4))
            for allow in ({"a"}, {"a", "b"}) for q in queries if q.doc in allow]
    share = sum(kept) / len(kept)
    return Case([{**ctx, "answer_11_3": share}, {**ctx, "answer_11_3": np.float64(round(share, 3))}],
                {**ctx, "answer_11_3": share - 0.05}, [{**ctx, "answer_11_3": 1.0}], [f"{share:.3f}"])


# ---- chapter 12 ---------------------------------------------------------------------------------------

def _ndcg_a(ranking, grades, k):
    gain = lambda gains: sum(g / math.log2(r + 1) for r, g in enumerate(gains, start=1))  # noqa: E731
    ideal = gain(sorted(grades.values(), reverse=True)[:k])
    return gain([grades.get(p, 0) for p in ranking[:k]]) / ideal if ideal else 0.0


def _ndcg_b(ranking, grades, k):
    discounts = 1 / np.log2(np.arange(2, k + 2))
    got = np.array([grades.get(p, 0) for p in ranking[:k]], dtype=float)
    best = np.sort(np.array(list(grades.values()), dtype=float))[::-1][:k]
    ideal = float(best @ discounts[:len(best)])
    return np.float64(got @ discounts[:len(got)] / ideal) if ideal > 0 else np.float64(0)


def _ndcg_retrieved_only(ranking, grades, k):
    """The typical mistake: the ideal list made of the retrieved passages only."""
    seen = sorted((grades.get(p, 0) for p in ranking), reverse=True)[:k]
    ideal = sum(g / math.log2(r + 1) for r, g in enumerate(seen, start=1))
    got = sum(grades.get(p, 0) / math.log2(r + 1) for r, p in enumerate(ranking[:k], start=1))
    return got / ideal if ideal else 0.0


def case_12_1(mp):
    return Case([{"ndcg_at_k": _ndcg_a}, {"ndcg_at_k": _ndcg_b}], {"ndcg_at_k": _ndcg_retrieved_only},
                [{"ndcg_at_k": lambda ranking, grades, k: 0.0}, {"ndcg_at_k": lambda ranking, grades, k: 1.0}])


def _kappa_a(a, b):
    n = len(a)
    observed = sum(abs(x - y) / 2 for x, y in zip(a, b, strict=True)) / n
    expected = sum(abs(i - j) / 2 * a.count(i) / n * b.count(j) / n for i in range(3) for j in range(3))
    return 1 - observed / expected


def _kappa_b(a, b):
    table = np.zeros((3, 3))
    np.add.at(table, (np.asarray(a), np.asarray(b)), 1)
    table /= table.sum()
    weights = np.abs(np.subtract.outer(np.arange(3), np.arange(3))) / 2
    return np.float32(1 - (weights * table).sum() / (weights * np.outer(table.sum(1), table.sum(0))).sum())


def _kappa_unweighted(a, b):
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    expected = sum(a.count(g) / n * b.count(g) / n for g in range(3))
    return (observed - expected) / (1 - expected)


def case_12_2(mp):
    return Case([{"weighted_kappa": _kappa_a}, {"weighted_kappa": _kappa_b}], {"weighted_kappa": _kappa_unweighted},
                [{"weighted_kappa": lambda a, b: 1.0}, {"weighted_kappa": lambda a, b: 0.0}])


def case_12_3(mp):
    why = "the generated questions copy their needle, which favours BM25"
    return Case([{"prediction_12_3": {"tau": 0.3, "why": why}},
                 {"prediction_12_3": {"tau": np.float64(-1), "why": why}}],
                {"prediction_12_3": {"tau": 2, "why": why}})


CASES = {name[5:].replace("_", "."): fn for name, fn in globals().items() if name.startswith("case_")}


def build(exercise: str, monkeypatch, tmp_path) -> Case:
    fn = CASES[exercise]
    return fn(monkeypatch, tmp_path) if fn.__code__.co_argcount == 2 else fn(monkeypatch)


def test_every_exercise_has_a_fairness_case():
    missing = [ex for ex in every_exercise() if ex not in CASES]
    assert not missing, f"exercises without a fairness case (two right answers, a mistake): {missing}"


@pytest.mark.parametrize("exercise", every_exercise())
def test_right_answers_get_full_marks_and_a_mistake_less_without_the_answer(exercise, monkeypatch, tmp_path):
    case = build(exercise, monkeypatch, tmp_path)
    hidden = checks(exercise)
    assert len(case.right) >= 2
    for ns in case.right:
        points, feedback = score(hidden, dict(ns))
        assert points == hidden.points, f"{exercise}: a correct answer got {points}/{hidden.points}: {feedback}"
    points, feedback = score(hidden, dict(case.wrong))
    FEEDBACK.append((exercise, points, feedback, case.secrets))
    assert points < hidden.points, f"{exercise}: the typical mistake got full marks"
    assert feedback.strip() and not re.fullmatch(r"partly right( \(\d+% of the marks\))?", feedback), feedback
    assert "tell your instructor" not in feedback, f"{exercise}: the check itself failed: {feedback}"
    for secret in case.secrets:
        assert secret not in feedback, f"{exercise}: the feedback shows an expected value: {feedback}"


@pytest.mark.parametrize("exercise", every_exercise())
def test_a_constant_never_gets_full_marks(exercise, monkeypatch, tmp_path):
    case = build(exercise, monkeypatch, tmp_path)
    hidden = checks(exercise)
    for ns in case.constants:
        points, feedback = score(hidden, dict(ns))
        FEEDBACK.append((exercise, points, feedback, case.secrets))
        assert points < hidden.points, f"{exercise}: a constant answer got full marks"
        assert all(secret not in feedback for secret in case.secrets), feedback


def _varied() -> list[str]:
    """The exercises whose check draws a constant with `choose` (the rest are the same in every variant)."""
    return [ex for ex in every_exercise() if "choose(" in __import__("inspect").getsource(checks(ex).fn)]


@pytest.mark.parametrize("variant", [1, 2, 5, 2027])
@pytest.mark.parametrize("exercise", _varied())
def test_every_variant_of_the_term_is_fair_too(exercise, variant, monkeypatch, tmp_path):
    """Issue 45: a typical mistake loses points on every variant, a right answer keeps full marks."""
    from ragcourse.book.exercises import VARIANT_ENV

    monkeypatch.setenv(VARIANT_ENV, str(variant))
    case, hidden = build(exercise, monkeypatch, tmp_path), checks(exercise)
    assert [score(hidden, dict(ns))[0] for ns in case.right] == [hidden.points] * len(case.right)
    assert score(hidden, dict(case.wrong))[0] < hidden.points
    assert all(score(hidden, dict(ns))[0] < hidden.points for ns in case.constants)


def test_an_error_in_the_checks_own_computation_is_the_graders(monkeypatch):
    """4.3's grid keys given as numpy integers once reached the package's own check and blamed the student."""
    def broken(ns, w, c=60):
        raise ValueError(f"c={c!r}: expected a finite number > 0")

    stub("4.3", "_hybrid_mrr", broken, monkeypatch)
    points, feedback = score(checks("4.3"), {"GRID_RRF_C": [1, 60], "answer_4_3": {np.int64(1): 0.5, 60: 0.5}})
    assert points == 0 and feedback.startswith("check failed:") and "tell your instructor" in feedback
    assert "your answer raised" not in feedback and "expected a finite" not in feedback


def test_an_exception_from_a_students_function_shows_its_type_only():
    def leaky(*args):
        raise ValueError(f"called with {args!r}")

    for exercise, name in (("6.3", "best_cut"), ("6.5", "auc_by_pairs"), ("7.3", "weakly_supported"),
                           ("8.3", "gate_passes")):
        ns = {name: leaky, "table": checks("6.3").fn.__globals__["_table"]([0.3, math.inf], [0, 1], [1, 0]),
              "per_query": {}}
        points, feedback = score(checks(exercise), ns)
        assert points == 0 and "called with" not in feedback, feedback


def test_an_overflowing_integer_does_not_quote_the_expected_value():
    """3.3 with np.int8(4) once answered 'Python integer 382 out of bounds for int8'."""
    points, feedback = score(checks("3.3"), {"HALF_3_3": 0.05, "answer_n": np.int8(4)})
    assert points == 0 and not re.search(r"\d{3}", feedback), feedback


def test_zz_no_expected_value_reaches_feedback_md_grades_csv_or_the_summary(tmp_path):
    """Issue 44: the expected values planted in each case above are searched in every file the grader writes
    from this feedback (run after the cases above; with -k, on those that ran)."""
    from kit.grade import Output, Row

    if not FEEDBACK:
        pytest.skip("no case ran before this test")
    output = Output(tmp_path / "out", tmp_path / "subs")
    for i, (exercise, points, feedback, _) in enumerate(FEEDBACK):
        chapter = f"{int(exercise.split('.')[0]):02d}"
        rows = [Row(f"student{i}", chapter, exercise, points, checks(exercise).points, feedback)]
        output.student(f"student{i}", rows, {chapter: f"## Chapter {int(chapter)}\n\n| {exercise} | {feedback} |\n"})
    rows = output.merge()
    assert len(rows) == len(FEEDBACK)
    files = [tmp_path / "out" / "grades.csv", tmp_path / "out" / "summary.md",
             *sorted((tmp_path / "out").glob("*/feedback.md"))]
    text = "\n".join(f.read_text(encoding="utf-8") for f in files)
    # two-digit values occur in any page (student12, 95%); each feedback line was searched for them above
    planted = sorted({secret for *_, secrets in FEEDBACK for secret in secrets if len(secret) >= 3})
    assert len(planted) > 15
    assert [secret for secret in planted if re.search(rf"(?<![\w.]){re.escape(secret)}(?!\w)", text)] == []
    partial = [f for _, p, f, _ in FEEDBACK if 0 < p and re.fullmatch(r"partly right( \(\d+% of the marks\))?", f)]
    assert partial == [], "a partial mark without its reason"


@pytest.mark.parametrize("variant", [0, 1, 2, 5, 2027])
def test_the_tie_rule_free_and_rank_from_0_answers_lose_points_in_every_term(variant, monkeypatch, tmp_path):
    """Issue 45: 6.3's `idxmin` (no tie rule) got 3/3 and 4.4's ranks from 0 got 2.67/3; in every term each
    now loses points, on the check's own hidden cases (the reference's table is only the visible one)."""
    from ragcourse.book.exercises import VARIANT_ENV

    monkeypatch.setenv(VARIANT_ENV, str(variant))
    for exercise in ("6.3", "4.4"):
        hidden = checks(exercise)
        points, feedback = score(hidden, dict(build(exercise, monkeypatch, tmp_path).wrong))
        assert points < hidden.points, f"{exercise} in variant {variant}: {feedback}"
        assert feedback.strip() and not re.fullmatch(r"partly right( \(\d+% of the marks\))?", feedback), feedback


def _kinds() -> dict[str, str]:
    import nbformat

    from kit.student import answer_cells

    return {str(c.metadata["exercise"]["id"]): c.metadata["exercise"]["kind"]
            for path in sorted(ROOT.glob("notebooks/[0-9][0-9]-*.ipynb"))
            for c in answer_cells(nbformat.read(path, as_version=4))}


def test_constants_are_tried_on_every_exercise_graded_on_its_value(monkeypatch, tmp_path):
    """No exception to `test_a_constant_never_gets_full_marks`: every value or function exercise has constants
    in its case. A prediction is graded on being made (chapter 1: "not on its accuracy"), so any well-formed
    prediction is full marks by design; its check must say it grades completion."""
    kinds = _kinds()
    assert set(kinds) == set(every_exercise())
    untried = [ex for ex, kind in kinds.items()
               if kind != "prediction" and not build(ex, monkeypatch, tmp_path).constants]
    assert untried == []
    graded_on_accuracy = [ex for ex, kind in kinds.items() if kind == "prediction"
                          and "completion" not in checks(ex).tests.lower() and "written before" not in checks(ex).tests]
    assert graded_on_accuracy == []
