"""The assembled pipeline: the three methods rank every chunk, hybrid is RRF of the other two."""

import pytest

from ragcourse.corpus import Document
from ragcourse.fusion import rrf
from ragcourse.pipeline import build

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


def test_every_method_ranks_every_chunk_once(retriever):
    for method in ("dense", "bm25", "hybrid"):
        ranking = retriever.rank("how are grid tables drawn", method)
        assert sorted(ranking) == list(range(len(retriever.chunks)))


def test_hybrid_is_rrf_of_dense_and_bm25(retriever):
    query = "equals signs in a simple table"
    dense = retriever.rank(query, "dense")
    bm25 = retriever.rank(query, "bm25")
    assert retriever.rank(query, "hybrid") == rrf([dense, bm25])


def test_retrieve_carries_cosine_distance_whatever_ranked_it(retriever):
    hits = retriever.retrieve("cooking paella", k=2, method="bm25")
    assert hits[0].chunk.doc_id == "food"
    distances = retriever.dense.distances(retriever.query_vector("cooking paella"))
    assert hits[0].distance == pytest.approx(float(distances[retriever.chunks.index(hits[0].chunk)]))
    assert [h.rank for h in hits] == [1, 2]


def test_query_is_embedded_once_per_retriever(retriever, monkeypatch):
    calls = []
    original = retriever.dense.embedder.encode_query
    monkeypatch.setattr(retriever.dense.embedder, "encode_query", lambda q: calls.append(q) or original(q))
    for method in ("dense", "hybrid"):
        retriever.retrieve("a brand new query about math", k=1, method=method)
    assert calls == ["a brand new query about math"]


def test_unknown_method_is_rejected(retriever):
    with pytest.raises(ValueError, match=r"'sparse' is not one of \['dense', 'bm25', 'hybrid'\]"):
        retriever.rank("x", "sparse")
