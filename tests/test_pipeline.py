"""The assembled pipeline: the three methods rank every chunk, hybrid is RRF of the other two."""

from dataclasses import dataclass

import numpy as np
import pytest

from ragcourse.corpus import Document
from ragcourse.fusion import fuse
from ragcourse.pipeline import Retriever, build, ranked_chunks

DOCS = [
    Document("tables", "Tables", "## Grid tables\n\nA grid table draws cells with plus signs and dashes.\n\n"
             "## Simple tables\n\nA simple table uses columns of equals signs."),
    Document("math", "Math", "## Display math\n\nDisplay math is written with the math directive."),
    Document("food", "Food", "## Paella\n\nPaella is cooked in a wide shallow pan over an open fire."),
]


@pytest.fixture(scope="module")
def retriever(tmp_path_factory):
    from ragcourse.dense import load_embedder

    return build("E", corpus=DOCS, embedder=load_embedder(cache_dir=tmp_path_factory.mktemp("cache")))


# --- hand-made rankings: a retriever over four chunks whose dense and BM25 orders are fixed ---


@dataclass
class FakeEmbedder:
    calls: list

    def encode_query(self, query):
        self.calls.append(query)
        return np.array([1.0, 0.0])


@dataclass
class FakeDense:
    embedder: FakeEmbedder
    fixed: np.ndarray  # cosine distance of chunks 0..3 to every query

    def distances(self, vector):
        return self.fixed

    def rank(self, vector):
        return np.argsort(self.fixed, kind="stable").tolist()  # a list of positions, as DenseIndex.rank


class FakeBM25:
    def rank(self, query):
        return [1, 2, 3, 0]


def fake_retriever() -> Retriever:
    # dense order 2, 0, 1, 3 (distances 0.3, 0.2, 0.1, 0.4); BM25 order 1, 2, 3, 0
    dense = FakeDense(FakeEmbedder([]), np.array([0.2, 0.3, 0.1, 0.4]))
    return Retriever("E", ["c0", "c1", "c2", "c3"], dense, FakeBM25())


def test_hybrid_is_rrf_worked_by_hand():
    # RRF, k = 60: chunk 2 = 1/61 + 1/62, chunk 1 = 1/63 + 1/61, chunk 0 = 1/62 + 1/64, chunk 3 = 1/64 + 1/63
    r = fake_retriever()
    assert r.rank("q", "dense") == [2, 0, 1, 3]
    assert r.rank("q", "bm25") == [1, 2, 3, 0]
    assert r.rank("q", "hybrid") == [2, 1, 0, 3]
    fused = [(f.id, f.score) for f in fuse([r.rank("q", "dense"), r.rank("q", "bm25")])]
    assert fused == [(2, round(1 / 61 + 1 / 62, 6)), (1, round(1 / 63 + 1 / 61, 6)),
                     (0, round(1 / 62 + 1 / 64, 6)), (3, round(1 / 64 + 1 / 63, 6))]


def test_retrieve_carries_cosine_distance_whatever_ranked_it():
    hits = fake_retriever().retrieve("q", k=2, method="bm25")
    assert [(h.chunk, h.distance, h.rank) for h in hits] == [("c1", 0.3, 1), ("c2", 0.1, 2)]


@pytest.mark.parametrize("k", [0, -1])
def test_retrieve_rejects_k_below_one(k):
    with pytest.raises(ValueError, match=f"k={k}: expected an integer >= 1"):
        fake_retriever().retrieve("q", k=k)


def test_ranked_chunks_turns_positions_into_chunks():
    assert ranked_chunks(["c0", "c1", "c2"], {"q1": np.array([2, 0, 1]), "q2": [1, 2, 0]}) == {
        "q1": ["c2", "c0", "c1"], "q2": ["c1", "c2", "c0"]}
    assert ranked_chunks(["c0", "c1", "c2"], {"q1": [2, 0, 1]}, depth=1) == {"q1": ["c2"]}


def test_rankings_use_given_query_vectors_and_embed_the_others_once():
    @dataclass
    class Q:
        id: str
        text: str

    r = fake_retriever()
    given = {"a": np.array([0.0, 1.0])}
    rankings = r.rankings([Q("a", "first"), Q("b", "second")], "hybrid", depth=2, vectors=given)
    assert rankings == {"a": ["c2", "c1"], "b": ["c2", "c1"]}
    assert r.dense.embedder.calls == ["second"]  # "a" came with its vector


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match=r"'sparse' is not one of \['dense', 'bm25', 'hybrid'\]"):
        fake_retriever().rank("x", "sparse")


# --- the real embedder on three tiny documents ---


def test_every_method_ranks_every_chunk_once(retriever):
    for method in ("dense", "bm25", "hybrid"):
        ranking = retriever.rank("how are grid tables drawn", method)
        assert sorted(ranking) == list(range(len(retriever.chunks)))


def test_each_method_finds_the_paella_chunk(retriever):
    for method in ("dense", "bm25", "hybrid"):
        assert retriever.retrieve("cooking paella in a shallow pan", k=1, method=method)[0].chunk.doc_id == "food"


def test_query_is_embedded_once_per_retriever(retriever, monkeypatch):
    calls = []
    original = retriever.dense.embedder.encode_query
    monkeypatch.setattr(retriever.dense.embedder, "encode_query", lambda q: calls.append(q) or original(q))
    for method in ("dense", "hybrid"):
        retriever.retrieve("a brand new query about math", k=1, method=method)
    assert calls == ["a brand new query about math"]
