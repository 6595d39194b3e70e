"""Chapter 3's three embedders: the thread setting, the recording script's pure parts, and the stored run's check.

No model runs here: the stored run (`benchmarks/results/embedders.json`, `make embedders`) is checked against
the corpus, and the script's ranking and resume logic against small hand-made inputs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse import models, pipeline
from ragcourse.book import embedders
from ragcourse.dense import cosine_distances, texts_sha256
from ragcourse.evaluation import per_question
from ragcourse.groundtruth import load_questions, queries
from tests.benchmark_scripts import load_script

script = load_script("embedders")


# ----- the one thread setting

def test_threads_default_to_one(monkeypatch):
    monkeypatch.delenv(models.THREADS_VARIABLE, raising=False)
    assert models.threads() == 1


def test_threads_read_the_variable(monkeypatch):
    monkeypatch.setenv(models.THREADS_VARIABLE, " 2 ")
    assert models.threads() == 2


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5", ""])
def test_a_bad_thread_count_names_the_variable(monkeypatch, raw):
    monkeypatch.setenv(models.THREADS_VARIABLE, raw)
    with pytest.raises(ValueError, match="RAGCOURSE_THREADS"):
        models.threads()


# ----- digests

def test_texts_digest_is_the_index_stamps_formula():
    texts = ["first chunk", "second chunk"]
    by_hand = hashlib.sha256("\n".join(hashlib.sha256(t.encode()).hexdigest() for t in texts).encode()).hexdigest()
    assert texts_sha256(texts) == by_hand
    assert texts_sha256(texts[::-1]) != by_hand  # order matters: ranks are positions


# ----- the script's ranking

@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(0, 10_000))
def test_rank_is_one_plus_the_chunks_ordered_ahead(n, seed):
    """The needle's rank = 1 + chunks nearer to the query, or as near and earlier (the book's tie rule)."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, 4)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[rng.integers(n)] + rng.normal(scale=0.5, size=4).astype(np.float32)
    query /= np.linalg.norm(query)
    target = int(rng.integers(n))
    chunks = [SimpleNamespace(content=f"chunk {i} says {'the answer' if i == target else 'nothing'}")
              for i in range(n)]
    distances = cosine_distances(vectors, query)
    ahead = sum(d < distances[target] or (d == distances[target] and i < target) for i, d in enumerate(distances))
    assert script.ranks(vectors, {"q": query}, chunks, {"q": "the answer"}) == {"q": 1 + ahead}


def test_a_needle_no_chunk_holds_has_no_rank():
    chunks = [SimpleNamespace(content="alpha"), SimpleNamespace(content="beta")]
    assert script.ranks(np.eye(2, dtype=np.float32), {"q": np.array([1.0, 0.0])}, chunks, {"q": "gamma"}) == {"q": None}


def test_resume_skips_only_the_same_run(monkeypatch):
    monkeypatch.setenv(models.THREADS_VARIABLE, "1")
    record = {"chunks_sha256": "x", "queries_sha256": "y", "embedders": {"mpnet": {"threads": 1}}}
    assert script.recorded(record, "mpnet", {"chunks_sha256": "x", "queries_sha256": "y"})
    assert not script.recorded(record, "e5-small", {"chunks_sha256": "x", "queries_sha256": "y"})
    assert not script.recorded(record, "mpnet", {"chunks_sha256": "other", "queries_sha256": "y"})
    monkeypatch.setenv(models.THREADS_VARIABLE, "2")
    assert not script.recorded(record, "mpnet", {"chunks_sha256": "x", "queries_sha256": "y"})


# ----- reading a record

QS = [SimpleNamespace(id=f"q{i}/{p}", text=f"question {i} {p}", needle=f"needle {i}", phrasing=p)
      for i in (1, 2) for p in ("doc", "ticket")]
TEXTS = ["chunk a", "chunk b"]


def write(tmp_path: Path, **changes) -> Path:
    ranks = {"q1/doc": 1, "q1/ticket": 2, "q2/doc": None, "q2/ticket": 4}
    record = embedders.fingerprint(TEXTS, QS) | {"embedders": {name: {"ranks": ranks} for name in embedders.EMBEDDERS}}
    path = tmp_path / "embedders.json"
    path.write_text(json.dumps(record | changes), encoding="utf-8")
    return path


def test_a_matching_record_reads_back_as_ranks(tmp_path):
    record = embedders.load(TEXTS, QS, write(tmp_path))
    table = embedders.per_query(record, "e5-small", QS)
    assert per_question(table).to_dict() == {"q1": 0.75, "q2": 0.125}


def test_a_record_of_other_chunks_is_refused(tmp_path):
    path = write(tmp_path)
    with pytest.raises(models.StaleRunError, match="chunks_sha256 is .*make embedders"):
        embedders.load(["chunk a", "chunk b, edited"], QS, path)
    with pytest.raises(models.StaleRunError, match="queries is 4, expected 3"):
        embedders.load(TEXTS, QS[:3], path)


def test_a_record_missing_an_embedder_is_refused(tmp_path):
    path = write(tmp_path, embedders={"MiniLM": {"ranks": {}}})
    with pytest.raises(models.StaleRunError, match="no e5-small; no mpnet"):
        embedders.load(TEXTS, QS, path)


def test_no_record_says_how_to_make_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="make embedders"):
        embedders.load(TEXTS, QS, tmp_path / "absent.json")


# ----- the stored run

def test_the_stored_run_matches_the_corpus_and_states_its_threads():
    chunks = pipeline.build(embedders.STRATEGY, dense=False).chunks
    qs = queries(load_questions())
    record = embedders.load([c.text for c in chunks], qs)
    assert record["threads"] == 1
    for name in embedders.EMBEDDERS:
        run = record["embedders"][name]
        assert run["threads"] == record["threads"] and run["seconds"] > 0
        assert set(run["ranks"]) == {q.id for q in qs}
        assert run["provenance"]["wheels"], f"{name}: where the model came from"
        embedders.per_query(record, name, qs)  # every rank is None or an integer >= 1
