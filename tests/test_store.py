"""The chunk store: unit rows kept bit for bit, BM25 over the same texts, and an index read back as one store."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse.bm25 import BM25
from ragcourse.chunking import Chunk
from ragcourse.index import DocRecord, Index, StaleIndexError
from ragcourse.pipeline import Retriever
from ragcourse.store import Stamp, Store, ZeroVectorError, unit_rows

TEXTS = ["grid tables draw cells", "a list of items", "display math"]


def chunks(doc: str = "a.md") -> list[Chunk]:
    return [Chunk(doc_id=doc, doc_title="A", section="", start=0, end=len(t), content=t, text=t, strategy="E", index=i)
            for i, t in enumerate(TEXTS)]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.floats(-10, 10, allow_nan=False, width=32), min_size=3, max_size=3), min_size=1,
                max_size=6))
def test_unit_rows_have_length_one_and_unit_rows_are_kept_bit_for_bit(rows):
    vectors = np.array(rows, dtype=np.float32)
    if np.any(np.linalg.norm(vectors, axis=1) == 0):
        with pytest.raises(ZeroVectorError, match="zero vector"):
            unit_rows(vectors, len(rows), 3)
        return
    once = unit_rows(vectors, len(rows), 3)
    assert np.allclose(np.linalg.norm(once, axis=1), 1, atol=1e-5)
    assert np.array_equal(unit_rows(once, len(rows), 3), once)  # already unit: not divided again


def test_a_wrong_shape_names_what_was_expected():
    with pytest.raises(ValueError, match=r"shape \(2, 3\); expected \(2, 4\)"):
        unit_rows(np.ones((2, 3)), 2, 4)


def test_a_store_holds_bm25_of_its_own_texts_and_a_retriever_ranks_over_it():
    vectors = np.eye(3, dtype=np.float32)
    store = Store.of(chunks(), vectors, Stamp("toy", 3, "E"))
    assert store.bm25.scores("grid").tolist() == BM25(TEXTS).scores("grid").tolist()
    retriever = Retriever.over(store, embedder=None)
    assert retriever.rank("display math", "bm25")[0] == 2
    assert retriever.rank("q", "dense", vector=np.array([0, 1, 0], dtype=np.float32)) == [1, 0, 2]


def record(doc: str, model: str, n: int) -> DocRecord:
    return DocRecord(doc_id=doc, status="indexed", reason="", chunk_count=n, claimed_count=None, model_name=model,
                     dim=3, pipeline_version="chunking-1", extractor_version="x", strategy="E", sha256="", attempts=1)


def test_an_index_is_read_back_as_one_store_or_refused_when_its_stamps_disagree():
    index = Index((record("a.md", "toy", 3),), tuple(chunks()), np.eye(3, dtype=np.float32))
    assert index.store().stamp == Stamp("toy", 3, "E", "chunking-1")
    both = [*chunks("a.md"), *(dataclasses.replace(c, doc_id="b.md") for c in chunks())]
    mixed = Index((record("a.md", "toy", 3), record("b.md", "other", 3)), tuple(both),
                  np.vstack([np.eye(3), np.eye(3)]).astype(np.float32))
    with pytest.raises(StaleIndexError, match="a.md: model 'toy'.*mixes 2\n  b.md: model 'other'"):
        mixed.store()
