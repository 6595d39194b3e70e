"""Chapter 5's trial scripts in benchmarks/: the fine-tuned model and its stored ranks, latency.

The package never imports these scripts, so they are loaded here by path. The model and the ranks are
tested on what is committed (`models/reranker/`, `benchmarks/results/finetuned.json`).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from ragcourse.corpus import sha256_file
from ragcourse.paths import RESULTS_DIR
from ragcourse.rerank import Reranker
from tests.benchmark_scripts import load_script

train = load_script("reranker_ranks")
trial = load_script("rerank_trial")


class FixedScores:
    """A fake reranker: one score per passage, counting its calls."""

    name, use = "fixed", "text"

    def __init__(self) -> None:
        self.calls = 0

    def score(self, query, passages):
        self.calls += 1
        return np.ones(len(passages))


# --- latency (rerank_trial) ----------------------------------------------------------------------


def test_latency_is_the_books_protocol_fastest_of_three_then_the_median(monkeypatch):
    # A fake clock: each timed run takes the next duration; 3 runs per query after one untimed warm-up.
    from ragcourse import evaluation

    durations = iter([0.030, 0.010, 0.020, 0.050, 0.040, 0.060, 0.005, 0.007, 0.009])
    now = [0.0]

    def clock():
        now[0] += next(durations) if clock.started else 0.0
        clock.started = not clock.started
        return now[0]

    clock.started = False
    monkeypatch.setattr(evaluation.time, "perf_counter", clock)
    fake = FixedScores()
    # fastest per query: 10, 40 and 5 ms; their median is 10 ms
    assert trial.latency(fake, ["q1", "q2", "q3"], [["a"], ["a"], ["a"]]) == pytest.approx(10.0)
    assert fake.calls == 1 + 3 * 3  # the warm-up call is not timed
    with pytest.raises(ValueError, match="2 queries, 1 shortlists"):
        trial.latency(fake, ["q1", "q2"], [["a"]])


# --- the stored model ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def manifest():
    return train.read_manifest()


def test_stored_weights_match_the_manifest(manifest):
    path = train.verify_weights()
    assert sha256_file(path) == manifest["weights"]["sha256"]
    assert path.stat().st_size == manifest["weights"]["bytes"]


def test_a_corrupted_copy_is_refused(tmp_path):
    copy = tmp_path / "reranker"
    shutil.copytree(train.MODEL_DIR, copy)
    weights = copy / train.WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(train.RerankerFilesError, match="sha256"):
        train.load_reranker(copy)


def test_a_missing_folder_or_other_base_model_is_refused(tmp_path):
    with pytest.raises(train.RerankerFilesError, match="does not hold"):
        train.load_reranker(tmp_path / "nowhere")
    copy = tmp_path / "reranker"
    shutil.copytree(train.MODEL_DIR, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["base_model"]["fingerprint"] = "0" * 16
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(train.RerankerFilesError, match="fingerprint"):
        train.verify_weights(copy)


@pytest.fixture(scope="module")
def tuned():
    return train.load_reranker()


def test_loaded_reranker_prefers_the_relevant_passage(tuned):
    """A cooking question (nothing like the corpus or the training FAQs): the on-topic answer must win.

    This shows the trained head ranks an answer above an unrelated passage; it says nothing about
    how well it ranks near-misses, which is what the chapter's evaluation measures.
    """
    assert isinstance(tuned, Reranker) and tuned.use == "text"
    scores = tuned.score("How long should sourdough bread dough rise before baking?", [
        "The Nile flows north through eleven countries and empties into the Mediterranean Sea.",
        "Let sourdough bread dough rise for four to six hours at room temperature, until it has "
        "roughly doubled, before you shape it and bake it in a hot oven.",
    ])
    assert scores.shape == (2,) and np.isfinite(scores).all()
    assert scores[1] > scores[0]


# --- the stored ranks that chapter 5 reads -------------------------------------------------------


@pytest.fixture(scope="module")
def stored():
    return json.loads(train.RESULTS.read_text(encoding="utf-8"))


def test_stored_ranks_belong_to_the_stored_model(stored, manifest):
    assert stored["weights_sha256"] == manifest["weights"]["sha256"]
    assert stored["training_data"] == manifest["training_data"]
    assert (stored["training_data"]["queries"], stored["training_data"]["pairs"]) == (172, 6 * 172)
    assert stored["shortlist"] == 25 and stored["queries"] == len(stored["rows"]) == 64


def test_stored_ranks_move_only_inside_the_shortlist(stored):
    judge = json.loads((RESULTS_DIR / "judge.json").read_text(encoding="utf-8"))
    assert [(r["query"], r["hybrid_rank"]) for r in stored["rows"]] == \
        [(r["query"], r["hybrid_rank"]) for r in judge["rows"]], "both trials rerank the same hybrid ranking"
    for row in stored["rows"]:
        before, after = row["hybrid_rank"], row["finetuned_rank"]
        assert after == before if before > 25 else 1 <= after <= 25, row


def test_stored_ranks_match_a_live_rerun_on_four_queries(stored, tuned, corpus):
    """The model reranks four queries again, live: their ranks must equal the stored ones."""
    from ragcourse import pipeline
    from ragcourse.groundtruth import load_questions, queries

    by_id = {q.id: q for q in queries(load_questions(corpus=corpus, subset="original"))}
    moved = [r for r in stored["rows"] if r["hybrid_rank"] != r["finetuned_rank"]][:4]
    retriever = pipeline.build("E", corpus=corpus)
    live = train.rank_rows(tuned, retriever, [by_id[r["query"]] for r in moved])
    assert live == moved
