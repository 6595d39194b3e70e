"""ALCE citation recall and precision (ragcourse.attribution): counts worked by hand with a scripted judge."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragcourse.attribution import Attribution, attribution, judge_prompt, prompt_sha256, stored_judge, verdict
from ragcourse.citations import Citation
from ragcourse.paths import RESULTS_DIR

SOURCES = [Citation(n, f"d{n}", "D", "s", "#char=0,1", quote, 0.1) for n, quote in
           [(1, "Lists need a blank line."), (2, "Tables need a grid."), (3, "Lists need a blank line too.")]]


def judge_by(supported: set[frozenset[int]]):
    """A judge that says SUPPORTED exactly when the prompt's passages are one of the `supported` sets."""
    def judge(prompt: str) -> bool:
        return any(judge_prompt([SOURCES[n - 1].quote for n in sorted(s)], "X y z w [1].").split("SENTENCE")[0]
                   == prompt.split("SENTENCE")[0] for s in supported)
    return judge


def test_uncited_and_unknown_sources_are_unsupported_without_asking():
    def never(prompt):
        raise AssertionError("the judge must not be asked")
    got = attribution("Lists need a blank line here. Tables need a grid always [7].", SOURCES, never)
    assert got == Attribution(statements=2, supported=0, citations=1, needed=0)


def test_one_citation_is_needed_exactly_when_it_supports():
    assert attribution("Lists need a blank line [1].", SOURCES, judge_by({frozenset({1})})) == Attribution(1, 1, 1, 1)
    assert attribution("Lists need a blank line [2].", SOURCES, judge_by({frozenset({1})})) == Attribution(1, 0, 1, 0)


def test_an_extra_citation_is_not_needed_when_the_other_supports_alone():
    # [1, 2] jointly supported; [1] alone supports; [2] alone does not, and without it [1] still does: 1 of 2 needed
    judge = judge_by({frozenset({1, 2}), frozenset({1})})
    assert attribution("Lists need a blank line [1][2].", SOURCES, judge) == Attribution(1, 1, 2, 1)


def test_two_citations_are_both_needed_when_only_together_they_support():
    judge = judge_by({frozenset({1, 2})})
    assert attribution("Lists need a blank line [1, 2].", SOURCES, judge) == Attribution(1, 1, 2, 2)


def test_an_unsupported_statement_counts_all_its_citations_as_not_needed():
    assert attribution("Lists need a blank line [1][2].", SOURCES, judge_by(set())) == Attribution(1, 0, 2, 0)


def test_refusals_and_short_sentences_are_not_statements():
    assert attribution("The sources do not contain the answer. Yes [1].", SOURCES, judge_by(set())) == \
        Attribution(0, 0, 0, 0)


def test_stored_judge_replays_and_names_a_missing_prompt():
    judge = stored_judge({prompt_sha256("a"): False})
    assert judge("a") is False
    with pytest.raises(KeyError, match="rerun the recording"):
        judge("b")


@given(st.text(max_size=30))
def test_verdict_is_supported_only_for_a_reply_starting_with_the_word(reply):
    assert verdict(reply) == reply.strip().upper().startswith("SUPPORTED")
    assert verdict("SUPPORTED " + reply) and not verdict("NOT " + reply)


@given(st.lists(st.integers(0, 3), max_size=6))
def test_counts_are_bounded(flags):
    text = " ".join(f"Lists need a blank line {i} [{n}]." if n else f"Lists need a blank line {i}."
                    for i, n in enumerate(flags))
    got = attribution(text, SOURCES, lambda p: True)
    assert 0 <= got.supported <= got.statements == len(flags) and 0 <= got.needed <= got.citations


# ----- the stored 1.5B recording (benchmarks/qwen_citations.py): its shape, read without running a model

def _record(name):
    return json.loads((RESULTS_DIR / name).read_text(encoding="utf-8"))


def test_the_stored_answers_state_threads_wall_time_and_every_prompt_hash():
    record = _record("answers_qwen.json")
    assert record["threads"] == 1 and record["runs"] and all(run["wall_s"] > 0 for run in record["runs"])
    keys = [(r["query"], r["mode"]) for r in record["rows"]]
    assert len(keys) == len(set(keys)) and {mode for _, mode in keys} <= {"example", "ungated", "gated"}
    for r in record["rows"]:
        assert len(r["prompt_sha256"]) == 64 and 1 <= r["new_tokens"] <= record["max_new_tokens"]


def test_the_stored_verdicts_are_one_per_prompt_and_read_as_the_judge_replied():
    record = _record("citation_judge.json")
    hashes = [r["prompt_sha256"] for r in record["rows"]]
    assert record["threads"] == 1 and len(hashes) == len(set(hashes))
    assert all(r["supported"] == verdict(r["reply"]) for r in record["rows"])
    assert {r["for"] for r in record["rows"]} <= {"labels", "smollm2", "qwen"}
