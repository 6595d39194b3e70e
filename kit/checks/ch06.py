"""Hidden checks for chapter 6 (thresholds): run by the grader on the student's notebook namespace."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from kit.checks.compare import Partly, given, integer, items, number, reference
from kit.hidden import check
from ragcourse.book.exercises import choose
from ragcourse.evaluation import sweep


def _ex61_hits(ns):
    kind = choose("6.1", ["all", "absurd", "near"])
    return [hits for o, hits in zip(ns["out_of_domain"], ns["ood_hits"], strict=True) if kind in ("all", o.kind)]


@check("6.1", points=3)
def exact_zero_bluff_cut(ns):
    """zero_bluff[0] is the largest cut at which the gate bluffs on none of the exercise's out-of-domain
    queries (none at the cut, some just above it); zero_bluff[1] counts the answers with the needle there."""
    cut, n_with = items(given(ns, "zero_bluff"), "zero_bluff", 2)
    cut, n_with = number(cut, "the cut"), integer(n_with, "the count")
    with reference("the sweep at your cut"):
        cuts = [cut, float(np.nextafter(cut, math.inf))]
        at, above = sweep(ns["in_pairs"], _ex61_hits(ns), cuts, k=ns["K"]).itertuples()
    assert at.bluffed == 0, "the gate still bluffs at your cut"
    assert above.bluffed > 0, "a slightly larger cut has no bluff either, so yours is not the largest"
    if n_with != at.answered_with_needle:
        return Partly(2 / 3, "the cut is right, but the count of answers with the needle is not (count at your cut)")
    return None


@check("6.2", points=2)
def l2_cut_and_refusals(ns):
    """l2_cut squared and halved gives the exercise's cosine cut back, and l2_refused marks exactly the
    out-of-domain queries whose nearest hit is at or beyond that cut."""
    rule = choose("6.2", ["expensive", "cheap"])
    cosine_cut = float(ns[f"{rule}_cut"])
    l2_cut = number(given(ns, "l2_cut"), "l2_cut")
    assert math.isclose(l2_cut**2 / 2, cosine_cut, rel_tol=1e-9), (
        "square your cut and halve it: you should get the cosine cut back")
    with reference("the gate's refusals"):
        expected = [hits[0].distance >= cosine_cut for hits in ns["ood_hits"]]
    refused = items(given(ns, "l2_refused"), "l2_refused", len(expected))
    assert all(isinstance(x, bool) for x in refused), "l2_refused should hold one bool per out-of-domain query"
    wrong = sum(a != b for a, b in zip(refused, expected, strict=True))
    assert wrong == 0, f"l2_refused disagrees with the gate on {wrong} queries"


def _reference_best_cut(table, weight):
    finite = table[np.isfinite(table["cut"])]
    costs = weight * finite["bluffed"] + finite["wrongly_refused"]
    return float(finite.loc[costs == costs.min(), "cut"].min())


def _table(cuts, bluffed, refused):
    n_in, n_ood = 40, max(bluffed) + 2
    return pd.DataFrame({"cut": cuts, "answered_with_needle": [n_in - r for r in refused],
                         "answered_without_needle": [0] * len(cuts), "wrongly_refused": refused,
                         "ood_refused": [n_ood - b for b in bluffed], "bluffed": bluffed})


@check("6.3", points=3)
def best_cut_function(ns):
    """best_cut(table, weight) returns the finite cut of least weight * bluffed + wrongly_refused, the
    smaller one on a tie, ignoring the no-threshold row; on hand-built sweep tables (unsorted rows, ties,
    an inf row) and on the chapter's own table, for several weights."""
    best_cut = given(ns, "best_cut")
    assert callable(best_cut), "define a function best_cut(sweep_table, weight)"
    tables = [
        _table([0.3, 0.4, 0.5, 0.6, math.inf], [0, 1, 3, 4, 5], [10, 6, 3, 1, 0]),
        _table([0.6, 0.2, 0.45, 0.35], [5, 0, 2, 1], [0, 9, 4, 5]),  # unsorted, ties at several weights
        _table([0.5, 0.7, math.inf], [2, 2, 3], [3, 3, 0]),  # equal costs: the smaller cut
        _table([0.7, 0.5, math.inf], [2, 2, 3], [3, 3, 0]),  # the same, the larger cut first
        _table([math.inf, 0.8, 0.35, 0.2, 0.6], [6, 4, 1, 0, 2], [0, 1, 5, 7, 3]),  # ties with the larger cut first
    ]
    cases = [(t, w) for t in tables for w in (0.5, 1, 2, 4, 10)] + [(ns["table"], w) for w in (1, 4, 10)]
    with reference("the best cuts"):
        expected = [_reference_best_cut(table, weight) for table, weight in cases]
    wrong = sum(not _same_number(best_cut, (t.copy(), w), want) for (t, w), want in zip(cases, expected, strict=True))
    assert wrong == 0, f"{wrong} of {len(cases)} tables got the wrong cut (check the tie-break and the inf row)"


def _same_number(fn, args: tuple, expected: float) -> bool:
    """fn(*args) is a number equal to `expected` (to 1e-9); a crash is a wrong answer on that input only."""
    try:
        return math.isclose(number(fn(*args), "the result"), expected, rel_tol=1e-9, abs_tol=1e-12)
    except Exception:  # noqa: BLE001 - a student's function may raise anything
        return False


_CHOICES = {"more", "fewer", "same"}


@check("6.4", points=2)
def prediction_recorded(ns):
    """Completion: prediction_6_4 has 'bluffs' and 'with_needle' each in {more, fewer, same} and a 'why'
    of at least five words (the rubric in the guide grades the reasoning)."""
    p = given(ns, "prediction_6_4")
    assert isinstance(p, dict), "prediction_6_4 should be a dict"
    for key in ("bluffs", "with_needle"):
        assert p.get(key) in _CHOICES, f"prediction_6_4[{key!r}] should be one of {sorted(_CHOICES)}"
    assert isinstance(p.get("why"), str) and len(p["why"].split()) >= 5, "give a reason of a sentence or two"


@check("6.5", points=2, by_hand=True, forbids=("auc",))
def auc_by_pairs_matches_the_pair_count(ns):
    """auc_by_pairs(a, u) equals ragcourse.evaluation.auc(a, u) (pairs won, ties one half) on hand-built score
    lists the notebook never shows: ties inside and across the lists, unequal lengths, one-element lists,
    negative scores, perfect and reversed separation."""
    from ragcourse.evaluation import auc

    auc_by_pairs = given(ns, "auc_by_pairs")
    assert callable(auc_by_pairs), "define a function auc_by_pairs(answerable, unanswerable)"
    cases = [
        ([0.9, 0.8, 0.8, 0.1], [0.8, 0.2]),
        ([1.0], [1.0]),
        ([0.3, 0.3, 0.3], [0.1, 0.3, 0.5, 0.7, 0.9]),
        ([-2.0, -1.0, 5.0], [-1.5]),
        ([4.0, 5.0], [1.0, 2.0, 3.0]),
        ([1.0, 2.0], [3.0, 4.0, 5.0]),
        ([0.25, 0.5, 0.75, 0.5], [0.5, 0.5, 0.0]),
    ]
    with reference("the package's auc"):
        expected = [auc(a, u) for a, u in cases]
    wrong = sum(not _same_number(auc_by_pairs, (list(a), list(u)), want) for (a, u), want in zip(cases, expected,
                                                                                                strict=True))
    assert wrong == 0, f"{wrong} of {len(cases)} score lists got the wrong area (check ties and the denominator)"
