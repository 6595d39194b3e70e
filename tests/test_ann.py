"""The HNSW index behind the DenseIndex interface: recall against the exact scan, exact distances, choice."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("faiss")

from ragcourse import ann  # noqa: E402
from ragcourse.dense import DenseIndex  # noqa: E402


class _NoEmbedder:
    def encode_query(self, query):
        raise AssertionError("these tests pass vectors")


def _clustered(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    """Unit vectors around 20 centres: neighbours exist, as in real embeddings."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    vectors = centres[rng.integers(0, 20, n)] + 0.5 * rng.normal(size=(n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def exact():
    vectors = _clustered(3000)
    return DenseIndex(chunks=[f"c{i}" for i in range(len(vectors))], vectors=vectors, embedder=_NoEmbedder())


@pytest.fixture(scope="module")
def graph(exact):
    return ann.HNSWIndex.from_dense(exact)


@pytest.fixture(scope="module")
def queries():
    return _clustered(50, seed=1)


def test_recall_at_10_against_the_exact_scan(exact, graph, queries):
    recalls = [ann.recall(graph.rank(q), exact.rank(q), k=10) for q in queries]
    assert np.mean(recalls) >= 0.95


def test_a_tiny_graph_effort_loses_recall(exact, queries):
    """Not a test that cannot fail: with ef_search=1 and m=2 the walk misses neighbours."""
    weak = ann.HNSWIndex.from_dense(exact, m=2, ef_construction=2, ef_search=1)
    recalls = [ann.recall(weak.rank(q, depth=10), exact.rank(q), k=10) for q in queries]
    assert np.mean(recalls) < 0.95


def test_hits_carry_the_exact_rounded_distance(exact, graph, queries):
    for q in queries[:10]:
        distances = exact.distances(q)
        for hit in graph.search(q, k=5):
            assert hit.distance == distances[int(hit.chunk[1:])]
        assert [h.rank for h in graph.search(q, k=5)] == [1, 2, 3, 4, 5]


def test_rank_lists_every_position_as_a_dense_index_must(exact, graph, queries):
    """Hybrid search fuses full rankings: the graph's candidates first, then the rest in the exact scan's order."""
    for q in queries[:10]:
        ranking, head = graph.rank(q), graph.rank(q, depth=graph.ef_search)
        assert sorted(ranking) == list(range(len(exact.chunks)))
        assert ranking[:len(head)] == head
        tail = set(ranking[len(head):])
        assert ranking[len(head):] == [i for i in exact.rank(q) if i in tail]


def test_same_vectors_same_graph(exact, graph, queries):
    again = ann.HNSWIndex.from_dense(exact)
    for q in queries[:10]:
        assert again.rank(q) == graph.rank(q)


def test_choose_keeps_the_exact_scan_below_the_crossover(exact):
    assert ann.choose(exact) is exact
    assert isinstance(ann.choose(exact, crossover=len(exact.chunks)), ann.HNSWIndex)


@pytest.mark.parametrize("kwargs", [{"m": 0}, {"ef_search": -1}])
def test_bad_settings_name_the_value(exact, kwargs):
    name, value = next(iter(kwargs.items()))
    with pytest.raises(ValueError, match=f"{name}={value}"):
        ann.HNSWIndex.from_dense(exact, **kwargs)
