"""Chapter 7's stored answers (benchmarks/generate_answers.py) and the interval it reports them with."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ragcourse.evaluation import ratio_over_questions
from ragcourse.groundtruth import load_out_of_domain, load_questions, queries
from ragcourse.paths import RESULTS_DIR
from tests.benchmark_scripts import load_script

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_ratio_over_questions_resamples_whole_questions():
    # q1's two queries hold 2 of 2 flagged; q2's one query 0 of 1. A resample draws 2 questions:
    # (q1, q1) -> 1, (q2, q2) -> 0, one of each -> 2/3. So the 95 % interval spans 0 to 1.
    assert ratio_over_questions(["q1/doc", "q1/ticket", "q2/doc"], [1, 1, 0], [1, 1, 1]) == (2 / 3, 0.0, 1.0)
    ratio, low, high = ratio_over_questions([f"q{i}/doc" for i in range(40)], [i % 4 == 0 for i in range(40)],
                                            [1] * 40)
    assert ratio == 0.25 and 0.1 < low < 0.25 < high <= 0.4  # near Wilson's (0.142, 0.397)
    with pytest.raises(ValueError, match="numerator"):
        ratio_over_questions(["q1/doc"], [2], [1])
    with pytest.raises(ValueError, match="denominator"):
        ratio_over_questions(["q1/doc"], [0], [0])


def test_prompt_hash_is_sha256_of_utf8():
    assert load_script("generate_answers").prompt_sha256("") == hashlib.sha256(b"").hexdigest()
    assert load_script("generate_answers").prompt_sha256("é") == hashlib.sha256("é".encode()).hexdigest()


@pytest.fixture(scope="module")
def stored():
    return json.loads((RESULTS_DIR / "answers.json").read_text(encoding="utf-8"))


def test_stored_answers_cover_every_query_once_in_order(stored, corpus):
    ids = [q.id for q in queries(load_questions(subset="original", corpus=corpus))]
    ids += [o.id for o in load_out_of_domain()]
    assert [r["query"] for r in stored["rows"]] == ids and stored["queries"] == len(ids) == 94
    assert [r["set"] for r in stored["rows"]] == ["in"] * 64 + ["out"] * 30


def test_stored_answers_are_complete_where_the_gate_answered(stored):
    answered = [r for r in stored["rows"] if r["answered"]]
    assert stored["generated"] == len(answered) > 0
    for r in answered:
        assert len(r["prompt_sha256"]) == 64 and int(r["prompt_sha256"], 16) >= 0
        assert isinstance(r["answer"], str) and 1 <= r["new_tokens"] <= stored["max_new_tokens"]
    for r in stored["rows"]:
        if not r["answered"]:
            assert set(r) == {"query", "set", "answered"}  # NO ANSWER: the generator never ran
