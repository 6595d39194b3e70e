"""Graded relevance: nDCG@k, average precision, recall@k, reciprocal rank, bpref and condensed lists (chapter 12).

What it implements: one question's judgements are grades of the passages a judge read (0 = not relevant,
1 = partly, 2 = answers it); a passage nobody judged is unjudged. The conventions are trec_eval's, so
ir_measures and pytrec_eval give the same numbers: a grade is its own gain (linear gains), rank r is
discounted by log2(r + 1), a passage is relevant at grade >= 1, and an unjudged passage counts as not
relevant, except in a `condensed` list (Sakai, SIGIR 2007), which drops it, and in `bpref` (Buckley &
Voorhees, SIGIR 2004), which never looks at it. Each function is one query's value; MAP and mean nDCG
are means over queries, taken by the caller.

Leaves out: exponential gains (2^g - 1, Burges et al. 2005), a relevance level other than 1, infAP,
and ties: a ranking here is an order of passage ids, best first, without repeats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from .counts import check_k

#: The lowest grade that counts as relevant (trec_eval's default relevance level).
RELEVANT = 1


def _checked(ranking: Sequence[str], grades: Mapping[str, int]) -> None:
    """ValueError for a ranking that repeats a passage, or a grade that is not an integer >= 0."""
    if len(set(ranking)) != len(ranking):
        raise ValueError("ranking: a passage occurs more than once; a ranking lists each passage once")
    bad = [(doc, g) for doc, g in grades.items() if not isinstance(g, int) or isinstance(g, bool) or g < 0]
    if bad:
        raise ValueError(f"grades {bad[:3]}: expected integers >= 0 (0 = not relevant, 1 = partly, 2 = answers)")


def relevant_count(grades: Mapping[str, int]) -> int:
    """R, the number of judged passages with a grade >= RELEVANT.

    >>> relevant_count({"a": 2, "b": 0, "c": 1})
    2
    """
    return sum(1 for g in grades.values() if g >= RELEVANT)


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain of gains in rank order: sum over ranks r (from 1) of gain_r / log2(r + 1).

    By hand, gains 2, 0, 1: 2 / log2(2) + 0 / log2(3) + 1 / log2(4) = 2 + 0 + 0.5.

    >>> dcg([2, 0, 1])
    2.5
    """
    return float(sum(g / math.log2(r + 1) for r, g in enumerate(gains, start=1)))


def ndcg_at(ranking: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """nDCG@k (Järvelin & Kekäläinen, TOIS 2002): the DCG of the top k's grades over the DCG of the k best grades
    judged (the ideal ranking); 0 when no judged passage is relevant.

    By hand: grades a 2, b 0, c 1; ranking z a b c (z unjudged: gain 0); k = 3.
    DCG = 0/log2(2) + 2/log2(3) + 0/log2(4) = 1.262; ideal a c b: 2/1 + 1/log2(3) + 0 = 2.631; 1.262 / 2.631.

    >>> round(ndcg_at(["z", "a", "b", "c"], {"a": 2, "b": 0, "c": 1}, 3), 4)
    0.4796
    """
    check_k(k, "k")
    _checked(ranking, grades)
    ideal = dcg(sorted(grades.values(), reverse=True)[:k])
    return dcg([grades.get(doc, 0) for doc in ranking[:k]]) / ideal if ideal > 0 else 0.0


def average_precision(ranking: Sequence[str], grades: Mapping[str, int]) -> float:
    """AP: the mean over the R relevant passages of the precision at the rank where each is retrieved (0 for one
    never retrieved); MAP is its mean over queries (Voorhees & Harman, TREC 2005).

    By hand: ranking z a b c, relevant a and c (R = 2): P@2 = 1/2, P@4 = 2/4; AP = (1/2 + 2/4) / 2.

    >>> average_precision(["z", "a", "b", "c"], {"a": 2, "b": 0, "c": 1})
    0.5
    """
    _checked(ranking, grades)
    relevant = relevant_count(grades)
    found, total = 0, 0.0
    for rank, doc in enumerate(ranking, start=1):
        if grades.get(doc, 0) >= RELEVANT:
            found += 1
            total += found / rank
    return total / relevant if relevant else 0.0


def recall_at(ranking: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """Recall@k: the share of the R relevant passages in the top k; 0 when R = 0.

    >>> recall_at(["z", "a", "b", "c"], {"a": 2, "b": 0, "c": 1}, 2)
    0.5
    """
    check_k(k, "k")
    _checked(ranking, grades)
    relevant = relevant_count(grades)
    return sum(1 for doc in ranking[:k] if grades.get(doc, 0) >= RELEVANT) / relevant if relevant else 0.0


def reciprocal_rank(ranking: Sequence[str], grades: Mapping[str, int]) -> float:
    """1 / the rank of the first relevant passage; 0 when none is retrieved.

    >>> reciprocal_rank(["z", "a", "b", "c"], {"a": 2, "b": 0, "c": 1})
    0.5
    """
    _checked(ranking, grades)
    return next((1 / rank for rank, doc in enumerate(ranking, start=1) if grades.get(doc, 0) >= RELEVANT), 0.0)


def condensed(ranking: Sequence[str], grades: Mapping[str, int]) -> list[str]:
    """The ranking without its unjudged passages (Sakai, SIGIR 2007): nDCG or AP of it is nDCG' or AP', which
    an unjudged passage can neither lower nor raise.

    >>> condensed(["z", "a", "b", "c"], {"a": 2, "b": 0, "c": 1})
    ['a', 'b', 'c']
    """
    return [doc for doc in ranking if doc in grades]


def bpref(ranking: Sequence[str], grades: Mapping[str, int]) -> float:
    """bpref (Buckley & Voorhees, SIGIR 2004), as trec_eval computes it: with R relevant and N judged non-relevant
    passages, the mean over the relevant ones retrieved of 1 - min(n, R) / min(R, N), n the judged non-relevant
    ones ranked above it (1 each when N = 0); unjudged passages are skipped. 0 when R = 0.

    By hand: ranking z a b c, R = 2 (a, c), N = 1 (b): a has n = 0, so 1; c has n = 1, so 1 - 1/1 = 0; (1 + 0) / 2.

    >>> bpref(["z", "a", "b", "c"], {"a": 2, "b": 0, "c": 1})
    0.5
    """
    _checked(ranking, grades)
    relevant = relevant_count(grades)
    judged_out = len(grades) - relevant
    above, total = 0, 0.0
    for doc in condensed(ranking, grades):
        if grades[doc] < RELEVANT:
            above += 1
        else:
            total += 1 - min(above, relevant) / min(relevant, judged_out) if judged_out else 1.0
    return total / relevant if relevant else 0.0


def judged_at(ranking: Sequence[str], grades: Mapping[str, int], k: int) -> float:
    """The share of the top k passages retrieved that were judged (ir_measures' Judged@k; 0 when none was
    retrieved): how far unjudged passages may mislead the other measures.

    >>> judged_at(["z", "a", "b", "c"], {"a": 2, "b": 0, "c": 1}, 2), judged_at(["a"], {"a": 0}, 5)
    (0.5, 1.0)
    """
    check_k(k, "k")
    top = ranking[:k]
    return sum(1 for doc in top if doc in grades) / len(top) if top else 0.0


def measures(ranking: Sequence[str], grades: Mapping[str, int], ks: Sequence[int]) -> dict[str, float]:
    """One query's row of graded measures, as `ragcourse eval` keeps it: nDCG@k, AP, bpref, their condensed forms
    (`condensed_ndcg@k`, `condensed_ap`) and judged@k; a ranking's repeated passage counts once, where first seen.

    >>> {name: round(value, 3) for name, value in measures(["z", "a", "b", "c"], {"a": 2, "b": 0, "c": 1}, [2]).items()}
    {'graded_ndcg@2': 0.48, 'ap': 0.5, 'bpref': 0.5, 'condensed_ndcg@2': 0.76, 'condensed_ap': 0.833, 'judged@2': 0.5}
    """
    ranking = list(dict.fromkeys(ranking))
    judged_only = condensed(ranking, grades)
    row = {f"graded_ndcg@{k}": ndcg_at(ranking, grades, k) for k in ks}
    row |= {"ap": average_precision(ranking, grades), "bpref": bpref(ranking, grades)}
    row |= {f"condensed_ndcg@{k}": ndcg_at(judged_only, grades, k) for k in ks}
    row["condensed_ap"] = average_precision(judged_only, grades)
    return row | {f"judged@{k}": judged_at(ranking, grades, k) for k in ks}
