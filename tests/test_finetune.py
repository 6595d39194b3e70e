"""Tests for ragcourse.finetune: parsing, the needle guard, the training data pin and the stored reranker."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from ragcourse import finetune
from ragcourse.corpus import sha256_file
from ragcourse.finetune import (
    Pair,
    RerankerFilesError,
    TrainingDataError,
    check_no_leaks,
    find_leaks,
    glob_regex,
    split_sections,
    strip_inline,
    title_query,
)
from ragcourse.rerank import Reranker

# --- parsing -------------------------------------------------------------------------------------


def test_split_sections_titles_bodies_and_markup():
    text = (".. _top:\n\n=====\nGuide\n=====\n\nSee :ref:`the intro <intro>` first::\n\n    code()\n\n"
            "Why is it slow?\n---------------\n\n.. code-block:: python\n   :linenos:\n\n"
            "   run(``x``)\n\nUse `the cache <https://example.org>`_ and **care**.\n")
    sections = split_sections(text, "pkg", "docs/a.txt")
    assert [(s.title, s.body) for s in sections] == [
        ("Guide", "See the intro first: code()"),
        ("Why is it slow?", "run(x) Use the cache and care."),
    ]
    assert {s.doc_title for s in sections} == {"Guide"}


def test_a_short_underline_is_not_a_title():
    assert [s.title for s in split_sections("Long title here\n===\nbody\n")] == []


def test_strip_inline_keeps_the_words():
    assert strip_inline(":class:`~a.B` calls ``f()`` via `Site <http://a>`_") == "a.B calls f() via Site"


@pytest.mark.parametrize(("title", "query"), [
    ("Why does it hang?", "Why does it hang?"),
    ("How to write custom lookups", "How do I write custom lookups?"),
    ("how do I  purge tasks", "How do I purge tasks?"),
    ("Writing custom lookups", None),
])
def test_title_query(title, query):
    assert title_query(title) == query


def test_glob_regex_single_star_stays_in_one_folder():
    assert glob_regex("docs/*.txt").fullmatch("docs/a.txt")
    assert not glob_regex("docs/*.txt").fullmatch("docs/x/a.txt")
    assert glob_regex("docs/**/*.txt").fullmatch("docs/x/y/a.txt")
    assert glob_regex("docs/**/*.txt").fullmatch("docs/a.txt")


# --- the needle guard ----------------------------------------------------------------------------


def test_find_leaks_is_case_and_whitespace_blind():
    texts = ["Lists must\n  start a NEW paragraph.", "unrelated"]
    assert find_leaks(texts, ["a new paragraph", "grid tables"]) == ["a new paragraph"]


@pytest.fixture(scope="module")
def evaluation_strings(corpus):
    return finetune.evaluation_strings()


def test_guard_catches_a_planted_needle(evaluation_strings):
    from ragcourse.groundtruth import load_questions

    needle = load_questions()[0].needle
    planted = "Some preamble. " + needle.upper().replace(" ", "\n   ") + " More text."
    clean = [Pair("How do I purge tasks?", "Use the purge command of the worker.", 1, "toy", "positive")]
    check_no_leaks(clean, evaluation_strings)  # clean data passes
    with pytest.raises(TrainingDataError) as caught:
        check_no_leaks([*clean, Pair("q?", planted, 0, "toy", "bm25")], evaluation_strings)
    assert needle in str(caught.value)


# --- the real training data and the stored model -------------------------------------------------


@pytest.fixture(scope="module")
def manifest():
    return finetune.read_manifest()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return finetune.build(path=tmp_path_factory.mktemp("training") / "pairs.jsonl")


def test_training_data_matches_the_manifest(built, manifest):
    pairs, sha = built
    assert sha == manifest["training_data"]["sha256"]
    counts = finetune.pair_counts(pairs)
    assert counts["pairs"] == manifest["training_data"]["pairs"] == 6 * counts["queries"]


def test_training_data_holds_no_evaluation_string(built, evaluation_strings):
    pairs, _ = built
    assert len(evaluation_strings) > 100
    check_no_leaks(pairs, evaluation_strings)


def test_stored_weights_match_the_manifest(manifest):
    path = finetune.verify_weights()
    assert sha256_file(path) == manifest["weights"]["sha256"]
    assert path.stat().st_size == manifest["weights"]["bytes"]


def test_a_corrupted_copy_is_refused(tmp_path):
    copy = tmp_path / "reranker"
    shutil.copytree(finetune.MODEL_DIR, copy)
    weights = copy / finetune.WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(RerankerFilesError, match="sha256"):
        finetune.load_reranker(copy)


def test_a_missing_folder_or_other_base_model_is_refused(tmp_path):
    with pytest.raises(RerankerFilesError, match="does not hold"):
        finetune.load_reranker(tmp_path / "nowhere")
    copy = tmp_path / "reranker"
    shutil.copytree(finetune.MODEL_DIR, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["base_model"]["fingerprint"] = "0" * 16
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RerankerFilesError, match="fingerprint"):
        finetune.verify_weights(copy)


def test_loaded_reranker_prefers_the_relevant_passage():
    """A cooking question (nothing like the corpus or the training FAQs): the on-topic answer must win.

    This shows the trained head ranks an answer above an unrelated passage; it says nothing about
    how well it ranks near-misses, which is what the chapter's evaluation measures.
    """
    reranker = finetune.load_reranker()
    assert isinstance(reranker, Reranker) and reranker.use == "text"
    scores = reranker.score("How long should sourdough bread dough rise before baking?", [
        "The Nile flows north through eleven countries and empties into the Mediterranean Sea.",
        "Let sourdough bread dough rise for four to six hours at room temperature, until it has "
        "roughly doubled, before you shape it and bake it in a hot oven.",
    ])
    assert scores.shape == (2,) and np.isfinite(scores).all()
    assert scores[1] > scores[0]
