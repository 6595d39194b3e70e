"""Tests for ragcourse.index: stamps and staleness, failed documents, indexer-written counts."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from ragcourse.chunking import PIPELINE_VERSION
from ragcourse.documents import READER_VERSION, read_document
from ragcourse.index import Index, StaleIndexError
from ragcourse.index_format import load, save
from ragcourse.index_report import CountDiscrepancy
from ragcourse.index_sync import ingest_folder, reindex, retry_failed

DIM = 32
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))

GOOD_MD = (
    "# Camping notes\n\n"
    "## Pitching\n"
    "Stake the corners first, then raise the poles. A flat pitch sleeps better.\n\n"
    "## Stoves\n"
    "Never cook inside the tent: carbon monoxide has no smell.\n"
)
EXTRA_TXT = "Water filters clog in silty rivers. Let the water settle before pumping it.\n"


def fake_embed(texts: list[str], dim: int = DIM) -> np.ndarray:
    """Hashing bag of words: each lower-cased word adds 1 to bucket md5(word) % dim."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    return out


def embed_query(text: str, dim: int = DIM) -> np.ndarray:
    return fake_embed([text], dim)[0]


FILES: dict[str, bytes] = {
    "good.md": GOOD_MD.encode(),
    "notes/extra.txt": EXTRA_TXT.encode(),
    "latin1.txt": "café au lait".encode("latin-1"),  # 0xe9 at offset 3 is not UTF-8
    "empty.md": b"",
    "blank.rst": b"  \n\n \t\n",
    "logo.png": PNG,
    "disguised.txt": PNG,
    "nul.md": b"text\x00with a NUL",
    "paper.pdf": b"%PDF-1.4\n1 0 obj\n",
    "big.txt": b"word " * 100,  # 500 bytes > max_bytes=400
}
EXPECTED_FAILURES = {  # logo.png is not a document (by type): not attempted, so not failed
    "latin1.txt": "undecodable: not UTF-8, byte 0xe9 at offset 3",
    "empty.md": "empty file (0 bytes)",
    "blank.rst": "no text: nothing readable after extraction",
    "disguised.txt": "binary content (PNG image), not text",
    "nul.md": "binary content (NUL bytes), not text",
    "paper.pdf": "PDF could not be read: PdfStreamError: Stream has ended unexpectedly",
    "big.txt": "too large: 500 bytes > limit of 400 bytes",
}
DOCUMENTS = sorted(set(FILES) - {"logo.png"})
SETTINGS = dict(embed=fake_embed, model_name="fake-a", dim=DIM, max_bytes=400)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for name, data in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


@pytest.fixture
def report(folder: Path):
    return ingest_folder(folder, **SETTINGS)


#: Strategy E chunks, counted by hand: good.md is one paragraph per section (its "# Camping notes" first line
#: is the title, not text); extra.txt and the re-saved latin1.txt are one paragraph.
CHUNKS_BY_HAND = {"good.md": 2, "notes/extra.txt": 1, "latin1.txt": 1}


def test_every_file_is_in_the_report_and_every_failure_has_its_reason(report):
    assert [r.doc_id for r in report.attempted] == DOCUMENTS
    assert {r.doc_id: r.reason for r in report.failed} == EXPECTED_FAILURES
    assert [r.doc_id for r in report.indexed] == ["good.md", "notes/extra.txt"]
    assert all(r.reason == "" for r in report.indexed)
    n_chunks = len(report.index.chunks)
    assert report.summary().splitlines()[:2] == [
        f"9 file(s): 2 indexed, 7 failed, {n_chunks} chunks stored",
        "  FAILED big.txt: too large: 500 bytes > limit of 400 bytes"]
    frame = report.to_frame()
    assert frame["doc_id"].tolist() == DOCUMENTS
    assert frame.set_index("doc_id").loc["paper.pdf", "status"] == "failed"


def test_every_record_is_stamped_at_index_time(report):
    for rec in report.index.records:
        assert (rec.model_name, rec.dim, rec.strategy) == ("fake-a", DIM, "E")
        stamps = (rec.pipeline_version, rec.extractor_version)
        assert stamps == (PIPELINE_VERSION, READER_VERSION)
        assert rec.attempts == 1
    good = report.index.record("good.md")
    assert good.sha256 == hashlib.sha256(GOOD_MD.encode()).hexdigest()


def test_counts_written_by_the_indexer_match_the_stored_chunks(report, folder):
    index = report.index
    for rec in index.records:
        stored = [c for c in index.chunks if c.doc_id == rec.doc_id]
        assert rec.chunk_count == len(stored)
        if rec.status == "indexed":
            assert rec.chunk_count == CHUNKS_BY_HAND[rec.doc_id]
            assert all(c.content == read_document(folder / rec.doc_id, rec.doc_id).text[c.start:c.end]
                       for c in stored)
        else:
            assert rec.chunk_count == 0
    assert index.vectors.shape == (len(index.chunks), DIM)
    assert np.allclose(np.linalg.norm(index.vectors, axis=1), 1.0, atol=1e-6)


def test_claimed_counts_are_compared_not_trusted(folder):
    n_extra = CHUNKS_BY_HAND["notes/extra.txt"]
    claimed = {"good.md": 400, "notes/extra.txt": n_extra, "ghost.md": 3}
    report = ingest_folder(folder, claimed_counts=claimed, **SETTINGS)
    n_good = CHUNKS_BY_HAND["good.md"]
    assert report.discrepancies == (CountDiscrepancy("ghost.md", 3, 0),
                                    CountDiscrepancy("good.md", 400, n_good))
    assert report.index.record("good.md").chunk_count == n_good
    assert report.index.record("good.md").claimed_count == 400
    assert f"  COUNT good.md: claimed 400, stored {n_good}" in report.summary().splitlines()


def test_good_documents_stay_searchable(report):
    hits = report.index.search(embed_query("stake the corners and raise the poles"), k=2,
                               model_name="fake-a")
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].chunk.doc_id == "good.md"
    assert "Stake the corners first" in hits[0].chunk.content
    assert hits[0].distance <= hits[1].distance
    top = report.index.search(embed_query("water filters clog in silty rivers"), k=1,
                              model_name="fake-a")
    assert top[0].chunk.doc_id == "notes/extra.txt"


def test_search_distance_is_one_minus_cosine_and_k_is_checked(report):
    query = embed_query("never cook inside the tent")
    hit = report.index.search(query, k=1, model_name="fake-a")[0]
    stored = fake_embed([hit.chunk.text])[0]
    cos = float(stored @ query) / (np.linalg.norm(stored) * np.linalg.norm(query))
    assert hit.distance == pytest.approx(1 - cos, abs=1e-6)
    with pytest.raises(ValueError, match="k=0: expected an integer >= 1"):
        report.index.search(query, k=0, model_name="fake-a")
    assert Index.empty(DIM).search(query, k=3, model_name="fake-a") == []


def test_retry_failed_fixes_what_was_fixed_and_keeps_the_rest(report, folder):
    (folder / "latin1.txt").write_text("café au lait, now saved as UTF-8", encoding="utf-8")
    retried = retry_failed(report.index, folder, **SETTINGS)
    assert [r.doc_id for r in retried.attempted] == sorted(EXPECTED_FAILURES)
    fixed = retried.index.record("latin1.txt")
    assert (fixed.status, fixed.attempts, fixed.reason) == ("indexed", 2, "")
    assert fixed.chunk_count == CHUNKS_BY_HAND["latin1.txt"]
    still = {r.doc_id: r.reason for r in retried.failed}
    assert still == {k: v for k, v in EXPECTED_FAILURES.items() if k != "latin1.txt"}
    assert retried.index.record("good.md") == report.index.record("good.md")
    old = [i for i, c in enumerate(report.index.chunks) if c.doc_id == "good.md"]
    new = [i for i, c in enumerate(retried.index.chunks) if c.doc_id == "good.md"]
    assert np.array_equal(report.index.vectors[old], retried.index.vectors[new])


def test_save_and_load_round_trip(report, tmp_path):
    path = save(report.index, tmp_path / "idx")
    assert sorted(p.name for p in path.iterdir()) == ["manifest.json", "v000001"]
    assert json.loads((path / "manifest.json").read_text())["vectors"] == "v000001/vectors.npy"
    assert [p.name for p in (path / "v000001").iterdir()] == ["vectors.npy"]
    save(report.index, path)  # the next version; the one before stays for readers still opening it
    save(report.index, path)
    assert sorted(p.name for p in path.iterdir()) == ["manifest.json", "v000002", "v000003"]
    loaded = load(path)
    assert loaded.records == report.index.records
    assert loaded.chunks == report.index.chunks
    assert np.array_equal(loaded.vectors, report.index.vectors)
    query = embed_query("carbon monoxide")
    assert loaded.search(query, 3, model_name="fake-a") == report.index.search(
        query, 3, model_name="fake-a")


def test_load_refuses_a_manifest_whose_counts_lie(report, tmp_path):
    path = save(report.index, tmp_path / "idx")
    manifest = json.loads((path / "manifest.json").read_text())
    rec = next(r for r in manifest["records"] if r["doc_id"] == "good.md")
    rec["chunk_count"] = 400
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="good.md .*says 400 chunks"):
        load(path)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        (dict(model_name="fake-b", dim=DIM), "model 'fake-a' != 'fake-b'"),
        (dict(model_name="fake-a", dim=64), f"dimension {DIM} != 64"),
        (dict(model_name="fake-a", dim=DIM, pipeline_version="chunking-0"),
         f"pipeline {PIPELINE_VERSION!r} != 'chunking-0'"),
        (dict(model_name="fake-a", dim=DIM, extractor_version="plaintext-0"),
         f"extractor {READER_VERSION!r} != 'plaintext-0'"),
    ],
)
def test_check_compatible_names_every_stale_document_and_why(report, kwargs, reason):
    report.index.check_compatible("fake-a", DIM)  # the current stamps pass
    with pytest.raises(StaleIndexError) as caught:
        report.index.check_compatible(**kwargs)
    # failed documents have no vectors, so only the two indexed ones must be rebuilt
    assert caught.value.stale == {"good.md": (reason,), "notes/extra.txt": (reason,)}
    assert caught.value.doc_ids == ("good.md", "notes/extra.txt")
    assert reason in str(caught.value)


def test_querying_with_another_model_or_dimension_raises(report):
    with pytest.raises(StaleIndexError, match="model 'fake-a' != 'fake-b'"):
        report.index.search(embed_query("tent"), 2, model_name="fake-b")
    with pytest.raises(StaleIndexError, match=f"dimension {DIM} != 16"):
        report.index.search(embed_query("tent", dim=16), 2, model_name="fake-a")


def test_a_half_migrated_index_refuses_both_models(report, folder):
    migrated = reindex(report.index, folder, ["good.md"], embed=fake_embed, model_name="fake-b",
                       dim=DIM).index
    with pytest.raises(StaleIndexError) as caught:
        migrated.search(embed_query("tent"), 2, model_name="fake-b")
    assert caught.value.doc_ids == ("notes/extra.txt",)
    with pytest.raises(StaleIndexError) as caught:
        migrated.search(embed_query("tent"), 2, model_name="fake-a")
    assert caught.value.doc_ids == ("good.md",)


def test_an_older_pipeline_is_stale_but_still_in_the_same_space(report):
    old = dataclasses.replace(report.index, records=tuple(
        dataclasses.replace(r, pipeline_version="chunking-0") for r in report.index.records))
    assert old.search(embed_query("tent"), 1, model_name="fake-a")[0].rank == 1
    with pytest.raises(StaleIndexError):
        old.check_compatible("fake-a", DIM)


def test_an_embedder_failure_fails_only_that_document(folder):
    def flaky(texts: list[str]) -> np.ndarray:
        if any("Water filters" in t for t in texts):
            raise RuntimeError("service unavailable")
        return fake_embed(texts)

    report = ingest_folder(folder, embed=flaky, model_name="fake-a", dim=DIM, max_bytes=400)
    assert report.index.record("notes/extra.txt").reason == (
        "embedding failed: RuntimeError: service unavailable")
    assert report.index.record("good.md").status == "indexed"


def test_misconfigured_embedder_or_settings_raise(folder):
    with pytest.raises(ValueError, match=r"expected \(\d+, 8\)"):
        ingest_folder(folder, embed=fake_embed, model_name="fake-a", dim=8)
    with pytest.raises(ValueError, match="unknown strategy 'Z'"):
        ingest_folder(folder, embed=fake_embed, model_name="fake-a", dim=DIM, strategy="Z")
    with pytest.raises(ValueError, match="not a directory"):
        ingest_folder(folder / "nope", embed=fake_embed, model_name="fake-a", dim=DIM)


def test_vectors_of_another_dimension_cannot_join_the_store(report, folder):
    with pytest.raises(StaleIndexError) as caught:
        reindex(report.index, folder, ["good.md"], embed=partial(fake_embed, dim=16),
                model_name="fake-c", dim=16)
    assert caught.value.doc_ids == ("notes/extra.txt",)
