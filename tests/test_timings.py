"""The recorded timing run: its file is complete, and a missing one is a clear error."""

from __future__ import annotations

import json

import pytest

from ragcourse.book import timings

STEPS = ("bm25_scores", "bm25_rank", "rank_bm25_scores", "vector_scan", "query_embedding",
         "embed_and_scan", "rerank_25", "rerank_query_tokens", "rerank_maxsim_25")


def test_the_committed_record_holds_every_timing_the_chapters_read():
    record = timings.load()
    assert set(STEPS) <= set(record["per_query_ms"])
    assert all(record["per_query_ms"][s] > 0 for s in STEPS)
    assert sorted(record["embedding"]) == list("ABCDEF")
    assert record["generation"]["tokens_per_s"] > 0 and record["harness"]["queries"] == 64
    machine = record["machine"]
    assert machine["cores"] >= 1 and machine["cpu"] and machine["versions"]["torch"].startswith("2.13.0")


def test_describe_names_the_machine():
    record = {"machine": {"cpu": "Xeon", "cores": 2, "memory_gib": 24, "python": "3.11.7",
                          "versions": {"torch": "2.13.0+cpu"}, "torch_threads": 2, "date": "2026-12-01"}}
    assert timings.describe(record) == ("Xeon, 2 cores, 24 GiB, Python 3.11.7, torch 2.13.0+cpu on 2 threads, "
                                        "measured 2026-12-01")


def test_a_missing_record_says_how_to_make_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="make timings"):
        timings.load(tmp_path / "timings.json")
    (tmp_path / "t.json").write_text(json.dumps({"machine": {}}))
    assert timings.load(tmp_path / "t.json") == {"machine": {}}


def test_machine_describes_this_one():
    machine = timings.machine()
    assert machine["cores"] >= 1 and machine["python"].startswith("3.")
    assert {"torch", "numpy", "sentence-transformers"} <= set(machine["versions"])
