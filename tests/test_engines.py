"""The Qdrant backend (local mode, offline): same rankings as the package up to the documented tie rules."""

from __future__ import annotations

import pytest

pytest.importorskip("qdrant_client")

from ragcourse import engines, evaluation, groundtruth  # noqa: E402
from ragcourse.index import StaleIndexError  # noqa: E402
from ragcourse.pipeline import METHODS, build, ranked_chunks  # noqa: E402


@pytest.fixture(scope="module")
def retriever(corpus):
    return build("E", corpus=corpus)


@pytest.fixture(scope="module")
def qs():
    return groundtruth.queries(groundtruth.load_questions(subset="original"))


@pytest.fixture(scope="module")
def vectors(retriever, qs):
    return {q.id: retriever.query_vector(q.text) for q in qs}


@pytest.fixture(scope="module")
def engine(retriever):
    engine = _local()
    assert engine.index(retriever) is True
    return engine


def _local() -> engines.QdrantEngine:
    """Local mode in memory, whatever $RAGCOURSE_QDRANT_URL says."""
    from qdrant_client import QdrantClient

    return engines.QdrantEngine(QdrantClient(":memory:"))


def _swaps(ours: list[int], theirs: list[int]) -> list[tuple[int, int]]:
    """The (ours, theirs) chunk pairs at each position where the two rankings differ."""
    return [(a, b) for a, b in zip(ours, theirs, strict=True) if a != b]


@pytest.fixture(scope="module")
def ranks(retriever, engine, qs, vectors):
    """method -> (ours, the engine's): query id -> every chunk position, best first (computed once)."""
    return {m: ({q.id: retriever.rank(q.text, m, vectors[q.id]) for q in qs},
                {q.id: engine.rank(q.text, m, vectors[q.id]) for q in qs}) for m in METHODS}


def test_bm25_rankings_are_identical(ranks):
    ours, theirs = ranks["bm25"]
    assert ours == theirs


def test_dense_rankings_differ_only_where_float32_cannot_tell(retriever, ranks, vectors):
    ours, theirs = ranks["dense"]
    for qid, mine in ours.items():
        assert sorted(theirs[qid]) == list(range(len(retriever.chunks)))
        distances = retriever.dense.distances(vectors[qid])
        for a, b in _swaps(mine, theirs[qid]):
            assert abs(distances[a] - distances[b]) <= 2e-6, (qid, a, b)


def test_hybrid_top_10_is_identical(retriever, ranks):
    """Qdrant's Rrf(k=61) counts ranks from 0: the book's k=60. Below the top 10, near ties may differ."""
    ours, theirs = ranks["hybrid"]
    for qid, mine in ours.items():
        assert sorted(theirs[qid]) == list(range(len(retriever.chunks)))
        assert mine[:10] == theirs[qid][:10], qid


@pytest.mark.parametrize("method", METHODS)
def test_evaluation_table_is_the_same(retriever, ranks, qs, method):
    tables = [evaluation.summarize(evaluation.evaluate(ranked_chunks(retriever.chunks, positions), qs), method)
              for positions in ranks[method]]
    assert tables[0].to_string() == tables[1].to_string()


def test_indexing_again_reuses_the_collection(retriever, engine):
    assert engine.index(retriever) is False


def test_a_collection_from_another_pipeline_is_refused(retriever, engine, monkeypatch):
    monkeypatch.setattr(engines, "PIPELINE_VERSION", "chunking-0")
    with pytest.raises(StaleIndexError, match="pipeline_version"):
        engine.index(retriever)


def test_a_collection_from_another_tokenizer_is_refused(retriever, engine, monkeypatch):
    """BM25's token pattern is part of the stamp, read from `bm25.TOKEN_PATTERN`, not restated."""
    from ragcourse import bm25

    assert engines.stamp_for(retriever).bm25 == '{"b": 0.75, "k1": 1.2, "tokenizer": "[a-z0-9]+"}'
    monkeypatch.setattr(bm25, "TOKEN_PATTERN", r"\w+")
    with pytest.raises(StaleIndexError, match=r"bm25 is .*expected .*w\+"):
        engine.index(retriever)


def test_a_collection_with_other_chunks_is_refused_then_rebuilt(retriever, corpus):
    engine = _local()
    engine.index(retriever)
    smaller = build("E", corpus=corpus[:2], embedder=retriever.dense.embedder)
    with pytest.raises(StaleIndexError, match="texts_sha256"):
        engine.index(smaller)
    assert engine.index(smaller, rebuild=True) is True
    assert engine.client.count(engine.collection, exact=True).count == len(smaller.chunks)


def test_a_server_url_comes_from_the_environment(monkeypatch):
    """The url is read, not contacted: creating a client for a server opens no connection."""
    monkeypatch.setenv(engines.URL_VARIABLE, "http://qdrant.invalid:6333")
    engine = engines.QdrantEngine.connect()
    assert "qdrant.invalid" in str(engine.client._client.rest_uri)


def test_bad_choices_name_the_value():
    with pytest.raises(ValueError, match="'elastic'.*qdrant"):
        engines.connect("elastic")
    with pytest.raises(ValueError, match="not both"):
        engines.QdrantEngine.connect(url="http://x:6333", path="/tmp/q")


def test_ranking_before_indexing_is_an_error():
    engine = _local()
    with pytest.raises(RuntimeError, match="index"):
        engine.rank("q", "bm25")


def test_cli_evaluate_on_qdrant_prints_the_same_table(tmp_path, capsys, monkeypatch):
    from ragcourse.cli import main

    monkeypatch.delenv(engines.URL_VARIABLE, raising=False)
    mine = tmp_path / "mine.jsonl"
    mine.write_text("".join(groundtruth.QUESTIONS_FILE.read_text(encoding="utf-8").splitlines(True)[:4]),
                    encoding="utf-8")
    outputs = []
    for extra in ([], ["--engine", "qdrant"]):
        assert main(["evaluate", "--questions", str(mine), "--method", "hybrid", *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert "E/hybrid on qdrant" in outputs[1]
    rows = [[line.split()[-6:] for line in out.splitlines()[1:]] for out in outputs]  # label dropped
    assert len(rows[0]) == 5 and rows[0] == rows[1]


def test_cli_engine_url_needs_an_engine(capsys):
    from ragcourse.cli import main

    assert main(["evaluate", "--engine-url", "http://localhost:6333"]) == 2
    assert "--engine-url='http://localhost:6333' needs --engine qdrant" in capsys.readouterr().err
