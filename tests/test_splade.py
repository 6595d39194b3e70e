"""SPLADE's arithmetic (ragcourse.splade) and the stored run chapters 4 and 5 read (benchmarks/results/splade.json)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ragcourse import models, splade
from ragcourse.build.models import read_lock
from ragcourse.chunking import chunk_corpus
from ragcourse.groundtruth import CONFIRM_FILE, load_questions, queries

finite = st.floats(-20, 20, allow_nan=False, width=32)
vectors = st.dictionaries(st.integers(0, 50), st.floats(0.001, 10, allow_nan=False), max_size=12)


@given(arrays(np.float32, st.tuples(st.integers(1, 3), st.integers(1, 5), st.integers(1, 6)), elements=finite))
def test_weights_are_non_negative_and_the_formula_by_hand(logits):
    mask = np.ones(logits.shape[:2])
    weights = splade.sparse_weights(logits, mask)
    assert weights.shape == (logits.shape[0], logits.shape[2]) and (weights >= 0).all()
    n, j = logits.shape[0] - 1, logits.shape[2] - 1
    by_hand = max(math.log(1 + max(float(x), 0.0)) for x in logits[n, :, j])
    assert math.isclose(weights[n, j], by_hand, rel_tol=1e-5, abs_tol=1e-6)


@given(arrays(np.float32, (2, 4, 5), elements=finite), st.integers(1, 3))
def test_a_masked_position_changes_nothing(logits, keep):
    mask = np.zeros((2, 4))
    mask[:, :keep] = 1
    padded = logits.copy()
    padded[:, keep:, :] = 1e4  # whatever the model says at padding
    assert np.array_equal(splade.sparse_weights(logits, mask), splade.sparse_weights(padded, mask))


@given(arrays(np.float64, st.integers(1, 30), elements=st.floats(-5, 5)))
def test_to_sparse_keeps_exactly_the_positive_entries(row):
    sparse = splade.to_sparse(row)
    assert set(sparse) == {j for j, w in enumerate(np.round(row, 6)) if w > 0}
    assert all(w > 0 for w in sparse.values())


@given(vectors, vectors)
def test_score_is_a_non_negative_symmetric_dot_product(q, p):
    assert splade.score(q, p) == splade.score(p, q) >= 0
    by_hand = sum(w * p[j] for j, w in q.items() if j in p)
    assert math.isclose(splade.score(q, p), by_hand, abs_tol=1e-5)


@given(vectors, st.lists(vectors, max_size=8))
def test_rank_is_a_permutation_best_first_ties_in_order(q, passages):
    order = splade.rank(q, passages)
    assert sorted(order) == list(range(len(passages)))
    scores = [splade.score(q, passages[i]) for i in order]
    assert scores == sorted(scores, reverse=True)
    for i in range(len(order) - 1):  # equal scores: the earlier passage first
        assert scores[i] > scores[i + 1] or order[i] < order[i + 1]


def test_texts_sha256_depends_on_order_and_content():
    assert splade.texts_sha256(["a", "b"]) != splade.texts_sha256(["b", "a"])
    assert splade.texts_sha256(["ab"]) != splade.texts_sha256(["a", "b"])
    assert len(splade.texts_sha256([])) == 64


def _toy_run(tmp_path, chunk_texts, query_texts, shortlist):
    rows = [{"query": q, "query_sha256": splade.texts_sha256([t]), "shortlist_sha256": splade.texts_sha256(shortlist)}
            for q, t in query_texts.items()]
    path = tmp_path / "splade.json"
    path.write_text(json.dumps({"chunks_sha256": splade.texts_sha256(chunk_texts), "development": {"rows": rows},
                                "held_out": {"rows": []}}), encoding="utf-8")
    return path


def test_a_stored_run_is_refused_when_chunks_queries_or_shortlists_changed(tmp_path):
    path = _toy_run(tmp_path, ["c1", "c2"], {"q1/doc": "how?"}, ["c2", "c1"])
    run = splade.stored_run(["c1", "c2"], {"q1/doc": "how?"}, path)
    splade.check_shortlists(run["development"], {"q1/doc": ["c2", "c1"]})
    with pytest.raises(models.StaleRunError, match="other chunks"):
        splade.stored_run(["c1", "c2 edited"], {"q1/doc": "how?"}, path)
    with pytest.raises(models.StaleRunError, match="'q1/doc' differs"):
        splade.stored_run(["c1", "c2"], {"q1/doc": "how now?"}, path)
    with pytest.raises(models.StaleRunError, match="'q1/doc' differs"):
        splade.stored_run(["c1", "c2"], {}, path)
    with pytest.raises(models.StaleRunError, match="shortlist changed"):
        splade.check_shortlists(run["development"], {"q1/doc": ["c1", "c2"]})


@pytest.fixture(scope="module")
def stored(corpus):
    development = queries(load_questions(corpus=corpus))
    held_out = queries(load_questions(CONFIRM_FILE, corpus=corpus))
    texts = {q.id: q.text for q in development + held_out}
    chunks = chunk_corpus(corpus, "E")
    return splade.stored_run([c.text for c in chunks], texts), development, held_out


def test_the_stored_run_matches_the_live_chunks_and_covers_every_query_once(stored):
    run, development, held_out = stored
    assert [r["query"] for r in run["development"]["rows"]] == [q.id for q in development]
    assert [r["query"] for r in run["held_out"]["rows"]] == [q.id for q in held_out]
    assert run["model_sha256"] == read_lock()["splade-tiny"]["files_sha256"]["model.safetensors"]
    assert run["threads"] >= 1 and run["wall_seconds"] > 0 and run["depth"] == 25
    for row in run["development"]["rows"] + run["held_out"]["rows"]:
        before, after = row["hybrid_rank"], row["rerank_rank"]
        assert (after == before) if before is None or before > 25 else 1 <= after <= 25
