"""Hidden checks for chapter 11 (permissions, planted documents, injected instructions). Never shipped."""

from __future__ import annotations

import random

from kit.checks.compare import Partly, given, integer, items, number, reference
from kit.hidden import check


@check("11.1", points=1)
def predicted_before_measuring(ns):
    """A prediction was written: a share in [0, 1] and a sentence of reasoning (completion; rubric in the guide)."""
    value, reason = number(given(ns, "prediction_11_1"), "prediction_11_1"), ns.get("reason_11_1")
    assert 0 <= value <= 1, "prediction_11_1 must be a share, between 0 and 1"
    assert isinstance(reason, str) and len(reason.split()) >= 5, "reason_11_1 needs a sentence of reasoning"


def _reference(scores, doc_ids, allowed, k):
    readable = [i for i, doc in enumerate(doc_ids) if doc in allowed]
    return sorted(readable, key=lambda i: (-scores[i], i))[:k]


def _corpora(n: int = 40):
    """Random corpora the notebook never shows: ties, nothing readable, k larger than what is readable."""
    rng = random.Random(1111)
    cases = [([0.5, 0.5, 0.5], ["a", "b", "a"], {"a"}, 2), ([1.0, 2.0], ["b", "b"], {"a"}, 3), ([], [], {"a"}, 1)]
    for _ in range(n):
        size = rng.randint(1, 30)
        docs = [rng.choice("abcde") for _ in range(size)]
        scores = [round(rng.choice([rng.random(), 0.5, 0.0]), 3) for _ in range(size)]
        cases.append((scores, docs, set(rng.sample("abcde", rng.randint(0, 3))), rng.randint(1, 8)))
    return cases


@check("11.2", points=3)
def readable_top_k_never_leaks(ns):
    """readable_top_k on 43 unseen corpora: never a forbidden position (any leak scores 0), then the exact order.
    All right: full; at least 30 right and no leak: half."""
    fn = given(ns, "readable_top_k")
    assert callable(fn), "define readable_top_k(scores, doc_ids, allowed, k)"
    right = 0
    cases = _corpora()
    for scores, docs, allowed, k in cases:
        try:
            got = [integer(i, "a position") for i in items(fn(list(scores), list(docs), set(allowed), k), "result")]
        except Exception:  # noqa: BLE001 - a crash on one input costs that input only
            continue
        assert all(0 <= i < len(docs) and docs[i] in allowed for i in got), \
            "returned a position the user may not read (or no position at all): a leak scores 0"
        right += got == _reference(scores, docs, allowed, k)
    if right == len(cases):
        return None
    why = f"{right} of {len(cases)} corpora right: order by score, then by position, and cut at k"
    assert right >= 30, why
    return Partly(1 / 2, why)


@check("11.3", points=2)
def post_filter_at_depth_eight(ns):
    """answer_11_3 is the share of the chapter's queries whose answer survives a post-filter at depth 8, recomputed."""
    from ragcourse import permissions

    asker, access, queries, ranked, found = (ns[name] for name in ("asker", "access", "queries", "ranked", "found"))
    kept = []
    with reference("the share that survives"):
        for user in asker.values():
            allowed = access.readable_by(user)
            for q in [q for q in queries if q.doc in allowed]:
                kept.append(found(permissions.post_filter(ranked[q.id], allowed, depth=8, k=4), q.needle))
        expected = sum(kept) / len(kept)
    answer = number(given(ns, "answer_11_3"), "answer_11_3")
    assert abs(answer - expected) <= 0.0015, \
        "the share is off: post_filter(ranked, allowed, depth=8, k=4), over every user's queries"
